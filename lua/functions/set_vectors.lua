--[[ redismem_set_vectors: write one or more vectors of one scope atomically,
  each only if its expected revision matches.
  KEYS[1] names zset      rm:{<ns>}:keys:vec:<scope>:<sid>
  KEYS[2] expiry zset     rm:{<ns>}:exp:vec:<scope>:<sid>
  KEYS[3] revisions hash  rm:{<ns>}:rev:vec:<scope>:<sid>
  KEYS[4] feed counter    rm:{<ns>}:seq
  KEYS[5] feed size       rm:{<ns>}:feedsz
  KEYS[6] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  KEYS[7] dimensions hash rm:{<ns>}:vdims:<scope>:<sid>
  KEYS[7+i] vector hash   rm:{<ns>}:vec:<scope>:<sid>:<key i>
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id
  ARGV[4] ttl: '' = no expiry, 'KEEPTTL' = keep each key's expiry, else ms
  ARGV[5] principal   ARGV[6] request id ('' = none; lib/55_requests.lua)
  ARGV[3+4i] key i   ARGV[4+4i] embedding i (float32 little-endian bytes)
  ARGV[5+4i] metadata i (JSON object)   ARGV[6+4i] expected revision i
  Reply: array of the new revisions, in item order (the kept reply when
         the request id was applied already).
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_VECTOR,
          INVALID_METADATA, REQUEST_TOO_LARGE, INVALID_TTL, INVALID_REVISION,
          REVISION_CONFLICT, REVISION_LIMIT, FEED_CORRUPT
  Feed: one "set" event (kind vector, no value) per item; trims expired events. ]]

local function set_vectors(keys, args)
  count_args(args, 10, 'namespace, scope, scope id, ttl, principal, request id, then key, embedding, metadata, expected revision')
  local c = scope_args(args, 1)
  local ttl = parse_ttl(args[4])
  local principal = check_id('principal', args[5])
  local request = check_request_id(args[6])
  local count = item_count(args, 6, 4, 'key, embedding, metadata, expected revision')
  expect_keys(keys, 7 + count)
  local w = scope_writer(keys, 1, c, 'vector', principal, request)
  w.ttl = ttl
  check_request(keys, args, w.settings.max_call_bytes)
  local kept = kept_reply(w, 'set_vectors')
  if kept then
    return text_ints(kept)
  end
  check_vector_count(count, w.settings)
  local dims_key = expect_key(keys, 7, SCHEMA.dims(c))
  local scope_tag = to_hex(c.scope .. ':' .. c.sid)

  prefetch_issued(w, args, 7, 4, count)
  local items, seen, tokens_of = {}, {}, {}
  for i = 1, count do
    local base = 3 + 4 * i
    local key = batch_key(seen, args[base])
    local vector_key = expect_key(keys, 7 + i, SCHEMA.vector(c, key))
    local fields, dim = vector_fields(args[base + 1], args[base + 2], scope_tag, tokens_of)
    local expected = parse_expected(args[base + 3])
    local stored = redis.call('HMGET', vector_key, 'rev', '_dim')
    local current = tonumber(stored[1]) or 0
    check_expected(key, expected, current)
    items[i] = {key = key, vector_key = vector_key, current = current, dim = dim,
                old_dim = tonumber(stored[2]), fields = fields,
                revision = plan_revision(w, key, current)}
  end

  begin_writes(w)
  for _, item in ipairs(items) do
    plan_event(w, item.key, 'set', item.revision, nil)
  end
  start_writing(w)
  local revisions, moves = {}, {}
  for i, item in ipairs(items) do
    recount_dim(moves, item.old_dim, item.dim)
    store_entry(w, item.vector_key, item.key, item.current > 0, item.revision, item.fields)
    revisions[i] = item.revision
  end
  finish_entries(w)
  count_dims(dims_key, moves)
  keep_reply(w, 'set_vectors', ints_text(revisions))
  return revisions
end

register('redismem_set_vectors', set_vectors)
