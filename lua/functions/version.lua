--[[ redismem_version: the library's integer version, bumped with every change
  to any Lua file. redismem/functions.py reads LIBRARY_VERSION from this file.
  KEYS: none   ARGV: none   Reply: integer
  Errors: INVALID_ARGUMENT (a key or an argument given)                   ]]

local LIBRARY_VERSION = 37

register('redismem_version', function(keys, args)
  if #keys > 0 then
    fail('INVALID_ARGUMENT', 'redismem_version takes no keys, got ' .. #keys)
  end
  count_args(args, 0, 'none', 0)
  return LIBRARY_VERSION
end, true)
