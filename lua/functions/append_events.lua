--[[ redismem_append_events: append events to a thread, in order. An event
  whose id the thread already holds is skipped, so a retried append never
  duplicates.
  KEYS[1] events stream   rm:{<ns>}:thr:<thread>:ev
  KEYS[2] times zset      rm:{<ns>}:thr:<thread>:ts
  KEYS[3] ids hash        rm:{<ns>}:thr:<thread>:ids
  KEYS[4] threads zset    rm:{<ns>}:threads
  KEYS[5] turn hash       rm:{<ns>}:turn:session:<thread> (lib/65_turns.lua)
  ARGV[1] namespace  ARGV[2] thread id
  ARGV[3] the writer's turn token in the thread's session ('' = none)
  ARGV[4..] events (canonical JSON of MemoryEvent: id, thread_id, user_id,
          type, timestamp, payload, tags; at most 1 MiB each)
  Reply: one integer per event: 1 appended, 0 already there.
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_EVENT, REQUEST_TOO_LARGE,
          STALE_TURN, TURN_CORRUPT                                       ]]

local function append_events(keys, args)
  count_args(args, 4, 'namespace, thread id, turn token, then events')
  local t, events = thread_write(keys, args, true)
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
