--[[ limits: the bounds every function enforces. redismem/limits.py holds the
  same numbers for the Python side; tests/test_lua_contract.py checks that
  both agree.                                                             ]]

local LIMITS = {
  max_key_bytes = 512,
  max_id_bytes = 128,
  max_value_bytes = 131072,           -- default (128 KiB); the namespace config may change it
  max_value_bytes_ceiling = 67108864,
  min_value_bytes_setting = 1024,
  max_ttl_ms = 315360000000,          -- ten years
  max_page_limit = 1000,
  default_page_limit = 100,
  max_batch = 1000,
  max_revision = 9007199254740991,    -- 2^53 - 1: exact in a Lua number; a write past it is refused
  max_sequence = 1125899906842624,    -- 2^50: a feed sequence past it was set by a raw write
  max_json_depth = 256,               -- nested arrays and objects in one JSON text
  feed_value_bytes = 65536,
  feed_retention_ms = 2592000000,     -- 30 days; the namespace config may change it
  trim_per_write = 16,                -- feed events trimmed for retention per write, on average
  trim_every = 16,                    -- writes trim each time the sequence passes a multiple
  trim_slice_events = 2000,           -- events one trim call drops at most
  trim_slice_bytes = 4194304,         -- feed bytes one trim call reads at most
  max_call_bytes = 163840,            -- default (160 KiB); the namespace config may change it
  max_call_vectors = 128,             -- default; the namespace config may change it
  max_call_bytes_ceiling = 1073741824,
  min_call_bytes_setting = 65536,
  feed_max_bytes = 268435456,         -- default; the namespace config may change it
  max_feed_bytes_ceiling = 1099511627776,
  min_feed_bytes_setting = 1048576,
  max_append_items = 10000,           -- the largest max_items of an append (bounds its reading)
  max_merge_members = 5000,           -- object members one merge reads (patch and value, all levels)
  max_vector_dim = 4096,
  max_metadata_bytes = 16384,
  max_events_per_call = 500,          -- events one append or replace call carries
  max_events_per_read = 1000,         -- events one page of recent_events/events_since holds at most
  max_event_bytes = 131072,
  max_checkpoint_bytes = 16777216,    -- a LangGraph checkpoint call (bytes, not JSON-checked)
  min_turn_ms = 100,                  -- the shortest turn ttl or waiter lease
  max_turn_ms = 86400000,             -- the longest: a day
}
