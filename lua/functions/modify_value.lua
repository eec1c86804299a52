--[[ redismem_modify_value: change one value on the server, in one call, so
  concurrent writers never conflict: incr adds to an integer, append adds an
  item to a list (keeping its last max_items), merge applies an RFC 7386
  JSON merge patch to an object. An absent key counts as 0, [] or {}.
  KEYS[1] names zset      rm:{<ns>}:keys:val:<scope>:<sid>
  KEYS[2] expiry zset     rm:{<ns>}:exp:val:<scope>:<sid>
  KEYS[3] revisions hash  rm:{<ns>}:rev:val:<scope>:<sid>
  KEYS[4] feed counter    rm:{<ns>}:seq
  KEYS[5] feed size       rm:{<ns>}:feedsz
  KEYS[6] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  KEYS[7] turn hash       rm:{<ns>}:turn:<scope>:<sid> (lib/65_turns.lua)
  KEYS[8] value hash      rm:{<ns>}:val:<scope>:<sid>:<key>
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id
  ARGV[4] ttl: '' = no expiry, 'KEEPTTL' = keep the key's expiry (a new key
          gets none), else ms   ARGV[5] principal
  ARGV[6] request id ('' = none; lib/55_requests.lua)
  ARGV[7] the writer's turn token ('' = none; lib/65_turns.lua)   ARGV[8] key
  ARGV[9] incr | append | merge
  ARGV[10] incr: the integer to add (|n| <= 2^53 - 1); append: the item
           (JSON); merge: the patch (a JSON object; null members delete; the
           merge reads at most max_merge_members object members of the patch
           and the stored value, at the levels the patch reaches)
  ARGV[11] append only, optional: max_items ('' = no cap; 1..max_append_items;
           the list is cut where its check found the commas between items)
  Reply: {new revision, the new value's JSON for incr, else ''} (the kept
         reply when the request id was applied already).
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_JSON, INVALID_TTL,
          VALUE_TOO_LARGE (also an append or merge to a stored value over
          max_value_bytes, refused before it is read), REQUEST_TOO_LARGE (also a merge past
          max_merge_members), WRONG_TYPE (incr of a value
          that is not an integer, append to one that is not a list),
          REVISION_LIMIT, FEED_CORRUPT, STALE_TURN, TURN_CORRUPT
  Feed: one event of action incr (the new value and the increment), append
        (the appended item) or merge (the patch): never the whole list or
        object (lib/50_feed.lua).                                          ]]

local function new_value(op, stored, operand, max_items, commas)
  if op == 'incr' then
    local current = 0
    if stored then
      local digits = string.match(stored, '^[ \t\n\r]*(%-?%d+)[ \t\n\r]*$')
      current = digits and #digits <= 17 and tonumber(digits)
      if not current or math.abs(current) > LIMITS.max_revision then
        fail('WRONG_TYPE', 'incr needs an integer value within +-(2^53 - 1), the key holds '
             .. show(stored))
      end
    end
    local sum = current + operand
    if math.abs(sum) > LIMITS.max_revision then
      fail('INVALID_ARGUMENT', 'incr would leave the integers exact in JSON readers: '
           .. int_string(current) .. ' + ' .. int_string(operand))
    end
    return int_string(sum)
  elseif op == 'append' then
    if not max_items then -- text in, text out: no item is read (a 524k-item list took 1.5 s)
      local body = stored and string.match(stored, '^[ \t\n\r]*%[(.*)%][ \t\n\r]*$')
      if stored and not body then
        fail('WRONG_TYPE', 'append needs a list, the key holds ' .. show(stored))
      end
      if not body or not string.find(body, '[^ \t\n\r]') then
        return '[' .. operand .. ']'
      end
      return '[' .. body .. ',' .. operand .. ']'
    end
    if stored and string.byte(stored, skip_space(stored, 1)) ~= 91 then
      fail('WRONG_TYPE', 'append needs a list, the key holds ' .. show(stored))
    end
    local kept = stored and json_list_tail(stored, max_items - 1, commas) or ''
    return kept == '' and '[' .. operand .. ']' or '[' .. kept .. ',' .. operand .. ']'
  end
  return json_merge(stored, operand, {left = LIMITS.max_merge_members})
end

local function modify_value(keys, args)
  count_args(args, 10, 'namespace, scope, scope id, ttl, principal, request id, turn token, key, '
             .. 'operation, operand', 11)
  local c = scope_args(args, 1)
  local ttl = parse_ttl(args[4])
  local principal = check_id('principal', args[5])
  local request = check_request_id(args[6])
  local key = check_key(args[8])
  local op = args[9]
  expect_keys(keys, 8)
  local w = scope_writer(keys, 1, c, 'value', principal, request, args[7])
  w.ttl = ttl
  check_request(keys, args, w.settings.max_call_bytes)
  local value_key = expect_key(keys, 8, SCHEMA.value(c, key))
  local operand, max_items = args[10], nil
  if op == 'incr' then
    operand = parse_int('the increment', operand, -LIMITS.max_revision, LIMITS.max_revision)
  elseif op == 'append' or op == 'merge' then
    check_json(operand, w.settings.max_value_bytes)
    if op == 'merge' and string.byte(operand, skip_space(operand, 1)) ~= 123 then
      fail('INVALID_ARGUMENT', 'a merge patch must be a JSON object, got ' .. show(operand))
    end
    if op == 'append' and args[11] and args[11] ~= '' then
      max_items = parse_int('max_items', args[11], 1, LIMITS.max_append_items)
    end
  else
    fail('INVALID_ARGUMENT', 'the operation must be incr, append or merge, got ' .. show(op))
  end
  if #args > (op == 'append' and 11 or 10) then
    fail('INVALID_ARGUMENT', 'too many arguments for ' .. op .. ': ' .. #args)
  end

  local kept = kept_or_fenced(w, 'modify_value')
  if kept then
    local revision, json = string.match(kept, '^(%d+) (.*)$')
    return {tonumber(revision), json}
  end

  local stored = redis.call('HMGET', value_key, 'v', 'rev')
  local current = tonumber(stored[2]) or 0
  local old = current > 0 and stored[1] or nil
  if old and op ~= 'incr' and #old > w.settings.max_value_bytes then -- before reading it
    fail('VALUE_TOO_LARGE', 'the key holds ' .. #old .. ' bytes of JSON, over the limit '
         .. '(max_value_bytes) of ' .. w.settings.max_value_bytes .. ', and ' .. op
         .. ' would read it all: set the key anew, or raise the limit')
  end
  local commas = max_items and {} -- a capped append cuts the list where the check found commas
  if old and op ~= 'incr' and json_error(old, nil, commas) then
    fail('WRONG_TYPE', 'the key holds a value that is not strict JSON: ' .. show(old))
  end
  local json = new_value(op, old, operand, max_items, commas)
  if #json > w.settings.max_value_bytes then
    fail('VALUE_TOO_LARGE', 'the new value is ' .. #json .. ' bytes of JSON, the limit is '
         .. w.settings.max_value_bytes)
  end
  local revision = plan_revision(w, key, current)
  begin_writes(w)
  if op == 'incr' then
    plan_event(w, key, op, revision, json, int_string(operand))
  else
    plan_event(w, key, op, revision, nil, args[10])
  end
  start_writing(w)
  store_entry(w, value_key, key, current > 0, revision, {'v', json})
  finish_entries(w)
  local reply = op == 'incr' and json or ''
  keep_reply(w, 'modify_value', int_string(revision) .. ' ' .. reply)
  return {revision, reply}
end

register('redismem_modify_value', modify_value)
