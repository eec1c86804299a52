--[[ util: errors, registration, argument parsing, the clock.
  fail(code, message) aborts the current function; register() turns that
  into the error reply `CODE message`. (error({err = ...}) would do on Redis,
  but fakeredis drops its text, so every function goes through register.)
  Functions validate everything before their first write: an error reply
  does not undo earlier writes.                                          ]]

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

local function show(value)
  local text = tostring(value)
  if #text > 80 then
    text = string.sub(text, 1, 77) .. '...'
  end
  return "'" .. text .. "'"
end

-- An integer in [low, high] written in decimal; `what` names it in errors.
local function parse_int(what, text, low, high, code)
  code = code or 'INVALID_ARGUMENT'
  if type(text) ~= 'string' or not string.find(text, '^%-?%d+$') or #text > 16 then
    fail(code, what .. ' must be an integer, got ' .. show(text))
  end
  local number = tonumber(text)
  if number < low or number > high then
    fail(code, what .. ' must be between ' .. low .. ' and ' .. high .. ', got ' .. text)
  end
  return number
end

local function count_args(args, first, what)
  if #args < first then
    fail('INVALID_ARGUMENT', 'expected at least ' .. first .. ' arguments (' .. what .. '), got ' .. #args)
  end
end

local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

local function int_string(number)
  return string.format('%d', number)
end
