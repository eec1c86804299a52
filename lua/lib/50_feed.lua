--[[ feed: the namespace change feed. One XADD to rm:{ns}:feed with entry id
  <sequence>-0 per change, in the same call as the change, and rm:{ns}:seq
  set to the last sequence, so the sequence has no gaps. Entry fields:
  scope, sid, key, kind, action, rev, by, ts, and either value (canonical
  JSON of at most feed_value_bytes) or omitted=1. Vector and delete events
  carry neither.
  Writes run in two phases. prepare_feed reads the counter and the feed's
  size before anything is written, and plan_event records each change's
  event; publish then appends them, the first XADD before any other write of
  the call, so a call whose event cannot be appended changes nothing. A lost
  counter (DEL, eviction) is healed from the stream's last-generated-id,
  which survives trimming; a counter that is not an integer is refused.
  Bounds: events older than feed_retention_ms, and the oldest events while
  the feed holds more than feed_max_bytes (the field bytes of its entries
  plus EVENT_OVERHEAD each, counted in rm:{ns}:feedsz: an estimate, started
  again when it is not a count). Trimming drops
  events from the head only, so a cursor before the head is reported
  (CursorExpiredError), never skipped, and works in slices: at most
  trim_slice_events events and trim_slice_bytes bytes read per call. Writes
  trim for age each time the sequence passes a multiple of trim_every (up
  to trim_every x trim_per_write events), and for size whenever the feed is
  over its bound (twice the events they appended, plus trim_per_write).  ]]

local EVENT_OVERHEAD = 64

-- A counter key's value, 0 when absent; FEED_CORRUPT when it is not an integer.
local function stored_count(key, what)
  local raw = redis.call('GET', key)
  if not raw then
    return 0
  end
  local count = string.find(raw, '^%d+$') and #raw <= 16 and tonumber(raw)
  if not count then
    fail('FEED_CORRUPT', what .. ' ' .. show(key) .. ' holds ' .. show(raw) .. ', not a count')
  end
  return count
end

-- Before the first write: the counter; w gains sequence and an empty list
-- of planned events.
local function prepare_feed(w)
  w.sequence = stored_count(w.seq, 'the feed sequence counter')
  w.events = {}
end

local function event_bytes(fields)
  local total = EVENT_OVERHEAD
  for i = 1, #fields do
    total = total + #fields[i]
  end
  return total
end

