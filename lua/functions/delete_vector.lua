--[[ redismem_delete_vector: delete a vector if its expected revision matches.
  KEYS[1] vector hash     rm:{<ns>}:vec:<scope>:<sid>:<key>
  KEYS[2] names zset      rm:{<ns>}:keys:vec:<scope>:<sid>
  KEYS[3] expiry zset     rm:{<ns>}:exp:vec:<scope>:<sid>
  KEYS[4] revisions hash  rm:{<ns>}:rev:vec:<scope>:<sid>
  KEYS[5] feed counter    rm:{<ns>}:seq
  KEYS[6] feed size       rm:{<ns>}:feedsz
  KEYS[7] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  KEYS[8] turn hash       rm:{<ns>}:turn:<scope>:<sid> (lib/65_turns.lua)
  KEYS[9] dimensions hash rm:{<ns>}:vdims:<scope>:<sid>
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id  ARGV[4] key
  ARGV[5] expected revision ('' = any)   ARGV[6] principal
  ARGV[7] request id ('' = none; lib/55_requests.lua)
  ARGV[8] the writer's turn token ('' = none; lib/65_turns.lua)
  Reply: (the kept reply when the request id was applied already) 1 when a vector was deleted, 0 when there was none.
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_REVISION,
          REVISION_CONFLICT, REVISION_LIMIT, FEED_CORRUPT, STALE_TURN, TURN_CORRUPT
  Feed: one "delete" event (kind vector) when a vector was deleted.      ]]

register('redismem_delete_vector', function(keys, args)
  return delete_entry(keys, args, 'vector', 'delete_vector')
end)
