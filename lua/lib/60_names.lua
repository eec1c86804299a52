--[[ names: the per-scope listing of live key names, revisions, and the
  two-phase write of scope entries (values and vectors).
  rm:{ns}:keys:<kind>:<scope>:<sid>  zset, score 0, ordered by name
  rm:{ns}:exp:<kind>:<scope>:<sid>   zset, score = expiry time in ms
  rm:{ns}:rev:<kind>:<scope>:<sid>   hash, name -> last revision issued,
                                     for names whose entry is gone or may
                                     expire (a live entry without expiry
                                     holds its own revision)
  A delete records the revision it issues, and a write of an entry with an
  expiry records its revision, so the revision hash outlives deletes and
  expiry: a re-created key goes on from its last revision and a stale
  expected revision can never match it again. A change takes one past both the last issued and the current
  revision; past max_revision it is refused (REVISION_LIMIT), so revisions
  always increase. Expired names are hidden by readers and dropped, a
  bounded number at a time, by writers. Invariant: a name is in the expiry
  zset exactly when its entry has an expiry, at that time, so a name is
  listed exactly when its entry can be read.
  A write call: scope_writer (keys, settings), per item the reads and
  checks (current revision, plan_revision, check_expected), begin_writes
  (clock, feed counters), plan_event per change, then publish (the first
  write, which also trims the feed), then the entries (store_entry each,
  then finish_entries).                                                    ]]

local PRUNE_PER_WRITE = 16

local function is_expired(expiry_key, name, now)
  local at = redis.call('ZSCORE', expiry_key, name)
  return at ~= false and at ~= nil and tonumber(at) < now
end

local function check_expected(name, expected, current)
  if expected ~= nil and expected ~= current then
    fail('REVISION_CONFLICT', 'expected ' .. int_string(expected) .. ' actual ' .. int_string(current)
         .. ' key ' .. show(name))
  end
end

-- w from the seven keys every scope write passes in this order, from
-- KEYS[first]: names zset, expiry zset, revisions hash, feed counter, feed
-- size counter, principal key (lib/55_requests.lua), the scope's turn hash
-- (lib/57_fence.lua: a write may carry a turn token); with the feed stream
-- and the namespace's write settings (built from the namespace, see
-- lib/30_keys.lua). `request`: the call's request id, or nil; `fence`:
-- the call's turn token text ('' or nil = none; lib/57_fence.lua).
local function scope_writer(keys, first, c, kind, principal, request, fence)
  local tag = kind_tag(kind)
  local w = {c = c, kind = kind, tag = tag, principal = principal, request = request,
             fence = fence or '',
             names = expect_key(keys, first, SCHEMA.names(c, tag)),
             expiry = expect_key(keys, first + 1, SCHEMA.expiry(c, tag)),
             revisions = expect_key(keys, first + 2, SCHEMA.revisions(c, tag)),
             seq = expect_key(keys, first + 3, SCHEMA.sequence(c)),
             feed_size = expect_key(keys, first + 4, SCHEMA.feed_size(c)),
             feed = SCHEMA.feed(c)}
  w.who = expect_who(keys, first + 5, c, principal)
  w.turn = expect_key(keys, first + 6, SCHEMA.turn(c))
  w.settings = write_settings(SCHEMA.config(c))
  return w
end

