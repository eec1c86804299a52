--[[ redismem_checkpoint_put: store one LangGraph checkpoint, the channel
  values it brings (blobs) and its index entries, announce it in the feed
  (kind checkpoint, action put), all or nothing (lib/85_checkpoints.lua).
  KEYS[1] checkpoint hash   rm:{<ns>}:lgt:<thread>:<cns>:c:<id>
  KEYS[2] ids zset          rm:{<ns>}:lgt:<thread>:<cns>:ids
  KEYS[3] blobs hash        rm:{<ns>}:lgt:<thread>:<cns>:blobs
  KEYS[4] namespaces zset   rm:{<ns>}:lgt:<thread>:nss
  KEYS[5] threads zset      rm:{<ns>}:lgthreads
  KEYS[6] feed counter      rm:{<ns>}:seq
  KEYS[7] feed size         rm:{<ns>}:feedsz
  KEYS[8] principal key     rm:{<ns>}:who:<principal>:<bucket>
  KEYS[9] turn hash         rm:{<ns>}:turn:session:<thread>
  KEYS[10] run zset         rm:{<ns>}:lgr:<run> (only with a run id)
  ARGV[1] namespace  ARGV[2] thread id (a session id)  ARGV[3] checkpoint
          namespace (encoded)  ARGV[4] principal  ARGV[5] the writer's turn
          token in the thread's session ('' = none)  ARGV[6] checkpoint id
  ARGV[7] parent checkpoint id ('' = none)  ARGV[8] run id (encoded, '' = none)
  ARGV[9] checkpoint (typed, without its channel values)  ARGV[10] metadata (typed)
  ARGV[11] the blob fields of every channel the checkpoint names, one per
           line (kept as bl: redismem_checkpoint_get reads them in one call)
  ARGV[12..] pairs: blob field <channel>:<version> (encoded), typed value
  Reply: the feed sequence of the put's event.
  Errors: INVALID_ARGUMENT, INVALID_ID, REQUEST_TOO_LARGE, FEED_CORRUPT,
          STALE_TURN, TURN_CORRUPT                                       ]]

local function checkpoint_put(keys, args)
  count_args(args, 11, 'namespace, thread id, checkpoint namespace, principal, turn token, '
             .. 'checkpoint id, parent id, run id, checkpoint, metadata, blob fields, then blobs')
  item_count(args, 11, 2, 'blob field, value', true)
  local t, w = CP.call(keys, args, 8)
  local id = check_id('checkpoint id', args[6])
  local parent = args[7] ~= '' and check_id('parent checkpoint id', args[7]) or ''
  local run = args[8] ~= '' and (CP.decode('run id', args[8]) and args[8]) or ''
  expect_keys(keys, run ~= '' and 10 or 9)
  local hash = expect_key(keys, 1, CP.keys.checkpoint(t, id))
  local ids = expect_key(keys, 2, CP.keys.ids(t))
  local blobs = expect_key(keys, 3, CP.keys.blobs(t))
  local namespaces = expect_key(keys, 4, CP.keys.namespaces(t))
  local threads = expect_key(keys, 5, CP.keys.threads(t))
  expect_key(keys, 6, w.seq)
  expect_key(keys, 7, w.feed_size)
  if run ~= '' then
    expect_key(keys, 10, CP.keys.run(t, run))
  end
  CP.typed('the checkpoint', args[9])
  CP.typed('the metadata', args[10])
  local named = 0
  for field in string.gmatch(args[11], '[^\n]+') do
    CP.blob_field(field)
    named = named + 1
  end
  if named > LIMITS.max_batch or string.find(args[11], '\n\n') then
    fail('INVALID_ARGUMENT', 'the blob fields are at most ' .. LIMITS.max_batch .. ' lines')
  end
  for i = 12, #args, 2 do
    local channel = CP.blob_field(args[i])
    CP.typed('the value of channel ' .. show(channel), args[i + 1])
  end

  CP.announce(t, w, 'put', {id})
  local sequence = w.last_seq
  redis.call('HSET', hash, 'cp', args[9], 'md', args[10], 'parent', parent, 'run', run,
             'bl', args[11])
  redis.call('ZADD', ids, 0, id)
  if #args > 11 then
    redis.call('HSET', blobs, unpack(args, 12))
  end
  redis.call('ZADD', namespaces, 0, t.cns)
  redis.call('ZADD', threads, int_string(w.now), t.thread)
  if run ~= '' then
    redis.call('ZADD', CP.keys.run(t, run), 0, t.thread .. ':' .. t.cns .. ':' .. id)
  end
  return sequence
end

register('redismem_checkpoint_put', checkpoint_put)
