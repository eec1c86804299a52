--[[ redismem_import_values: restore exported values of one scope, each with
  the revision, ts, writer and expiry it was exported with. A value whose
  stored revision (or last delete) is the same or later is kept, so
  importing the same values twice changes nothing.
  KEYS[1] names zset      rm:{<ns>}:keys:val:<scope>:<sid>
  KEYS[2] expiry zset     rm:{<ns>}:exp:val:<scope>:<sid>
  KEYS[3] revisions hash  rm:{<ns>}:rev:val:<scope>:<sid>
  KEYS[4] feed counter    rm:{<ns>}:seq
  KEYS[5] feed size       rm:{<ns>}:feedsz
  KEYS[6] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  KEYS[7] config hash     rm:{<ns>}:cfg (declared: only a role that may write it imports)
  KEYS[7+i] value hash    rm:{<ns>}:val:<scope>:<sid>:<key i>
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id
  ARGV[4] principal doing the import (recorded on the feed events)
  ARGV[6i-1] key i   ARGV[6i] canonical JSON i   ARGV[6i+1] revision i (>= 1)
  ARGV[6i+2] ts i (ms)   ARGV[6i+3] writer i   ARGV[6i+4] expiry i (epoch
             ms, '' = none)
  Reply: one integer per item: its revision when written, 0 when kept (the
         target's is the same or later) or already expired.
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_JSON,
          VALUE_TOO_LARGE, REQUEST_TOO_LARGE, INVALID_REVISION, FEED_CORRUPT
  Feed: one "set" event per value written (none for kept ones).          ]]

local function import_values(keys, args)
  count_args(args, 10, 'namespace, scope, scope id, principal, then key, value, revision, ts, writer, expiry')
  local c = scope_args(args, 1)
  local principal = check_id('principal', args[4])
  local count = item_count(args, 4, 6, 'key, value, revision, ts, writer, expiry')
  expect_keys(keys, 7 + count)
  local w = scope_writer(keys, 1, c, 'value', principal)
  expect_key(keys, 7, SCHEMA.config(c))
  check_request(keys, args, w.settings.max_call_bytes)

  local items, seen = {}, {}
  for i = 1, count do
    local base = 6 * i - 1
    local key = batch_key(seen, args[base])
    local item = imported_args(args, base + 2)
    item.key = key
    item.value_key = expect_key(keys, 7 + i, SCHEMA.value(c, key))
    item.json = check_json(args[base + 1], w.settings.max_value_bytes)
    items[i] = item
  end

  begin_writes(w)
  local written = {}
  for i, item in ipairs(items) do
    written[i] = import_wanted(w, item.value_key, item.key, item) and item.revision or 0
    if written[i] > 0 then
      plan_event(w, item.key, 'set', item.revision, item.json)
    end
  end
  start_writing(w)
  for i, item in ipairs(items) do
    if written[i] > 0 then
      import_entry(w, item.value_key, item.key, item, {'v', item.json})
    end
  end
  finish_entries(w)
  return written
end

register('redismem_import_values', import_values)
