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
  KEYS[7] turn hash       rm:{<ns>}:turn:<scope>:<sid> (lib/65_turns.lua)
  KEYS[8] config hash     rm:{<ns>}:cfg (declared: only a role that may write it imports)
  KEYS[8+i] value hash    rm:{<ns>}:val:<scope>:<sid>:<key i>
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id
  ARGV[4] principal doing the import (recorded on the feed events)
  ARGV[6i-1] key i   ARGV[6i] canonical JSON i   ARGV[6i+1] revision i (>= 1)
  ARGV[6i+2] ts i (ms)   ARGV[6i+3] writer i   ARGV[6i+4] expiry i (epoch
             ms, '' = none)
  Reply: one integer per item: its revision when written, 0 when kept (the
         target's is the same or later) or already expired.
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_JSON,
          VALUE_TOO_LARGE, REQUEST_TOO_LARGE, INVALID_REVISION, FEED_CORRUPT
  Feed: one "set" event per value written (none for kept ones), by the
  importer, with a writer field naming the value's writer when another.  ]]

register('redismem_import_values', function(keys, args)
  return import_entries(keys, args, 'value')
end)
