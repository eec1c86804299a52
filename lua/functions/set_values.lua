--[[ redismem_set_values: write one or more values of one scope atomically,
  each only if its expected revision matches.
  KEYS[1] names zset      rm:{<ns>}:keys:val:<scope>:<sid>
  KEYS[2] expiry zset     rm:{<ns>}:exp:val:<scope>:<sid>
  KEYS[3] revisions hash  rm:{<ns>}:rev:val:<scope>:<sid>
  KEYS[4] feed stream     rm:{<ns>}:feed
  KEYS[5] feed counter    rm:{<ns>}:seq
  KEYS[6] config hash     rm:{<ns>}:cfg
  KEYS[6+i] value hash    rm:{<ns>}:val:<scope>:<sid>:<key i>
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id
  ARGV[4] ttl: '' = no expiry, 'KEEPTTL' = keep each key's expiry, else ms
  ARGV[5] principal
  ARGV[3+3i] key i   ARGV[4+3i] canonical JSON i   ARGV[5+3i] expected
             revision i ('' = any, '0' = only when absent)
  Reply: array of the new revisions, in item order.
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_JSON,
          VALUE_TOO_LARGE, INVALID_TTL, INVALID_REVISION, REVISION_CONFLICT
  Feed: one "set" event per item, in item order; trims expired events.   ]]

local function set_values(keys, args)
  count_args(args, 8, 'namespace, scope, scope id, ttl, principal, then key, value, expected revision')
  local c = scope_args(args, 1)
  local ttl = parse_ttl(args[4])
  local principal = check_id('principal', args[5])
  local extra = #args - 5
  if extra % 3 ~= 0 then
    fail('INVALID_ARGUMENT', 'items come as key, value, expected revision triples; got ' .. extra .. ' arguments')
  end
  local count = extra / 3
  if count > LIMITS.max_batch then
    fail('INVALID_ARGUMENT', 'at most ' .. LIMITS.max_batch .. ' items per call, got ' .. count)
  end
  expect_keys(keys, 6 + count)
  local names_key = expect_key(keys, 1, SCHEMA.names(c, 'val'))
  local expiry_key = expect_key(keys, 2, SCHEMA.expiry(c, 'val'))
  local revisions_key = expect_key(keys, 3, SCHEMA.revisions(c, 'val'))
  local feed_key = expect_key(keys, 4, SCHEMA.feed(c))
  local seq_key = expect_key(keys, 5, SCHEMA.sequence(c))
  local config_key = expect_key(keys, 6, SCHEMA.config(c))
  local limit = config_get(config_key, 'max_value_bytes')

  local items, seen = {}, {}
  for i = 1, count do
    local base = 3 + 3 * i
    local key = check_key(args[base])
    if seen[key] then
      fail('INVALID_ARGUMENT', 'key ' .. show(key) .. ' appears twice in one call')
    end
    seen[key] = true
    local value_key = expect_key(keys, 6 + i, SCHEMA.value(c, key))
    local json = check_json(args[base + 1], limit)
    local expected = parse_expected(args[base + 2])
    local current = tonumber(redis.call('HGET', value_key, 'rev')) or 0
    if expected ~= nil and expected ~= current then
      fail('REVISION_CONFLICT', 'expected ' .. int_string(expected) .. ' actual ' .. int_string(current)
           .. ' key ' .. show(key))
    end
    items[i] = {key = key, value_key = value_key, json = json, current = current}
  end

  local now = now_ms()
  prune_expired(names_key, expiry_key, now)
  local revisions = {}
  for i, item in ipairs(items) do
    local revision = next_revision(revisions_key, item.key, item.current)
    redis.call('HSET', item.value_key, 'v', item.json, 'rev', int_string(revision),
               'ts', int_string(now), 'by', principal)
    if ttl == '' then
      redis.call('PERSIST', item.value_key)
      redis.call('ZREM', expiry_key, item.key)
    elseif ttl ~= 'KEEPTTL' then
      redis.call('PEXPIREAT', item.value_key, int_string(now + ttl))
      redis.call('ZADD', expiry_key, int_string(now + ttl), item.key)
    end
    redis.call('ZADD', names_key, 0, item.key)
    append_event(feed_key, seq_key, c, item.key, 'value', 'set', revision, principal, now, item.json)
    revisions[i] = revision
  end
  trim_feed(feed_key, config_key, now, LIMITS.trim_per_write * count)
  return revisions
end

register('redismem_set_values', set_values)
