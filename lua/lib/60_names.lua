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
  if w.ttl == '' then
    if current > 0 then -- a new hash has no expiry to clear
      redis.call('PERSIST', item_key)
    end
    redis.call('ZREM', w.expiry, name) -- also drops a stale entry of an expired name
  elseif w.ttl ~= 'KEEPTTL' then
    redis.call('PEXPIREAT', item_key, int_string(w.now + w.ttl))
    redis.call('ZADD', w.expiry, int_string(w.now + w.ttl), name)
  end
  redis.call('ZADD', w.names, 0, name)
  local sequence = append_event(w.feed, w.seq, w.c, name, w.kind, 'set', revision, w.principal,
                                w.now, json)
  w.first_seq = w.first_seq or sequence
  w.last_seq = sequence
  return revision
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
