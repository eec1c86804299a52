--[[ redismem_set_values: write one or more values of one scope atomically,
  each only if its expected revision matches.
  KEYS[1] names zset      rm:{<ns>}:keys:val:<scope>:<sid>
  KEYS[2] expiry zset     rm:{<ns>}:exp:val:<scope>:<sid>
  KEYS[3] revisions hash  rm:{<ns>}:rev:val:<scope>:<sid>
  KEYS[4] feed counter    rm:{<ns>}:seq
  KEYS[5] feed size       rm:{<ns>}:feedsz
  KEYS[6] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  KEYS[6+i] value hash    rm:{<ns>}:val:<scope>:<sid>:<key i>
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id
  ARGV[4] ttl: '' = no expiry, 'KEEPTTL' = keep each key's expiry, else ms
  ARGV[5] principal   ARGV[6] request id ('' = none; lib/55_requests.lua)
  ARGV[4+3i] key i   ARGV[5+3i] canonical JSON i   ARGV[6+3i] expected
             revision i ('' = any, '0' = only when absent)
  Reply: array of the new revisions, in item order (the kept reply when
         the request id was applied already).
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_JSON,
          VALUE_TOO_LARGE, REQUEST_TOO_LARGE, INVALID_TTL, INVALID_REVISION,
          REVISION_CONFLICT, REVISION_LIMIT, FEED_CORRUPT
  Feed: one "set" event per item, in item order; trims the feed's head.  ]]

local function set_values(keys, args)
  count_args(args, 9, 'namespace, scope, scope id, ttl, principal, request id, then key, value, expected revision')
  local c = scope_args(args, 1)
  local ttl = parse_ttl(args[4])
  local principal = check_id('principal', args[5])
  local request = check_request_id(args[6])
  local count = item_count(args, 6, 3, 'key, value, expected revision')
  expect_keys(keys, 6 + count)
  local w = scope_writer(keys, 1, c, 'value', principal, request)
  w.ttl = ttl
  check_request(keys, args, w.settings.max_call_bytes)
  local kept = kept_reply(w, 'set_values')
  if kept then
    return text_ints(kept)
  end

  prefetch_issued(w, args, 7, 3, count)
  local items, seen = {}, {}
  for i = 1, count do
    local base = 4 + 3 * i
    local key = batch_key(seen, args[base])
    local value_key = expect_key(keys, 6 + i, SCHEMA.value(c, key))
    local json = check_json(args[base + 1], w.settings.max_value_bytes)
    local expected = parse_expected(args[base + 2])
    local current = tonumber(redis.call('HGET', value_key, 'rev')) or 0
    check_expected(key, expected, current)
    items[i] = {key = key, value_key = value_key, json = json, current = current,
                revision = plan_revision(w, key, current)}
  end

  begin_writes(w)
  for _, item in ipairs(items) do
    plan_event(w, item.key, 'set', item.revision, item.json)
  end
  start_writing(w)
  local revisions = {}
  for i, item in ipairs(items) do
    store_entry(w, item.value_key, item.key, item.current > 0, item.revision, {'v', item.json})
    revisions[i] = item.revision
  end
  finish_entries(w)
  keep_reply(w, 'set_values', ints_text(revisions))
  return revisions
end

register('redismem_set_values', set_values)
