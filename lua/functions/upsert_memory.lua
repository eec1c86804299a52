--[[ redismem_upsert_memory: create or replace a long-term memory atomically.
  KEYS[1] memory hash   rm:{<ns>}:ltm:<user>:<id>   (user '_' = shared)
  KEYS[2] user zset     rm:{<ns>}:ltmz:<user>
  KEYS[3] dimension     rm:{<ns>}:ltmdim
  ARGV[1] namespace  ARGV[2] user ('_' = shared)  ARGV[3] memory id
  ARGV[4] record: canonical JSON of LongTermMemory (id, user_id, scope,
          data, text, tags, metadata, created_at, updated_at)
  ARGV[5] embedding: float32 little-endian bytes, '' = none
  ARGV[6] optional: 'newer' keeps a stored record whose updated_at is the
          same or later (an import)
  Reply: 1 when created, 0 when replaced, -1 when kept ('newer').
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_MEMORY, REQUEST_TOO_LARGE,
          INVALID_VECTOR (also a dimension other than the namespace's)     ]]

local function upsert_memory(keys, args)
  count_args(args, 5, 'namespace, user, memory id, record, embedding[, newer]', 6)
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
  local dim = nil
  if args[5] ~= '' then
    dim = check_embedding(args[5])
    local fixed = tonumber(redis.call('GET', dim_key))
    if fixed and fixed ~= dim then
      fail('INVALID_VECTOR', 'embedding has dimension ' .. dim .. '; this namespace stores memory '
           .. 'embeddings of dimension ' .. fixed)
    end
  end

  if args[6] == 'newer' then
    local stored = tonumber(redis.call('HGET', memory_key, 'upd'))
    if stored and stored >= m.updated_at then
      return -1
    end
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
