--[[ utf8: strict UTF-8 (RFC 3629: no overlong forms, no surrogates,
  nothing past U+10FFFF) checked in bulk, and code points written as
  UTF-8. The JSON checks (lib/15_json.lua) and decoders use these;
  redismem/_json.py is the Python twin.                                  ]]

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