-- Record the event of one change; publish appends it.
local function plan_event(w, key, action, revision, json)
  local fields = {'scope', w.c.scope, 'sid', w.c.sid, 'key', key, 'kind', w.kind,
                  'action', action, 'rev', int_string(revision), 'by', w.principal,
                  'ts', int_string(w.now)}
  if json then
    if #json <= LIMITS.feed_value_bytes then
      fields[#fields + 1] = 'value'
      fields[#fields + 1] = json
    else
      fields[#fields + 1] = 'omitted'
      fields[#fields + 1] = '1'
    end
  end
  w.events[#w.events + 1] = fields
end

-- The last sequence the stream ever generated (kept when trimmed), or nil.
local function last_generated(feed_key)
  local info = redis.pcall('XINFO', 'STREAM', feed_key)
  if type(info) ~= 'table' or info.err then
    return nil
  end
  for i = 1, #info - 1, 2 do
    if info[i] == 'last-generated-id' then
      return tonumber(string.match(info[i + 1], '^(%d+)'))
    end
  end
  return nil
end

-- Append the planned events: the first write of the call. Sets
-- w.first_seq and w.last_seq when it appended any.
local function publish(w)
  if #w.events == 0 then
    return
  end
  local first = w.sequence + 1
  local reply = redis.pcall('XADD', w.feed, int_string(first) .. '-0', unpack(w.events[1]))
  if type(reply) == 'table' and reply.err then
    local last = last_generated(w.feed)
    if last and last >= first then -- the counter was lost: go on from the stream
      first = last + 1
      reply = redis.pcall('XADD', w.feed, int_string(first) .. '-0', unpack(w.events[1]))
    end
    if type(reply) == 'table' and reply.err then
      fail('FEED_CORRUPT', 'cannot append to the feed ' .. show(w.feed) .. ': ' .. tostring(reply.err))
    end
  end
  local added = event_bytes(w.events[1])
  for i = 2, #w.events do
    redis.call('XADD', w.feed, int_string(first + i - 1) .. '-0', unpack(w.events[i]))
    added = added + event_bytes(w.events[i])
  end
  w.first_seq, w.last_seq = first, first + #w.events - 1
  redis.call('SET', w.seq, int_string(w.last_seq))
  -- the size is an estimate for trimming: one that is not a count starts again
  local size = redis.pcall('INCRBY', w.feed_size, int_string(added))
  if type(size) ~= 'number' or size < 0 then
    size = added
    redis.call('SET', w.feed_size, int_string(size))
  end
  w.feed_bytes = size
end

local function event_ts(fields)
  for i = 1, #fields - 1, 2 do
    if fields[i] == 'ts' then
      return tonumber(fields[i + 1]) or 0
    end
  end
  return 0
end

-- Drop events from the head while they are older than the retention or the
-- feed is over feed_max_bytes: at most max_events, reading at most
-- trim_slice_bytes. f = {feed, feed_size, feed_bytes, settings}. Returns
-- the number dropped and whether a budget stopped it (more may be due).
local function trim_head(f, now, max_events)
  local cutoff = now - f.settings.feed_retention_ms
  local bound = f.settings.feed_max_bytes
  local oldest = redis.call('XRANGE', f.feed, '-', '+', 'COUNT', 1)
  if #oldest == 0 then
    if f.feed_bytes ~= 0 then
      f.feed_bytes = 0
      redis.call('SET', f.feed_size, '0')
    end
    return 0, false
  end
  if event_ts(oldest[1][2]) >= cutoff and f.feed_bytes <= bound then
    return 0, false
  end
  local dropped, read, stopped = 0, 0, false
  while true do
    if dropped >= max_events then
      stopped = true
      break
    end
    local batch = redis.call('XRANGE', f.feed, '-', '+', 'COUNT', math.min(64, max_events - dropped))
    local count, freed, last_id = 0, 0, nil
    for _, entry in ipairs(batch) do
      if event_ts(entry[2]) >= cutoff and f.feed_bytes - freed <= bound then
        break
      end
      local size = event_bytes(entry[2])
      count, freed, last_id = count + 1, freed + size, entry[1]
      read = read + size
      if read >= LIMITS.trim_slice_bytes then
        stopped = true
        break
      end
    end
    if count > 0 then
      local sequence = tonumber(string.match(last_id, '^(%d+)'))
      redis.call('XTRIM', f.feed, 'MINID', int_string(sequence + 1) .. '-0')
      dropped, f.feed_bytes = dropped + count, math.max(f.feed_bytes - freed, 0)
    end
    if stopped or count < #batch or #batch == 0 then
      break
    end
  end
  if dropped > 0 then
    redis.call('SET', f.feed_size, int_string(f.feed_bytes))
  end
  return dropped, stopped
end

-- After a write call's events: trim for age each time the sequence passed a
-- multiple of trim_every, and for size when the feed is over its bound.
local function trim_after_writes(w)
  if not w.first_seq then
    return
  end
  local every = LIMITS.trim_every
  local crossed = math.floor(w.last_seq / every) - math.floor((w.first_seq - 1) / every)
  local budget = crossed * every * LIMITS.trim_per_write
  if w.feed_bytes > w.settings.feed_max_bytes then
    budget = budget + 2 * #w.events + LIMITS.trim_per_write
  end
  if budget > 0 then
    trim_head(w, w.now, budget)
  end
end
