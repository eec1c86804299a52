--[[ redismem_create_session: record a session id; creating it again keeps it
  (and its memory) as it was.
  KEYS[1] sessions zset   rm:{<ns>}:sessions (score: creation time in ms)
  ARGV[1] namespace  ARGV[2] session id
  ARGV[3] optional: its creation time in epoch ms (an import), default now
  Reply: 1 when the session is new, 0 when it existed.
  Errors: INVALID_ARGUMENT, INVALID_ID                                    ]]

local function create_session(keys, args)
  count_args(args, 2, 'namespace, session id', 3)
  local c = {ns = check_id('namespace', args[1])}
  local sid = check_id('session id', args[2])
  expect_keys(keys, 1)
  local created = args[3] and parse_int('creation time', args[3], 0, LIMITS.max_revision)
                  or now_ms()
  local sessions_key = expect_key(keys, 1, SCHEMA.sessions(c))
  return redis.call('ZADD', sessions_key, 'NX', int_string(created), sid)
end

register('redismem_create_session', create_session)
