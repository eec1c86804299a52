--[[ redismem_get_config: every namespace setting, defaults filled in.
  KEYS[1] config hash   rm:{<ns>}:cfg
  ARGV[1] namespace
  Reply: flat array of field, value pairs (integers, or strings for word
         settings), fields in name order.
  Errors: INVALID_ARGUMENT, INVALID_ID                                    ]]

local function get_config(keys, args)
  count_args(args, 1, 'namespace', 1)
  local c = {ns = check_id('namespace', args[1])}
  expect_keys(keys, 1)
  local config_key = expect_key(keys, 1, SCHEMA.config(c))
  local fields = {}
  for field in pairs(CONFIG_FIELDS) do
    fields[#fields + 1] = field
  end
  table.sort(fields)
  local reply = {}
  for _, field in ipairs(fields) do
    reply[#reply + 1] = field
    reply[#reply + 1] = config_get(config_key, field)
  end
  return reply
end

register('redismem_get_config', get_config, true)
