--[[ redismem_turn_acquire: take the turn of a session or workflow scope, or
  queue for it (lib/65_turns.lua).
  KEYS[1] turn hash       rm:{<ns>}:turn:<scope>:<sid>
  KEYS[2] waiters zset    rm:{<ns>}:turn:<scope>:<sid>:q
  KEYS[3] feed counter    rm:{<ns>}:seq
  KEYS[4] feed size       rm:{<ns>}:feedsz
  KEYS[5] principal key   rm:{<ns>}:who:<principal>:<bucket> (lib/55_requests.lua)
  KEYS[6] wake list       rm:{<ns>}:turn:<scope>:<sid>:w:<holder>
  KEYS[7] turns registry  rm:{<ns>}:turns
  ARGV[1] namespace  ARGV[2] scope (session or workflow)  ARGV[3] scope id
  ARGV[4] principal  ARGV[5] holder (an id naming this one attempt)
  ARGV[6] the turn's time to live in ms
  ARGV[7] '0' = do not queue; else queue (or stay queued) with a lease of
          this many ms, renewed by calling again
  ARGV[8] (optional) '1' = a waiter renewing its place: refused with
          WAITER_LOST, before anything is written, unless it is still
          queued with a lease that has not passed (a waiter that stopped
          renewing, or that an admin evicted, never gets the turn; it may
          queue again, at the end); '0' or none = a first call
  Reply: {1, token, expires at (epoch ms)} when the holder has the turn (a
         holder that has it already keeps its token, its expiry extended;
         a new turn's token is the feed sequence of its acquire event);
         else {0, the current holder or '' (free, but a waiter comes
         first), its expiry or the first waiter's lease (epoch ms; 0 when
         neither), the holder's place in the queue (1 = next; 0 = not
         queued)}.
  Errors: INVALID_ARGUMENT, INVALID_ID, TURN_CORRUPT, FEED_CORRUPT,
          WAITER_LOST
  Feed: 'expire' for a lapsed turn it finds, 'acquire' when it grants one.
  The holder's wake list is emptied by every call: a waiter is woken once
  per push, and items a raw LPUSH piled up cannot make it spin.           ]]

local function turn_acquire(keys, args)
  count_args(args, 7, 'namespace, scope, scope id, principal, holder, ttl, lease, renewing', 8)
  expect_keys(keys, 7)
  local t, w = queue_call(keys, args)
  local ttl = parse_turn_ms('ttl', args[6])
  local lease = args[7] ~= '0' and parse_turn_ms('waiter lease', args[7]) or 0
  local renewing = args[8] or '0'
  if renewing ~= '0' and renewing ~= '1' then
    fail('INVALID_ARGUMENT', "renewing must be '0' or '1', got " .. show(renewing))
  end
  local registry = expect_key(keys, 7, SCHEMA.turns(t.c))
  read_turn(t)
  local now = now_ms()
  if turn_held(t, now) and t.held_by == t.holder then -- a call sent again
    redis.call('HSET', t.key, 'exp', int_string(now + ttl))
    return {1, t.token, now + ttl}
  end
  if renewing == '1' then
    local kept = tonumber(redis.call('HGET', t.key, 'w:' .. t.holder))
    if not redis.call('ZSCORE', t.queue, t.holder) or not kept or not pending(kept, now) then
      fail('WAITER_LOST', 'waiter ' .. show(t.holder) .. ' lost its place in the queue for the '
           .. 'turn of ' .. t.c.scope .. ':' .. t.c.sid .. ': its lease lapsed before it renewed '
           .. 'it (a stopped or stalled process), or an admin evicted it')
    end
  end
  local busy = turn_held(t, now)
  local head, lapsed, head_lease = nil, {}, nil
  if not busy then
    head, lapsed, head_lease = first_waiter(t, now)
  end
  local granted = not busy and (head == nil or head == t.holder)
  w.now = now
  prepare_feed(w)
  if t.held_by and not busy then
    plan_event(w, t.held_by, 'expire', t.token, nil)
  end
  if granted then
    plan_event(w, t.holder, 'acquire', AT_SEQUENCE, nil)
    check_token_source(t, w)
  end
  publish(w)
  redis.call('DEL', t.wake) -- this call is the waiter's look at the turn
  drop_waiters(t, lapsed)
  if granted then
    leave_queue(t, t.holder)
    redis.call('HSET', t.key, 'token', int_string(w.last_seq), 'holder', t.holder,
               'by', t.principal, 'exp', int_string(now + ttl))
    redis.call('ZADD', registry, 0, t.c.scope .. ':' .. t.c.sid)
    return {1, w.last_seq, now + ttl}
  end
  if not busy then -- free, and a waiter comes first: wake it
    if t.held_by then
      redis.call('HDEL', t.key, 'holder', 'by', 'exp')
    end
    wake(t, head)
  end
  local place = 0
  if lease > 0 then
    if not redis.call('ZSCORE', t.queue, t.holder) then
      redis.call('HSET', t.key, 'ticket', int_string(t.ticket + 1))
      redis.call('ZADD', t.queue, int_string(t.ticket + 1), t.holder)
    end
    redis.call('HSET', t.key, 'w:' .. t.holder, int_string(now + lease))
    place = redis.call('ZRANK', t.queue, t.holder) + 1
  end
  if busy then
    return {0, t.held_by, t.exp, place}
  end
  return {0, '', head_lease or 0, place}
end

register('redismem_turn_acquire', turn_acquire)
