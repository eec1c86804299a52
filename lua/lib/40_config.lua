--[[ config: per-namespace settings in the hash rm:{ns}:cfg, with defaults.
  max_value_bytes: largest value, as canonical JSON (default 1 MiB).
  feed_retention_ms: how long change events are kept (default 30 days).
  vector_index: 'hnsw' (default) or 'flat' (exact), for vector indexes
  created after the change; hnsw_m, hnsw_ef_construction: HNSW parameters
  of those indexes; hnsw_ef_runtime: candidates examined per HNSW search.
  Integer settings have low/high bounds, word settings a list of choices. ]]

local CONFIG_FIELDS = {
  max_value_bytes = {low = LIMITS.min_value_bytes_setting, high = LIMITS.max_value_bytes_ceiling,
                     default = LIMITS.max_value_bytes},
  feed_retention_ms = {low = 1, high = LIMITS.max_ttl_ms, default = LIMITS.feed_retention_ms},
  vector_index = {choices = {flat = true, hnsw = true}, default = 'hnsw'},
  hnsw_m = {low = 2, high = 512, default = 16},
  hnsw_ef_construction = {low = 1, high = 4096, default = 200},
  hnsw_ef_runtime = {low = 1, high = 10000, default = 100},
}

local function config_get(config_key, field)
  local stored = redis.call('HGET', config_key, field)
  if not stored then
    return CONFIG_FIELDS[field].default
  end
  if CONFIG_FIELDS[field].choices then
    return stored
  end
  return tonumber(stored)
end
