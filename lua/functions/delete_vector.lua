--[[ redismem_delete_vector: delete a vector if its expected revision matches.
  KEYS[1] vector hash     rm:{<ns>}:vec:<scope>:<sid>:<key>
  KEYS[2] names zset      rm:{<ns>}:keys:vec:<scope>:<sid>
  KEYS[3] expiry zset     rm:{<ns>}:exp:vec:<scope>:<sid>
  KEYS[4] revisions hash  rm:{<ns>}:rev:vec:<scope>:<sid>
  KEYS[5] feed counter    rm:{<ns>}:seq
  KEYS[6] feed size       rm:{<ns>}:feedsz
  KEYS[7] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  KEYS[8] dimensions hash rm:{<ns>}:vdims:<scope>:<sid>
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id  ARGV[4] key
  ARGV[5] expected revision ('' = any)   ARGV[6] principal
  ARGV[7] request id ('' = none; lib/55_requests.lua)
  Reply: (the kept reply when the request id was applied already) 1 when a vector was deleted, 0 when there was none.
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_REVISION,
          REVISION_CONFLICT, REVISION_LIMIT, FEED_CORRUPT
  Feed: one "delete" event (kind vector) when a vector was deleted.      ]]

local function delete_vector(keys, args)
  count_args(args, 7, 'namespace, scope, scope id, key, expected revision, principal, request id', 7)
  local c = scope_args(args, 1)
  local key = check_key(args[4])
  local expected = parse_expected(args[5])
  local principal = check_id('principal', args[6])
  local request = check_request_id(args[7])
  expect_keys(keys, 8)
  local vector_key = expect_key(keys, 1, SCHEMA.vector(c, key))
  local w = scope_writer(keys, 2, c, 'vector', principal, request)
  local dims_key = expect_key(keys, 8, SCHEMA.dims(c))
  local dim = tonumber(redis.call('HGET', vector_key, '_dim'))
  return remove_entry(w, 'delete_vector', vector_key, key, expected, function()
    if dim then
      count_dims(dims_key, {[dim] = -1})
    end
  end)
end

register('redismem_delete_vector', delete_vector)
