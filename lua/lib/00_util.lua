--[[ util: errors, registration, argument parsing, the clock.
  fail(code, message) aborts the current function; register() turns that
  into the error reply `CODE message`. (error({err = ...}) would do on Redis,
  but fakeredis drops its text, so every function goes through register.)
  Functions validate everything before their first write: an error reply
  does not undo earlier writes. Numbers in messages are printed as integers
  (int_string), never as 9.007199254741e+15.                                          ]]

local RM_ERROR = {}

local function fail(code, message)
  error(setmetatable({code = code, message = message}, RM_ERROR), 0)
end

local function register(name, callback, read_only)
  local function guarded(keys, args)
    local ok, result = pcall(callback, keys, args)
    if ok then
      return result
    end
    if getmetatable(result) == RM_ERROR then
      return redis.error_reply(result.code .. ' ' .. result.message)
    end
    error(result, 0)
  end
  local spec = {function_name = name, callback = guarded}
  if read_only then
    spec.flags = {'no-writes'}
  end
  redis.register_function(spec)
end

-- The length of the UTF-8 sequence whose first byte b (>= 0x80) is at i, or nil.
local function utf8_length(text, i, b)
  local b2, b3, b4 = string.byte(text, i + 1, i + 3)
  if b >= 0xC2 and b <= 0xDF then
    if b2 and b2 >= 0x80 and b2 <= 0xBF then
      return 2
    end
  elseif b >= 0xE0 and b <= 0xEF then
    local low, high = 0x80, 0xBF
    if b == 0xE0 then low = 0xA0 elseif b == 0xED then high = 0x9F end
    if b2 and b2 >= low and b2 <= high and b3 and b3 >= 0x80 and b3 <= 0xBF then
      return 3
    end
  elseif b >= 0xF0 and b <= 0xF4 then
    local low, high = 0x80, 0xBF
    if b == 0xF0 then low = 0x90 elseif b == 0xF4 then high = 0x8F end
    if b2 and b2 >= low and b2 <= high and b3 and b3 >= 0x80 and b3 <= 0xBF
       and b4 and b4 >= 0x80 and b4 <= 0xBF then
      return 4
    end
  end
  return nil
end

-- RFC 3629 UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF.
local function is_utf8(text)
  local i = string.find(text, '[\128-\255]')
  while i do
    local n = utf8_length(text, i, string.byte(text, i))
    if not n then
      return false
    end
    i = string.find(text, '[\128-\255]', i + n)
  end
  return true
end

-- Text for an error message: printable, valid UTF-8, at most 80 bytes.
-- Only the first SHOW_READ bytes are looked at (a refused 1 MiB value must
-- not cost a scan of it), never ending inside a UTF-8 sequence.
local SHOW_READ = 120
local function show(value)
  local text = tostring(value)
  if #text > SHOW_READ then
    local cut, back = SHOW_READ, 0
    while back < 3 and string.byte(text, cut - back) >= 0x80 and string.byte(text, cut - back) <= 0xBF do
      back = back + 1
    end
    local lead = string.byte(text, cut - back)
    local need = lead >= 0xF0 and 4 or lead >= 0xE0 and 3 or lead >= 0xC0 and 2 or 1
    if lead >= 0xC0 and back + 1 < need then
      cut = cut - back - 1 -- the last sequence was cut: leave it out
    end
    text = string.sub(text, 1, cut)
  end
  if not is_utf8(text) then
    text = string.gsub(text, '[\128-\255]', function(c) return string.format('\\x%02x', string.byte(c)) end)
  end
  text = string.gsub(text, '%c', function(c) return string.format('\\x%02x', string.byte(c)) end)
  if #text > 80 then
    local cut = 77
    while cut > 0 and string.byte(text, cut + 1) >= 0x80 and string.byte(text, cut + 1) <= 0xBF do
      cut = cut - 1 -- never split a UTF-8 sequence
    end
    text = string.sub(text, 1, cut) .. '...'
  end
  return "'" .. text .. "'"
end

local function int_string(number)
  return string.format('%d', number)
end

-- An integer in [low, high] written in decimal; `what` names it in errors.
local function parse_int(what, text, low, high, code)
  code = code or 'INVALID_ARGUMENT'
  if type(text) ~= 'string' or not string.find(text, '^%-?%d+$') or #text > 16 then
    fail(code, what .. ' must be an integer, got ' .. show(text))
  end
  local number = tonumber(text)
  if number < low or number > high then
    fail(code, what .. ' must be between ' .. int_string(low) .. ' and ' .. int_string(high)
         .. ', got ' .. text)
  end
  return number
end

-- At least `first` arguments, and at most `most` when given (a trailing
-- extra argument is refused, never ignored).
local function count_args(args, first, what, most)
  if #args < first then
    fail('INVALID_ARGUMENT', 'expected at least ' .. first .. ' arguments (' .. what .. '), got ' .. #args)
  end
  if most and #args > most then
    fail('INVALID_ARGUMENT', 'expected at most ' .. most .. ' arguments (' .. what .. '), got ' .. #args)
  end
end

local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

