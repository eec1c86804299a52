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

local function check_embedding(blob)
  local size = #blob
  if size == 0 or size % 4 ~= 0 then
    fail('INVALID_VECTOR', 'embedding must be float32 bytes (a multiple of 4), got ' .. size .. ' bytes')
  end
  local dim = size / 4
  if dim > LIMITS.max_vector_dim then
    fail('INVALID_VECTOR', 'dimension ' .. dim .. ' is over the limit ' .. LIMITS.max_vector_dim)
  end
  local nonzero = false
  for i = 1, size, 4 do
    local b1, b2, b3, b4 = string.byte(blob, i, i + 3)
    -- exponent bits all ones: infinity or NaN
    if b4 % 128 == 127 and b3 >= 128 then
      fail('INVALID_VECTOR', 'component ' .. ((i - 1) / 4) .. ' is not finite')
    end
    if b1 ~= 0 or b2 ~= 0 or b3 ~= 0 or b4 % 128 ~= 0 then
      nonzero = true
    end
  end
  if not nonzero then
    fail('INVALID_VECTOR', 'the zero vector has no direction')
  end
  return dim
end

-- The top-level members of a metadata object: name -> node (see lib/15_text.lua).
local function check_metadata(text)
  if #text > LIMITS.max_metadata_bytes then
    fail('INVALID_METADATA', 'metadata is ' .. #text .. ' bytes of JSON, the limit is '
         .. LIMITS.max_metadata_bytes)
  end
  local node = json_read('INVALID_METADATA', 'metadata', text, 1)
  if node.t ~= 'object' then
    fail('INVALID_METADATA', 'metadata must be a JSON object, got ' .. show(text))
  end
  return json_fields(node)
end

local function scalar_text(node)
  if node.t == 'string' then
    return 's' .. node.v
  elseif node.t == 'true' or node.t == 'false' then
    return 'b' .. node.t
  elseif node.t == 'number' then
    return 'n' .. string.format('%.17g', node.v)
  end
  return nil -- objects, arrays and null cannot be filtered on
end

local function metadata_tokens(fields)
  local tokens = {}
  for name, node in pairs(fields) do
    local text = scalar_text(node)
    if text then
      tokens[#tokens + 1] = redis.sha1hex(name .. '\0' .. text)
    end
  end
  table.sort(tokens)
  return table.concat(tokens, ',')
end

local function count_dim(dims_key, dim, delta)
  if redis.call('HINCRBY', dims_key, int_string(dim), delta) <= 0 then
    redis.call('HDEL', dims_key, int_string(dim))
  end
end

-- Count a vector's move from dimension old_dim (nil: a new vector) to dim.
local function recount_dim(dims_key, old_dim, dim)
  if old_dim ~= dim then
    if old_dim then
      count_dim(dims_key, old_dim, -1)
    end
    count_dim(dims_key, dim, 1)
  end
end

-- The checked hash fields of a vector and its dimension; scope_tag is the
-- hex of '<scope>:<sid>'.
local function vector_fields(blob, meta, scope_tag)
  local dim = check_embedding(blob)
  local tokens = metadata_tokens(check_metadata(meta))
  return {'emb', blob, 'meta', meta, '_dim', int_string(dim), '_sc', scope_tag, '_meta', tokens}, dim
end
