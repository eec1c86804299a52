--[[ redismem_forget_user: delete one user's keys, a bounded batch per call
  (an admin's: `redismem forget-user`, RedisMemoryStore.forget_user), and
  with the last batch take the user out of the registries and record that
  in the feed: kind user, action forget, scope actor, key = the user id,
  no data.
  KEYS[1] feed counter     rm:{<ns>}:seq
  KEYS[2] feed size        rm:{<ns>}:feedsz
  KEYS[3] principal key    rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  KEYS[4] settings hash    rm:{<ns>}:cfg: declared so that the server's ACL
          admits only a credential that may write the settings (an
          admin); it is not written
  KEYS[5] memory users     rm:{<ns>}:ltmusers
  KEYS[6] scopes registry  rm:{<ns>}:scopes
  KEYS[6+i] key i to delete (at most max_batch), each one of the user's:
          rm:{<ns>}:ltm:<user>:<id>, ltmz:<user>, the actor scope's
          val:actor:<user>:<key>, vec:actor:<user>:<key>,
          <keys|exp|rev>:<val|vec>:actor:<user>, vdims:actor:<user>, or
          a request record who:<user>:<bucket>
  ARGV[1] namespace  ARGV[2] principal  ARGV[3] the user
  ARGV[4] '1' = the last batch (registries and the feed event), '0' = not
  Reply: the number of keys deleted.
  Errors: INVALID_ARGUMENT, INVALID_ID, FEED_CORRUPT                      ]]

register('redismem_forget_user', function(keys, args) -- not a local: the chunk's 200 are scarce
  count_args(args, 4, 'namespace, principal, user, last', 4)
  local user = check_id('user id', args[3])
  if user == '_' then
    fail('INVALID_ARGUMENT', "'_' stands for the shared memories, not a user")
  end
  local c = {ns = check_id('namespace', args[1]), scope = 'actor', sid = user}
  local principal = check_id('principal', args[2])
  if args[4] ~= '0' and args[4] ~= '1' then
    fail('INVALID_ARGUMENT', "last must be '0' or '1', got " .. show(args[4]))
  end
  if #keys < 6 or #keys - 6 > LIMITS.max_batch then
    fail('INVALID_ARGUMENT', 'expected 6 keys, then at most ' .. LIMITS.max_batch
         .. ' keys to delete, got ' .. #keys)
  end
  local w = {c = c, kind = 'user', principal = principal,
             seq = expect_key(keys, 1, SCHEMA.sequence(c)),
             feed_size = expect_key(keys, 2, SCHEMA.feed_size(c)), feed = SCHEMA.feed(c)}
  expect_who(keys, 3, c, principal)
  w.settings = write_settings(expect_key(keys, 4, SCHEMA.config(c)))
  local b = key_base(c.ns)
  local users = expect_key(keys, 5, SCHEMA.memory_users(c))
  local scopes = expect_key(keys, 6, SCHEMA.scopes(c))
  local own = {[b .. 'ltmz:' .. user] = true, [b .. 'vdims:actor:' .. user] = true}
  for _, family in ipairs({'keys', 'exp', 'rev'}) do
    for _, tag in ipairs({'val', 'vec'}) do
      own[b .. family .. ':' .. tag .. ':actor:' .. user] = true
    end
  end
  local prefixes = {b .. 'ltm:' .. user .. ':', b .. 'val:actor:' .. user .. ':',
                    b .. 'vec:actor:' .. user .. ':'}
  local who = b .. 'who:' .. user .. ':'
  for i = 7, #keys do
    local key, found = keys[i], own[keys[i]]
    for _, prefix in ipairs(prefixes) do
      found = found or (string.sub(key, 1, #prefix) == prefix and #key > #prefix)
    end
    found = found or (string.sub(key, 1, #who) == who and string.find(key, '^%d+$', #who + 1))
    if not found then
      fail('INVALID_ARGUMENT', 'KEYS[' .. i .. '] ' .. show(key) .. ' is no key of user '
           .. show(user) .. ' (its memories, its actor scope, its request records)')
    end
  end
  if args[4] == '1' then
    w.now = now_ms()
    prepare_feed(w)
    plan_event(w, user, 'forget', AT_SEQUENCE)
    publish(w)
    redis.call('ZREM', users, user)
    redis.call('ZREM', scopes, 'val:actor:' .. user, 'vec:actor:' .. user)
  end
  local deleted = 0
  for i = 7, #keys do
    deleted = deleted + redis.call('DEL', keys[i])
  end
  return deleted
end)
