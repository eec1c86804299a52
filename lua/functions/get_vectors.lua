--[[ redismem_get_vectors: read one or more vectors.
  KEYS[i] vector hash   rm:{<ns>}:vec:<scope>:<sid>:<key i>
  ARGV: none (each key name is checked against the schema instead)
  Reply: flat array, three entries per key: embedding (float32 bytes, nil
         when absent or expired), metadata JSON (nil when absent) and
         revision (0 when absent).
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY                       ]]

local function get_vectors(keys, args)
  if #keys == 0 or #keys > LIMITS.max_batch then
    fail('INVALID_ARGUMENT', 'pass 1 to ' .. LIMITS.max_batch .. ' vector keys, got ' .. #keys)
  end
  if #args > 0 then
    fail('INVALID_ARGUMENT', 'takes no arguments besides its keys, got ' .. #args)
  end
  local known
  for i = 1, #keys do
    known = check_item_key(keys[i], 'vec', known)
  end
  local reply = {}
  for i = 1, #keys do
    local found = redis.call('HMGET', keys[i], 'emb', 'meta', 'rev')
    reply[3 * i - 2] = found[1]
    reply[3 * i - 1] = found[2]
    reply[3 * i] = tonumber(found[3]) or 0
  end
  return reply
end

register('redismem_get_vectors', get_vectors, true)
