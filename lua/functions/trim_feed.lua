--[[ redismem_trim_feed: drop change events older than the namespace's
  feed_retention_ms from the head of its feed (writes also do this, a few
  events at a time).
  KEYS[1] feed stream   rm:{<ns>}:feed
  KEYS[2] config hash   rm:{<ns>}:cfg
  ARGV[1] namespace  ARGV[2] most events to drop ('' = 10000; 1..100000)
  Reply: the number of events dropped.
  Errors: INVALID_ARGUMENT, INVALID_ID                                    ]]

local function trim_feed_now(keys, args)
  count_args(args, 2, 'namespace, most events to drop')
  local c = {ns = check_id('namespace', args[1])}
  local budget = 10000
  if args[2] ~= '' then
    budget = parse_int('most events to drop', args[2], 1, LIMITS.max_trim_per_call)
  end
  expect_keys(keys, 2)
  local feed_key = expect_key(keys, 1, SCHEMA.feed(c))
  local config_key = expect_key(keys, 2, SCHEMA.config(c))
  return trim_feed(feed_key, config_key, now_ms(), budget)
end

register('redismem_trim_feed', trim_feed_now)
