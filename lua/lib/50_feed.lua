--[[ feed: the namespace change feed. One INCR of rm:{ns}:seq and one XADD
  to rm:{ns}:feed with entry id <sequence>-0 per change, in the same call as
  the change, so the sequence has no gaps. Entry fields: scope, sid, key,
  kind, action, rev, by, ts, and either value (canonical JSON of at most
  feed_value_bytes) or omitted=1. Vector and delete events carry neither.  ]]

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
