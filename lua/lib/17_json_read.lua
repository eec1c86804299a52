--[[ json_read: reading checked JSON (never called on text json_error,
  lib/15_json.lua, refused).
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
-- (separators included; '' for none), cut at `commas`: the positions of
-- the commas between its items, which json_error recorded as it checked
-- the text (so a capped append reads the list once).
local function json_list_tail(text, count, commas)
  local close = #text -- the list's ']', before trailing whitespace
  while string.byte(text, close) ~= 93 do
    close = close - 1
  end
  if count == 0 then
    return ''
  end
  if count > #commas then -- every item is kept, if there is one
    local body = string.sub(text, string.find(text, '[', 1, true) + 1, close - 1)
    return string.find(body, '[^ \t\n\r]') and body or ''
  end
  return string.sub(text, commas[#commas - count + 1] + 1, close - 1)
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
