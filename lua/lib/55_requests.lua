--[[ requests: a write call applied at most once, however often it is sent.
  A value or vector write may carry a request id (ARGV; '' = none). The
  reply of an applied call is kept under its id in the caller's
  rm:{<ns>}:who:<principal>:<bucket> hash, field = request id, value =
  '<function> <reply>'; the hash expires REQUEST_KEEP_MS after its first
  request. A call whose id is kept changes nothing and returns the kept
  reply, so a client that lost a reply (a dropped connection, a timeout)
  sends the same call again without applying it twice. The client names
  the bucket (its clock in minutes, redismem/keys.py): one hash holds about
  a minute of a principal's requests, and each is kept at least two minutes
  (less the clock difference between that principal's clients).        ]]

local REQUEST_KEEP_MS = 180000

-- A request id (1..64 of [A-Za-z0-9_-]), or nil for ''.
local function check_request_id(text)
  if text == '' then
    return nil
  end
  if type(text) ~= 'string' or #text > 64 or not string.find(text, '^[%w_%-]+$') then
    fail('INVALID_ARGUMENT', 'a request id is 1 to 64 letters, digits, _ or -, got ' .. show(text))
  end
  return text
end

-- KEYS[slot] checked to be the principal's key of some bucket (decimal).
local function expect_who(keys, slot, c, principal)
  local prefix = SCHEMA.principal(c, principal) .. ':'
  local key = keys[slot]
  local bucket = string.sub(key, #prefix + 1)
  if string.sub(key, 1, #prefix) ~= prefix or #bucket > 15 or not string.find(bucket, '^%d+$') then
    fail('INVALID_ARGUMENT', 'KEYS[' .. slot .. '] must be ' .. show(prefix .. '<bucket>')
         .. ' (<bucket> decimal digits), got ' .. show(key))
  end
  return key
end

-- The reply kept for w.request by function `name`, or nil.
local function kept_reply(w, name)
  if not w.request then
    return nil
  end
  local kept = redis.call('HGET', w.who, w.request)
  if not kept then
    return nil
  end
  local by, reply = string.match(kept, '^(%S+) (.*)$')
  if by ~= name then
    fail('INVALID_ARGUMENT', 'request id ' .. show(w.request) .. ' was used by another call ('
         .. show(by or kept) .. ')')
  end
  return reply
end

-- Keep the reply (a string) of an applied call under its request id.
local function keep_reply(w, name, reply)
  if w.request then
    redis.call('HSET', w.who, w.request, name .. ' ' .. reply)
    redis.call('PEXPIRE', w.who, REQUEST_KEEP_MS, 'NX')
  end
end

-- A list of integers as text and back ('' for none).
local function ints_text(list)
  local out = {}
  for i, n in ipairs(list) do
    out[i] = int_string(n)
  end
  return table.concat(out, ',')
end

local function text_ints(text)
  local out = {}
  for n in string.gmatch(text, '%d+') do
    out[#out + 1] = tonumber(n)
  end
  return out
end
