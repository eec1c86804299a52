--[[ config: per-namespace settings in the hash rm:{ns}:cfg, with defaults.
  max_value_bytes: largest value, as canonical JSON (default 1 MiB).
  feed_retention_ms: how long change events are kept (default 30 days).  ]]

local CONFIG_FIELDS = {
  max_value_bytes = {low = LIMITS.min_value_bytes_setting, high = LIMITS.max_value_bytes_ceiling,
                     default = LIMITS.max_value_bytes},
  feed_retention_ms = {low = 1, high = LIMITS.max_ttl_ms, default = LIMITS.feed_retention_ms},
}

local function config_get(config_key, field)
  local stored = redis.call('HGET', config_key, field)
  if stored then
    return tonumber(stored)
  end
  return CONFIG_FIELDS[field].default
end
