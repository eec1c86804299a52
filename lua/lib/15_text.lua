--[[ text: strict UTF-8 and strict JSON, the rules both sides apply
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
  to find any out of range in one C call (number_run).
  Every check is linear in the text's length (scripts/bench.py json).   ]]

-- A run of printable ASCII but '"' and '\\': what most strings are made of.
local JSON_PLAIN = '^[\32\33\35-\91%]\94-\126]*'

local SIMPLE_ESCAPES = {[34] = true, [92] = true, [47] = true, [98] = true, [102] = true,
                        [110] = true, [114] = true, [116] = true}

-- Every valid UTF-8 sequence of two or more bytes is one of these (RFC 3629),
-- the common ones first.
local UTF8_COMMON = {'[\225-\236\238\239][\128-\191][\128-\191]', '[\194-\223][\128-\191]',
                     '\240[\144-\191][\128-\191][\128-\191]'}
local UTF8_RARE = {'\224[\160-\191][\128-\191]', '\237[\128-\159][\128-\191]',
                   '[\241-\243][\128-\191][\128-\191][\128-\191]', '\244[\128-\143][\128-\191][\128-\191]'}

-- Whether text without control characters is valid UTF-8, in bulk: each
-- valid sequence is replaced by one ASCII byte (never joining its
-- neighbours into a new sequence), and valid text has no byte >= 0x80 left.
local function utf8_run_ok(text)
  local find, byte, sub, gsub, match = string.find, string.byte, string.sub, string.gsub, string.match
  for _, pattern in ipairs(UTF8_COMMON) do
    text = gsub(text, pattern, 'x')
  end
  local _, ascii = find(text, '^[\1-\127]*')
  if ascii == #text then
    return true
  end
  for _, pattern in ipairs(UTF8_RARE) do
    text = gsub(text, pattern, 'x')
  end
  _, ascii = find(text, '^[\1-\127]*')
  return ascii == #text
end

-- The position after the string token whose opening quote is at i, or nil, why.
-- Runs of printable ASCII and of other characters are each checked in one
-- pattern call, not byte by byte.
local function json_string_end(text, i)
  local find, byte = string.find, string.byte -- the rest only on rarer paths
  local pos = i + 1
  while true do
    local _, last = find(text, JSON_PLAIN, pos)
    local k = last + 1
    local b = byte(text, k)
    if b == 34 then
      return k + 1
    elseif b == 92 then
      local e = byte(text, k + 1)
      if e == 117 then
        local hex = string.match(text, '^%x%x%x%x', k + 2)
        if not hex then
          return nil, 'a \\u escape needs four hex digits'
        end
        local code = tonumber(hex, 16)
        if code >= 0xDC00 and code <= 0xDFFF then
          return nil, 'a \\u escape names a lone surrogate'
        elseif code >= 0xD800 and code <= 0xDBFF then
          local low = string.match(text, '^\\u(%x%x%x%x)', k + 6)
          local low_code = low and tonumber(low, 16)
          if not low_code or low_code < 0xDC00 or low_code > 0xDFFF then
            return nil, 'a \\u escape names a lone surrogate'
          end
          pos = k + 12
        else
          pos = k + 6
        end
      elseif SIMPLE_ESCAPES[e] then
        pos = k + 2
      else
        return nil, 'a string has an invalid escape'
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

local LITERALS = {[116] = 'true', [102] = 'false', [110] = 'null'}
local OPEN, CLOSE = {[91] = 93, [123] = 125}, {[93] = 91, [125] = 123}

local function utf8_char(code)
  if code < 0x80 then
    return string.char(code)
  elseif code < 0x800 then
    return string.char(0xC0 + math.floor(code / 0x40), 0x80 + code % 0x40)
  elseif code < 0x10000 then
    return string.char(0xE0 + math.floor(code / 0x1000), 0x80 + math.floor(code / 0x40) % 0x40,
                       0x80 + code % 0x40)
  end
  return string.char(0xF0 + math.floor(code / 0x40000), 0x80 + math.floor(code / 0x1000) % 0x40,
                     0x80 + math.floor(code / 0x40) % 0x40, 0x80 + code % 0x40)
end

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
-- last byte, b = the first byte's code} (the last of a name wins).
local function json_error(text, fields)
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

--[[ Reading checked JSON (never called on text json_error refused).
  json_node(text, i, levels) reads the value at i and returns node, next
  position: a node is {s = first byte, e = last byte, t = type, v = value}
  with t one of 'string', 'number', 'true', 'false', 'null', 'array' (v =
  list of nodes) or 'object' (v = list of {key = decoded name, node =
  node}). Arrays and objects nested deeper than `levels` are skipped: their
  node has no v.                                                          ]]

local function skip_space(text, pos)
  local b = string.byte(text, pos)
  if b ~= 32 and b ~= 9 and b ~= 10 and b ~= 13 then
    return pos -- canonical JSON has no whitespace: no pattern call
  end
  local _, last = string.find(text, '^[ \t\n\r]*', pos)
  return last + 1
end

-- The position after the array or object opening at pos, without reading it.
local function json_skip(text, pos)
  local depth = 0
  while true do
    local k = string.find(text, '["%[%]{}]', pos)
    local b = string.byte(text, k)
    if b == 34 then
      pos = json_string_end(text, k)
    else
      depth = depth + ((b == 91 or b == 123) and 1 or -1)
      pos = k + 1
      if depth == 0 then
        return pos
      end
    end
  end
end

local json_node

local function json_members(text, pos, close, object, levels)
  local items = {}
  pos = skip_space(text, pos + 1)
  if string.byte(text, pos) == close then
    return items, pos
  end
  while true do
    local name
    if object then
      local after = json_string_end(text, pos)
      name = json_unescape(string.sub(text, pos + 1, after - 2))
      pos = skip_space(text, skip_space(text, after) + 1) -- past ':'
    end
    local node
    node, pos = json_node(text, pos, levels)
    items[#items + 1] = object and {key = name, node = node} or node
    pos = skip_space(text, pos)
    if string.byte(text, pos) == close then
      return items, pos
    end
    pos = skip_space(text, pos + 1) -- past ','
  end
end

json_node = function(text, pos, levels)
  pos = skip_space(text, pos)
  local b = string.byte(text, pos)
  local node = {s = pos}
  local after
  if b == 123 or b == 91 then
    node.t = b == 123 and 'object' or 'array'
    if levels > 0 then
      local last
      node.v, last = json_members(text, pos, OPEN[b], b == 123, levels - 1)
      after = last + 1
    else
      after = json_skip(text, pos)
    end
  elseif b == 34 then
    after = json_string_end(text, pos)
    node.t, node.v = 'string', json_unescape(string.sub(text, pos + 1, after - 2))
  elseif LITERALS[b] then
    node.t = LITERALS[b]
    after = pos + #LITERALS[b]
  else
    after = json_number_end(text, pos)
    node.t, node.v = 'number', tonumber(string.sub(text, pos, after - 1))
  end
  node.e = after - 1
  return node, after
end

-- The decoded string of a field json_error recorded, or nil when it is not one.
local function json_field_string(text, field)
  if field.b ~= 34 then
    return nil
  end
  return json_unescape(string.sub(text, field.s + 1, field.e - 1))
end

-- The number of a field json_error recorded, or nil when it is not one.
local function json_field_number(text, field)
  if field.b ~= 45 and (field.b < 48 or field.b > 57) then
    return nil
  end
  return tonumber(string.sub(text, field.s, field.e))
end

-- Text for a string as Python's json.dumps(ensure_ascii=False) writes it.
local QUOTED = {['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n',
                ['\r'] = '\\r', ['\t'] = '\\t', ['\127'] = '\127'}

local function json_quote(text)
  return '"' .. string.gsub(text, '[%c"\\]', function(c)
    return QUOTED[c] or string.format('\\u%04x', string.byte(c))
  end) .. '"'
end

-- Six bytes of s from `at` as one number that orders like the bytes: each
-- byte is a base-257 digit one above its code, 0 past the end, so a
-- shorter string sorts first (257^6 < 2^53: exact).
local function chunk_key(s, at)
  local a, b, c, d, e, f = string.byte(s, at, at + 5)
  return ((((((a or -1) + 1) * 257 + (b or -1) + 1) * 257 + (c or -1) + 1) * 257
          + (d or -1) + 1) * 257 + (e or -1) + 1) * 257 + (f or -1) + 1
end

-- `names` in byte order, which is code point order for UTF-8 (Python
-- sorts keys so; `<` on strings follows the server's locale). A radix
-- sort on six bytes at a time: the keys are numbers, which table.sort
-- compares in C, so no Lua comparator runs per comparison (one made a
-- 70,000-member merge hold the server 520 ms). Names already in order
-- (canonical JSON) cost one key each.
local function sort_bytes(names, at)
  at = at or 1
  while #names > 1 do
    local keys, ordered, same = {chunk_key(names[1], at)}, true, true
    for i = 2, #names do
      local k = chunk_key(names[i], at)
      keys[i] = k
      if k <= keys[i - 1] then
        ordered = false
      end
      if k ~= keys[1] then
        same = false
      end
    end
    if ordered then
      return names
    end
    if not same then
      local groups, distinct = {}, {}
      for i = 1, #names do
        local k, name = keys[i], names[i]
        local group = groups[k]
        if group == nil then
          groups[k], distinct[#distinct + 1] = name, k
        elseif type(group) == 'string' then
          groups[k] = {group, name}
        else
          group[#group + 1] = name
        end
      end
      table.sort(distinct)
      local out = {}
      for _, k in ipairs(distinct) do
        local group = groups[k]
        if type(group) == 'string' then
          out[#out + 1] = group
        else
          for _, name in ipairs(sort_bytes(group, at + 6)) do
            out[#out + 1] = name
          end
        end
      end
      return out
    end
    if #names[1] < at + 5 then
      return names -- all end inside these six bytes (a key marks the end): all equal
    end
    at = at + 6 -- all share these six bytes: look further, without recursing
  end
  return names
end

-- The position after the value at pos of checked text, reading no deeper.
local function value_end(text, pos)
  local b = string.byte(text, pos)
  if b == 123 or b == 91 then
    return json_skip(text, pos)
  elseif b == 34 then
    return json_string_end(text, pos)
  elseif LITERALS[b] then
    return pos + #LITERALS[b]
  end
  local _, last = string.find(text, '^[%-%d%.eE%+]+', pos)
  return last + 1
end

-- The members of the checked object at pos ({name, text of the value,
-- first byte of the value}), each charged to budget.left; past it, the
-- merge is refused before more is read.
local function object_members(text, pos, budget)
  local byte, sub, find = string.byte, string.sub, string.find
  local members, left = {}, budget.left
  pos = skip_space(text, pos + 1)
  if byte(text, pos) == 125 then
    return members
  end
  while true do
    left = left - 1
    if left < 0 then
      fail('REQUEST_TOO_LARGE', 'a merge reads at most ' .. LIMITS.max_merge_members
           .. ' object members, of the patch and the stored value together, at every level'
           .. ' the patch reaches; this one needs more: write the value with set')
    end
    local after = find(text, '"', pos + 1, true) + 1 -- the closing quote, unless escaped
    local name = sub(text, pos + 1, after - 2)
    local quoted = name -- checked text without '\\': already as json_quote writes it
    if find(name, '\\', 1, true) then
      after = json_string_end(text, pos)
      name, quoted = json_unescape(sub(text, pos + 1, after - 2)), nil
    end
    pos = byte(text, after) == 58 and after + 1 or skip_space(text, skip_space(text, after) + 1)
    pos = skip_space(text, pos)
    local b, stop = byte(text, pos), value_end(text, pos)
    members[#members + 1] = {name, sub(text, pos, stop - 1), b, quoted}
    b = byte(text, stop)
    if b == 44 then
      pos = stop + 1
    elseif b == 125 then
      budget.left = left
      return members
    else
      pos = skip_space(text, stop)
      if byte(text, pos) == 125 then
        budget.left = left
        return members
      end
      pos = pos + 1 -- past ','
    end
    pos = skip_space(text, pos)
  end
end

-- RFC 7386: the text of the checked `patch` merged into the checked
-- `target` (nil = absent). Members come out sorted by name; values that
-- are not merged keep their text. Reads only the levels the patch
-- reaches, each object member charged to budget.left.
local function json_merge(target, patch, budget)
  local at = skip_space(patch, 1)
  if string.byte(patch, at) ~= 123 then
    return string.sub(patch, at, value_end(patch, at) - 1)
  end
  local texts, names = {}, {} -- name -> text of the value, or false when deleted
  local quoted = {} -- name -> its text between quotes, when known
  if target then
    local t = skip_space(target, 1)
    if string.byte(target, t) == 123 then
      for _, m in ipairs(object_members(target, t, budget)) do
        if texts[m[1]] == nil then
          names[#names + 1], quoted[m[1]] = m[1], m[4]
        end
        texts[m[1]] = m[2] -- the last of a repeated name wins, as in JSON readers
      end
    end
  end
  for _, m in ipairs(object_members(patch, at, budget)) do
    local name, old = m[1], texts[m[1]]
    if old == nil then
      names[#names + 1], quoted[name] = name, m[4]
    end
    if m[3] == 110 then -- null deletes
      texts[name] = false
    else
      texts[name] = json_merge(old or nil, m[2], budget)
    end
  end
  local parts = {}
  for _, name in ipairs(sort_bytes(names)) do
    local text = texts[name]
    if text then
      local q = quoted[name]
      parts[#parts + 1] = (q and '"' .. q .. '"' or json_quote(name)) .. ':' .. text
    end
  end
  return '{' .. table.concat(parts, ',') .. '}'
end

-- The last `count` items of the checked JSON array `text`, as written
-- (separators included; '' for none), read from the end on the reversed
-- text: the work is in the items kept, not in the list's length (a full
-- read of a 524k-item list held the server 0.9 s).
local function json_list_tail(text, count)
  local find, byte, sub = string.find, string.byte, string.sub
  local n, rev = #text, string.reverse(text)
  local _, close = find(rev, '^[ \t\n\r]*%]') -- the list's ']'
  local last = n - close -- in text, the byte before ']'
  local _, space = find(rev, '^[ \t\n\r]*', close + 1)
  if count == 0 or byte(rev, space + 1) == 91 then
    return ''
  end
  local pos, depth, items = close + 1, 0, 0
  while true do
    local k = find(rev, '[",%[%]{}]', pos)
    local b = byte(rev, k)
    pos = k + 1
    if b == 34 then -- a string, from its end: its start is the first '"' not escaped,
      local q = k   -- that is not followed (here) by an odd run of '\\'
      repeat
        q = find(rev, '"', q + 1, true)
        local _, run = find(rev, '^\\*', q + 1)
      until (run - q) % 2 == 0
      pos = q + 1
    elseif b == 93 or b == 125 then
      depth = depth + 1
    elseif depth > 0 then
      if b ~= 44 then
        depth = depth - 1
      end
    elseif b == 91 then -- the list's '[': it has at most `count` items
      return sub(text, n - k + 2, last)
    else -- a ',' between two of the list's items
      items = items + 1
      if items == count then
        return sub(text, n - k + 2, last)
      end
    end
  end
end

-- The top-level members (name -> span, recorded by json_error) of a JSON
-- object of at most `limit` bytes.
local function decode_object(code, what, text, limit)
  if #text > limit then
    fail(code, what .. ' is ' .. #text .. ' bytes of JSON, the limit is ' .. limit)
  end
  local fields = {}
  local why = json_error(text, fields) -- checks and records the members in one pass
  if why then
    fail(code, what .. ' is not strict JSON (' .. why .. '): ' .. show(text))
  end
  if string.byte(text, skip_space(text, 1)) ~= 123 then
    fail(code, what .. ' must be a JSON object, got ' .. show(text))
  end
  return fields
end
