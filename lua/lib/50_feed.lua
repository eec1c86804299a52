--[[ feed: the namespace change feed. One XADD to rm:{ns}:feed with entry id
  <sequence>-0 per change, in the same call as the change, and rm:{ns}:seq
  set to the last sequence, so the sequence has no gaps. Entry fields
  (event format FEED_FORMAT, docs/change-feed.md): scope, sid, key, kind,
  action, rev, by, ts, fmt; a value set or incr adds either value (the new
  value's JSON, at most feed_value_bytes) or omitted=1; an incr, append or
  merge adds either delta (the increment, the appended item, the merge
  patch; at most feed_value_bytes) or delta_omitted=1, and an append or a
  merge never carries the whole value. Vector, delete and turn events
  carry neither. An import's event adds writer (the entry's own writer,
  which it keeps) when that is not the importer, its by.
  Writes run in two phases. prepare_feed reads the counter and the feed's
  size before anything is written, and plan_event records each change's
  event; publish then appends them, the first XADD before any other write of
  the call, so a call whose event cannot be appended changes nothing. A lost
  counter (DEL, eviction) is healed from the stream's last-generated-id,
  which survives trimming; a counter that is not an integer is refused.
  Bounds: events older than feed_retention_ms, and the oldest events while
  the feed is over feed_max_bytes (the field bytes of its entries plus
  EVENT_OVERHEAD each, counted in rm:{ns}:feedsz: an estimate, started
  again when it is not a count). Trimming drops events from the head only,
  so a cursor before the head is reported (CursorExpiredError), never
  skipped, and works in slices: at most trim_slice_events events and
  trim_slice_bytes bytes read per call. Writes trim for age each time the
  sequence passes a multiple of trim_every (up to trim_every x
  trim_per_write events), and for size whenever the feed is over its bound
  (twice the events they append, plus trim_per_write), through the MINID
  option of their last XADD: a writer needs no XTRIM. A caller that may not
  read the feed (a worker) leaves trimming to the others.                 ]]

local EVENT_OVERHEAD = 64

-- The event format: 2 since library version 31 (incr, append and merge
-- are actions of their own, with their delta); format 1 had no fmt field
-- and recorded them as set with the whole value.
local FEED_FORMAT = '2'

-- How to repair the feed of namespace c.ns, for an error message.
local function repair_hint(c)
  return ' (an operator restores it: redismem repair-feed --namespace ' .. c.ns .. ')'
end

-- A counter key's value, 0 when absent; FEED_CORRUPT, before anything is
-- written, when it is not an integer or past max_sequence (set by a raw
-- write: no namespace gets there by writing).
local function stored_count(key, what, c)
  local raw = redis.call('GET', key)
  if not raw then
    return 0
  end
  local count = string.find(raw, '^%d+$') and #raw <= 16 and tonumber(raw)
  if not count or count > LIMITS.max_sequence then
    fail('FEED_CORRUPT', what .. ' ' .. show(key) .. ' holds ' .. show(raw) .. ', not a count of at most '
         .. int_string(LIMITS.max_sequence) .. repair_hint(c))
  end
  return count
end

-- The feed size estimate in `key`, 0 when absent, not a count or past the
-- largest feed_max_bytes (it starts again: a raw write of a huge size must
-- not make every write trim the feed to nothing).
local function stored_size(key)
  local size = redis.call('GET', key)
  local bytes = size and #size <= 16 and string.find(size, '^%d+$') and tonumber(size) or 0
  return bytes <= LIMITS.max_feed_bytes_ceiling and bytes or 0
end

-- Before the first write: the counter and the feed's size; w gains
-- sequence, stored_bytes and an empty list of planned events.
local function prepare_feed(w)
  w.sequence = stored_count(w.seq, 'the feed sequence counter', w.c)
  w.stored_bytes = stored_size(w.feed_size)
  w.events = {}
end

local function event_bytes(fields)
  local total = EVENT_OVERHEAD
  for i = 1, #fields do
    total = total + #fields[i]
  end
  return total
end

