--[[ redismem_set_vectors: write one or more vectors of one scope atomically,
  each only if its expected revision matches.
  KEYS[1] names zset      rm:{<ns>}:keys:vec:<scope>:<sid>
  KEYS[2] expiry zset     rm:{<ns>}:exp:vec:<scope>:<sid>
  KEYS[3] revisions hash  rm:{<ns>}:rev:vec:<scope>:<sid>
  KEYS[4] feed counter    rm:{<ns>}:seq
  KEYS[5] feed size       rm:{<ns>}:feedsz
  KEYS[6] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  KEYS[7] turn hash       rm:{<ns>}:turn:<scope>:<sid> (lib/65_turns.lua)
  KEYS[8] dimensions hash rm:{<ns>}:vdims:<scope>:<sid>
  KEYS[8+i] vector hash   rm:{<ns>}:vec:<scope>:<sid>:<key i>
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id
  ARGV[4] ttl: '' = no expiry, 'KEEPTTL' = keep each key's expiry, else ms
  ARGV[5] principal   ARGV[6] request id ('' = none; lib/55_requests.lua)
  ARGV[7] the writer's turn token ('' = none; lib/65_turns.lua)
  ARGV[4+4i] key i   ARGV[5+4i] embedding i (float32 little-endian bytes)
  ARGV[6+4i] metadata i (JSON object)   ARGV[7+4i] expected revision i
  Reply: array of the new revisions, in item order (the kept reply when
         the request id was applied already).
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_VECTOR,
          INVALID_METADATA, REQUEST_TOO_LARGE, INVALID_TTL, INVALID_REVISION,
          REVISION_CONFLICT, REVISION_LIMIT, FEED_CORRUPT, STALE_TURN, TURN_CORRUPT
  Feed: one "set" event (kind vector, no value) per item; trims expired events. ]]

register('redismem_set_vectors', function(keys, args)
  return set_entries(keys, args, 'vector', 'set_vectors')
end)
