--[[ turns: one holder at a time per session or workflow scope, each turn
  with a fencing token.
  rm:{ns}:turn:<scope>:<sid>            hash: token (the last issued),
      holder, by (the holder's principal), exp (ms), ticket (the last
      waiter ticket issued) and w:<waiter> = the lease (ms) of each queued
      waiter
  rm:{ns}:turn:<scope>:<sid>:q          zset of queued waiters, scored by
      ticket: arrival order
  rm:{ns}:turn:<scope>:<sid>:w:<holder> list a waiter blocks on (BLPOP);
      whoever frees the turn pushes to the first live waiter's list
  rm:{ns}:turns                         zset (score 0) of <scope>:<sid> of
      every turn ever granted: what `redismem turns` lists without SCAN
  A turn is free when nobody holds it or its holder's exp has passed (the
  next acquire records the expiry in the feed). A free turn goes to the
  first queued waiter whose lease has not passed; a caller that does not
  queue gets it only while no live waiter is queued. A waiter renews its
  lease by calling acquire again; one whose lease passed is dropped when it
  reaches the head. Acquire, release and expiry each append a feed event
  of kind 'turn': key = the holder, rev = the token, action acquire,
  release or expire. Writes carrying a turn's token: lib/57_fence.lua.
  A turn's token is the feed sequence of its acquire event, so tokens
  never repeat in a namespace, even when the turn's keys are deleted or
  expire (raw DEL, PEXPIRE): a stale holder's token stays below every
  later one. Deleting a turn's keys is thus the repair of a turn jammed by
  a raw write. An expiry or lease further away than max_turn_ms, which no
  call sets, counts as passed.                                            ]]

local TURN_SCOPES = {session = true, workflow = true}
local WAKE_KEEP_MS = 60000
local PRUNE_WAITERS = 64

