--[[ redismem_set_config: change namespace settings, all or none.
  KEYS[1] config hash   rm:{<ns>}:cfg
  ARGV[1] namespace
  ARGV[2i] field i (see lib/40_config.lua)
  ARGV[2i+1] value i: an integer, or one of the field's choices
  Reply: flat array of the field, stored value (string) pairs, in order.
  Errors: INVALID_ARGUMENT, INVALID_ID                                    ]]

local function setting_value(field, text)
  local spec = CONFIG_FIELDS[field]
  if not spec then
    fail('INVALID_ARGUMENT', 'unknown setting ' .. show(field))
  end
  if not spec.choices then
    return int_string(parse_int(field, text, spec.low, spec.high))
  end
  if not spec.choices[text] then
    local names = {}
    for name in pairs(spec.choices) do
      names[#names + 1] = name
    end
    table.sort(names)
    fail('INVALID_ARGUMENT', field .. ' must be one of ' .. table.concat(names, ', ')
         .. ', got ' .. show(text))
  end
  return text
end

local function set_config(keys, args)
  count_args(args, 3, 'namespace, then field, value')
  local c = {ns = check_id('namespace', args[1])}
  local count = item_count(args, 1, 2, 'field, value')
  local pairs_out = {}
  for i = 1, count do
    local field = args[2 * i]
    pairs_out[#pairs_out + 1] = field
    pairs_out[#pairs_out + 1] = setting_value(field, args[2 * i + 1])
  end
  expect_keys(keys, 1)
  local config_key = expect_key(keys, 1, SCHEMA.config(c))
  redis.call('HSET', config_key, unpack(pairs_out))
  return pairs_out
end

register('redismem_set_config', set_config)
