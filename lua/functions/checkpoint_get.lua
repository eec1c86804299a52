--[[ redismem_checkpoint_get: one LangGraph checkpoint with its pending
  writes and the channel values it names, in one read: the given id's, or
  the newest of the thread's namespace (lib/85_checkpoints.lua). The
  checkpoint's hash rm:{<ns>}:lgt:<thread>:<cns>:c:<id> is read without
  being declared (its id may be found here): it shares the declared keys'
  hash tag, so their slot.
  KEYS[1] ids zset          rm:{<ns>}:lgt:<thread>:<cns>:ids
  KEYS[2] blobs hash        rm:{<ns>}:lgt:<thread>:<cns>:blobs
  ARGV[1] namespace  ARGV[2] thread id  ARGV[3] checkpoint namespace
          (encoded)  ARGV[4] checkpoint id ('' = the newest)
  Reply: {} when there is no such checkpoint; else {checkpoint id, the
         hash's fields and values (flat), the values of the blob fields
         its bl field lists, in order (false for one not stored)}.
  Errors: INVALID_ARGUMENT, INVALID_ID                                   ]]

local function checkpoint_get(keys, args)
  count_args(args, 4, 'namespace, thread id, checkpoint namespace, checkpoint id', 4)
  local c = {ns = check_id('namespace', args[1])}
  local t = {c = c, thread = check_id('thread id', args[2])}
  CP.decode('the checkpoint namespace', args[3], true)
  t.cns = args[3]
  expect_keys(keys, 2)
  local ids = expect_key(keys, 1, CP.keys.ids(t))
  local blobs = expect_key(keys, 2, CP.keys.blobs(t))
  local id = args[4]
  if id == '' then
    id = redis.call('ZRANGE', ids, -1, -1)[1]
    if not id then
      return {}
    end
  else
    check_id('checkpoint id', id)
  end
  local stored = redis.call('HGETALL', CP.keys.checkpoint(t, id))
  local fields, named = {}, nil
  for i = 1, #stored - 1, 2 do
    if stored[i] == 'cp' then
      fields.cp = true
    elseif stored[i] == 'bl' then
      named = stored[i + 1]
    end
  end
  if not fields.cp then
    return {}
  end
  local wanted = {}
  for field in string.gmatch(named or '', '[^\n]+') do
    wanted[#wanted + 1] = field
  end
  local values = #wanted > 0 and redis.call('HMGET', blobs, unpack(wanted)) or {}
  return {id, stored, values}
end

register('redismem_checkpoint_get', checkpoint_get, true)
