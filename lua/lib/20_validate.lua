--[[ validate: names, scopes, keys, JSON values, TTLs, revisions, cursors.
  Namespaces, scope ids and principals: 1..max_id_bytes bytes of UTF-8, no
  ':', '{', '}', whitespace (Python's str.isspace(), listed in
  UNICODE_SPACES beyond ASCII), control characters or format characters
  (Unicode category Cf: bidi overrides, zero-width joiners, the BOM;
  FORMAT_RANGES). Keys: 1..max_key_bytes bytes of UTF-8 without control or
  format characters (U+0000..U+001F, U+007F, FORMAT_RANGES). Names are not
  normalized: NFC and NFD spellings of one text are two names.
  redismem/_validate.py applies the same rules.                          ]]

local SCOPES = {session = true, actor = true, workflow = true, global = true}
local KINDS = {value = 'val', vector = 'vec'}

-- The whitespace characters past ASCII, as UTF-8 patterns: U+0085, U+00A0,
-- U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
local UNICODE_SPACES = {'\194[\133\160]', '\225\154\128', '\226\128[\128-\138\168\169\175]',
                        '\226\129\159', '\227\128\128'}

-- The format characters (Unicode category Cf, through Unicode 15.1) as code
-- point ranges: invisible, or reordering the text around them, so two names
-- that print alike could differ (redismem/limits.py FORMAT_RANGES).
local FORMAT_RANGES = {
  {173, 173}, {1536, 1541}, {1564, 1564}, {1757, 1757}, {1807, 1807}, {2192, 2193},
  {2274, 2274}, {6158, 6158}, {8203, 8207}, {8234, 8238}, {8288, 8292}, {8294, 8303},
  {65279, 65279}, {65529, 65531}, {69821, 69821}, {69837, 69837}, {78896, 78911},
  {113824, 113827}, {119155, 119162}, {917505, 917505}, {917536, 917631}
}

-- The first format character of valid UTF-8 ``text`` past ASCII, as
-- 'U+XXXX at byte N' (the text itself is not shown: it would reorder the
-- message around it), or nil.
local function format_char(text)
  local at, size = 1, #text
  while true do
    at = string.find(text, '[\194-\244]', at)
    if not at then
      return nil
    end
    local b1, b2, b3, b4 = string.byte(text, at, at + 3)
    local cp, len
    if b1 < 224 then
      cp, len = (b1 - 192) * 64 + (b2 - 128), 2
    elseif b1 < 240 then
      cp, len = ((b1 - 224) * 64 + (b2 - 128)) * 64 + (b3 - 128), 3
    else
      cp, len = (((b1 - 240) * 64 + (b2 - 128)) * 64 + (b3 - 128)) * 64 + (b4 - 128), 4
    end
    for _, range in ipairs(FORMAT_RANGES) do
      if cp >= range[1] and cp <= range[2] then
        return string.format('U+%04X at byte %d', cp, at)
      end
    end
    at = at + len
    if at > size then
      return nil
    end
  end
end

local function check_id(what, text)
  if type(text) ~= 'string' or #text == 0 then
    fail('INVALID_ID', what .. ' must not be empty')
  end
  if #text > LIMITS.max_id_bytes then
    fail('INVALID_ID', what .. ' is longer than ' .. LIMITS.max_id_bytes .. ' bytes')
  end
  if not string.find(text, '[:{}%s%c\128-\255]') then
    return text -- plain ASCII without what ids must not hold: the common case
  end
  if not is_utf8(text) then
    fail('INVALID_ID', what .. ' must be valid UTF-8, got ' .. show(text))
  end
  local bad = string.find(text, '[:{}%s%c]')
  if not bad and string.find(text, '[\128-\255]') then
    for _, space in ipairs(UNICODE_SPACES) do
      bad = bad or string.find(text, space)
    end
  end
  if bad then
    fail('INVALID_ID', what .. " must not contain ':', '{', '}', whitespace or control characters, got " .. show(text))
  end
  local format = format_char(text)
  if format then
    fail('INVALID_ID', what .. ' must not contain format characters (invisible, or reordering '
         .. 'the text): ' .. format)
  end
  return text
end

