--[[ numbers: JSON number tokens in RFC 8259 form whose value is a
  finite double, one token at a time (json_number_end) or a long run of
  numbers and commas in a few pattern calls and one cjson call
  (number_run). cjson is not used to decide: its number parser takes
  0x10, nan and 1e400; it only reads the values of a run whose syntax was
  checked here. Both are linear in the text's length.                    ]]

-- The position after the number token at i, or nil, why.
local function json_number_end(text, i)
  local find, byte, sub, gsub, match = string.find, string.byte, string.sub, string.gsub, string.match
  local _, e = find(text, '^%-?%d+', i)
  if not e then
    return nil, 'a number must have digits'
  end
  local first = byte(text, i) == 45 and i + 1 or i
  if e > first and byte(text, first) == 48 then
    return nil, 'a number must not have leading zeros'
  end
  local _, fraction = find(text, '^%.%d+', e + 1)
  if fraction then
    e = fraction
  elseif byte(text, e + 1) == 46 then
    return nil, 'a decimal point must have digits after it'
  end
  local _, exponent = find(text, '^[eE][%+%-]?%d+', e + 1)
  if exponent then
    e = exponent
  elseif find(text, '^[eE]', e + 1) then
    return nil, 'an exponent must have digits'
  end
  if exponent or e - i > 300 then -- only these can be out of range
    local number = tonumber(sub(text, i, e))
    if not number or number ~= number or number == math.huge or number == -math.huge then
      return nil, 'a number must be a finite double'
    end
  end
  return e + 1
end

-- Byte pairs that cannot occur in a list of numbers: a decimal point or a
-- minus sign next to what cannot stand there (within the characters of
-- numbers and commas). Plain finds, far cheaper than class patterns.
local BAD_PAIRS = {',.', '-.', '..', 'e.', 'E.', '+.', '.,', '.-', '.e', '.E', '.+',
                   '0-', '1-', '2-', '3-', '4-', '5-', '6-', '7-', '8-', '9-', '.-', '+-', '--',
                   '-,', '-e', '-E', '-+', ',,'}

-- A run of at least 64 bytes of numbers and commas inside an array, at pos:
-- the position of its last byte when every number in it is in RFC 8259
-- form with an integer part of at most 150 digits and a finite double.
-- Else nil and the run's last byte (and why, for an infinite number):
-- its bytes go the token by token way, which decides exactly, and the
-- caller does not try this again inside the same run (each try scans to
-- the run's end: once per token made a run of n numbers cost n^2). One
-- pattern call per rule, not per token: each rule names a way a number
-- can be malformed, and each is linear in the run's length.
local function number_run(text, pos)
  local find, byte, sub = string.find, string.byte, string.sub
  local _, last = find(text, '^[%d,%-%.eE%+]+', pos)
  if last - pos < 64 then
    return nil, last
  end
  local run = sub(text, pos, last)
  local first, final = byte(run, 1), byte(run, #run)
  if first == 46 or first == 43 or first == 101 or first == 69 or final == 46 or final == 45 then
    return nil, last
  end
  for _, pair in ipairs(BAD_PAIRS) do
    if find(run, pair, 1, true) then
      return nil, last
    end
  end
  if (first == 48 or find(run, ',0', 1, true) or find(run, '-0', 1, true))
     and (find(run, '^%-?0%d') or find(run, ',%-?0%d')) then
    return nil, last -- a leading zero
  end
  if find(run, '.', 1, true) and find(run, '%.%d*%.') then
    return nil, last -- two decimal points in one number
  end
  local long_exponent = false
  if find(run, 'e', 1, true) or find(run, 'E', 1, true) or find(run, '+', 1, true) then
    if find(run, '[^eE]%+') or find(run, '[^%d][eE]') or find(run, '[eE][%+%-]?[^%d%+%-]')
       or find(run, '[eE][%+%-][^%d]') or find(run, '[eE][%+%-]?$')
       or find(run, '[eE][%+%-]?%d*[eE%.]') then
      return nil, last -- a plus outside an exponent, an exponent without digits, a second
                       -- one, or a decimal point after it
    end
    long_exponent = find(run, '[eE][%+%-]?%d%d%d') ~= nil
  end
  for sample = 151, #run, 150 do -- 301 digits in a row would span two samples
    local _, digits = find(run, '^%d+', sample)
    if digits and digits - sample >= 150 then
      return nil, last
    end
  end
  if long_exponent then
    -- numbers of 3 exponent digits or more may be out of range: read them
    -- all with cjson (its strtod; its syntax is not relied on: checked above)
    -- and look at the values, not token by token in Lua
    local body = final == 44 and sub(run, 1, -2) or run
    local ok, numbers = pcall(cjson.decode, '[' .. body .. ']')
    if not ok then
      return nil, last
    end
    local huge = math.huge
    for i = 1, #numbers do
      local v = numbers[i]
      if v == huge or v == -huge or v ~= v then
        return nil, last, 'a number must be a finite double'
      end
    end
  end
  return last
end
