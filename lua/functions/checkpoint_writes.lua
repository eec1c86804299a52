--[[ redismem_checkpoint_writes: store the pending writes of one task
  against a checkpoint and announce them in the feed (kind checkpoint,
  action writes), all or nothing. LangGraph may send them before the
  checkpoint's own put has landed (from another thread): the checkpoint id
  is listed among those with writes, so a delete finds them. A write of
  index >= 0 that the checkpoint holds already is kept as it is (a retried
  task writes once); a special write (negative index: error, interrupt)
  replaces it.
  KEYS[1] checkpoint hash   rm:{<ns>}:lgt:<thread>:<cns>:c:<id>
  KEYS[2] written ids zset  rm:{<ns>}:lgt:<thread>:<cns>:wids
  KEYS[3] namespaces zset   rm:{<ns>}:lgt:<thread>:nss
  KEYS[4] feed counter      rm:{<ns>}:seq
  KEYS[5] feed size         rm:{<ns>}:feedsz
  KEYS[6] principal key     rm:{<ns>}:who:<principal>:<bucket>
  KEYS[7] turn hash         rm:{<ns>}:turn:session:<thread>
  ARGV[1] namespace  ARGV[2] thread id  ARGV[3] checkpoint namespace
          (encoded)  ARGV[4] principal  ARGV[5] turn token ('' = none)
  ARGV[6] checkpoint id  ARGV[7] task id (encoded)  ARGV[8] task path
  ARGV[9..] triples: index (an integer), channel, value (typed)
  Reply: the number of writes stored.
  Errors: INVALID_ARGUMENT, INVALID_ID,
          REQUEST_TOO_LARGE, FEED_CORRUPT, STALE_TURN, TURN_CORRUPT     ]]

local function checkpoint_writes(keys, args)
  count_args(args, 8, 'namespace, thread id, checkpoint namespace, principal, turn token, '
             .. 'checkpoint id, task id, task path, then writes')
  item_count(args, 8, 3, 'write index, channel, value', true)
  local t, w = CP.call(keys, args, 6)
  local id = check_id('checkpoint id', args[6])
  CP.decode('the task id', args[7])
  local task = args[7]
  if #args[8] > LIMITS.max_key_bytes then
    fail('INVALID_ARGUMENT', 'the task path is over ' .. LIMITS.max_key_bytes .. ' bytes')
  end
  expect_keys(keys, 7)
  local hash = expect_key(keys, 1, CP.keys.checkpoint(t, id))
  local written = expect_key(keys, 2, CP.keys.written(t))
  local namespaces = expect_key(keys, 3, CP.keys.namespaces(t))
  expect_key(keys, 4, w.seq)
  expect_key(keys, 5, w.feed_size)
  local fields, seen = {}, {}
  for i = 9, #args, 3 do
    local index = parse_int('a write index', args[i], -LIMITS.max_revision, LIMITS.max_revision)
    if #args[i + 1] == 0 or #args[i + 1] > LIMITS.max_key_bytes then
      fail('INVALID_ARGUMENT', 'a channel is 1 to ' .. LIMITS.max_key_bytes .. ' bytes, got ' .. show(args[i + 1]))
    end
    CP.typed('the write to ' .. show(args[i + 1]), args[i + 2])
    local slot = task .. ':' .. int_string(index)
    if seen[slot] then
      fail('INVALID_ARGUMENT', 'write index ' .. int_string(index) .. ' is given twice')
    end
    seen[slot] = true
    fields[#fields + 1] = {slot, index, args[i + 1], args[i + 2]}
  end
  local kept = {}
  for _, f in ipairs(fields) do
    if f[2] < 0 or redis.call('HEXISTS', hash, 'w:' .. f[1]) == 0 then
      kept[#kept + 1] = f
    end
  end
  if #kept == 0 then
    return 0
  end
  CP.announce(t, w, 'writes', {id})
  local values = {}
  for _, f in ipairs(kept) do
    values[#values + 1] = 'w:' .. f[1]
    values[#values + 1] = f[4]
    values[#values + 1] = 'c:' .. f[1]
    values[#values + 1] = f[3]
    values[#values + 1] = 'p:' .. f[1]
    values[#values + 1] = args[8]
  end
  redis.call('HSET', hash, unpack(values))
  redis.call('ZADD', written, 0, id)
  redis.call('ZADD', namespaces, 0, t.cns)
  return #kept
end

register('redismem_checkpoint_writes', checkpoint_writes)
