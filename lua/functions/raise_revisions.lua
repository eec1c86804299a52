--[[ redismem_raise_revisions: restore the last revisions issued for names
  of one scope (an export's record of deleted or expired keys), so that an
  expected revision handed out before the export can never match a key
  re-created after the import. Only raises: a later revision is kept.
  KEYS[1] revisions hash  rm:{<ns>}:rev:<val|vec>:<scope>:<sid>
  KEYS[2] config hash     rm:{<ns>}:cfg (declared: only a role that may write it imports)
  ARGV[1] namespace  ARGV[2] scope  ARGV[3] scope id  ARGV[4] kind (value|vector)
  ARGV[3+2i] name i   ARGV[4+2i] revision i (>= 1)
  Reply: the number of names whose revision was raised.
  Errors: INVALID_ARGUMENT, INVALID_ID, INVALID_KEY, INVALID_REVISION      ]]

local function raise_revisions(keys, args)
  count_args(args, 6, 'namespace, scope, scope id, kind, then name, revision')
  local c = scope_args(args, 1)
  local tag = kind_tag(args[4])
  local count = item_count(args, 4, 2, 'name, revision')
  expect_keys(keys, 2)
  local revisions_key = expect_key(keys, 1, SCHEMA.revisions(c, tag))
  expect_key(keys, 2, SCHEMA.config(c))
  local items = {}
  for i = 1, count do
    local base = 3 + 2 * i
    items[i] = {name = check_key(args[base]),
                revision = parse_int('revision', args[base + 1], 1, LIMITS.max_revision,
                                     'INVALID_REVISION')}
  end
  local raised = 0
  for _, item in ipairs(items) do
    local issued = tonumber(redis.call('HGET', revisions_key, item.name)) or 0
    if item.revision > issued then
      redis.call('HSET', revisions_key, item.name, int_string(item.revision))
      raised = raised + 1
    end
  end
  return raised
end

register('redismem_raise_revisions', raise_revisions)
