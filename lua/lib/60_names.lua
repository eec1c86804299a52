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

-- The next revision for `name`: one past both its last issued and its current.
local function next_revision(revisions_key, name, current)
  local last = tonumber(redis.call('HGET', revisions_key, name)) or 0
  local revision = math.max(last, current) + 1
  redis.call('HSET', revisions_key, name, int_string(revision))
  return revision
end
