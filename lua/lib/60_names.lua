--[[ names: the per-scope listing of live key names.
  rm:{ns}:keys:<kind>:<scope>:<sid>  zset, score 0, ordered by name
  rm:{ns}:exp:<kind>:<scope>:<sid>   zset, score = expiry time in ms
  rm:{ns}:rev:<kind>:<scope>:<sid>   hash, name -> last revision issued
  The revision hash outlives deletes and expiry, so a re-created key goes on
  from its last revision and a stale expected revision can never match it
  again. Expired names are hidden by readers and dropped, a bounded number
  at a time, by writers.                                                 ]]

local PRUNE_PER_WRITE = 16

local function prune_expired(names_key, expiry_key, now)
  local expired = redis.call('ZRANGEBYSCORE', expiry_key, '-inf', '(' .. int_string(now),
                             'LIMIT', 0, PRUNE_PER_WRITE)
  if #expired > 0 then
    redis.call('ZREM', names_key, unpack(expired))
    redis.call('ZREM', expiry_key, unpack(expired))
  end
end

local function is_expired(expiry_key, name, now)
  local at = redis.call('ZSCORE', expiry_key, name)
  return at ~= false and at ~= nil and tonumber(at) < now
end

-- The next revision for `name`: one past both its last issued and its current
-- (the last issued is never behind the current one unless data was restored
-- by hand, so one HINCRBY does it in the normal case).
local function next_revision(revisions_key, name, current)
  local revision = redis.call('HINCRBY', revisions_key, name, 1)
  if revision <= current then
    revision = current + 1
    redis.call('HSET', revisions_key, name, int_string(revision))
  end
  return revision
end

local function check_expected(name, expected, current)
  if expected ~= nil and expected ~= current then
    fail('REVISION_CONFLICT', 'expected ' .. int_string(expected) .. ' actual ' .. int_string(current)
         .. ' key ' .. show(name))
  end
end

-- The keys and settings one write call shares across its items:
-- w = {c, kind ('value'|'vector'), names, expiry, revisions, feed, seq, config,
--      ttl ('' | 'KEEPTTL' | ms), principal, now}

-- w from the six keys every scope write passes in this order, from KEYS[first]:
-- names zset, expiry zset, revisions hash, feed stream, feed counter, config.
local function scope_writer(keys, first, c, kind, principal)
  local tag = kind_tag(kind)
  return {c = c, kind = kind, principal = principal,
          names = expect_key(keys, first, SCHEMA.names(c, tag)),
          expiry = expect_key(keys, first + 1, SCHEMA.expiry(c, tag)),
          revisions = expect_key(keys, first + 2, SCHEMA.revisions(c, tag)),
          feed = expect_key(keys, first + 3, SCHEMA.feed(c)),
          seq = expect_key(keys, first + 4, SCHEMA.sequence(c)),
          config = expect_key(keys, first + 5, SCHEMA.config(c))}
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

-- After a write call's entries: trim the feed if they appended events.
local function finish_writes(w)
  if w.first_seq then
    trim_after_writes(w.feed, w.config, w.now, w.first_seq, w.last_seq)
  end
end

-- Give an entry its expiry (absolute ms; nil = none) and list its name.
-- `existed`: the hash was there before this write (a new one has no expiry
-- to clear).
local function list_entry(w, item_key, name, existed, expire_at)
  if expire_at then
    redis.call('PEXPIREAT', item_key, int_string(expire_at))
    redis.call('ZADD', w.expiry, int_string(expire_at), name)
  else
    if existed then
      redis.call('PERSIST', item_key)
    end
    redis.call('ZREM', w.expiry, name) -- also drops a stale entry of an expired name
  end
  redis.call('ZADD', w.names, 0, name)
end

local function record_set(w, name, revision, json)
  local sequence = append_event(w.feed, w.seq, w.c, name, w.kind, 'set', revision, w.principal,
                                w.now, json)
  w.first_seq = w.first_seq or sequence
  w.last_seq = sequence
end

-- Store one entry: its fields plus rev/ts/by, its expiry, its name in the
-- listing and its "set" event (carrying `json` for values). Returns its revision.
local function store_entry(w, item_key, name, current, fields, json)
  local revision = next_revision(w.revisions, name, current)
  fields[#fields + 1] = 'rev'
  fields[#fields + 1] = int_string(revision)
  fields[#fields + 1] = 'ts'
  fields[#fields + 1] = int_string(w.now)
  fields[#fields + 1] = 'by'
  fields[#fields + 1] = w.principal
  redis.call('HSET', item_key, unpack(fields))
  if w.ttl == 'KEEPTTL' then
    redis.call('ZADD', w.names, 0, name)
  else
    list_entry(w, item_key, name, current > 0, w.ttl ~= '' and w.now + w.ttl or nil)
  end
  record_set(w, name, revision, json)
  return revision
end

-- The revision, ts, writer and expiry of an imported entry, from ARGV[base..base+3].
local function imported_args(args, base)
  return {revision = parse_int('revision', args[base], 1, LIMITS.max_revision, 'INVALID_REVISION'),
          ts = parse_int('ts', args[base + 1], 0, LIMITS.max_revision),
          by = check_id('principal', args[base + 2]),
          expire_at = args[base + 3] ~= '' and
                      parse_int('expire_at', args[base + 3], 1, LIMITS.max_revision) or nil}
end

-- Store an imported entry as it was exported: its own revision, ts, writer
-- and expiry, with a "set" event by the importing principal. Nothing is
-- written, and 0 returned, when the target's entry is at that revision or a
-- later one (also a later delete: the revisions hash remembers it) or the
-- expiry has passed; else returns the revision.
local function import_entry(w, item_key, name, item, fields, json)
  local current = tonumber(redis.call('HGET', item_key, 'rev')) or 0
  local issued = tonumber(redis.call('HGET', w.revisions, name)) or 0
  if item.revision <= math.max(current, issued) or (item.expire_at and item.expire_at <= w.now) then
    return 0
  end
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
  record_set(w, name, item.revision, json)
  return item.revision
end

-- Delete one entry if `expected` matches; 1 when deleted, 0 when absent.
local function remove_entry(w, item_key, name, expected)
  local current = tonumber(redis.call('HGET', item_key, 'rev')) or 0
  check_expected(name, expected, current)
  prune_expired(w.names, w.expiry, w.now)
  if current == 0 then
    return 0
  end
  local revision = next_revision(w.revisions, name, current)
  redis.call('DEL', item_key)
  redis.call('ZREM', w.names, name)
  redis.call('ZREM', w.expiry, name)
  local sequence = append_event(w.feed, w.seq, w.c, name, w.kind, 'delete', revision,
                                w.principal, w.now, nil)
  trim_after_writes(w.feed, w.config, w.now, sequence, sequence)
  return 1
end
