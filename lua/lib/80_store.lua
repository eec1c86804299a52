--[[ store: thread events and long-term memories (the MemoryStore protocol).
  Thread <t> of namespace <ns>:
    rm:{ns}:thr:<t>:ev   stream, one entry per event in append order, field
                         e = the event's canonical JSON
    rm:{ns}:thr:<t>:ts   zset, member = stream id, score = event timestamp
    rm:{ns}:thr:<t>:ids  hash, event id -> stream id (appends are idempotent)
    rm:{ns}:threads      zset, thread id -> latest timestamp of its appended
                         events (after a replace: of its last event)
  Long-term memory <id> of user <u> ('_' = shared by all users):
    rm:{ns}:ltm:<u>:<id> hash: rec (record JSON), text, _u and _s tags (hex
                         of user and scope), upd (updated_at), and when it
                         has one, emb (float32) and _dim
    rm:{ns}:ltmz:<u>     zset, member = id, score = updated_at
    rm:{ns}:ltmdim       the dimension of the namespace's memory embeddings ]]

local EVENT_FIELDS = {id = true, thread_id = true, user_id = true, type = true,
                      timestamp = true, payload = true, tags = true}
local MEMORY_FIELDS = {id = true, user_id = true, scope = true, data = true, text = true,
                       tags = true, metadata = true, created_at = true, updated_at = true}

local function check_fields(code, what, decoded, allowed)
  for name in pairs(decoded) do
    if not allowed[name] then
      fail(code, what .. ' has an unknown field ' .. show(name))
    end
  end
  for name in pairs(allowed) do
    if decoded[name] == nil then
      fail(code, what .. ' lacks the field ' .. show(name))
    end
  end
end

local function check_text_field(code, what, text, field, max_bytes)
  local value = json_field_string(text, field)
  if not value or #value == 0 or #value > max_bytes or string.find(value, '%c') then
    fail(code, what .. ' must be a non-empty string of at most ' .. max_bytes
         .. ' bytes without control characters')
  end
  return value
end

local function check_time(code, what, text, field)
  local value = json_field_number(text, field)
  if not value or value < 0 or value ~= math.floor(value) or value > LIMITS.max_revision then
    fail(code, what .. ' must be a non-negative integer (ms)')
  end
  return value
end

local function check_tags(code, what, text, field)
  if field.b ~= 91 then
    fail(code, what .. ' must be a list of strings')
  end
  for _, tag in ipairs((json_node(text, field.s, 1)).v) do
    if tag.t ~= 'string' then
      fail(code, what .. ' must be a list of strings')
    end
  end
end

-- A thread event: exactly the MemoryEvent fields, of the right types.
-- Returns {id, type, timestamp, payload (its JSON text)}.
local function check_event(text, thread, limit)
  local e = decode_object('INVALID_EVENT', 'an event', text, limit)
  check_fields('INVALID_EVENT', 'the event', e, EVENT_FIELDS)
  local id = check_text_field('INVALID_EVENT', 'event id', text, e.id, LIMITS.max_key_bytes)
  if json_field_string(text, e.thread_id) ~= thread then
    fail('INVALID_EVENT', 'event ' .. show(id) .. ' belongs to thread '
         .. show(string.sub(text, e.thread_id.s, e.thread_id.e)) .. ', not ' .. show(thread))
  end
  if e.user_id.b ~= 110 and e.user_id.b ~= 34 then
    fail('INVALID_EVENT', 'user_id must be a string or null')
  end
  local kind = check_text_field('INVALID_EVENT', 'event type', text, e.type, LIMITS.max_id_bytes)
  local timestamp = check_time('INVALID_EVENT', 'timestamp', text, e.timestamp)
  check_tags('INVALID_EVENT', 'tags', text, e.tags)
  return {id = id, type = kind, timestamp = timestamp,
          payload = string.sub(text, e.payload.s, e.payload.e)}
end

-- A long-term memory record: exactly the LongTermMemory fields.
-- Returns {text, scope, updated_at}.
local function check_memory(text, user, id, limit)
  local m = decode_object('INVALID_MEMORY', 'a memory', text, limit)
  check_fields('INVALID_MEMORY', 'the memory', m, MEMORY_FIELDS)
  if json_field_string(text, m.id) ~= id then
    fail('INVALID_MEMORY', 'the record id is not ' .. show(id))
  end
  local record_user = json_field_string(text, m.user_id)
  if (user == '_' and m.user_id.b ~= 110) or (user ~= '_' and record_user ~= user) then
    fail('INVALID_MEMORY', 'the record user_id does not match ' .. show(user))
  end
  local scope = check_text_field('INVALID_MEMORY', 'scope', text, m.scope, LIMITS.max_id_bytes)
  local memory_text = json_field_string(text, m.text)
  if not memory_text then
    fail('INVALID_MEMORY', 'text must be a string')
  end
  if m.data.b ~= 123 or m.metadata.b ~= 123 then
    fail('INVALID_MEMORY', 'data and metadata must be JSON objects')
  end
  check_tags('INVALID_MEMORY', 'tags', text, m.tags)
  check_time('INVALID_MEMORY', 'created_at', text, m.created_at)
  return {text = memory_text, scope = scope,
          updated_at = check_time('INVALID_MEMORY', 'updated_at', text, m.updated_at)}
end

-- A shared memory has no user; '_' stands for it in key names.
local function check_user(text)
  if text == '_' then
    return text
  end
  return check_id('user id', text)
end

-- Append checked events; returns one flag per event (1 appended, 0 its id
-- was already in the thread). The common case costs XADD, ZADD and HSETNX;
-- a repeated id is appended, found out by HSETNX, and removed again.
local function append_checked(t, events)
  local flags = {}
  for i, item in ipairs(events) do
    local id = redis.call('XADD', t.events, '*', 'e', item.text)
    if redis.call('HSETNX', t.ids, item.e.id, id) == 1 then
      redis.call('ZADD', t.times, int_string(item.e.timestamp), id)
      flags[i] = 1
    else
      redis.call('XDEL', t.events, id)
      flags[i] = 0
    end
  end
  return flags
end

-- The three keys of thread `thread` (KEYS[1..3] of the thread functions).
local function thread_keys(keys, c, thread)
  return {events = expect_key(keys, 1, SCHEMA.thread_events(c, thread)),
          times = expect_key(keys, 2, SCHEMA.thread_times(c, thread)),
          ids = expect_key(keys, 3, SCHEMA.thread_ids(c, thread))}
end

local function checked_events(args, first, thread)
  local count = #args - first + 1
  if count > LIMITS.max_events_per_call then
    fail('INVALID_ARGUMENT', 'at most ' .. LIMITS.max_events_per_call .. ' events per call, got '
         .. count)
  end
  local events = {}
  for i = first, #args do
    events[#events + 1] = {text = args[i], e = check_event(args[i], thread, LIMITS.max_event_bytes)}
  end
  return events
end

-- The common start of the thread write functions: arguments checked, keys
-- KEYS[1..4] (events, times, ids, threads registry) checked, the call's
-- size checked against the namespace's settings, events parsed. A
-- `fenced` call also passes KEYS[5], the turn hash of the thread's
-- session, and ARGV[3], the writer's turn token ('' = none; checked by
-- check_fence, lib/57_fence.lua). Then come the feed's counter, its size
-- and the principal's key (KEYS[5..7], or KEYS[6..8] when fenced), the
-- principal (ARGV[3], or ARGV[4] when fenced) and the events. Returns t,
-- the events and the feed writer w of kind 'thread' (scope session, the
-- thread's id as scope id: lib/50_feed.lua).
local function thread_write(keys, args, fenced)
  local first = fenced and 5 or 4
  count_args(args, first - 1, 'namespace, thread id, ' .. (fenced and 'turn token, ' or '')
             .. 'principal, then events')
  local c = {ns = check_id('namespace', args[1]), scope = 'session'}
  local thread = check_id('thread id', args[2])
  c.sid = thread
  local base = fenced and 5 or 4
  expect_keys(keys, base + 3)
  local t = thread_keys(keys, c, thread)
  t.threads = expect_key(keys, 4, SCHEMA.threads(c))
  t.thread = thread
  local principal = check_id('principal', args[first - 1])
  local w = {c = c, kind = 'thread', principal = principal,
             seq = expect_key(keys, base + 1, SCHEMA.sequence(c)),
             feed_size = expect_key(keys, base + 2, SCHEMA.feed_size(c)),
             feed = SCHEMA.feed(c)}
  w.who = expect_who(keys, base + 3, c, principal)
  w.settings = write_settings(SCHEMA.config(c))
  check_request(keys, args, w.settings.max_call_bytes)
  local events = checked_events(args, first, thread)
  if fenced then
    local turn = expect_key(keys, 5, SCHEMA.turn(c))
    check_fence(turn, 'session:' .. thread, args[3])
  end
  return t, events, w
end
