--[[ checkpoints: LangGraph checkpoints (redismem/langgraph/) in the key
  schema. A LangGraph thread is a session id: its writes are fenced by the
  session's turn (lib/57_fence.lua) and announced in the feed as events of
  kind checkpoint. Checkpoint namespaces, task ids, run ids, channels and
  versions stand in key and field names percent-encoded (letters, digits,
  '_', '.', '~', '-' and '|' as they are, every other byte as %XX in upper
  case: one spelling per text). Serialized values are bytes framed as
  '<serde type>\n<bytes>' (LangGraph's serializer), never read as JSON: a
  call is bounded by its size (max_checkpoint_bytes), not by a JSON check.
  Keys of thread <t>, checkpoint namespace <n> (encoded), in namespace ns:
    rm:{ns}:lgt:<t>:<n>:c:<id>   hash of one checkpoint: cp, md (typed),
        parent, run (encoded), bl (the blob fields of the channels it
        names, one per line), and per pending write w:<task>:<idx>
        (typed), c:<task>:<idx> (channel), p:<task>:<idx> (task path)
    rm:{ns}:lgt:<t>:<n>:ids      zset (score 0) of its checkpoint ids
    rm:{ns}:lgt:<t>:<n>:wids     zset (score 0) of the ids with pending writes
    rm:{ns}:lgt:<t>:<n>:blobs    hash <channel>:<version> -> typed value
    rm:{ns}:lgt:<t>:nss          zset (score 0) of its namespaces (encoded)
    rm:{ns}:lgthreads            zset of thread ids, by last put (ms)
    rm:{ns}:lgr:<run>            zset (score 0) of <t>:<n>:<id> a run wrote ]]

-- One table, not a local per helper: a Lua chunk holds at most 200 locals.
local CP = {ENCODED = '^[%w_.~|%%-]*$'}

function CP.encode(text)
  return (string.gsub(text, '[^%w_.~|-]', function(ch)
    return string.format('%%%02X', string.byte(ch))
  end))
end

-- The text an encoded part stands for; INVALID_ARGUMENT unless `text` is
-- the one spelling of a text of at most max_key_bytes bytes.
function CP.decode(what, text, allow_empty)
  if type(text) ~= 'string' or (text == '' and not allow_empty) or #text > 3 * LIMITS.max_key_bytes
     or not string.find(text, CP.ENCODED) then
    fail('INVALID_ARGUMENT', what .. ' must be percent-encoded (1 to ' .. LIMITS.max_key_bytes
         .. ' bytes), got ' .. show(text))
  end
  local raw = string.gsub(text, '%%(%x%x)', function(hex) return string.char(tonumber(hex, 16)) end)
  if #raw > LIMITS.max_key_bytes or CP.encode(raw) ~= text then
    fail('INVALID_ARGUMENT', what .. ' is not in its one percent-encoded spelling: ' .. show(text))
  end
  return raw
end

-- A serialized value: '<serde type>\n<bytes>'.
function CP.typed(what, text)
  if type(text) ~= 'string' or not string.find(string.sub(text, 1, 65), '^[%w_%-]+\n') then
    fail('INVALID_ARGUMENT', what .. " must be '<serializer type>\\n<bytes>', got " .. show(text))
  end
end

-- A blob field '<channel>:<version>', both encoded; the channel.
function CP.blob_field(field)
  local channel, version = string.match(field, '^([^:]+):([^:]+)$')
  if not channel then
    fail('INVALID_ARGUMENT', "a blob field is '<channel>:<version>', encoded, got " .. show(field))
  end
  CP.decode('a channel', channel)
  CP.decode('a channel version', version)
  return channel
end

-- The checkpoint keys of thread t.thread, namespace t.cns (encoded).
CP.keys = {
  checkpoint = function(t, id) return key_base(t.c.ns) .. 'lgt:' .. t.thread .. ':' .. t.cns .. ':c:' .. id end,
  ids = function(t) return key_base(t.c.ns) .. 'lgt:' .. t.thread .. ':' .. t.cns .. ':ids' end,
  written = function(t) return key_base(t.c.ns) .. 'lgt:' .. t.thread .. ':' .. t.cns .. ':wids' end,
  blobs = function(t) return key_base(t.c.ns) .. 'lgt:' .. t.thread .. ':' .. t.cns .. ':blobs' end,
  namespaces = function(t) return key_base(t.c.ns) .. 'lgt:' .. t.thread .. ':nss' end,
  threads = function(t) return key_base(t.c.ns) .. 'lgthreads' end,
  run = function(t, run) return key_base(t.c.ns) .. 'lgr:' .. run end,
}

-- The common start of the checkpoint functions: ARGV[1..5] namespace,
-- thread id, checkpoint namespace (encoded), principal, turn token; the
-- principal key and the turn hash at KEYS[who] and KEYS[who + 1]; the
-- call's size. Returns t: the thread, and the feed writer w (lib/50_feed.lua).
function CP.call(keys, args, who)
  local c = {ns = check_id('namespace', args[1]), scope = 'session'}
  local t = {c = c, thread = check_id('thread id', args[2])}
  c.sid = t.thread
  t.cns_text = CP.decode('the checkpoint namespace', args[3], true)
  t.cns = args[3]
  local principal = check_id('principal', args[4])
  local w = {c = c, kind = 'checkpoint', principal = principal,
             seq = SCHEMA.sequence(c), feed_size = SCHEMA.feed_size(c), feed = SCHEMA.feed(c)}
  w.who = expect_who(keys, who, c, principal)
  w.turn = expect_key(keys, who + 1, SCHEMA.turn(c))
  w.settings = write_settings(SCHEMA.config(c))
  check_request(keys, args, LIMITS.max_checkpoint_bytes)
  t.fence = args[5]
  return t, w
end

-- Check the turn token, then plan one feed event per checkpoint id in
-- `ids` (action put, writes or delete; the key is the checkpoint id, cpns
-- the checkpoint namespace as text) and append them: before any other write.
function CP.announce(t, w, action, ids)
  check_fence(w.turn, 'session:' .. t.thread, t.fence)
  w.now = now_ms()
  prepare_feed(w)
  for _, id in ipairs(ids) do
    plan_event(w, id, action, AT_SEQUENCE)
    local fields = w.events[#w.events]
    fields[#fields + 1] = 'cpns'
    fields[#fields + 1] = t.cns_text
  end
  publish(w)
end
