--[[ feed: the namespace change feed. One INCR of rm:{ns}:seq and one XADD
  to rm:{ns}:feed with entry id <sequence>-0 per change, in the same call as
  the change, so the sequence has no gaps. Entry fields: scope, sid, key,
  kind, action, rev, by, ts, and either value (canonical JSON of at most
  feed_value_bytes) or omitted=1. Vector and delete events carry neither.
  Retention: trim_feed drops events older than the namespace's
  feed_retention_ms from the head of the feed, examining at most `budget`
  events. Writes call it through trim_after_writes each time the sequence
  passes a multiple of trim_every, with trim_every x trim_per_write events
  of budget: bounded work, trim_per_write events per write on average, and
  no look at the feed's head on the other writes.                        ]]

local function append_event(feed_key, seq_key, c, key, kind, action, revision, principal, ts, json)
  local sequence = redis.call('INCR', seq_key)
  local fields = {'scope', c.scope, 'sid', c.sid, 'key', key, 'kind', kind, 'action', action,
                  'rev', int_string(revision), 'by', principal, 'ts', int_string(ts)}
  if json then
    if #json <= LIMITS.feed_value_bytes then
      fields[#fields + 1] = 'value'
      fields[#fields + 1] = json
    else
      fields[#fields + 1] = 'omitted'
      fields[#fields + 1] = '1'
    end
  end
  redis.call('XADD', feed_key, int_string(sequence) .. '-0', unpack(fields))
  return sequence
end

local function event_ts(fields)
  for i = 1, #fields, 2 do
    if fields[i] == 'ts' then
      return tonumber(fields[i + 1]) or 0
    end
  end
  return 0
end

-- Drop expired events from the head of the feed; returns how many. When the
-- oldest event is still retained this costs one XRANGE of one entry; only
-- otherwise are up to `budget` events read.
local function trim_feed(feed_key, config_key, now, budget)
  local oldest = redis.call('XRANGE', feed_key, '-', '+', 'COUNT', 1)
  if #oldest == 0 then
    return 0
  end
  local cutoff = now - config_get(config_key, 'feed_retention_ms')
  if event_ts(oldest[1][2]) >= cutoff then
    return 0
  end
  local trimmed = 0
  while budget > 0 do
    local batch = redis.call('XRANGE', feed_key, '-', '+', 'COUNT', math.min(budget, 1000))
    local old = 0
    while old < #batch and event_ts(batch[old + 1][2]) < cutoff do
      old = old + 1
    end
    if old == 0 then
      break
    end
    local last_old = tonumber(string.match(batch[old][1], '^(%d+)'))
    redis.call('XTRIM', feed_key, 'MINID', int_string(last_old + 1) .. '-0')
    trimmed = trimmed + old
    budget = budget - old
    if old < #batch then
      break
    end
  end
  return trimmed
end

-- Trim after a write call that appended the events first_seq..last_seq.
local function trim_after_writes(feed_key, config_key, now, first_seq, last_seq)
  local every = LIMITS.trim_every
  local crossed = math.floor(last_seq / every) - math.floor((first_seq - 1) / every)
  if crossed > 0 then
    trim_feed(feed_key, config_key, now, crossed * every * LIMITS.trim_per_write)
  end
end
