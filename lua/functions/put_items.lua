--[[ redismem_put_items: write LangGraph store items (values of one scope)
  atomically, as redismem_set_values does, each item keeping the
  created_at of the item it replaces (lib/75_entries.lua).
  KEYS[1] names zset      rm:{<ns>}:keys:val:<scope>:<sid>
  KEYS[2] expiry zset     rm:{<ns>}:exp:val:<scope>:<sid>
  KEYS[3] revisions hash  rm:{<ns>}:rev:val:<scope>:<sid>
  KEYS[4] feed counter    rm:{<ns>}:seq
  KEYS[5] feed size       rm:{<ns>}:feedsz
  KEYS[6] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  KEYS[7] turn hash       rm:{<ns>}:turn:<scope>:<sid> (lib/65_turns.lua)
  KEYS[7+i] value hash    rm:{<ns>}:val:<scope>:<sid>:<key i>
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id
  ARGV[4] ttl: '' = no expiry, 'KEEPTTL' = keep each key's expiry, else ms
  ARGV[5] principal   ARGV[6] request id ('' = none; lib/55_requests.lua)
  ARGV[7] the writer's turn token ('' = none; lib/65_turns.lua)
  ARGV[5+3i] key i   ARGV[6+3i] the item's canonical JSON, an object whose
             first key is created_at (an integer of ms): it is replaced by
             the stored item's, when the key holds one
             ARGV[7+3i] expected revision i ('' = any, '0' = only when absent)
  Reply: array of the new revisions, in item order (the kept reply when
         the request id was applied already).
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_JSON,
          VALUE_TOO_LARGE, REQUEST_TOO_LARGE, INVALID_TTL, INVALID_REVISION,
          REVISION_CONFLICT, REVISION_LIMIT, FEED_CORRUPT, STALE_TURN, TURN_CORRUPT
  Feed: one "set" event of kind value per item, in item order, carrying
        the item as written; trims the feed's head.                    ]]

register('redismem_put_items', function(keys, args)
  return set_entries(keys, args, 'item', 'put_items')
end)
