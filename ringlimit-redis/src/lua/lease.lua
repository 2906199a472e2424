-- Leases a batch of permits from a fixed window for a node's local limiter (leased mode).
-- KEYS[1]: the fixed window's hash (as `fixed_window.lua`). ARGV: limit, window (µs), the
-- most the node wants, live nodes, the permits the request needs (at most what it wants),
-- the horizon (µs): no lease when the window ends sooner. The batch shrinks as the window runs out: at most a
-- 1/(2 × live nodes) share of what is left, at least 1, at most what is left.
-- Reply: {permits leased, left in the window after them, µs until the window ends, now,
-- 1 when too close to the end, 1 when then admitted directly}.
local limit, window, want, nodes = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local need, horizon = tonumber(ARGV[5]), tonumber(ARGV[6])
-- The window in force (`fixed_window.lua`: the server's, or a newer one stored before its
-- clock went back; another program's value is WRONGTYPE).
local w, count = fixed_window(KEYS[1], window)
local ends_in = (w + 1) * window - now
local left = limit - count
-- Too close to the window's end for the node to use a lease before its deadline: no lease
-- (the fifth value says so), and this request is decided on the window itself, exactly (the
-- sixth value: admitted).
if ends_in <= horizon then
  if need > 0 and left >= need then
    redis.call('HSET', KEYS[1], 'w', int(w), 'c', int(count + need))
    expire_in(KEYS[1], ends_in)
    return { 0, left - need, ends_in, now, 1, 1 }
  end
  return { 0, left, ends_in, now, 1, 0 }
end
-- A request for `need` permits gets at least that many, or none when fewer are left.
if left < need or left <= 0 then return { 0, left, ends_in, now, 0, 0 } end
local batch = math.max(need, math.min(want, left, math.max(1, math.ceil(left / (2 * nodes)))))
redis.call('HSET', KEYS[1], 'w', int(w), 'c', int(count + batch))
expire_in(KEYS[1], ends_in)
return { batch, left - batch, ends_in, now, 0, 0 }
