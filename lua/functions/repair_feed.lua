--[[ redismem_repair_feed: restore a feed that raw writes jammed, one atomic
  step per call (redismem/repair.py runs them; docs/change-feed.md).
  KEYS[1] feed stream     rm:{<ns>}:feed
  KEYS[2] feed counter    rm:{<ns>}:seq
  KEYS[3] feed size       rm:{<ns>}:feedsz
  KEYS[4] rebuild stream  rm:{<ns>}:feed:rebuild (a copy of the feed)
  ARGV[1] namespace  ARGV[2] step:
    'drop' ARGV[3..] (1 to 1000 ids): XDEL these entries, each of which
           must be one the library cannot have written (not <sequence>-0,
           or past max_sequence). Reply: the number deleted.
    'settle' ARGV[3] the feed size estimate in bytes: set the counter and
           the stream's last id to the feed's sequence, the largest of its
           last entry and what the counter and the stream's last id agree
           on (the library sets the counter only to an id it appended, so
           a counter above the stream's last id, or a last id above a
           counter, was raised by a raw write). Reply: {status, sequence,
           the counter as it was (false: absent)}: status 1 done; 0 the
           server cannot lower the stream's last id past a deleted entry
           (Redis 7.2+): copy the feed into the rebuild stream and 'swap'; -1 the
           last entry is not the library's (written since the caller
           looked): drop it and settle again.
    'swap' ARGV[3] the size estimate: append to the rebuild stream the library's
           entries of the feed past its last one (written while it was
           copied; at most 2000), rename it over the feed, then settle.
           Reply: as settle's; -1 also when more than 2000 came.
  Nothing is lost: each step is one call, and no step removes an entry
  the library wrote.
  Errors: INVALID_ARGUMENT, INVALID_ID                                   ]]

local REPAIR_IDS = 1000
local REPAIR_TAIL = 2000

-- The sequence of a library entry id '<sequence>-0' (nil: not one).
local function library_sequence(id)
  local head = string.match(id, '^(%d+)%-0$')
  local sequence = head and #head <= 16 and tonumber(head)
  return sequence and sequence <= LIMITS.max_sequence and sequence or nil
end

-- The head of a stream id as a number when it is at most max_sequence.
local function id_head(id)
  local head = id and string.match(id, '^(%d+)%-%d+$')
  local number = head and #head <= 16 and tonumber(head)
  return number and number <= LIMITS.max_sequence and number or nil
end

local function settle(r, size)
  local previous = redis.call('GET', r.seq)
  local counter = previous and string.find(previous, '^%d+$') and #previous <= 16
                  and tonumber(previous) <= LIMITS.max_sequence and tonumber(previous) or nil
  local last
  local generated = generated_id(r.feed)
  if generated then
    local top = redis.call('XREVRANGE', r.feed, '+', '-', 'COUNT', 1)[1]
    local top_seq = 0
    if top then
      top_seq = library_sequence(top[1])
      if not top_seq then
        return {-1, 0, previous or false}
      end
    end
    local head = id_head(generated)
    local claimed = head or counter or 0
    if counter and head then
      claimed = math.min(counter, head)
    end
    last = math.max(top_seq, claimed)
    local target = int_string(last) .. '-0'
    if head ~= last then -- the next XADD needs an id above last-0 only
      local set = redis.pcall('XSETID', r.feed, target)
      if type(set) == 'table' and set.err then
        return {0, last, previous or false}
      end
    end
  else
    last = counter or 0
  end
  redis.call('SET', r.seq, int_string(last))
  redis.call('SET', r.feed_size, int_string(size))
  return {1, last, previous or false}
end

local function repair_feed(keys, args)
  count_args(args, 2, 'namespace, step, ...')
  local c = {ns = check_id('namespace', args[1])}
  expect_keys(keys, 4)
  local r = {feed = expect_key(keys, 1, SCHEMA.feed(c)), seq = expect_key(keys, 2, SCHEMA.sequence(c)),
             feed_size = expect_key(keys, 3, SCHEMA.feed_size(c)),
             rebuild = expect_key(keys, 4, SCHEMA.feed_rebuild(c))}
  local step = args[2]
  if step == 'drop' then
    count_args(args, 3, 'namespace, drop, ids', 2 + REPAIR_IDS)
    for i = 3, #args do
      if not string.find(args[i], '^%d+%-%d+$') or library_sequence(args[i]) then
        fail('INVALID_ARGUMENT', 'entry id ' .. show(args[i]) .. ' is not one the library cannot '
             .. 'have written: repair drops only those')
      end
    end
    return redis.call('XDEL', r.feed, unpack(args, 3))
  end
  if step ~= 'settle' and step ~= 'swap' then
    fail('INVALID_ARGUMENT', 'step must be drop, settle or swap, got ' .. show(step))
  end
  count_args(args, 3, 'namespace, ' .. step .. ', feed size', 3)
  local size = parse_int('feed size', args[3], 0, LIMITS.max_feed_bytes_ceiling)
  if step == 'swap' then
    local copied = redis.call('XREVRANGE', r.rebuild, '+', '-', 'COUNT', 1)[1]
    local start = copied and ('(' .. copied[1]) or '-'
    local tail = redis.call('XRANGE', r.feed, start, '+', 'COUNT', REPAIR_TAIL + 1)
    if #tail > REPAIR_TAIL then
      return {-1, 0, redis.call('GET', r.seq) or false}
    end
    local held = copied ~= nil
    for _, entry in ipairs(tail) do
      if library_sequence(entry[1]) then
        redis.call('XADD', r.rebuild, entry[1], unpack(entry[2]))
        held = true
      end
    end
    if held then
      redis.call('RENAME', r.rebuild, r.feed)
    else
      redis.call('DEL', r.feed)
    end
  end
  return settle(r, size)
end

register('redismem_repair_feed', repair_feed)
