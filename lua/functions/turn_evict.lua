--[[ redismem_turn_evict: take a waiter out of the queue for a turn (an
  admin's: `redismem turns evict`), record it in the feed, wake the waiter
  (its next call gets WAITER_LOST) and, when the turn is free, the first
  live waiter after it (lib/65_turns.lua).
  KEYS[1] turn hash       rm:{<ns>}:turn:<scope>:<sid>
  KEYS[2] waiters zset    rm:{<ns>}:turn:<scope>:<sid>:q
  KEYS[3] feed counter    rm:{<ns>}:seq
  KEYS[4] feed size       rm:{<ns>}:feedsz
  KEYS[5] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  KEYS[6] wake list       rm:{<ns>}:turn:<scope>:<sid>:w:<waiter>
  KEYS[7] settings hash   rm:{<ns>}:cfg: declared so that the server's ACL
          lets only a credential that may write the settings (an admin)
          call this function; it is not written
  ARGV[1] namespace  ARGV[2] scope (session or workflow)  ARGV[3] scope id
  ARGV[4] principal  ARGV[5] the waiter's holder id
  Reply: 1 when the waiter was queued and is evicted, 0 when it was not
         queued (nothing changes).
  Errors: INVALID_ARGUMENT, INVALID_ID, TURN_CORRUPT, FEED_CORRUPT
  Feed: 'evict' (kind turn; key = the waiter, rev = the turn's latest
        token) when a waiter was evicted.                                  ]]

register('redismem_turn_evict', function(keys, args) -- not a local: the chunk's 200 are scarce
  count_args(args, 5, 'namespace, scope, scope id, principal, waiter', 5)
  expect_keys(keys, 7)
  local c = scope_args(args, 1)
  if not TURN_SCOPES[c.scope] then
    fail('INVALID_ARGUMENT', 'turns are taken in session and workflow scopes, got ' .. show(c.scope))
  end
  local principal = check_id('principal', args[4])
  local t = {c = c, holder = check_id('waiter', args[5])}
  t.key = expect_key(keys, 1, SCHEMA.turn(c))
  t.queue = expect_key(keys, 2, SCHEMA.turn_queue(c))
  local w = {c = c, kind = 'turn', principal = principal,
             seq = expect_key(keys, 3, SCHEMA.sequence(c)),
             feed_size = expect_key(keys, 4, SCHEMA.feed_size(c)),
             feed = SCHEMA.feed(c)}
  expect_who(keys, 5, c, principal)
  local wake_list = expect_key(keys, 6, SCHEMA.turn_wake(c, t.holder))
  w.settings = write_settings(expect_key(keys, 7, SCHEMA.config(c)))
  read_turn(t)
  if not redis.call('ZSCORE', t.queue, t.holder) then
    return 0
  end
  local now = now_ms()
  w.now = now
  prepare_feed(w)
  plan_event(w, t.holder, 'evict', t.token, nil)
  publish(w)
  leave_queue(t, t.holder)
  redis.call('LPUSH', wake_list, '1') -- the waiter looks now, and learns it lost its place
  redis.call('PEXPIRE', wake_list, WAKE_KEEP_MS)
  if not turn_held(t, now) then
    local head, lapsed = first_waiter(t, now)
    drop_waiters(t, lapsed)
    if head then
      wake(t, head)
    end
  end
  return 1
end)
