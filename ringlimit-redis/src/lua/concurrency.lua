-- Concurrency limit with leases. KEYS[1]: a sorted set of leases (member `id|n`, score: the
-- server time in µs at which the lease expires, so a crashed holder's permits come back).
-- ARGV: op ('acquire', 'release' or 'renew'), the most in flight, n, lease length (µs), lease id.
-- Reply: {ok, left, retry_us, reset_us, now}.
local key, op = KEYS[1], ARGV[1]
local most, n, lease, id = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local member = id .. '|' .. ARGV[3]

-- Every lease as this script writes it (`id|n`, scored with a whole time) before anything is
-- written: another program's set is refused whole (`foreign`), never partly cleaned. The
-- live ones (scored after `now`), oldest expiry first: their counts and expiries.
local all = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
local counts, expiries = {}, {}
for i = 1, #all, 2 do
  -- A count above any limit, or an expiry further ahead than any lease: not this
  -- limiter's.
  local count, expiry = string.match(all[i], '|(%d+)$'), whole(all[i + 1])
  if not (count and expiry) or expiry > now + AHEAD then foreign() end
  count = count_of(count)
  if expiry > now then
    counts[#counts + 1] = count
    expiries[#expiries + 1] = expiry
  end
end
redis.call('ZREMRANGEBYSCORE', key, '-inf', int(now))
if op == 'release' then
  return { redis.call('ZREM', key, member), 0, 0, 0, now }
end
if op == 'renew' then
  local renewed = redis.call('ZADD', key, 'XX', 'CH', int(now + lease), member)
  if renewed == 1 then expire_in(key, lease) end
  return { renewed, 0, 0, 0, now }
end

-- In flight: the sum of the live leases' counts.
local used = 0
for i = 1, #counts do
  used = used + counts[i]
end
local available = most - used
local reset = 0
if #expiries > 0 then reset = expiries[#expiries] - now end
if n > available then
  if n > most then return { 0, available, NEVER, reset, now } end
  -- The expiry at which enough leases have lapsed, if none is released before.
  local freed = available
  for i = 1, #counts do
    freed = freed + counts[i]
    if freed >= n then return { 0, available, expiries[i] - now, reset, now } end
  end
end
redis.call('ZADD', key, int(now + lease), member)
expire_in(key, lease)
return { 1, available - n, 0, math.max(reset, lease), now }
