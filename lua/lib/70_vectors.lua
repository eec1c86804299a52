--[[ vectors: checks and index fields of vector hashes
  rm:{ns}:vec:<scope>:<sid>:<key> with fields
    emb    float32 little-endian bytes, 1..max_vector_dim components, each
           finite, not all zero
    meta   canonical JSON object of at most max_metadata_bytes
    _dim   the dimension (the index of that dimension filters on it)
    _sc    tag: hex of '<scope>:<sid>', so a search is confined to a scope
    _meta  tags: one sha1 token per top-level scalar metadata entry, so an
           equality filter is an exact tag match whatever characters the
           value holds (redismem/vectors.py computes the same tokens)
  rm:{ns}:vdims:<scope>:<sid> hash: dimension -> number of vectors stored
  with it (deletes decrement; expiry does not, so counts may run high).  ]]

-- A component is not finite when its exponent bits are all ones: its fourth
-- byte (little-endian) is 0x7f or 0xff and its third has the high bit set.
-- Plain string.find (memchr speed; a Lua loop over 384 components costs
-- more than the insert) finds each 0x7f and 0xff byte; those that are not
-- a fourth byte are skipped. A vector is zero when every component is +0
-- or -0, which only a blob of bytes 0x00 and 0x80 can be.
local function first_not_finite(blob)
  local first = nil
  for _, byte in ipairs({'\127', '\255'}) do
    local at = string.find(blob, byte, 1, true)
    while at and (not first or at < first) do
      if at % 4 == 0 and string.byte(blob, at - 1) >= 128 then
        first = at
        break
      end
      at = string.find(blob, byte, at + 1, true)
    end
  end
  return first and (first - 4) / 4
end

local function check_embedding(blob)
  local size = #blob
  if size == 0 or size % 4 ~= 0 then
    fail('INVALID_VECTOR', 'embedding must be float32 bytes (a multiple of 4), got ' .. size .. ' bytes')
  end
  local dim = size / 4
  if dim > LIMITS.max_vector_dim then
    fail('INVALID_VECTOR', 'dimension ' .. dim .. ' is over the limit ' .. LIMITS.max_vector_dim)
  end
  local bad = first_not_finite(blob)
  if bad then
    fail('INVALID_VECTOR', 'component ' .. bad .. ' is not finite')
  end
  if not string.find(blob, '[^%z\128]') then
    local nonzero = false
    for i = 1, size, 4 do
      local b1, b2, b3, b4 = string.byte(blob, i, i + 3)
      if b1 ~= 0 or b2 ~= 0 or b3 ~= 0 or b4 % 128 ~= 0 then
        nonzero = true
        break
      end
    end
    if not nonzero then
      fail('INVALID_VECTOR', 'the zero vector has no direction')
    end
  end
  return dim
end

-- The top-level members of a metadata object: name -> span (json_error's
-- record, see lib/15_json.lua), checked and recorded in one pass.
local function check_metadata(text)
  return decode_object('INVALID_METADATA', 'metadata', text, LIMITS.max_metadata_bytes)
end

-- The filterable text of a member: type letter + value, for strings,
-- numbers and booleans; nil for objects, arrays and null.
local function scalar_text(text, field)
  local b = field.b
  if b == 34 then
    return 's' .. json_field_string(text, field)
  elseif b == 116 or b == 102 then -- true, false
    return 'b' .. string.sub(text, field.s, field.e)
  end
  local number = json_field_number(text, field)
  return number and 'n' .. string.format('%.17g', number)
end

local function metadata_tokens(text, fields)
  local tokens = {}
  for name, field in pairs(fields) do
    local scalar = scalar_text(text, field)
    if scalar then
      tokens[#tokens + 1] = redis.sha1hex(name .. '\0' .. scalar)
    end
  end
  table.sort(tokens)
  return table.concat(tokens, ',')
end

-- Note in `moves` (dimension -> change in count) a vector's move from
-- dimension old_dim (nil: a new vector) to dim.
local function recount_dim(moves, old_dim, dim)
  if old_dim ~= dim then
    if old_dim then
      moves[old_dim] = (moves[old_dim] or 0) - 1
    end
    moves[dim] = (moves[dim] or 0) + 1
  end
end

-- Apply `moves` to the dimensions hash (a count that reaches 0 goes).
local function count_dims(dims_key, moves)
  for dim, delta in pairs(moves) do
    if delta ~= 0 and redis.call('HINCRBY', dims_key, int_string(dim), delta) <= 0 then
      redis.call('HDEL', dims_key, int_string(dim))
    end
  end
end

-- The checked hash fields of a vector and its dimension; scope_tag is the
-- hex of '<scope>:<sid>'. `tokens_of` (metadata text -> its tokens) is the
-- call's: a batch's vectors often share their metadata, checked once.
local function vector_fields(blob, meta, scope_tag, tokens_of)
  local dim = check_embedding(blob)
  local tokens = tokens_of[meta]
  if not tokens then
    tokens = metadata_tokens(meta, check_metadata(meta))
    tokens_of[meta] = tokens
  end
  return {'emb', blob, 'meta', meta, '_dim', int_string(dim), '_sc', scope_tag, '_meta', tokens}, dim
end
