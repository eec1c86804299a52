--[[ json: strict JSON syntax, the rules both sides apply
  (redismem/_json.py is the Python twin; tests/test_json_rules.py checks
  with generated input that both accept exactly the same texts).
  UTF-8: RFC 3629 (no overlong forms, no surrogates, nothing past U+10FFFF).
  JSON: one RFC 8259 value, whitespace (space, tab, LF, CR) around tokens;
  strings of valid UTF-8 without raw U+0000..U+001F whose escapes are the
  eight simple ones or \uXXXX naming no lone surrogate; numbers in RFC 8259
  form whose value is a finite double; at most max_json_depth nested
  arrays and objects. cjson is not used to decide: its number parser takes
  0x10, nan and 1e400, and fakeredis' cjson differs from Redis'. It only
  reads the values of long runs of numbers whose syntax was checked here,
  to find any out of range in one C call (number_run, lib/13_numbers.lua).
  UTF-8 is checked by lib/12_utf8.lua; reading checked JSON is in
  lib/17_json_read.lua.
  Every check is linear in the text's length (scripts/bench.py json).   ]]

-- A run of printable ASCII but '"' and '\\': what most strings are made of.
local JSON_PLAIN = '^[\32\33\35-\91%]\94-\126]*'

local SIMPLE_ESCAPES = {[34] = true, [92] = true, [47] = true, [98] = true, [102] = true,
                        [110] = true, [114] = true, [116] = true}

local string_end_bulk

-- The position after the \uXXXX escape at `at` of `text` (its backslash),
-- with the low half that a high surrogate needs; or nil, why.
local function unicode_escape_end(text, at)
  local hex = string.match(text, '^\\u(%x%x%x%x)', at)
  if not hex then
    return nil, 'a \\u escape needs four hex digits'
  end
  local code = tonumber(hex, 16)
  if code >= 0xDC00 and code <= 0xDFFF then
    return nil, 'a \\u escape names a lone surrogate'
  elseif code >= 0xD800 and code <= 0xDBFF then
    local low = string.match(text, '^\\u(%x%x%x%x)', at + 6)
    local low_code = low and tonumber(low, 16)
    if not low_code or low_code < 0xDC00 or low_code > 0xDFFF then
      return nil, 'a \\u escape names a lone surrogate'
    end
    return at + 12
  end
  return at + 6
end

-- The position after the string token whose opening quote is at i, or nil, why.
-- Runs of printable ASCII and of other characters are each checked in one
-- pattern call, not byte by byte; escapes one at a time, and after
-- BULK_AFTER of them the rest of the string in a few passes
-- (string_end_bulk; not when `exact`).
local BULK_AFTER = 16
local function json_string_end(text, i, exact)
  local find, byte = string.find, string.byte -- the rest only on rarer paths
  local pos, escapes = i + 1, 0
  while true do
    local _, last = find(text, JSON_PLAIN, pos)
    local k = last + 1
    local b = byte(text, k)
    if b == 34 then
      return k + 1
    elseif b == 92 then
      local e = byte(text, k + 1)
      if e == 117 then
        local why
        pos, why = unicode_escape_end(text, k)
        if not pos then
          return nil, why
        end
      elseif SIMPLE_ESCAPES[e] then
        pos = k + 2
      else
        return nil, 'a string has an invalid escape'
      end
      escapes = escapes + 1
      if escapes == BULK_AFTER and not exact then
        return string_end_bulk(text, i, pos)
      end
    elseif not b then
      return nil, 'a string is not closed'
    elseif b >= 127 then -- DEL or the start of a run of other characters
      local _, stop = find(text, '^[^%z\1-\31"\\]+', k)
      if not utf8_run_ok(string.sub(text, k, stop)) then
        return nil, 'a string is not valid UTF-8'
      end
      pos = stop + 1
    else
      return nil, 'a string holds a raw control character (escape it)'
    end
  end
end

-- Whether the \u escapes left in `marked` (a string body whose other
-- escapes were replaced by one byte each) are each valid
-- (unicode_escape_end).
local function unicode_escapes_ok(marked)
  local at = string.find(marked, '\\', 1, true)
  while at do
    local after = unicode_escape_end(marked, at)
    if not after then
      return false
    end
    at = string.find(marked, '\\', after, true)
  end
  return true
end

-- The end of the string opened at i, checking from k on in a few passes
-- over the rest of it (a mebibyte string of 'é' and '\n' took 266 ms
-- escape by escape): as json_string_end. A string these passes do not
-- accept is checked again exactly, which names what is wrong.
string_end_bulk = function(text, i, k)
  local find, byte = string.find, string.byte
  local q = k
  while true do -- the closing quote: one after an even run of backslashes
    q = find(text, '"', q, true)
    if not q then
      return json_string_end(text, i, true)
    end
    local s = q - 1
    while byte(text, s) == 92 do
      s = s - 1
    end
    if (q - 1 - s) % 2 == 0 then
      break
    end
    q = q + 1
  end
  local body = string.sub(text, k, q - 1)
  if find(body, '[%z\1-\31]') then
    return json_string_end(text, i, true)
  end
  local marked = string.gsub(body, '\\["\\/bfnrt]', '\1')
  if not unicode_escapes_ok(marked) or (find(marked, '[\128-\255]') and not utf8_run_ok(marked)) then
    return json_string_end(text, i, true)
  end
  return q + 1
end

local LITERALS = {[116] = 'true', [102] = 'false', [110] = 'null'}
local OPEN, CLOSE = {[91] = 93, [123] = 125}, {[93] = 91, [125] = 123}

local UNESCAPE = {['"'] = '"', ['\\'] = '\\', ['/'] = '/', b = '\b', f = '\f', n = '\n',
                  r = '\r', t = '\t'}

local function json_unescape(body)
  if not string.find(body, '\\', 1, true) then
    return body
  end
  local high -- a high surrogate waits for its low half, the next escape
  return (string.gsub(body, '\\(.)(%x?%x?%x?%x?)', function(c, hex)
    if c ~= 'u' then
      return UNESCAPE[c] .. hex
    end
    local code = tonumber(hex, 16)
    if code >= 0xD800 and code <= 0xDBFF then
      high = code
      return ''
    end
    if high then
      code, high = 0x10000 + (high - 0xD800) * 0x400 + code - 0xDC00, nil
    end
    return utf8_char(code)
  end))
end

-- nil when text is one strict JSON value, else why not. With `fields` (a
-- table) and an object text, also records its top-level members in the
-- same pass, without reading their values: name -> {s = first byte, e =
-- last byte, b = the first byte's code} (the last of a name wins). With
-- `commas` (a table) and an array text, records the byte positions of
-- the commas between its items, in order.
local function json_error(text, fields, commas)
  local find, byte, sub, gsub, match = string.find, string.byte, string.sub, string.gsub, string.match
  local pos, depth, stack = 1, 0, {}
  local slow_until = 0 -- a run of numbers number_run gave up on ends here
  local member -- the top-level member being read, when recording fields
  local state = 'value' -- value | first (value or ']') | key | first_key (key or '}') | colon | after
  while true do
    local b = byte(text, pos)
    if b == 32 or b == 9 or b == 10 or b == 13 then
      local _, last = find(text, '^[ \t\n\r]+', pos)
      pos = last + 1
      b = byte(text, pos)
    end
    local why
    if state == 'after' then
      if depth == 0 then
        if b then
          return 'unexpected ' .. show(string.char(b)) .. ' after the value, at byte ' .. pos
        end
        return nil
      end
      local top = stack[depth]
      if b == 44 then
        state = top == 123 and 'key' or 'value'
        if commas and depth == 1 then
          commas[#commas + 1] = pos
        end
        pos = pos + 1
      elseif b and CLOSE[b] == top then
        depth = depth - 1
        pos = pos + 1
        if member and depth == 1 then
          member.e = pos - 1
        end
      else
        return 'expected , or ' .. (top == 123 and '}' or ']') .. ' at byte ' .. pos
      end
    elseif state == 'value' or state == 'first' then
      if b == 93 and state == 'first' then
        depth, pos, state = depth - 1, pos + 1, 'after'
        if member and depth == 1 then
          member.e = pos - 1
        end
      elseif b == 91 or b == 123 then
        if member and depth == 1 then
          member.s, member.b = pos, b
        end
        depth = depth + 1
        if depth > LIMITS.max_json_depth then
          return 'nested deeper than ' .. LIMITS.max_json_depth .. ' levels'
        end
        stack[depth] = b
        pos = pos + 1
        state = b == 123 and 'first_key' or 'first'
      elseif b == 34 then
        local start = pos
        pos, why = json_string_end(text, pos)
        state = 'after'
        if member and depth == 1 and pos then
          member.s, member.e, member.b = start, pos - 1, b
        end
      elseif b == 45 or (b and b >= 48 and b <= 57) then
        local start = pos
        local run_end, run_last
        if stack[depth] == 91 and pos > slow_until then
          run_end, run_last, why = number_run(text, pos)
          if why then
            return why
          end
          slow_until = run_end and 0 or run_last
        end
        if run_end then -- ends in a number, or in a comma: a value is due
          state = byte(text, run_end) == 44 and 'value' or 'after'
          pos = run_end + 1
          if commas and depth == 1 then -- the run's own commas
            local at = find(text, ',', start, true)
            while at and at <= run_end do
              commas[#commas + 1] = at
              at = find(text, ',', at + 1, true)
            end
          end
        else
          local first = b == 45 and pos + 1 or pos
          local _, digits = find(text, '^%d+', first)
          local after = digits and byte(text, digits + 1)
          if digits and after ~= 46 and after ~= 101 and after ~= 69 and digits - pos < 300
             and (digits == first or byte(text, first) ~= 48) then
            pos = digits + 1 -- a plain integer, the common case
          else
            pos, why = json_number_end(text, pos)
          end
          state = 'after'
        end
        if member and depth == 1 and pos then
          member.s, member.e, member.b = start, pos - 1, b
        end
      elseif b and LITERALS[b] and sub(text, pos, pos + #LITERALS[b] - 1) == LITERALS[b] then
        if member and depth == 1 then
          member.s, member.e, member.b = pos, pos + #LITERALS[b] - 1, b
        end
        pos = pos + #LITERALS[b]
        state = 'after'
      elseif b then
        return 'expected a value at byte ' .. pos
      else
        return 'the text ends where a value is expected'
      end
    elseif state == 'key' or state == 'first_key' then
      if b == 125 and state == 'first_key' then
        depth, pos, state = depth - 1, pos + 1, 'after'
        if member and depth == 1 then
          member.e = pos - 1
        end
      elseif b == 34 then
        local start = pos
        pos, why = json_string_end(text, pos)
        state = 'colon'
        if fields and depth == 1 and pos then
          member = {}
          fields[json_unescape(sub(text, start + 1, pos - 2))] = member
        end
      else
        return 'expected a string key at byte ' .. pos
      end
    else -- colon
      if b ~= 58 then
        return 'expected : at byte ' .. pos
      end
      pos = pos + 1
      state = 'value'
    end
    if why then
      return why
    end
  end
end

