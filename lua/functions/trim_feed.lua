--[[ redismem_trim_feed: drop change events from the head of the feed that
  are older than the namespace's feed_retention_ms, or while the feed is
  over feed_max_bytes; one bounded slice (writes also trim, a few events at
  a time). Call again while the reply says more may be due.
  KEYS[1] feed stream   rm:{<ns>}:feed
  KEYS[2] feed size     rm:{<ns>}:feedsz
  KEYS[3] config hash   rm:{<ns>}:cfg
  ARGV[1] namespace  ARGV[2] most events to drop ('' = 2000; 1..2000)
  Reply: {events dropped, 1 when a slice budget stopped it (call again), else 0}.
  Errors: INVALID_ARGUMENT, INVALID_ID                                   ]]

local function trim_feed_now(keys, args)
  count_args(args, 2, 'namespace, most events to drop', 2)
  local c = {ns = check_id('namespace', args[1])}
  local budget = LIMITS.trim_slice_events
  if args[2] ~= '' then
    budget = parse_int('most events to drop', args[2], 1, LIMITS.trim_slice_events)
  end
  expect_keys(keys, 3)
  local f = {feed = expect_key(keys, 1, SCHEMA.feed(c)),
             feed_size = expect_key(keys, 2, SCHEMA.feed_size(c))}
  f.settings = write_settings(expect_key(keys, 3, SCHEMA.config(c)))
  f.feed_bytes = stored_size(f.feed_size)
  local threshold, dropped, freed, stopped = trim_plan(f, now_ms(), budget)
  if threshold then
    redis.call('XTRIM', f.feed, 'MINID', threshold)
    redis.call('SET', f.feed_size, int_string(f.feed_bytes - freed))
  elseif f.feed_bytes ~= 0 and redis.call('XLEN', f.feed) == 0 then
    redis.call('SET', f.feed_size, '0') -- an estimate that went wrong starts again
  end
  return {dropped, stopped and 1 or 0}
end

register('redismem_trim_feed', trim_feed_now)
