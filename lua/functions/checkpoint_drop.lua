--[[ redismem_checkpoint_drop: delete checkpoints of one thread and
  namespace, with their pending writes, and announce each in the feed (kind
  checkpoint, action delete). When none is left (and no id holds writes
  without its checkpoint), the namespace's blobs go
  too (and the thread leaves the registry when it has no namespace left);
  else, given the blob fields to keep, every other blob is deleted (prune).
  KEYS[1] ids zset          rm:{<ns>}:lgt:<thread>:<cns>:ids
  KEYS[2] written ids zset  rm:{<ns>}:lgt:<thread>:<cns>:wids
  KEYS[3] blobs hash        rm:{<ns>}:lgt:<thread>:<cns>:blobs
  KEYS[4] namespaces zset   rm:{<ns>}:lgt:<thread>:nss
  KEYS[5] threads zset      rm:{<ns>}:lgthreads
  KEYS[6] feed counter      rm:{<ns>}:seq
  KEYS[7] feed size         rm:{<ns>}:feedsz
  KEYS[8] principal key     rm:{<ns>}:who:<principal>:<bucket>
  KEYS[9] turn hash         rm:{<ns>}:turn:session:<thread>
  KEYS[9+i] checkpoint hash rm:{<ns>}:lgt:<thread>:<cns>:c:<id i>
  ARGV[1] namespace  ARGV[2] thread id  ARGV[3] checkpoint namespace
          (encoded)  ARGV[4] principal  ARGV[5] turn token ('' = none)
  ARGV[6] the number k of blob fields to keep, or -1 (keep every blob)
  ARGV[7..6+k] blob fields to keep  ARGV[7+k..] checkpoint ids (at most 500)
  Reply: the number of checkpoints deleted.
  Errors: INVALID_ARGUMENT, INVALID_ID, REQUEST_TOO_LARGE, FEED_CORRUPT,
          STALE_TURN, TURN_CORRUPT                                       ]]

local function checkpoint_drop(keys, args)
  count_args(args, 6, 'namespace, thread id, checkpoint namespace, principal, turn token, '
             .. 'kept blob count, then kept blobs and checkpoint ids')
  local t, w = CP.call(keys, args, 8)
  local keep = parse_int('the kept blob count', args[6], -1, LIMITS.max_batch)
  local first = 7 + math.max(keep, 0)
  local count = #args - first + 1
  if count < 0 or count > LIMITS.max_events_per_call then
    fail('INVALID_ARGUMENT', 'expected ' .. math.max(keep, 0) .. ' kept blobs, then 0 to '
         .. LIMITS.max_events_per_call .. ' checkpoint ids, got ' .. #args - 6 .. ' arguments')
  end
  expect_keys(keys, 9 + count)
  local ids = expect_key(keys, 1, CP.keys.ids(t))
  local written = expect_key(keys, 2, CP.keys.written(t))
  local blobs = expect_key(keys, 3, CP.keys.blobs(t))
  local namespaces = expect_key(keys, 4, CP.keys.namespaces(t))
  local threads = expect_key(keys, 5, CP.keys.threads(t))
  expect_key(keys, 6, w.seq)
  expect_key(keys, 7, w.feed_size)
  local gone, hashes = {}, {}
  for i = 1, count do
    local id = check_id('checkpoint id', args[first + i - 1])
    hashes[i] = expect_key(keys, 9 + i, CP.keys.checkpoint(t, id))
    if redis.call('EXISTS', hashes[i]) == 1 then
      gone[#gone + 1] = id
    end
  end
  if #gone > 0 then
    CP.announce(t, w, 'delete', gone)
  else
    check_fence(w.turn, 'session:' .. t.thread, t.fence)
  end
  for i = 1, count do
    local run = redis.call('HGET', hashes[i], 'run')
    if run and run ~= '' and string.find(run, CP.ENCODED) then
      redis.call('ZREM', CP.keys.run(t, run), t.thread .. ':' .. t.cns .. ':' .. args[first + i - 1])
    end
    redis.call('DEL', hashes[i])
    redis.call('ZREM', ids, args[first + i - 1])
    redis.call('ZREM', written, args[first + i - 1])
  end
  if redis.call('ZCARD', ids) == 0 and redis.call('ZCARD', written) == 0 then
    redis.call('DEL', blobs)
    redis.call('ZREM', namespaces, t.cns)
    if redis.call('ZCARD', namespaces) == 0 then
      redis.call('ZREM', threads, t.thread)
    end
  elseif keep >= 0 then
    local wanted = {}
    for i = 7, 6 + keep do
      wanted[args[i]] = true
    end
    local stale = {}
    for _, field in ipairs(redis.call('HKEYS', blobs)) do
      if not wanted[field] then
        stale[#stale + 1] = field
      end
    end
    for from = 1, #stale, 1000 do
      redis.call('HDEL', blobs, unpack(stale, from, math.min(#stale, from + 999)))
    end
  end
  return #gone
end

register('redismem_checkpoint_drop', checkpoint_drop)
