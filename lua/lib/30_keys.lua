--[[ keys: the key schema, used to check that the KEYS a caller passed are
  the ones the arguments name. FCALL makes Redis check every declared key
  for both read and write permission, so the two namespace keys that roles
  must only read (cfg) or only write (feed) are not declared by the write
  functions: they are built here from the namespace, which shares the
  declared keys' hash tag (and so their cluster slot). A declared
  rm:{<ns>}:who:<principal>:<bucket> key is how the server's ACL proves the
  principal: an ACL user may only name its own (it also keeps the replies
  of the principal's requests, lib/55_requests.lua).
  redismem/keys.py builds the same names; tests check both agree.         ]]

local function key_base(ns)
  return 'rm:{' .. ns .. '}:'
end

local SCHEMA = {
  value = function(c, key) return key_base(c.ns) .. 'val:' .. c.scope .. ':' .. c.sid .. ':' .. key end,
  vector = function(c, key) return key_base(c.ns) .. 'vec:' .. c.scope .. ':' .. c.sid .. ':' .. key end,
  dims = function(c) return key_base(c.ns) .. 'vdims:' .. c.scope .. ':' .. c.sid end,
  names = function(c, tag) return key_base(c.ns) .. 'keys:' .. tag .. ':' .. c.scope .. ':' .. c.sid end,
  expiry = function(c, tag) return key_base(c.ns) .. 'exp:' .. tag .. ':' .. c.scope .. ':' .. c.sid end,
  revisions = function(c, tag) return key_base(c.ns) .. 'rev:' .. tag .. ':' .. c.scope .. ':' .. c.sid end,
  feed = function(c) return key_base(c.ns) .. 'feed' end,
  sequence = function(c) return key_base(c.ns) .. 'seq' end,
  feed_size = function(c) return key_base(c.ns) .. 'feedsz' end,
  feed_rebuild = function(c) return key_base(c.ns) .. 'feed:rebuild' end,
  config = function(c) return key_base(c.ns) .. 'cfg' end,
  principal = function(c, who) return key_base(c.ns) .. 'who:' .. who end,
  scopes = function(c) return key_base(c.ns) .. 'scopes' end,
  memory_users = function(c) return key_base(c.ns) .. 'ltmusers' end,
  sessions = function(c) return key_base(c.ns) .. 'sessions' end,
  thread_events = function(c, thread) return key_base(c.ns) .. 'thr:' .. thread .. ':ev' end,
  thread_times = function(c, thread) return key_base(c.ns) .. 'thr:' .. thread .. ':ts' end,
  thread_ids = function(c, thread) return key_base(c.ns) .. 'thr:' .. thread .. ':ids' end,
  threads = function(c) return key_base(c.ns) .. 'threads' end,
  memory = function(c, user, id) return key_base(c.ns) .. 'ltm:' .. user .. ':' .. id end,
  memories = function(c, user) return key_base(c.ns) .. 'ltmz:' .. user end,
  memory_dim = function(c) return key_base(c.ns) .. 'ltmdim' end,
  turns = function(c) return key_base(c.ns) .. 'turns' end,
  turn = function(c) return key_base(c.ns) .. 'turn:' .. c.scope .. ':' .. c.sid end,
  turn_queue = function(c) return key_base(c.ns) .. 'turn:' .. c.scope .. ':' .. c.sid .. ':q' end,
  turn_wake = function(c, holder)
    return key_base(c.ns) .. 'turn:' .. c.scope .. ':' .. c.sid .. ':w:' .. holder
  end,
}

local function expect_keys(keys, count)
  if #keys ~= count then
    fail('INVALID_ARGUMENT', 'expected ' .. count .. ' keys, got ' .. #keys)
  end
end

local function expect_key(keys, slot, wanted)
  if keys[slot] ~= wanted then
    fail('INVALID_ARGUMENT', 'KEYS[' .. slot .. '] must be ' .. show(wanted) .. ', got ' .. show(keys[slot]))
  end
  return wanted
end

-- Check a value or vector key rm:{<ns>}:<val|vec>:<scope>:<sid>:<key> part
-- by part; returns its prefix (all but <key>). `known`: the prefix of a key
-- checked before, so a batch of one scope's keys checks each key's own
-- part only.
local function check_item_key(name, tag, known)
  if known and #name > #known and #name - #known <= LIMITS.max_key_bytes
      and string.find(name, known, 1, true) == 1
      and not string.find(name, '[%c\128-\255]', #known + 1) then
    return known -- its key is 1..max_key_bytes of printable ASCII
  end
  local ns, scope, sid, key = string.match(name, '^rm:{([^{}]*)}:' .. tag .. ':([^:]*):([^:]*):(.*)$')
  if not ns then
    fail('INVALID_ARGUMENT', 'not a ' .. tag .. ' key (rm:{<ns>}:' .. tag .. ':<scope>:<sid>:<key>): '
         .. show(name))
  end
  scope_args({ns, scope, sid}, 1)
  check_key(key)
  return string.sub(name, 1, #name - #key)
end
