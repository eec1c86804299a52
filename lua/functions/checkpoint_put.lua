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
  ARGV[11..] pairs: blob field <channel>:<version> (encoded), typed value
  Reply: the feed sequence of the put's event.
  Errors: INVALID_ARGUMENT, INVALID_ID, REQUEST_TOO_LARGE, FEED_CORRUPT,
          STALE_TURN, TURN_CORRUPT                                       ]]

local function checkpoint_put(keys, args)
  count_args(args, 10, 'namespace, thread id, checkpoint namespace, principal, turn token, '
             .. 'checkpoint id, parent id, run id, checkpoint, metadata, then blobs')
  if (#args - 10) % 2 ~= 0 then
    fail('INVALID_ARGUMENT', 'blobs come in pairs of field and value, got ' .. (#args - 10) .. ' arguments')
  end
  if (#args - 10) / 2 > LIMITS.max_batch then
    fail('INVALID_ARGUMENT', 'at most ' .. LIMITS.max_batch .. ' blobs per checkpoint')
  end
  local t, w = checkpoint_call(keys, args, 8)
  local id = check_id('checkpoint id', args[6])
  local parent = args[7] ~= '' and check_id('parent checkpoint id', args[7]) or ''
  local run = args[8] ~= '' and (decode_part('run id', args[8]) and args[8]) or ''
  expect_keys(keys, run ~= '' and 10 or 9)
  local hash = expect_key(keys, 1, LG.checkpoint(t, id))
  local ids = expect_key(keys, 2, LG.ids(t))
  local blobs = expect_key(keys, 3, LG.blobs(t))
  local namespaces = expect_key(keys, 4, LG.namespaces(t))
  local threads = expect_key(keys, 5, LG.threads(t))
  expect_key(keys, 6, w.seq)
  expect_key(keys, 7, w.feed_size)
  if run ~= '' then
    expect_key(keys, 10, LG.run(t, run))
  end
  check_typed('the checkpoint', args[9])
  check_typed('the metadata', args[10])
  for i = 11, #args, 2 do
    local channel, version = string.match(args[i], '^([^:]+):([^:]+)$')
    if not channel then
      fail('INVALID_ARGUMENT', "a blob field is '<channel>:<version>', encoded, got " .. show(args[i]))
    end
    decode_part('a channel', channel)
    decode_part('a channel version', version)
    check_typed('the value of channel ' .. show(channel), args[i + 1])
  end

  announce(t, w, 'put', {id})
  local sequence = w.last_seq
  redis.call('HSET', hash, 'cp', args[9], 'md', args[10], 'parent', parent, 'run', run)
  redis.call('ZADD', ids, 0, id)
  if #args > 10 then
    redis.call('HSET', blobs, unpack(args, 11))
  end
  redis.call('ZADD', namespaces, 0, t.cns)
  redis.call('ZADD', threads, int_string(w.now), t.thread)
  if run ~= '' then
    redis.call('ZADD', LG.run(t, run), 0, t.thread .. ':' .. t.cns .. ':' .. id)
  end
  return sequence
end

register('redismem_checkpoint_put', checkpoint_put)
