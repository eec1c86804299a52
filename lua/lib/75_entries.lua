--[[ entries: the write sequences the value and vector functions share.
  set_entries (set_values, set_vectors), import_entries (import_values,
  import_vectors) and delete_entry (delete_value, delete_vector) do the
  same steps for both kinds; what differs is in ENTRY_KINDS: the item's
  own arguments (a value: its JSON; a vector: its embedding and metadata),
  the extra key a vector write passes (the scope's dimensions hash, after
  the fixed keys) and the dimension counts it keeps. A LangGraph store
  item (put_items) is a value that keeps its created_at across writes.  ]]

local ENTRY_KINDS = {
  value = {
    kind = 'value',
    schema = function(c, key) return SCHEMA.value(c, key) end,
    what = 'value',
    width = 1,      -- the item's own arguments, between its key and the rest
    extra_keys = 0,
    begin = function() return {} end,
    read = function(_, w, args, at)
      local json = check_json(args[at], w.settings.max_value_bytes)
      return {fields = {'v', json}, event = json}
    end,
    current = function(_, item)
      return tonumber(redis.call('HGET', item.entry_key, 'rev')) or 0
    end,
    stored = function() end,
    finish = function() end,
  },
  vector = {
    kind = 'vector',
    schema = function(c, key) return SCHEMA.vector(c, key) end,
    what = 'embedding, metadata',
    width = 2,
    extra_keys = 1,
    begin = function(w, keys, slot, count, c)
      check_vector_count(count, w.settings)
      return {dims_key = expect_key(keys, slot, SCHEMA.dims(c)),
              scope_tag = to_hex(c.scope .. ':' .. c.sid), tokens_of = {}, moves = {}}
    end,
    read = function(ctx, _, args, at)
      local fields, dim = vector_fields(args[at], args[at + 1], ctx.scope_tag, ctx.tokens_of)
      return {fields = fields, dim = dim}
    end,
    current = function(_, item)
      local stored = redis.call('HMGET', item.entry_key, 'rev', '_dim')
      item.old_dim = tonumber(stored[2])
      return tonumber(stored[1]) or 0
    end,
    stored = function(ctx, item) recount_dim(ctx.moves, item.old_dim, item.dim) end,
    finish = function(ctx) count_dims(ctx.dims_key, ctx.moves) end,
  },
}

-- A LangGraph store item (put_items): a value whose canonical JSON
-- starts with its created_at (the first of its keys created_at, ttl,
-- updated_at, value); a write over a stored item keeps the stored
-- created_at, read by a pattern anchored at the start.
do
  local ITEM_CREATED = '^{"created_at":(%d+),'
  ENTRY_KINDS.item = {
    kind = 'value',
    schema = function(c, key) return SCHEMA.value(c, key) end,
    what = 'item JSON',
    width = 1,
    extra_keys = 0,
    begin = function() return {} end,
    read = function(_, w, args, at)
      local json = check_json(args[at], w.settings.max_value_bytes)
      if not string.find(json, ITEM_CREATED) then
        fail('INVALID_JSON', 'an item is a JSON object whose first key is created_at, '
             .. 'an integer of milliseconds')
      end
      return {fields = {'v', json}, event = json, limit = w.settings.max_value_bytes}
    end,
    current = function(_, item)
      local stored = redis.call('HMGET', item.entry_key, 'rev', 'v')
      local created = stored[2] and string.match(stored[2], ITEM_CREATED)
      if created then
        local json = string.gsub(item.event, ITEM_CREATED, '{"created_at":' .. created .. ',', 1)
        if #json > item.limit then
          fail('VALUE_TOO_LARGE', 'the item with its stored created_at is ' .. #json
               .. ' bytes, over max_value_bytes (' .. item.limit .. ')')
        end
        item.fields[2], item.event = json, json
      end
      return tonumber(stored[1]) or 0
    end,
    stored = function() end,
    finish = function() end,
  }
end