-- The holder ids of `principal`: '<principal>/<attempt>', the principal cut
-- to 100 bytes (never inside a UTF-8 sequence), as redismem/turns.py
-- makes them.
local function holder_prefix(principal)
  local cut = math.min(#principal, 100)
  if cut < #principal then
    while cut > 0 and string.byte(principal, cut + 1) >= 0x80
        and string.byte(principal, cut + 1) <= 0xBF do
      cut = cut - 1 -- the next byte continues a sequence: drop it whole
    end
    local lead = cut > 0 and string.byte(principal, cut)
    if lead and lead >= 0xC0 then
      cut = cut - 1 -- a lead byte whose sequence was cut
    end
  end
  return string.sub(principal, 1, cut) .. '/'
end

-- t from ARGV[1..5] (namespace, scope, scope id, principal, holder) and
-- KEYS[1] (the turn hash). A holder id belongs to the principal that
-- names it (the call proves the principal by its principal key), so no
-- principal can renew or release another's turn, or take it as its own.
local function turn_call(keys, args)
  local c = scope_args(args, 1)
  if not TURN_SCOPES[c.scope] then
    fail('INVALID_ARGUMENT', 'turns are taken in session and workflow scopes, got ' .. show(c.scope))
  end
  local t = {c = c, principal = check_id('principal', args[4]), holder = check_id('holder', args[5])}
  local prefix = holder_prefix(t.principal)
  if string.sub(t.holder, 1, #prefix) ~= prefix or #t.holder == #prefix then
    fail('INVALID_ARGUMENT', 'holder ' .. show(t.holder) .. ' is not one of principal '
         .. show(t.principal) .. "'s: a holder id is " .. show(prefix .. '<attempt>'))
  end
  t.key = expect_key(keys, 1, SCHEMA.turn(c))
  return t
end

-- Read the turn: t.token, t.held_by (nil when nobody), t.exp, t.ticket.
local function read_turn(t)
  local raw = redis.call('HMGET', t.key, 'token', 'holder', 'exp', 'ticket')
  t.token = turn_count(t.key, 'token', raw[1])
  t.held_by = raw[2] or nil
  t.exp = turn_count(t.key, 'exp', raw[3])
  t.ticket = turn_count(t.key, 'ticket', raw[4])
end

-- Whether time `at` (ms) is still to come at `now`, and no further away
-- than any call sets it.
local function pending(at, now)
  return at > now and at <= now + LIMITS.max_turn_ms
end

-- Whether the turn is held by someone at `now`.
local function turn_held(t, now)
  return t.held_by ~= nil and pending(t.exp, now)
end

-- Refuse (before anything is written) a grant whose token, the sequence
-- of w's last planned event, would not be above the turn's last token:
-- only a raw write of the feed and its counter sets the sequence back.
local function check_token_source(t, w)
  local next_seq = w.sequence + #w.events
  if next_seq <= t.token then
    next_seq = math.max(next_seq, (last_generated(w.feed) or 0) + #w.events)
  end
  if next_seq <= t.token then
    fail('FEED_CORRUPT', 'the feed sequence of ' .. show(w.c.ns) .. ' (' .. int_string(next_seq)
         .. ') is behind token ' .. int_string(t.token) .. ' of ' .. show(t.key)
         .. ': turn tokens would repeat' .. repair_hint(w.c))
  end
end

-- A call that queues or leaves the queue (acquire, release): t as
-- turn_call, t.queue from KEYS[2], the holder's wake list checked in
-- KEYS[6]; and its feed writer w (w.c, w.kind, w.principal as plan_event
-- needs them), with the counters from KEYS[3], KEYS[4] and the principal's
-- key KEYS[5].
local function queue_call(keys, args)
  local t = turn_call(keys, args)
  t.queue = expect_key(keys, 2, SCHEMA.turn_queue(t.c))
  local w = {c = t.c, kind = 'turn', principal = t.principal,
             seq = expect_key(keys, 3, SCHEMA.sequence(t.c)),
             feed_size = expect_key(keys, 4, SCHEMA.feed_size(t.c)),
             feed = SCHEMA.feed(t.c)}
  expect_who(keys, 5, t.c, t.principal)
  t.wake = expect_key(keys, 6, SCHEMA.turn_wake(t.c, t.holder))
  w.settings = write_settings(SCHEMA.config(t.c))
  return t, w
end

-- The first queued waiter whose lease has not passed (or nil), the lapsed
-- waiters before it (at most PRUNE_WAITERS; drop_waiters removes them once
-- the call writes) and when its lease ends. Reads only.
local function first_waiter(t, now)
  local lapsed = {}
  local heads = redis.call('ZRANGE', t.queue, 0, PRUNE_WAITERS - 1)
  for _, head in ipairs(heads) do
    local lease = tonumber(redis.call('HGET', t.key, 'w:' .. head))
    if lease and pending(lease, now) then
      return head, lapsed, lease
    end
    lapsed[#lapsed + 1] = head
  end
  return nil, lapsed
end

local function drop_waiters(t, lapsed)
  for _, head in ipairs(lapsed) do
    redis.call('ZREM', t.queue, head)
    redis.call('HDEL', t.key, 'w:' .. head)
  end
end

-- Take `holder` out of the queue (and its wake list).
local function leave_queue(t, holder)
  redis.call('ZREM', t.queue, holder)
  redis.call('HDEL', t.key, 'w:' .. holder)
  redis.call('DEL', SCHEMA.turn_wake(t.c, holder))
end

-- Wake waiter `head`: the turn has just become free, and it comes first.
local function wake(t, head)
  local list = SCHEMA.turn_wake(t.c, head)
  redis.call('LPUSH', list, '1')
  redis.call('PEXPIRE', list, WAKE_KEEP_MS)
end

-- A turn's time to live, or a waiter's lease, in ms.
local function parse_turn_ms(what, text)
  return parse_int(what .. ' in milliseconds', text, LIMITS.min_turn_ms, LIMITS.max_turn_ms)
end
