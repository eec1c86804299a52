--[[ redismem_delete_value: delete a value if its expected revision matches.
  The delete takes a revision of its own, so a re-created key goes on from
  there and an old expected revision never matches it again.
  KEYS[1] value hash      rm:{<ns>}:val:<scope>:<sid>:<key>
  KEYS[2] names zset      rm:{<ns>}:keys:val:<scope>:<sid>
  KEYS[3] expiry zset     rm:{<ns>}:exp:val:<scope>:<sid>
  KEYS[4] revisions hash  rm:{<ns>}:rev:val:<scope>:<sid>
  KEYS[5] feed counter    rm:{<ns>}:seq
  KEYS[6] feed size       rm:{<ns>}:feedsz
  KEYS[7] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  KEYS[8] turn hash       rm:{<ns>}:turn:<scope>:<sid> (lib/65_turns.lua)
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id  ARGV[4] key
  ARGV[5] expected revision ('' = any)   ARGV[6] principal
  ARGV[7] request id ('' = none; lib/55_requests.lua)
  ARGV[8] the writer's turn token ('' = none; lib/65_turns.lua)
  Reply: (the kept reply when the request id was applied already) 1 when a value was deleted, 0 when there was none.
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_REVISION,
          REVISION_CONFLICT, REVISION_LIMIT, FEED_CORRUPT, STALE_TURN, TURN_CORRUPT
  Feed: one "delete" event when a value was deleted; trims the feed's head. ]]

register('redismem_delete_value', function(keys, args)
  return delete_entry(keys, args, 'value', 'delete_value')
end)
