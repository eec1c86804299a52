--[[ redismem_recent_events: the most recent events of a thread, oldest first.
  KEYS[1] events stream   rm:{<ns>}:thr:<thread>:ev
  ARGV[1] namespace  ARGV[2] thread id  ARGV[3] limit (1..100000)
  Reply: array of event JSON, in append order.
  Errors: INVALID_ARGUMENT, INVALID_ID                                   ]]

local function recent_events(keys, args)
  count_args(args, 3, 'namespace, thread id, limit', 3)
  local c = {ns = check_id('namespace', args[1])}
  local thread = check_id('thread id', args[2])
  local limit = parse_int('limit', args[3], 1, LIMITS.max_events_per_call)
  expect_keys(keys, 1)
  local events_key = expect_key(keys, 1, SCHEMA.thread_events(c, thread))
  local entries = redis.call('XREVRANGE', events_key, '+', '-', 'COUNT', limit)
  local bodies = {}
  for i = #entries, 1, -1 do
    bodies[#bodies + 1] = entries[i][2][2]
  end
  return bodies
end

register('redismem_recent_events', recent_events, true)
