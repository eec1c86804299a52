--[[ redismem_events_since: the events of a thread whose timestamp is at or
  after since_ms, in append order. Found through the timestamp zset in
  O(log n + k), not by scanning. With timestamps from several writers a
  little out of order, an event appended later with an earlier timestamp is
  still returned if its timestamp qualifies; the `limit` events chosen are
  those with the earliest timestamps, then returned in append order.
  KEYS[1] events stream   rm:{<ns>}:thr:<thread>:ev
  KEYS[2] times zset      rm:{<ns>}:thr:<thread>:ts
  ARGV[1] namespace  ARGV[2] thread id  ARGV[3] since_ms (>= 0)
  ARGV[4] limit (1..100000)
  Reply: array of event JSON.
  Errors: INVALID_ARGUMENT, INVALID_ID                                   ]]

local function events_since(keys, args)
  count_args(args, 4, 'namespace, thread id, since_ms, limit', 4)
  local c = {ns = check_id('namespace', args[1])}
  local thread = check_id('thread id', args[2])
  local since = parse_int('since_ms', args[3], 0, LIMITS.max_revision)
  local limit = parse_int('limit', args[4], 1, LIMITS.max_events_per_call)
  expect_keys(keys, 2)
  local events_key = expect_key(keys, 1, SCHEMA.thread_events(c, thread))
  local times_key = expect_key(keys, 2, SCHEMA.thread_times(c, thread))
  local ids = events_by_time(times_key, since, limit)
  table.sort(ids, stream_id_less)
  return event_bodies(events_key, ids)
end

register('redismem_events_since', events_since, true)
