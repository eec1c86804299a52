--[[ turns: one holder at a time per session or workflow scope, each turn
  with a fencing token.
  rm:{ns}:turn:<scope>:<sid>            hash: token (the last issued; never
      deleted, so tokens only increase), holder, by (the holder's
      principal), exp (ms), ticket (the last waiter ticket issued) and
      w:<waiter> = the lease (ms) of each queued waiter
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
  release or expire.
  Fencing: a scope write may carry the token of the writer's turn (ARGV;
  '' = none). check_fence refuses it (STALE_TURN), before anything is
  written, unless it is the scope's latest token: a holder whose turn
  lapsed and was taken can no longer write over its successor. Writes
  without a token are not fenced.                                          ]]

local TURN_SCOPES = {session = true, workflow = true}
local WAKE_KEEP_MS = 60000
local PRUNE_WAITERS = 64

-- t from ARGV[1..5] (namespace, scope, scope id, principal, holder) and
-- KEYS[1] (the turn hash), KEYS[2] (the waiters zset) when `queued`.
local function turn_call(keys, args, queued)
  local c = scope_args(args, 1)
  if not TURN_SCOPES[c.scope] then
    fail('INVALID_ARGUMENT', 'turns are taken in session and workflow scopes, got ' .. show(c.scope))
  end
  local t = {c = c, principal = check_id('principal', args[4]), holder = check_id('holder', args[5])}
  t.key = expect_key(keys, 1, SCHEMA.turn(c))
  if queued then
    t.queue = expect_key(keys, 2, SCHEMA.turn_queue(c))
  end
  return t
end

-- A stored count of turn hash `key`: 0 when absent, TURN_CORRUPT when it
-- is not an integer (a raw write).
local function turn_count(key, field, raw)
  if raw == false or raw == nil then
    return 0
  end
  if not string.find(raw, '^%d+$') or #raw > 16 or tonumber(raw) > LIMITS.max_revision then
    fail('TURN_CORRUPT', 'field ' .. field .. ' of ' .. show(key) .. ' holds ' .. show(raw)
         .. ', not a count (a raw write; an operator deletes the field)')
  end
  return tonumber(raw)
end

-- Refuse a write that carries turn token `text` ('' = none) unless it is
-- the latest token of the turn hash `key` of scope `what` (reads only).
local function check_fence(key, what, text)
  if text == '' then
    return
  end
  local token = parse_int('turn token', text, 1, LIMITS.max_revision)
  local current = turn_count(key, 'token', redis.call('HGET', key, 'token'))
  if token < current then
    fail('STALE_TURN', 'turn token ' .. int_string(token) .. ' is stale: ' .. what
         .. ' is at token ' .. int_string(current) .. ' (a later turn began)')
  elseif token > current then
    fail('STALE_TURN', 'turn token ' .. int_string(token) .. ' was never issued: ' .. what
         .. ' is at token ' .. int_string(current) .. ' (its turn state was lost)')
  end
end

-- Read the turn: t.token, t.held_by (nil when nobody), t.by, t.exp, t.ticket.
local function read_turn(t)
  local raw = redis.call('HMGET', t.key, 'token', 'holder', 'by', 'exp', 'ticket')
  t.token = turn_count(t.key, 'token', raw[1])
  t.held_by = raw[2] or nil
  t.by = raw[3] or ''
  t.exp = turn_count(t.key, 'exp', raw[4])
  t.ticket = turn_count(t.key, 'ticket', raw[5])
end

-- Whether the turn is held by someone at `now`.
local function turn_held(t, now)
  return t.held_by ~= nil and t.exp > now
end

-- The feed writer of a turn call: w.c, w.kind, w.principal as plan_event
-- needs them, the counters from KEYS[first], KEYS[first + 1] and the
-- principal's key KEYS[first + 2].
local function turn_writer(t, keys, first)
  local w = {c = t.c, kind = 'turn', principal = t.principal,
             seq = expect_key(keys, first, SCHEMA.sequence(t.c)),
             feed_size = expect_key(keys, first + 1, SCHEMA.feed_size(t.c)),
             feed = SCHEMA.feed(t.c)}
  expect_who(keys, first + 2, t.c, t.principal)
  w.settings = write_settings(SCHEMA.config(t.c))
  return w
end

-- The first queued waiter whose lease has not passed (or nil), the lapsed
-- waiters before it (at most PRUNE_WAITERS; drop_waiters removes them once
-- the call writes) and when its lease ends. Reads only.
local function first_waiter(t, now)
  local lapsed = {}
  local heads = redis.call('ZRANGE', t.queue, 0, PRUNE_WAITERS - 1)
  for _, head in ipairs(heads) do
    local lease = tonumber(redis.call('HGET', t.key, 'w:' .. head))
    if lease and lease > now then
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

-- Wake the first live waiter, if any (the turn has just become free);
-- returns when its lease ends (ms), or nil.
local function wake_first(t, now)
  local head, lapsed, lease = first_waiter(t, now)
  drop_waiters(t, lapsed)
  if head then
    local wake = SCHEMA.turn_wake(t.c, head)
    redis.call('LPUSH', wake, '1')
    redis.call('PEXPIRE', wake, WAKE_KEEP_MS)
  end
  return lease
end

-- A turn's time to live, or a waiter's lease, in ms.
local function parse_turn_ms(what, text)
  return parse_int(what .. ' in milliseconds', text, LIMITS.min_turn_ms, LIMITS.max_turn_ms)
end
