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
  KEYS[7] turn hash       rm:{<ns>}:turn:<scope>:<sid> (lib/65_turns.lua)
  KEYS[8] config hash     rm:{<ns>}:cfg (declared: only a role that may write it imports)
  KEYS[9] dimensions hash rm:{<ns>}:vdims:<scope>:<sid>
  KEYS[9+i] vector hash   rm:{<ns>}:vec:<scope>:<sid>:<key i>
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
  Feed: one "set" event (kind vector, no value) per vector written, by the
  importer, with a writer field naming the vector's writer when another. ]]

register('redismem_import_vectors', function(keys, args)
  return import_entries(keys, args, 'vector')
end)
