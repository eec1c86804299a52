--[[ redismem_turn_renew: extend the holder's turn (lib/65_turns.lua).
  KEYS[1] turn hash       rm:{<ns>}:turn:<scope>:<sid>
  KEYS[2] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua):
          the server's ACL proves the principal, whose holder ids alone it
          may renew
  ARGV[1] namespace  ARGV[2] scope (session or workflow)  ARGV[3] scope id
  ARGV[4] principal  ARGV[5] holder  ARGV[6] the token of the holder's turn
  ARGV[7] the time to live from now, in ms
  Reply: the new expiry (epoch ms). A turn that lapsed is renewed while
         nobody took it after: its token is still the latest.
  Errors: INVALID_ARGUMENT, INVALID_ID, TURN_CORRUPT, TURN_LOST (the turn
          was released, or taken by another after it lapsed)          ]]

local function turn_renew(keys, args)
  count_args(args, 7, 'namespace, scope, scope id, principal, holder, token, ttl', 7)
  expect_keys(keys, 2)
  local t = turn_call(keys, args)
  expect_who(keys, 2, t.c, t.principal)
  local token = parse_int('token', args[6], 1, LIMITS.max_sequence)
  local ttl = parse_turn_ms('ttl', args[7])
  read_turn(t)
  if t.held_by ~= t.holder or t.token ~= token then
    local now = t.held_by and ('token ' .. int_string(t.token) .. ' is held by ' .. show(t.held_by))
                or ('nobody holds it; the last token is ' .. int_string(t.token))
    fail('TURN_LOST', 'turn ' .. int_string(token) .. ' of ' .. t.c.scope .. ':' .. t.c.sid
         .. ' was lost: ' .. now)
  end
  local expires = now_ms() + ttl
  redis.call('HSET', t.key, 'exp', int_string(expires))
  return expires
end

register('redismem_turn_renew', turn_renew)
