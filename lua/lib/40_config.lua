--[[ config: per-namespace settings in the hash rm:{ns}:cfg, with defaults.
  max_value_bytes: largest value, as canonical JSON (default 1 MiB).
  max_call_bytes: largest write call, the bytes of all its KEYS and ARGV
  (default 1 MiB + 64 KiB: one largest value fits), so that no call holds
  the server for long (scripts/bench.py stall measures how long).
  max_call_vectors: most vectors one call writes (default 128): indexing
  costs per vector (HNSW), not per byte.
  feed_retention_ms: how long change events are kept (default 30 days).
  feed_max_bytes: how large the feed may grow before its oldest events are
  dropped early (default 256 MiB; see lib/50_feed.lua).
  vector_index: 'hnsw' (default) or 'flat' (exact), for vector indexes
  created after the change; hnsw_m, hnsw_ef_construction: HNSW parameters
  of those indexes; hnsw_ef_runtime: candidates examined per HNSW search.
  Integer settings have low/high bounds, word settings a list of choices. ]]

local CONFIG_FIELDS = {
  max_value_bytes = {low = LIMITS.min_value_bytes_setting, high = LIMITS.max_value_bytes_ceiling,
                     default = LIMITS.max_value_bytes},
  max_call_bytes = {low = LIMITS.min_call_bytes_setting, high = LIMITS.max_call_bytes_ceiling,
                    default = LIMITS.max_call_bytes},
  max_call_vectors = {low = 1, high = LIMITS.max_batch, default = LIMITS.max_call_vectors},
  feed_retention_ms = {low = 1, high = LIMITS.max_ttl_ms, default = LIMITS.feed_retention_ms},
  feed_max_bytes = {low = LIMITS.min_feed_bytes_setting, high = LIMITS.max_feed_bytes_ceiling,
                    default = LIMITS.feed_max_bytes},
  vector_index = {choices = {flat = true, hnsw = true}, default = 'hnsw'},
  hnsw_m = {low = 2, high = 512, default = 16},
  hnsw_ef_construction = {low = 1, high = 4096, default = 200},
  hnsw_ef_runtime = {low = 1, high = 10000, default = 200},
}

-- A stored setting, or its default when absent or not what set_config stores.
local function config_value(field, stored)
  local spec = CONFIG_FIELDS[field]
  if not stored then
    return spec.default
  end
  if spec.choices then
    return spec.choices[stored] and stored or spec.default
  end
  local number = tonumber(stored)
  if not number or number < spec.low or number > spec.high or number ~= math.floor(number) then
    return spec.default
  end
  return number
end

local function config_get(config_key, field)
  return config_value(field, redis.call('HGET', config_key, field))
end

-- The settings a write call needs, in one read.
local WRITE_SETTINGS = {'max_value_bytes', 'max_call_bytes', 'max_call_vectors', 'feed_retention_ms',
                        'feed_max_bytes'}

local function write_settings(config_key)
  local stored = redis.call('HMGET', config_key, unpack(WRITE_SETTINGS))
  local settings = {}
  for i, field in ipairs(WRITE_SETTINGS) do
    settings[field] = config_value(field, stored[i])
  end
  return settings
end

-- REQUEST_TOO_LARGE unless the call's KEYS and ARGV hold at most `limit` bytes.
local function check_request(keys, args, limit)
  local total = 0
  for i = 1, #keys do
    total = total + #keys[i]
  end
  for i = 1, #args do
    total = total + #args[i]
  end
  if total > limit then
    fail('REQUEST_TOO_LARGE', 'the call carries ' .. int_string(total)
         .. ' bytes of keys and arguments, the limit (max_call_bytes) is ' .. int_string(limit))
  end
end

-- REQUEST_TOO_LARGE unless a call writes at most max_call_vectors vectors.
local function check_vector_count(count, settings)
  if count > settings.max_call_vectors then
    fail('REQUEST_TOO_LARGE', 'the call writes ' .. count .. ' vectors, the limit (max_call_vectors) is '
         .. settings.max_call_vectors)
  end
end
