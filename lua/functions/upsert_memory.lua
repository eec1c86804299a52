--[[ redismem_upsert_memory: create or replace a long-term memory atomically.
  KEYS[1] memory hash   rm:{<ns>}:ltm:<user>:<id>   (user '_' = shared)
  KEYS[2] user zset     rm:{<ns>}:ltmz:<user>
  KEYS[3] dimension     rm:{<ns>}:ltmdim
  ARGV[1] namespace  ARGV[2] user ('_' = shared)  ARGV[3] memory id
  ARGV[4] record: canonical JSON of LongTermMemory (id, user_id, scope,
          data, text, tags, metadata, created_at, updated_at)
  ARGV[5] embedding: float32 little-endian bytes, '' = none
  ARGV[6] optional: '' (an upsert) keeps a stored record whose updated_at
          is later; 'newer' (an import) keeps one whose updated_at is the
          same or later
  ARGV[7] optional: the expected updated_at of the stored record ('' =
          any, '0' = only when absent): compare-and-set
  Reply: 1 when created, 0 when replaced, -1 when the stored record was
         kept (it is newer).
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_MEMORY, REQUEST_TOO_LARGE,
          INVALID_VECTOR (also a dimension other than the namespace's),
          INVALID_REVISION (ARGV[7] not a count), REVISION_CONFLICT (the
          stored updated_at is not the expected one)                        ]]

local function upsert_memory(keys, args)
  count_args(args, 5, 'namespace, user, memory id, record, embedding[, newer[, expected]]', 7)
  local c = {ns = check_id('namespace', args[1])}
  local user = check_user(args[2])
  local id = check_key(args[3])
  expect_keys(keys, 3)
  local memory_key = expect_key(keys, 1, SCHEMA.memory(c, user, id))
  local user_key = expect_key(keys, 2, SCHEMA.memories(c, user))
  local dim_key = expect_key(keys, 3, SCHEMA.memory_dim(c))
  local settings = write_settings(SCHEMA.config(c))
  check_request(keys, args, settings.max_call_bytes)
  local m = check_memory(args[4], user, id, settings.max_value_bytes)
  if args[6] ~= nil and args[6] ~= '' and args[6] ~= 'newer' then
    fail('INVALID_ARGUMENT', "ARGV[6] must be 'newer' or empty, got " .. show(args[6]))
  end
  local expected = parse_expected(args[7] or '')
  local dim = nil
  if args[5] ~= '' then
    dim = check_embedding(args[5])
    local fixed = tonumber(redis.call('GET', dim_key))
    if fixed and fixed ~= dim then
      fail('INVALID_VECTOR', 'embedding has dimension ' .. dim .. '; this namespace stores memory '
           .. 'embeddings of dimension ' .. fixed)
    end
  end

  -- a stored updated_at that is not a number (a raw write) counts as 0:
  -- any record replaces it
  local raw = redis.call('HGET', memory_key, 'upd')
  local stored = raw and (#raw <= 16 and string.find(raw, '^%d+$') and tonumber(raw) or 0)
  check_expected(id, expected, stored or 0)
  if stored and (stored > m.updated_at or (args[6] == 'newer' and stored == m.updated_at)) then
    return -1
  end
  local created = redis.call('DEL', memory_key) == 0 and 1 or 0
  local fields = {'rec', args[4], 'text', m.text, '_u', to_hex(user), '_s', to_hex(m.scope),
                  'upd', int_string(m.updated_at)}
  if dim then
    redis.call('SET', dim_key, int_string(dim))
    fields[#fields + 1] = 'emb'
    fields[#fields + 1] = args[5]
    fields[#fields + 1] = '_dim'
    fields[#fields + 1] = int_string(dim)
  end
  redis.call('HSET', memory_key, unpack(fields))
  redis.call('ZADD', user_key, int_string(m.updated_at), id)
  redis.call('ZADD', SCHEMA.memory_users(c), 0, user) -- the users, for export without SCAN
  return created
end

register('redismem_upsert_memory', upsert_memory)
