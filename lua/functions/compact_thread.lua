--[[ redismem_compact_thread: apply a retention policy to a thread.
  Of the newest scan_limit events (older ones are not examined and stay),
  events whose type is protected are kept first (the newest of them when
  they alone exceed the budget), then the newest other events fill
  max_events; the rest are deleted.
  KEYS[1] events stream   rm:{<ns>}:thr:<thread>:ev
  KEYS[2] times zset      rm:{<ns>}:thr:<thread>:ts
  KEYS[3] ids hash        rm:{<ns>}:thr:<thread>:ids
  ARGV[1] namespace  ARGV[2] thread id  ARGV[3] max_events (>= 0)
  ARGV[4] protected types (JSON array of strings)  ARGV[5] scan_limit (>= 1)
  Reply: {events removed, events kept}.
  Errors: INVALID_ARGUMENT, INVALID_ID                                   ]]

local function compact_thread(keys, args)
  count_args(args, 5, 'namespace, thread id, max events, protected types, scan limit')
  local c = {ns = check_id('namespace', args[1])}
  local thread = check_id('thread id', args[2])
  local max_events = parse_int('max_events_per_thread', args[3], 0, LIMITS.max_revision)
  local types = json_read('INVALID_ARGUMENT', 'keep_event_types', args[4], 1)
  if types.t ~= 'array' then
    fail('INVALID_ARGUMENT', 'keep_event_types must be a JSON array of strings, got ' .. show(args[4]))
  end
  local protected = {}
  for _, name in ipairs(types.v) do
    if name.t ~= 'string' then
      fail('INVALID_ARGUMENT', 'keep_event_types must hold strings, got ' .. show(args[4]))
    end
    protected[name.v] = true
  end
  local scan_limit = parse_int('scan_limit', args[5], 1, LIMITS.max_revision)
  expect_keys(keys, 3)
  local t = thread_keys(keys, c, thread)

  local entries = redis.call('XREVRANGE', t.events, '+', '-', 'COUNT', scan_limit)
  local events = {}
  for i, entry in ipairs(entries) do -- an entry the library did not write has no id or type
    local body = entry[2][2]
    local fields = {}
    if type(body) == 'string' and not json_error(body) then
      local node = json_parse(body, 1)
      fields = node.t == 'object' and json_fields(node) or {}
    end
    events[i] = {id = fields.id and fields.id.v, type = fields.type and fields.type.v}
  end
  local keep = {}
  local kept = 0
  for i, entry in ipairs(entries) do            -- newest first: protected types
    if kept < max_events then
      if protected[events[i].type] then
        keep[entry[1]] = true
        kept = kept + 1
      end
    end
  end
  for _, entry in ipairs(entries) do            -- newest first: the rest
    if kept >= max_events then
      break
    end
    if not keep[entry[1]] then
      keep[entry[1]] = true
      kept = kept + 1
    end
  end
  local doomed, event_ids = {}, {}
  for i, entry in ipairs(entries) do
    if not keep[entry[1]] then
      doomed[#doomed + 1] = entry[1]
      event_ids[#event_ids + 1] = events[i].id -- nil ids are skipped
    end
  end
  for first = 1, #doomed, 1000 do
    local last = math.min(first + 999, #doomed)
    redis.call('XDEL', t.events, unpack(doomed, first, last))
    redis.call('ZREM', t.times, unpack(doomed, first, last))
  end
  for first = 1, #event_ids, 1000 do
    redis.call('HDEL', t.ids, unpack(event_ids, first, math.min(first + 999, #event_ids)))
  end
  return {#doomed, redis.call('XLEN', t.events)}
end

register('redismem_compact_thread', compact_thread)
