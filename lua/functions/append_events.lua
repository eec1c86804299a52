--[[ redismem_append_events: append events to a thread, in order, each
  announced in the feed (kind thread, action append, key = the event id,
  etype = its type, value = its payload when at most feed_value_bytes of
  JSON, else omitted=1). An event whose id the thread already holds is
  skipped, and announced again never, so a retried append never
  duplicates.
  KEYS[1] events stream   rm:{<ns>}:thr:<thread>:ev
  KEYS[2] times zset      rm:{<ns>}:thr:<thread>:ts
  KEYS[3] ids hash        rm:{<ns>}:thr:<thread>:ids
  KEYS[4] threads zset    rm:{<ns>}:threads
  KEYS[5] turn hash       rm:{<ns>}:turn:session:<thread> (lib/65_turns.lua)
  KEYS[6] feed counter    rm:{<ns>}:seq
  KEYS[7] feed size       rm:{<ns>}:feedsz
  KEYS[8] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  ARGV[1] namespace  ARGV[2] thread id
  ARGV[3] the writer's turn token in the thread's session ('' = none)
  ARGV[4] principal
  ARGV[5..] events (canonical JSON of MemoryEvent: id, thread_id, user_id,
          type, timestamp, payload, tags; at most 1 MiB each)
  Reply: one integer per event: 1 appended, 0 already there.
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_EVENT, REQUEST_TOO_LARGE,
          STALE_TURN, TURN_CORRUPT, FEED_CORRUPT                         ]]

local function append_events(keys, args)
  count_args(args, 5, 'namespace, thread id, turn token, principal, then events')
  local t, events, w = thread_write(keys, args, true)
  local fresh, seen = {}, {}
  for i, item in ipairs(events) do
    fresh[i] = not seen[item.e.id] and not redis.call('HGET', t.ids, item.e.id) -- every role with threads holds HGET
    seen[item.e.id] = true
  end
  w.now = now_ms()
  prepare_feed(w)
  for i, item in ipairs(events) do
    if fresh[i] then
      plan_event(w, item.e.id, 'append', AT_SEQUENCE, item.e.payload)
      local fields = w.events[#w.events]
      fields[#fields + 1] = 'etype'
      fields[#fields + 1] = item.e.type
    end
  end
  publish(w)
  local flags = append_checked(t, events)
  for i = #events, 1, -1 do
    if flags[i] == 1 then -- a retried append never moves the thread back in time
      redis.call('ZADD', t.threads, 'GT', int_string(events[i].e.timestamp), t.thread)
      break
    end
  end
  return flags
end

register('redismem_append_events', append_events)
