--[[ redismem_events_since: one page of the events of a thread whose
  timestamp is at or after since_ms. Found through the timestamp zset in
  O(log n + k), not by scanning. With timestamps from several writers a
  little out of order, an event appended later with an earlier timestamp is
  still returned if its timestamp qualifies. The events are taken in
  timestamp order (then stream id), `offset` of them skipped: the caller
  pages on with offset + the page's length and puts the pages' events in
  append order by their stream ids. A page holds at most `limit` events and
  stops early once it holds trim_slice_bytes of event JSON (but always has
  one), so one call holds the server for milliseconds.
  KEYS[1] events stream   rm:{<ns>}:thr:<thread>:ev
  KEYS[2] times zset      rm:{<ns>}:thr:<thread>:ts
  ARGV[1] namespace  ARGV[2] thread id  ARGV[3] since_ms (>= 0)
  ARGV[4] limit (1..max_events_per_read)  ARGV[5] optional: offset (>= 0)
  Reply: flat array of stream id, event JSON, ... in timestamp order
         (empty when no event is left).
  Errors: INVALID_ARGUMENT, INVALID_ID                                   ]]

local function events_since(keys, args)
  count_args(args, 4, 'namespace, thread id, since_ms, limit[, offset]', 5)
  local c = {ns = check_id('namespace', args[1])}
  local thread = check_id('thread id', args[2])
  local since = parse_int('since_ms', args[3], 0, LIMITS.max_revision)
  local limit = parse_int('limit', args[4], 1, LIMITS.max_events_per_read)
  local offset = args[5] and parse_int('offset', args[5], 0, LIMITS.max_revision) or 0
  expect_keys(keys, 2)
  local events_key = expect_key(keys, 1, SCHEMA.thread_events(c, thread))
  local times_key = expect_key(keys, 2, SCHEMA.thread_times(c, thread))
  local ids = redis.call('ZRANGEBYSCORE', times_key, int_string(since), '+inf', 'LIMIT', offset,
                         limit)
  local page, bytes = {}, 0
  for _, id in ipairs(ids) do
    local found = redis.pcall('XRANGE', events_key, id, id) -- a raw member may be no stream id
    local entry = not found.err and found[1]
    if entry then
      page[#page + 1] = id
      page[#page + 1] = entry[2][2]
      bytes = bytes + #entry[2][2]
      if bytes >= LIMITS.trim_slice_bytes then
        break
      end
    else -- a stale (or raw) index entry: keep its place so the offsets stay right
      page[#page + 1] = id
      page[#page + 1] = false
    end
  end
  return page
end

register('redismem_events_since', events_since, true)
