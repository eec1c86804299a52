--[[ fence: a scope write may carry the token of the writer's turn (ARGV;
  '' = none), and declares the scope's turn hash rm:{ns}:turn:<scope>:<sid>
  (lib/65_turns.lua). check_fence refuses it (STALE_TURN), before anything
  is written, unless it is the scope's latest token: a holder whose turn
  lapsed and was taken can no longer write over its successor. Writes
  without a token are not fenced.                                          ]]

-- A stored count of turn hash `key`: 0 when absent, TURN_CORRUPT when it
-- is not an integer (a raw write).
local function turn_count(key, field, raw)
  if raw == false or raw == nil then
    return 0
  end
  if not string.find(raw, '^%d+$') or #raw > 16 or tonumber(raw) > LIMITS.max_sequence then
    fail('TURN_CORRUPT', 'field ' .. field .. ' of ' .. show(key) .. ' holds ' .. show(raw)
         .. ', not a count (a raw write; an operator deletes the field)')
  end
  return tonumber(raw)
end

-- Refuse a write that carries turn token `text` ('' = none) unless it is
-- the latest token of the turn hash `key` of scope `what` (reads only).
local function check_fence(key, what, text)
  if text == '' then
    return
  end
  local token = parse_int('turn token', text, 1, LIMITS.max_sequence)
  local current = turn_count(key, 'token', redis.call('HGET', key, 'token'))
  if token < current then
    fail('STALE_TURN', 'turn token ' .. int_string(token) .. ' is stale: ' .. what
         .. ' is at token ' .. int_string(current) .. ' (a later turn began)')
  elseif token > current then
    fail('STALE_TURN', 'turn token ' .. int_string(token) .. ' was never issued: ' .. what
         .. ' is at token ' .. int_string(current) .. ' (its turn state was lost)')
  end
end

-- The kept reply of scope writer w's request (a call sent again: it was
-- applied, and fenced, the first time), else nil once w.fence (the
-- call's turn token, '' = none) passed check_fence.
local function kept_or_fenced(w, fname)
  local kept = kept_reply(w, fname)
  if kept == nil then
    check_fence(w.turn, w.c.scope .. ':' .. w.c.sid, w.fence)
  end
  return kept
end
