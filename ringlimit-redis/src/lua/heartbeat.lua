-- A node says it is alive and learns how many are. KEYS[1]: a sorted set of nodes (score:
-- the server time in µs at which the node is presumed gone). ARGV: node id, time to live
-- (µs), 'leave' to go at once. Reply: {live nodes, now}.
local key, id, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', key, '-inf', int(now))
if ARGV[3] == 'leave' then
  redis.call('ZREM', key, id)
else
  redis.call('ZADD', key, int(now + ttl), id)
  expire_in(key, ttl)
end
return { redis.call('ZCARD', key), now }
