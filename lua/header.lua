#!lua name=redismem
--[[ redismem: the Redis Functions library behind redismem.
  Assembled by redismem/lua_source.py from header.lua, lib/*.lua (helpers, in
  name order) and functions/*.lua (one registered function each, in name
  order). Top-level locals are shared by every function of the library.
  Errors are replies of the form `CODE message`; redismem.errors has one
  exception class per CODE.                                                ]]