-- Read the last issued revisions of a batch's `count` names, ARGV[first],
-- ARGV[first + step], ..., in one HMGET (before plan_revision; the names
-- may still be unchecked texts: this only reads).
local function prefetch_issued(w, args, first, step, count)
  w.issued = {}
  for from = 0, count - 1, 1000 do
    local names = {}
    for i = from, math.min(count, from + 1000) - 1 do
      names[#names + 1] = args[first + step * i]
    end
    local found = redis.call('HMGET', w.revisions, unpack(names))
    for i, name in ipairs(names) do
      w.issued[name] = tonumber(found[i]) or 0
    end
  end
end

-- The revision the next change of `name` takes (read before any write).
local function plan_revision(w, name, current)
  local issued = w.issued and w.issued[name]
  if issued == nil then
    issued = tonumber(redis.call('HGET', w.revisions, name)) or 0
  end
  local revision = math.max(issued, current) + 1
  if revision > LIMITS.max_revision then
    fail('REVISION_LIMIT', 'key ' .. show(name) .. ' is at revision ' .. int_string(revision - 1)
         .. ', the largest there is: it cannot change again')
  end
  return revision
end

-- A batch item's key, checked, and not already in this call (`seen`).
local function batch_key(seen, text)
  local key = check_key(text)
  if seen[key] then
    fail('INVALID_ARGUMENT', 'key ' .. show(key) .. ' appears twice in one call')
  end
  seen[key] = true
  return key
end

-- After the reads and checks: the clock and the feed counters.
local function begin_writes(w)
  w.now = now_ms()
  prepare_feed(w)
end

-- Publish the planned events, register the scope (rm:{ns}:scopes, member
-- <val|vec>:<scope>:<sid>: how a credential without SCAN finds what to
-- export), then drop up to PRUNE_PER_WRITE expired names.
local function start_writing(w)
  publish(w)
  redis.call('ZADD', SCHEMA.scopes(w.c), 0, w.tag .. ':' .. w.c.scope .. ':' .. w.c.sid)
  local expired = redis.call('ZRANGEBYSCORE', w.expiry, '-inf', '(' .. int_string(w.now),
                             'LIMIT', 0, PRUNE_PER_WRITE)
  if #expired > 0 then
    redis.call('ZREM', w.names, unpack(expired))
    redis.call('ZREM', w.expiry, unpack(expired))
  end
end

-- The writes list_entry and store_entry queue for finish_entries.
local function pending_writes(w)
  if not w.pending then
    w.pending = {revisions = {}, unexpired = {}, listed = {}}
  end
  return w.pending
end

-- Give an entry its expiry (absolute ms; nil = none) and queue its name's
-- listing for finish_entries. `existed`: the hash was there before this
-- write (a new one has no expiry to clear).
local function list_entry(w, item_key, name, existed, expire_at)
  local pending = pending_writes(w)
  if expire_at then
    redis.call('PEXPIREAT', item_key, int_string(expire_at))
    redis.call('ZADD', w.expiry, int_string(expire_at), name)
  else
    if existed then
      redis.call('PERSIST', item_key)
    end
    pending.unexpired[#pending.unexpired + 1] = name -- also drops a stale entry of an expired name
  end
  pending.listed[#pending.listed + 1] = 0
  pending.listed[#pending.listed + 1] = name
end

-- Write one entry: `fields` plus rev/ts/by, its expiry by w.ttl ('' none,
-- 'KEEPTTL' the entry's own, else ms from now; a new entry has none to
-- keep); its listing (and, when it may expire, its revision) are queued
-- for finish_entries.
local function store_entry(w, item_key, name, existed, revision, fields)
  fields[#fields + 1] = 'rev'
  fields[#fields + 1] = int_string(revision)
  fields[#fields + 1] = 'ts'
  fields[#fields + 1] = int_string(w.now)
  fields[#fields + 1] = 'by'
  fields[#fields + 1] = w.principal
  redis.call('HSET', item_key, unpack(fields))
  local pending = pending_writes(w)
  if w.ttl == 'KEEPTTL' and existed then
    -- the expiry and its zset entry stay as they are
    pending.listed[#pending.listed + 1] = 0
    pending.listed[#pending.listed + 1] = name
  else
    local ttl = tonumber(w.ttl)
    list_entry(w, item_key, name, existed, ttl and w.now + ttl or nil)
    if not ttl then
      return -- the entry holds its revision until a delete records it
    end
  end
  -- an entry that may expire takes its revision with it: record it now
  pending.revisions[#pending.revisions + 1] = name
  pending.revisions[#pending.revisions + 1] = int_string(revision)
end

-- After the last store_entry or list_entry of a call: the revisions,
-- expiry removals and listings they queued, each as one command per 1000
-- names.
local function finish_entries(w)
  local pending = w.pending
  if not pending then
    return
  end
  w.pending = nil
  for _, write in ipairs({{'HSET', w.revisions, pending.revisions, 2},
                          {'ZADD', w.names, pending.listed, 2},
                          {'ZREM', w.expiry, pending.unexpired, 1}}) do
    local command, key, args, width = write[1], write[2], write[3], write[4]
    for first = 1, #args, 1000 * width do
      redis.call(command, key, unpack(args, first, math.min(#args, first + 1000 * width - 1)))
    end
  end
end

-- The revision, ts, writer and expiry of an imported entry, from ARGV[base..base+3].
local function imported_args(args, base)
  return {revision = parse_int('revision', args[base], 1, LIMITS.max_revision, 'INVALID_REVISION'),
          ts = parse_int('ts', args[base + 1], 0, LIMITS.max_revision),
          by = check_id('principal', args[base + 2]),
          expire_at = args[base + 3] ~= '' and
                      parse_int('expire_at', args[base + 3], 1, LIMITS.max_revision) or nil}
end

-- Whether an imported entry is written (read before any write): not when
-- the target's entry is at that revision or a later one (also a later
-- delete: the revisions hash remembers it), nor when its expiry has passed.
local function import_wanted(w, item_key, name, item)
  local current = tonumber(redis.call('HGET', item_key, 'rev')) or 0
  local issued = tonumber(redis.call('HGET', w.revisions, name)) or 0
  return item.revision > math.max(current, issued)
         and not (item.expire_at and item.expire_at <= w.now)
end

-- Write an imported entry as it was exported: its own revision, ts, writer
-- and expiry.
local function import_entry(w, item_key, name, item, fields)
  redis.call('HSET', w.revisions, name, int_string(item.revision))
  redis.call('DEL', item_key)
  fields[#fields + 1] = 'rev'
  fields[#fields + 1] = int_string(item.revision)
  fields[#fields + 1] = 'ts'
  fields[#fields + 1] = int_string(item.ts)
  fields[#fields + 1] = 'by'
  fields[#fields + 1] = item.by
  redis.call('HSET', item_key, unpack(fields))
  list_entry(w, item_key, name, false, item.expire_at)
end

-- Delete one entry if `expected` matches: a whole write call of function
-- `fname`. Returns 1 when deleted, 0 when absent (or the kept reply of the
-- call's request); `removed` runs before the entry goes.
local function remove_entry(w, fname, item_key, name, expected, removed)
  local kept = kept_or_fenced(w, fname)
  if kept then
    return tonumber(kept)
  end
  local current = tonumber(redis.call('HGET', item_key, 'rev')) or 0
  check_expected(name, expected, current)
  local revision = current > 0 and plan_revision(w, name, current)
  begin_writes(w)
  if revision then
    plan_event(w, name, 'delete', revision, nil)
  end
  start_writing(w)
  keep_reply(w, fname, revision and '1' or '0')
  if not revision then
    return 0
  end
  if removed then
    removed()
  end
  redis.call('HSET', w.revisions, name, int_string(revision))
  redis.call('DEL', item_key)
  redis.call('ZREM', w.names, name)
  redis.call('ZREM', w.expiry, name)
  return 1
end
