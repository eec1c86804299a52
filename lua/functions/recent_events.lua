--[[ redismem_recent_events: one page of the most recent events of a
  thread, oldest first. A page holds at most `limit` events and stops early
  once it holds trim_slice_bytes of event JSON (but always has one), so one
  call holds the server for milliseconds; the caller pages on with the
  first id of the page as `before`.
  KEYS[1] events stream   rm:{<ns>}:thr:<thread>:ev
  ARGV[1] namespace  ARGV[2] thread id  ARGV[3] limit (1..max_events_per_read)
  ARGV[4] optional: before, a stream id; only events appended before it
  Reply: flat array of stream id, event JSON, ... in append order (empty
         when no event is left).
  Errors: INVALID_ARGUMENT, INVALID_ID                                   ]]

local function recent_events(keys, args)
  count_args(args, 3, 'namespace, thread id, limit[, before]', 4)
  local c = {ns = check_id('namespace', args[1])}
  local thread = check_id('thread id', args[2])
  local limit = parse_int('limit', args[3], 1, LIMITS.max_events_per_read)
  local before = args[4] or ''
  if before ~= '' and not string.match(before, '^%d+%-%d+$') then
    fail('INVALID_ARGUMENT', 'before must be a stream id <ms>-<seq>, got ' .. show(before))
  end
  expect_keys(keys, 1)
  local events_key = expect_key(keys, 1, SCHEMA.thread_events(c, thread))
  local entries = redis.call('XREVRANGE', events_key, before == '' and '+' or '(' .. before, '-',
                             'COUNT', limit)
  local taken, bytes = 0, 0
  for i = 1, #entries do
    taken, bytes = i, bytes + #entries[i][2][2]
    if bytes >= LIMITS.trim_slice_bytes then
      break
    end
  end
  local page = {}
  for i = taken, 1, -1 do
    page[#page + 1] = entries[i][1]
    page[#page + 1] = entries[i][2][2]
  end
  return page
end

register('redismem_recent_events', recent_events, true)
