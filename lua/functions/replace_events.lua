--[[ redismem_replace_events: replace all events of a thread atomically (no
  events = delete the thread: it leaves the threads registry too),
  announced in the feed by one event (kind thread, action replace, key =
  the thread id, no value: reread it).
  KEYS[1] events stream   rm:{<ns>}:thr:<thread>:ev
  KEYS[2] times zset      rm:{<ns>}:thr:<thread>:ts
  KEYS[3] ids hash        rm:{<ns>}:thr:<thread>:ids
  KEYS[4] threads zset    rm:{<ns>}:threads
  KEYS[5] feed counter    rm:{<ns>}:seq
  KEYS[6] feed size       rm:{<ns>}:feedsz
  KEYS[7] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  ARGV[1] namespace  ARGV[2] thread id  ARGV[3] principal
  ARGV[4..] events, as for redismem_append_events (a repeated id is stored once)
  Reply: the number of events the thread now holds.
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_EVENT, REQUEST_TOO_LARGE,
          FEED_CORRUPT                                                    ]]

local function replace_events(keys, args)
  local t, events, w = thread_write(keys, args)
  w.now = now_ms()
  prepare_feed(w)
  plan_event(w, t.thread, 'replace', AT_SEQUENCE)
  publish(w)
  redis.call('DEL', t.events, t.times, t.ids)
  if #events > 0 then
    redis.call('ZADD', t.threads, int_string(events[#events].e.timestamp), t.thread)
  else
    redis.call('ZREM', t.threads, t.thread)
  end
  local kept = 0
  for _, flag in ipairs(append_checked(t, events)) do
    kept = kept + flag
  end
  return kept
end

register('redismem_replace_events', replace_events)