local function check_key(text)
  if type(text) ~= 'string' or #text == 0 then
    fail('INVALID_KEY', 'key must not be empty')
  end
  if #text > LIMITS.max_key_bytes then
    fail('INVALID_KEY', 'key is ' .. #text .. ' bytes, the limit is ' .. LIMITS.max_key_bytes)
  end
  if not string.find(text, '[%c\128-\255]') then
    return text -- printable ASCII: the common case
  end
  if string.find(text, '%c') then
    fail('INVALID_KEY', 'key must not contain control characters, got ' .. show(text))
  end
  if not is_utf8(text) then
    fail('INVALID_KEY', 'key must be valid UTF-8, got ' .. show(text))
  end
  local format = string.find(text, '[\194-\244]') and format_char(text)
  if format then
    fail('INVALID_KEY', 'key must not contain format characters (invisible, or reordering the '
         .. 'text): ' .. format)
  end
  return text
end

-- ARGV[first], ARGV[first+1], ARGV[first+2] = namespace, scope, scope id.
local function scope_args(args, first)
  local ns = check_id('namespace', args[first])
  local scope = args[first + 1]
  if not SCOPES[scope] then
    fail('INVALID_ARGUMENT', 'scope must be session, actor, workflow or global, got ' .. show(scope))
  end
  local sid = check_id('scope id', args[first + 2])
  if scope == 'global' and sid ~= '_' then
    fail('INVALID_ID', "the global scope's id is '_', got " .. show(sid))
  end
  return {ns = ns, scope = scope, sid = sid}
end

local function kind_tag(kind)
  local tag = KINDS[kind]
  if not tag then
    fail('INVALID_ARGUMENT', 'kind must be value or vector, got ' .. show(kind))
  end
  return tag
end

local function check_json(text, limit)
  if #text > limit then
    fail('VALUE_TOO_LARGE', 'value is ' .. #text .. ' bytes of JSON, the limit is ' .. limit)
  end
  local why = json_error(text)
  if why then
    fail('INVALID_JSON', 'value is not strict JSON (' .. why .. '): ' .. show(text))
  end
  return text
end

-- '' means "no condition"; otherwise a non-negative integer revision.
local function parse_expected(text)
  if text == '' then
    return nil
  end
  return parse_int('expected revision', text, 0, LIMITS.max_revision, 'INVALID_REVISION')
end

-- '' = no expiry, 'KEEPTTL' = keep the key's expiry, else milliseconds > 0.
local function parse_ttl(text)
  if text == '' or text == 'KEEPTTL' then
    return text
  end
  return parse_int('ttl in milliseconds', text, 1, LIMITS.max_ttl_ms, 'INVALID_TTL')
end

local function parse_limit(text)
  if text == '' then
    return LIMITS.default_page_limit
  end
  return parse_int('limit', text, 1, LIMITS.max_page_limit, 'INVALID_ARGUMENT')
end

local function to_hex(text)
  return (string.gsub(text, '.', function(c) return string.format('%02x', string.byte(c)) end))
end

-- A key cursor is the hex of the last name a page examined (the next
-- page starts after it), or the hex of a name to start at followed by '+'
-- (the next page starts there: past over-long names, list_keys.lua).
-- Returns the name and whether the next page starts at it.
local function parse_cursor(text)
  if text == '' then
    return nil, false
  end
  local hex, at = string.match(text, '^(%x*)(%+?)$')
  if not hex or #hex == 0 or #hex % 2 ~= 0 or #hex > 2 * LIMITS.max_key_bytes
      or string.find(hex, '[A-F]') then
    fail('INVALID_CURSOR', 'cursor is not one this library returned: ' .. show(text))
  end
  local key = string.gsub(hex, '%x%x', function(h) return string.char(tonumber(h, 16)) end)
  return key, at == '+'
end

-- How many fixed-width items follow ARGV[first]: `width` arguments each,
-- 1..max_batch of them (0..max_batch with `none_ok`).
local function item_count(args, first, width, what, none_ok)
  local extra = #args - first
  if extra % width ~= 0 or (extra == 0 and not none_ok) then
    fail('INVALID_ARGUMENT', 'items come as ' .. what .. ' (' .. width .. ' arguments each); got '
         .. extra .. ' arguments')
  end
  local count = extra / width
  if count > LIMITS.max_batch then
    fail('INVALID_ARGUMENT', 'at most ' .. LIMITS.max_batch .. ' items per call, got ' .. count)
  end
  return count
end