-- set_values / set_vectors / put_items: ARGV = namespace, scope, scope id, ttl,
-- principal, request id, turn token, then per item: key, its own
-- arguments, expected revision. KEYS = the scope writer's seven, the
-- kind's extra, the entries.
local function set_entries(keys, args, kind, fname)
  local spec = ENTRY_KINDS[kind]
  kind = spec.kind
  local width = spec.width + 2
  count_args(args, 7 + width, 'namespace, scope, scope id, ttl, principal, request id, turn token, '
             .. 'then key, ' .. spec.what .. ', expected revision')
  local c = scope_args(args, 1)
  local ttl = parse_ttl(args[4])
  local principal = check_id('principal', args[5])
  local request = check_request_id(args[6])
  local count = item_count(args, 7, width, 'key, ' .. spec.what .. ', expected revision')
  local fixed = 7 + spec.extra_keys
  expect_keys(keys, fixed + count)
  local w = scope_writer(keys, 1, c, kind, principal, request, args[7])
  w.ttl = ttl
  check_request(keys, args, w.settings.max_call_bytes)
  local kept = kept_or_fenced(w, fname)
  if kept then
    return text_ints(kept)
  end
  local ctx = spec.begin(w, keys, 8, count, c)

  prefetch_issued(w, args, 8, width, count)
  local items, seen = {}, {}
  for i = 1, count do
    local base = 8 + width * (i - 1)
    local key = batch_key(seen, args[base])
    local entry_key = expect_key(keys, fixed + i, spec.schema(c, key))
    local item = spec.read(ctx, w, args, base + 1)
    local expected = parse_expected(args[base + width - 1])
    item.key, item.entry_key = key, entry_key
    item.current = spec.current(ctx, item)
    check_expected(key, expected, item.current)
    item.revision = plan_revision(w, key, item.current)
    items[i] = item
  end

  begin_writes(w)
  for _, item in ipairs(items) do
    plan_event(w, item.key, 'set', item.revision, item.event)
  end
  start_writing(w)
  local revisions = {}
  for i, item in ipairs(items) do
    spec.stored(ctx, item)
    store_entry(w, item.entry_key, item.key, item.current > 0, item.revision, item.fields)
    revisions[i] = item.revision
  end
  finish_entries(w)
  spec.finish(ctx)
  keep_reply(w, fname, ints_text(revisions))
  return revisions
end

-- import_values / import_vectors: ARGV = namespace, scope, scope id,
-- principal, then per item: key, its own arguments, revision, ts, writer,
-- expiry. KEYS = the scope writer's seven, the config hash, the kind's
-- extra, the entries. (An import is not fenced.)
local function import_entries(keys, args, kind)
  local spec = ENTRY_KINDS[kind]
  local width = spec.width + 5
  local what = 'key, ' .. spec.what .. ', revision, ts, writer, expiry'
  count_args(args, 4 + width, 'namespace, scope, scope id, principal, then ' .. what)
  local c = scope_args(args, 1)
  local principal = check_id('principal', args[4])
  local count = item_count(args, 4, width, what)
  local fixed = 8 + spec.extra_keys
  expect_keys(keys, fixed + count)
  local w = scope_writer(keys, 1, c, kind, principal)
  expect_key(keys, 8, SCHEMA.config(c))
  check_request(keys, args, w.settings.max_call_bytes)
  local ctx = spec.begin(w, keys, 9, count, c)

  local items, seen = {}, {}
  for i = 1, count do
    local base = 5 + width * (i - 1)
    local key = batch_key(seen, args[base])
    local item = imported_args(args, base + 1 + spec.width)
    item.key = key
    item.entry_key = expect_key(keys, fixed + i, spec.schema(c, key))
    local own = spec.read(ctx, w, args, base + 1)
    item.fields, item.event, item.dim = own.fields, own.event, own.dim
    items[i] = item
  end

  begin_writes(w)
  local written = {}
  for i, item in ipairs(items) do
    written[i] = import_wanted(w, item.entry_key, item.key, item) and item.revision or 0
    if written[i] > 0 then
      spec.current(ctx, item)
      plan_event(w, item.key, 'set', item.revision, item.event)
      if item.by ~= principal then -- by is the importer; the entry keeps its writer
        local fields = w.events[#w.events]
        fields[#fields + 1] = 'writer'
        fields[#fields + 1] = item.by
      end
    end
  end
  start_writing(w)
  for i, item in ipairs(items) do
    if written[i] > 0 then
      import_entry(w, item.entry_key, item.key, item, item.fields)
      spec.stored(ctx, item)
    end
  end
  finish_entries(w)
  spec.finish(ctx)
  return written
end

-- delete_value / delete_vector: ARGV = namespace, scope, scope id, key,
-- expected revision, principal, request id, turn token. KEYS = the entry,
-- the scope writer's seven, the kind's extra.
local function delete_entry(keys, args, kind, fname)
  local spec = ENTRY_KINDS[kind]
  count_args(args, 8, 'namespace, scope, scope id, key, expected revision, principal, request id, '
             .. 'turn token', 8)
  local c = scope_args(args, 1)
  local key = check_key(args[4])
  local expected = parse_expected(args[5])
  local principal = check_id('principal', args[6])
  local request = check_request_id(args[7])
  expect_keys(keys, 8 + spec.extra_keys)
  local entry_key = expect_key(keys, 1, spec.schema(c, key))
  local w = scope_writer(keys, 2, c, kind, principal, request, args[8])
  if kind == 'value' then
    return remove_entry(w, fname, entry_key, key, expected)
  end
  local dims_key = expect_key(keys, 9, SCHEMA.dims(c))
  local dim = tonumber(redis.call('HGET', entry_key, '_dim'))
  return remove_entry(w, fname, entry_key, key, expected, function()
    if dim then
      count_dims(dims_key, {[dim] = -1})
    end
  end)
end
