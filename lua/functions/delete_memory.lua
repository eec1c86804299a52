--[[ redismem_delete_memory: delete a long-term memory.
  KEYS[1] memory hash   rm:{<ns>}:ltm:<user>:<id>
  KEYS[2] user zset     rm:{<ns>}:ltmz:<user>
  ARGV[1] namespace  ARGV[2] user ('_' = shared)  ARGV[3] memory id
  Reply: 1 when deleted, 0 when there was none.
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY                      ]]

local function delete_memory(keys, args)
  count_args(args, 3, 'namespace, user, memory id', 3)
  local c = {ns = check_id('namespace', args[1])}
  local user = check_user(args[2])
  local id = check_key(args[3])
  expect_keys(keys, 2)
  local memory_key = expect_key(keys, 1, SCHEMA.memory(c, user, id))
  local user_key = expect_key(keys, 2, SCHEMA.memories(c, user))
  redis.call('ZREM', user_key, id)
  return redis.call('DEL', memory_key)
end

register('redismem_delete_memory', delete_memory)
