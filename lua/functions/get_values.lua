--[[ redismem_get_values: read one or more values.
  KEYS[i] value hash   rm:{<ns>}:val:<scope>:<sid>:<key i>
  ARGV: none (each key name is checked against the schema instead)
  Reply: flat array, two entries per key: canonical JSON (nil when absent or
         expired) and revision (0 when absent or missing, -1 when it is not
         an integer in 1..max_revision: a raw write).
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY                       ]]

local function get_values(keys, args)
  if #keys == 0 or #keys > LIMITS.max_batch then
    fail('INVALID_ARGUMENT', 'pass 1 to ' .. LIMITS.max_batch .. ' value keys, got ' .. #keys)
  end
  if #args > 0 then
    fail('INVALID_ARGUMENT', 'takes no arguments besides its keys, got ' .. #args)
  end
  local known
  for i = 1, #keys do
    known = check_item_key(keys[i], 'val', known)
  end
  local reply = {}
  for i = 1, #keys do
    local found = redis.call('HMGET', keys[i], 'v', 'rev')
    reply[2 * i - 1] = found[1]
    local revision = tonumber(found[2]) or 0
    if revision ~= 0 and (revision < 1 or revision > LIMITS.max_revision
                          or revision ~= math.floor(revision)) then
      revision = -1
    end
    reply[2 * i] = revision
  end
  return reply
end

register('redismem_get_values', get_values, true)
