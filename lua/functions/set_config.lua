--[[ redismem_set_config: change one namespace setting.
  KEYS[1] config hash   rm:{<ns>}:cfg
  ARGV[1] namespace  ARGV[2] field (see lib/40_config.lua)
  ARGV[3] an integer, or one of the field's choices
  Reply: the stored value (as a string).
  Errors: INVALID_ARGUMENT, INVALID_ID                                    ]]

local function set_config(keys, args)
  count_args(args, 3, 'namespace, field, value')
  local c = {ns = check_id('namespace', args[1])}
  local spec = CONFIG_FIELDS[args[2]]
  if not spec then
    fail('INVALID_ARGUMENT', 'unknown setting ' .. show(args[2]))
  end
  local value
  if spec.choices then
    if not spec.choices[args[3]] then
      local names = {}
      for name in pairs(spec.choices) do
        names[#names + 1] = name
      end
      table.sort(names)
      fail('INVALID_ARGUMENT', args[2] .. ' must be one of ' .. table.concat(names, ', ')
           .. ', got ' .. show(args[3]))
    end
    value = args[3]
  else
    value = int_string(parse_int(args[2], args[3], spec.low, spec.high))
  end
  expect_keys(keys, 1)
  local config_key = expect_key(keys, 1, SCHEMA.config(c))
  redis.call('HSET', config_key, args[2], value)
  return value
end

register('redismem_set_config', set_config)
