--[[ redismem_version: the library's integer version, bumped with every change
  to any Lua file. redismem/functions.py reads LIBRARY_VERSION from this file.
  KEYS: none   ARGV: none   Reply: integer   Errors: none                 ]]

local LIBRARY_VERSION = 31

register('redismem_version', function() return LIBRARY_VERSION end, true)
