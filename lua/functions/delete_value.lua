--[[ redismem_delete_value: delete a value if its expected revision matches.
  The delete takes a revision of its own, so a re-created key goes on from
  there and an old expected revision never matches it again.
  KEYS[1] value hash      rm:{<ns>}:val:<scope>:<sid>:<key>
  KEYS[2] names zset      rm:{<ns>}:keys:val:<scope>:<sid>
  KEYS[3] expiry zset     rm:{<ns>}:exp:val:<scope>:<sid>
  KEYS[4] revisions hash  rm:{<ns>}:rev:val:<scope>:<sid>
  KEYS[5] feed counter    rm:{<ns>}:seq
  KEYS[6] feed size       rm:{<ns>}:feedsz
  KEYS[7] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id  ARGV[4] key
  ARGV[5] expected revision ('' = any)   ARGV[6] principal
  ARGV[7] request id ('' = none; lib/55_requests.lua)
  Reply: (the kept reply when the request id was applied already) 1 when a value was deleted, 0 when there was none.
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_REVISION,
          REVISION_CONFLICT, REVISION_LIMIT, FEED_CORRUPT
  Feed: one "delete" event when a value was deleted; trims the feed's head. ]]

local function delete_value(keys, args)
  count_args(args, 7, 'namespace, scope, scope id, key, expected revision, principal, request id', 7)
  local c = scope_args(args, 1)
  local key = check_key(args[4])
  local expected = parse_expected(args[5])
  local principal = check_id('principal', args[6])
  local request = check_request_id(args[7])
  expect_keys(keys, 7)
  local value_key = expect_key(keys, 1, SCHEMA.value(c, key))
  local w = scope_writer(keys, 2, c, 'value', principal, request)
  return remove_entry(w, 'delete_value', value_key, key, expected)
end

register('redismem_delete_value', delete_value)
