--[[ redismem_get_values: read one or more values of one scope.
  KEYS[i] value hash   rm:{<ns>}:val:<scope>:<sid>:<key i>
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id  ARGV[3+i] key i
  Reply: flat array, two entries per key: canonical JSON (nil when absent or
         expired) and revision (0 when absent).
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY                       ]]

local function get_values(keys, args)
  count_args(args, 4, 'namespace, scope, scope id, then keys')
  local c = scope_args(args, 1)
  local count = #args - 3
  if count > LIMITS.max_batch then
    fail('INVALID_ARGUMENT', 'at most ' .. LIMITS.max_batch .. ' keys per call, got ' .. count)
  end
  expect_keys(keys, count)
  for i = 1, count do
    expect_key(keys, i, SCHEMA.value(c, check_key(args[3 + i])))
  end
  local reply = {}
  for i = 1, count do
    local found = redis.call('HMGET', keys[i], 'v', 'rev')
    reply[2 * i - 1] = found[1]
    reply[2 * i] = tonumber(found[2]) or 0
  end
  return reply
end

register('redismem_get_values', get_values, true)
