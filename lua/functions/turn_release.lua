--[[ redismem_turn_release: end a turn, or leave the queue for it, and wake
  the first waiter when the turn is free (lib/65_turns.lua).
  KEYS[1] turn hash       rm:{<ns>}:turn:<scope>:<sid>
  KEYS[2] waiters zset    rm:{<ns>}:turn:<scope>:<sid>:q
  KEYS[3] feed counter    rm:{<ns>}:seq
  KEYS[4] feed size       rm:{<ns>}:feedsz
  KEYS[5] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  KEYS[6] wake list       rm:{<ns>}:turn:<scope>:<sid>:w:<holder>
  ARGV[1] namespace  ARGV[2] scope (session or workflow)  ARGV[3] scope id
  ARGV[4] principal  ARGV[5] holder
  ARGV[6] the token of the holder's turn; '' = a waiter gives up: it
          leaves the queue, and releases the turn if it was granted one
          whose reply it never read (its token was never used)
  Reply: 1 when the holder's turn was released, 0 when it held none (it
         was taken by another after it lapsed, or the caller only left the
         queue).
  Errors: INVALID_ARGUMENT, INVALID_ID, TURN_CORRUPT, FEED_CORRUPT
  Feed: 'release' when a turn was released.                              ]]

local function turn_release(keys, args)
  count_args(args, 6, 'namespace, scope, scope id, principal, holder, token', 6)
  expect_keys(keys, 6)
  local t, w = queue_call(keys, args)
  local token = args[6] ~= '' and parse_int('token', args[6], 1, LIMITS.max_sequence) or nil
  read_turn(t)
  local now = now_ms()
  local releasing = t.held_by == t.holder and (token == nil or t.token == token)
  w.now = now
  prepare_feed(w)
  if releasing then
    plan_event(w, t.holder, 'release', t.token, nil)
  end
  publish(w)
  leave_queue(t, t.holder)
  if releasing then
    redis.call('HDEL', t.key, 'holder', 'by', 'exp')
  end
  if releasing or not turn_held(t, now) then
    local head, lapsed = first_waiter(t, now)
    drop_waiters(t, lapsed)
    if head then
      wake(t, head)
    end
  end
  return releasing and 1 or 0
end

register('redismem_turn_release', turn_release)
