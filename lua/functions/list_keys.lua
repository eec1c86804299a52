--[[ redismem_list_keys: one ascending page of live key names of a scope.
  KEYS[1] names zset   rm:{<ns>}:keys:<val|vec>:<scope>:<sid>
  KEYS[2] expiry zset  rm:{<ns>}:exp:<val|vec>:<scope>:<sid>
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id
  ARGV[4] kind: value | vector   ARGV[5] prefix ('' = all)
  ARGV[6] cursor ('' = from the start; else a next_cursor of this function)
  ARGV[7] limit ('' = 100; 1..1000)
  Reply: array; first the next cursor ('' when this is the last page), then
         how many listed names longer than max_key_bytes (raw writes) were
         skipped, then up to limit names. Expired names are skipped. A page
         may hold fewer than limit names and still have a next cursor when
         many expired or over-long names had to be skipped (at most 4 x
         limit are examined).
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_CURSOR       ]]

-- The cursor after `name`, the last name a page examined. After an
-- over-long name (only a raw ZADD lists one) the next page starts at the
-- first name that does not begin with its first max_key_bytes bytes
-- (every name that does is over-long too, or that prefix itself, which
-- came before), so no cursor holds more than max_key_bytes, and its hex
-- is never made of a huge name; '' when no name can follow.
local function cursor_after(name)
  if #name <= LIMITS.max_key_bytes then
    return to_hex(name)
  end
  local head = string.gsub(string.sub(name, 1, LIMITS.max_key_bytes), '\255+$', '')
  if head == '' then
    return ''
  end
  local next_head = string.sub(head, 1, -2) .. string.char(string.byte(head, -1) + 1)
  return to_hex(next_head) .. '+'
end

local function list_keys(keys, args)
  count_args(args, 7, 'namespace, scope, scope id, kind, prefix, cursor, limit', 7)
  local c = scope_args(args, 1)
  local tag = kind_tag(args[4])
  local prefix = args[5]
  if prefix ~= '' then
    check_key(prefix)
  end
  local after, start_at = parse_cursor(args[6])
  local limit = parse_limit(args[7])
  expect_keys(keys, 2)
  local names_key = expect_key(keys, 1, SCHEMA.names(c, tag))
  local expiry_key = expect_key(keys, 2, SCHEMA.expiry(c, tag))

  local low = '-'
  if prefix ~= '' then
    low = '[' .. prefix
  end
  if after and (prefix == '' or after >= prefix) then
    low = (start_at and '[' or '(') .. after
  end
  -- no UTF-8 string contains the byte 0xff, so prefix .. 0xff bounds the prefix
  local high = '+'
  if prefix ~= '' then
    high = '[' .. prefix .. '\255'
  end

  local now = now_ms()
  local page, budget, last, long = {}, 4 * limit, nil, 0
  while budget > 0 do
    local batch = redis.call('ZRANGEBYLEX', names_key, low, high, 'LIMIT', 0, math.min(budget, limit + 1))
    if #batch == 0 then
      return {'', long, unpack(page)}
    end
    for _, name in ipairs(batch) do
      budget = budget - 1
      if #name > LIMITS.max_key_bytes then
        long = long + 1
      elseif not is_expired(expiry_key, name, now) then
        if #page == limit then
          return {to_hex(page[#page]), long, unpack(page)}
        end
        page[#page + 1] = name
      end
      last = name
      if budget == 0 then
        break
      end
    end
    low = '(' .. last
  end
  return {cursor_after(last), long, unpack(page)}
end

register('redismem_list_keys', list_keys, true)