-- Add `name` = `text` to an event's fields when it is at most
-- feed_value_bytes, else `omitted` = 1.
local function bounded_field(fields, name, text, omitted)
  if #text <= LIMITS.feed_value_bytes then
    fields[#fields + 1] = name
    fields[#fields + 1] = text
  else
    fields[#fields + 1] = omitted
    fields[#fields + 1] = '1'
  end
end

-- Record the event of one change; publish appends it. `json`: the new
-- value it carries (nil: none); `delta`: what an incr, append or merge
-- applied (nil: none). `revision` AT_SEQUENCE: the event's own sequence,
-- written into rev as it is appended (a turn's token).
local AT_SEQUENCE = {}
local function plan_event(w, key, action, revision, json, delta)
  local fields = {'scope', w.c.scope, 'sid', w.c.sid, 'key', key, 'kind', w.kind,
                  'action', action, 'rev', '', 'by', w.principal,
                  'ts', int_string(w.now), 'fmt', FEED_FORMAT}
  if revision == AT_SEQUENCE then
    fields.rev_is_sequence = true
  else
    fields[12] = int_string(revision)
  end
  if json then
    bounded_field(fields, 'value', json, 'omitted')
  end
  if delta then
    bounded_field(fields, 'delta', delta, 'delta_omitted')
  end
  w.events[#w.events + 1] = fields
end

-- The stream's last-generated-id (kept when trimmed), or nil when there
-- is no stream.
local function generated_id(feed_key)
  local info = redis.pcall('XINFO', 'STREAM', feed_key)
  if type(info) ~= 'table' or info.err then
    return nil
  end
  for i = 1, #info - 1, 2 do
    if info[i] == 'last-generated-id' then
      return info[i + 1]
    end
  end
  return nil
end

-- The last sequence the stream ever generated, or nil.
local function last_generated(feed_key)
  local id = generated_id(feed_key)
  return id and tonumber(string.match(id, '^(%d+)'))
end

local function event_ts(fields)
  for i = 1, #fields - 1, 2 do
    if fields[i] == 'ts' then
      return tonumber(fields[i + 1]) or 0
    end
  end
  return 0
end

-- The stream id right after `id` (<ms>-<seq>).
local function next_id(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return ms .. '-' .. int_string(tonumber(seq) + 1)
end

-- Which events to drop from the head (reads only): those older than the
-- retention, or the oldest while the feed is over feed_max_bytes; at most
-- max_events, reading at most trim_slice_bytes. f = {feed, feed_bytes,
-- settings}. Returns the MINID threshold (nil: none to drop), the number
-- of events and bytes it drops, and whether a budget stopped it.
local function trim_plan(f, now, max_events)
  local cutoff = now - f.settings.feed_retention_ms
  local bound = f.settings.feed_max_bytes
  local dropped, freed, stopped, threshold, start = 0, 0, false, nil, '-'
  local size = 1 -- usually the head is within the retention: one event tells
  while true do
    if dropped >= max_events then
      stopped = true
      break
    end
    local batch = redis.call('XRANGE', f.feed, start, '+', 'COUNT', math.min(size, max_events - dropped))
    size = math.min(64, size * 4)
    local count = 0
    for _, entry in ipairs(batch) do
      if event_ts(entry[2]) >= cutoff and f.feed_bytes - freed <= bound then
        break
      end
      count, dropped, freed = count + 1, dropped + 1, freed + event_bytes(entry[2])
      threshold = next_id(entry[1])
      if freed >= LIMITS.trim_slice_bytes then
        stopped = true
        break
      end
    end
    if stopped or count < #batch or #batch == 0 then
      break
    end
    start = threshold
  end
  return threshold, dropped, math.min(freed, f.feed_bytes), stopped
end

-- The MINID threshold a write's last XADD carries (nil: no trim due) and
-- the bytes it frees: for age each time the sequence passes a multiple of
-- trim_every, for size while the feed is over its bound.
local function write_trim(w)
  local every = LIMITS.trim_every
  local first, last = w.sequence + 1, w.sequence + #w.events
  local crossed = math.floor(last / every) - math.floor((first - 1) / every)
  local budget = crossed * every * LIMITS.trim_per_write
  if w.feed_bytes > w.settings.feed_max_bytes then
    budget = budget + 2 * #w.events + LIMITS.trim_per_write
  end
  if budget == 0 then
    return nil, 0
  end
  local ok, threshold, _, freed = pcall(trim_plan, w, w.now, budget)
  if not ok then -- the caller may not read the feed (a worker)
    return nil, 0
  end
  return threshold, freed
end

-- XADD one planned event with id <sequence>-0, trimming to `threshold`
-- when given; an error is returned, not raised.
local function append_event(w, sequence, fields, threshold)
  local id = int_string(sequence) .. '-0'
  if fields.rev_is_sequence then
    fields[12] = int_string(sequence)
  end
  if threshold then
    return redis.pcall('XADD', w.feed, 'MINID', threshold, id, unpack(fields))
  end
  return redis.pcall('XADD', w.feed, id, unpack(fields))
end

-- Refuse, before anything is written, events that would take the
-- sequence past max_sequence (only a raw write puts it near).
local function check_room(w, first, count)
  if first + count - 1 > LIMITS.max_sequence then
    fail('FEED_CORRUPT', 'the feed sequence is at ' .. int_string(first - 1) .. ': '
         .. count .. ' more events would pass ' .. int_string(LIMITS.max_sequence) .. repair_hint(w.c))
  end
end

-- Append the planned events: the first write of the call; the last XADD
-- also trims the head when a trim is due. Sets w.first_seq and w.last_seq
-- when it appended any.
local function publish(w)
  local count = #w.events
  if count == 0 then
    return
  end
  local added = 0
  for i = 1, count do
    added = added + event_bytes(w.events[i])
  end
  w.feed_bytes = w.stored_bytes + added
  local threshold, freed = write_trim(w)
  local first = w.sequence + 1
  check_room(w, first, count)
  local reply = append_event(w, first, w.events[1], count == 1 and threshold or nil)
  if type(reply) == 'table' and reply.err then
    local last = last_generated(w.feed)
    if last and last >= first and last + count <= LIMITS.max_sequence then
      first = last + 1 -- the counter was lost: go on from the stream
      reply = append_event(w, first, w.events[1], count == 1 and threshold or nil)
    end
    if type(reply) == 'table' and reply.err then
      fail('FEED_CORRUPT', 'cannot append to the feed ' .. show(w.feed) .. ': ' .. tostring(reply.err)
           .. repair_hint(w.c))
    end
  end
  for i = 2, count do
    reply = append_event(w, first + i - 1, w.events[i], i == count and threshold or nil)
    if type(reply) == 'table' and reply.err then
      error(reply)
    end
  end
  w.first_seq, w.last_seq = first, first + count - 1
  redis.call('SET', w.seq, int_string(w.last_seq))
  redis.call('SET', w.feed_size, int_string(math.max(w.feed_bytes - freed, 0)))
end
