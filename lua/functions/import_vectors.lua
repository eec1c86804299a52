--[[ redismem_import_vectors: restore exported vectors of one scope, each
  with the revision, ts, writer and expiry it was exported with. A vector
  whose stored revision (or last delete) is the same or later is kept, so
  importing the same vectors twice changes nothing.
  KEYS[1] names zset      rm:{<ns>}:keys:vec:<scope>:<sid>
  KEYS[2] expiry zset     rm:{<ns>}:exp:vec:<scope>:<sid>
  KEYS[3] revisions hash  rm:{<ns>}:rev:vec:<scope>:<sid>
  KEYS[4] feed counter    rm:{<ns>}:seq
  KEYS[5] feed size       rm:{<ns>}:feedsz
  KEYS[6] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  KEYS[7] config hash     rm:{<ns>}:cfg (declared: only a role that may write it imports)
  KEYS[8] dimensions hash rm:{<ns>}:vdims:<scope>:<sid>
  KEYS[8+i] vector hash   rm:{<ns>}:vec:<scope>:<sid>:<key i>
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id
  ARGV[4] principal doing the import (recorded on the feed events)
  ARGV[7i-2] key i   ARGV[7i-1] embedding i (float32 little-endian bytes)
  ARGV[7i] metadata i (JSON object)   ARGV[7i+1] revision i (>= 1)
  ARGV[7i+2] ts i (ms)   ARGV[7i+3] writer i   ARGV[7i+4] expiry i (epoch
             ms, '' = none)
  Reply: one integer per item: its revision when written, 0 when kept (the
         target's is the same or later) or already expired.
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_VECTOR,
          INVALID_METADATA, REQUEST_TOO_LARGE, INVALID_REVISION, FEED_CORRUPT
  Feed: one "set" event (kind vector, no value) per vector written.       ]]

local function import_vectors(keys, args)
  count_args(args, 11, 'namespace, scope, scope id, principal, then key, embedding, metadata, revision, ts, writer, expiry')
  local c = scope_args(args, 1)
  local principal = check_id('principal', args[4])
  local count = item_count(args, 4, 7, 'key, embedding, metadata, revision, ts, writer, expiry')
  expect_keys(keys, 8 + count)
  local w = scope_writer(keys, 1, c, 'vector', principal)
  expect_key(keys, 7, SCHEMA.config(c))
  check_request(keys, args, w.settings.max_call_bytes)
  check_vector_count(count, w.settings)
  local dims_key = expect_key(keys, 8, SCHEMA.dims(c))
  local scope_tag = to_hex(c.scope .. ':' .. c.sid)

  local items, seen, tokens_of = {}, {}, {}
  for i = 1, count do
    local base = 7 * i - 2
    local key = batch_key(seen, args[base])
    local item = imported_args(args, base + 3)
    item.key = key
    item.vector_key = expect_key(keys, 8 + i, SCHEMA.vector(c, key))
    item.fields, item.dim = vector_fields(args[base + 1], args[base + 2], scope_tag, tokens_of)
    items[i] = item
  end

  begin_writes(w)
  local written = {}
  for i, item in ipairs(items) do
    written[i] = import_wanted(w, item.vector_key, item.key, item) and item.revision or 0
    if written[i] > 0 then
      item.old_dim = tonumber(redis.call('HGET', item.vector_key, '_dim'))
      plan_event(w, item.key, 'set', item.revision, nil)
    end
  end
  start_writing(w)
  local moves = {}
  for i, item in ipairs(items) do
    if written[i] > 0 then
      import_entry(w, item.vector_key, item.key, item, item.fields)
      recount_dim(moves, item.old_dim, item.dim)
    end
  end
  finish_entries(w)
  count_dims(dims_key, moves)
  return written
end

register('redismem_import_vectors', import_vectors)
