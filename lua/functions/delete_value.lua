--[[ redismem_delete_value: delete a value if its expected revision matches.
  The delete takes a revision of its own, so a re-created key goes on from
  there and an old expected revision never matches it again.
  KEYS[1] value hash      rm:{<ns>}:val:<scope>:<sid>:<key>
  KEYS[2] names zset      rm:{<ns>}:keys:val:<scope>:<sid>
  KEYS[3] expiry zset     rm:{<ns>}:exp:val:<scope>:<sid>
  KEYS[4] revisions hash  rm:{<ns>}:rev:val:<scope>:<sid>
  KEYS[5] feed stream     rm:{<ns>}:feed
  KEYS[6] feed counter    rm:{<ns>}:seq
  KEYS[7] config hash     rm:{<ns>}:cfg
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id  ARGV[4] key
  ARGV[5] expected revision ('' = any)   ARGV[6] principal
  Reply: 1 when a value was deleted, 0 when there was none.
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_REVISION,
          REVISION_CONFLICT
  Feed: one "delete" event when a value was deleted; trims expired events.  ]]

local function delete_value(keys, args)
  count_args(args, 6, 'namespace, scope, scope id, key, expected revision, principal')
  local c = scope_args(args, 1)
  local key = check_key(args[4])
  local expected = parse_expected(args[5])
  local principal = check_id('principal', args[6])
  expect_keys(keys, 7)
  local value_key = expect_key(keys, 1, SCHEMA.value(c, key))
  local names_key = expect_key(keys, 2, SCHEMA.names(c, 'val'))
  local expiry_key = expect_key(keys, 3, SCHEMA.expiry(c, 'val'))
  local revisions_key = expect_key(keys, 4, SCHEMA.revisions(c, 'val'))
  local feed_key = expect_key(keys, 5, SCHEMA.feed(c))
  local seq_key = expect_key(keys, 6, SCHEMA.sequence(c))
  local config_key = expect_key(keys, 7, SCHEMA.config(c))

  local current = tonumber(redis.call('HGET', value_key, 'rev')) or 0
  if expected ~= nil and expected ~= current then
    fail('REVISION_CONFLICT', 'expected ' .. int_string(expected) .. ' actual ' .. int_string(current)
         .. ' key ' .. show(key))
  end
  local now = now_ms()
  prune_expired(names_key, expiry_key, now)
  if current == 0 then
    return 0
  end
  local revision = next_revision(revisions_key, key, current)
  redis.call('DEL', value_key)
  redis.call('ZREM', names_key, key)
  redis.call('ZREM', expiry_key, key)
  append_event(feed_key, seq_key, c, key, 'value', 'delete', revision, principal, now, nil)
  trim_feed(feed_key, config_key, now, LIMITS.trim_per_write)
  return 1
end

register('redismem_delete_value', delete_value)
