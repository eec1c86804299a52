--[[ redismem_drop_events: remove chosen events from a thread, a bounded
  slice per call (compact_thread in redismem/store.py decides which, from
  paged reads, and calls this in slices). An event id leaves the thread's
  id index only while the index still points at that stream entry, so an
  event appended again meanwhile keeps its own.
  KEYS[1] events stream   rm:{<ns>}:thr:<thread>:ev
  KEYS[2] times zset      rm:{<ns>}:thr:<thread>:ts
  KEYS[3] ids hash        rm:{<ns>}:thr:<thread>:ids
  KEYS[4] feed counter    rm:{<ns>}:seq
  KEYS[5] feed size       rm:{<ns>}:feedsz
  KEYS[6] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  ARGV[1] namespace  ARGV[2] thread id  ARGV[3] principal
  ARGV[2+2i] stream id i (<ms>-<seq>)   ARGV[3+2i] event id i ('' = none
          known: the entry was not written by the library)
  At most 1,000 events per call.
  Reply: {events removed, events the thread now holds}.
  Feed: one event (kind thread, action drop, key = the thread id) when
        any event was removed.
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, FEED_CORRUPT         ]]

local function drop_events(keys, args)
  count_args(args, 5, 'namespace, thread id, principal, then stream id, event id')
  local c = {ns = check_id('namespace', args[1]), scope = 'session'}
  local thread = check_id('thread id', args[2])
  c.sid = thread
  local principal = check_id('principal', args[3])
  local count = item_count(args, 3, 2, 'stream id, event id')
  expect_keys(keys, 6)
  local t = thread_keys(keys, c, thread)
  local w = {c = c, kind = 'thread', principal = principal,
             seq = expect_key(keys, 4, SCHEMA.sequence(c)),
             feed_size = expect_key(keys, 5, SCHEMA.feed_size(c)), feed = SCHEMA.feed(c)}
  w.who = expect_who(keys, 6, c, principal)
  w.settings = write_settings(SCHEMA.config(c))
  local stream_ids, event_ids = {}, {}
  for i = 1, count do
    local stream_id, event_id = args[2 + 2 * i], args[3 + 2 * i]
    if not string.find(stream_id, '^%d+%-%d+$') or #stream_id > 41 then
      fail('INVALID_ARGUMENT', 'not a stream id: ' .. show(stream_id))
    end
    if event_id ~= '' then
      check_key(event_id)
    end
    stream_ids[i], event_ids[i] = stream_id, event_id
  end
  local present = 0
  for _, stream_id in ipairs(stream_ids) do
    if #redis.call('XRANGE', t.events, stream_id, stream_id) > 0 then
      present = present + 1
    end
  end
  if present > 0 then
    w.now = now_ms()
    prepare_feed(w)
    plan_event(w, thread, 'drop', AT_SEQUENCE)
    publish(w)
  end
  local removed = redis.call('XDEL', t.events, unpack(stream_ids))
  redis.call('ZREM', t.times, unpack(stream_ids))
  for i = 1, count do
    if event_ids[i] ~= '' and redis.call('HGET', t.ids, event_ids[i]) == stream_ids[i] then
      redis.call('HDEL', t.ids, event_ids[i])
    end
  end
  return {removed, redis.call('XLEN', t.events)}
end

register('redismem_drop_events', drop_events)
