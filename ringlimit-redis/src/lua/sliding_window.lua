-- Bucketed sliding window (code 2): at most `limit` in any `window / bucket` consecutive
-- buckets of `bucket` µs, aligned to the epoch.
-- Key: a hash {bucket index = count}; buckets older than the window are deleted.
ALG[2] = { keys = 1 }

-- The bucket in force (the server's, or a newer one stored before its clock went back),
-- the counts of the buckets still in the window then, their sum, and the newest index with
-- a count; deletes the older ones when `commit`.
local function sliding_counts(key, e, buckets, bucket, commit)
  local flat = redis.call('HGETALL', key)
  -- Each field and count read once, into `nums` (the fields' own strings name them to HDEL).
  local nums = {}
  for i = 1, #flat, 2 do
    local b, c = whole(flat[i]), count_of(flat[i + 1])
    -- Fields that are not whole numbers, or a bucket starting more than `AHEAD` from now
    -- (which would make the real buckets look stale): another program's hash.
    if b == nil or b * bucket > now + AHEAD then foreign() end
    nums[i], nums[i + 1] = b, c
    e = math.max(e, b)
  end
  local oldest = e - buckets + 1
  local counts, sum, newest, stale = {}, 0, nil, {}
  for i = 1, #flat, 2 do
    local b, c = nums[i], nums[i + 1]
    if b < oldest then
      stale[#stale + 1] = flat[i]
    else
      counts[b] = c
      sum = sum + c
      if c > 0 and (newest == nil or b > newest) then newest = b end
    end
  end
  if commit and #stale > 0 then
    redis.call('HDEL', key, unpack(stale))
  end
  return e, counts, sum, newest
end

ALG[2].decide = function(k, n, limit, window, bucket, commit)
  local buckets = window / bucket
  local e, counts, sum, newest = sliding_counts(k[1], math.floor(now / bucket), buckets, bucket, commit)
  local available = limit - sum
  local reset = 0
  if newest ~= nil then reset = (newest + buckets) * bucket - now end
  if n > 0 and n > available then
    if n > limit then return 0, available, NEVER, reset, e end
    -- The first bucket boundary at which enough old buckets have left the window (at the
    -- latest when all of them have: `step = buckets`).
    local left = sum
    for step = 1, buckets do
      left = left - (counts[e + step - buckets] or 0)
      if left + n <= limit or step == buckets then
        return 0, available, (e + step) * bucket - now, reset, e
      end
    end
  end
  if n > 0 then
    -- Taking `n` puts them in the newest bucket, which leaves the window last.
    reset = (e + buckets) * bucket - now
    if commit then
      redis.call('HINCRBY', k[1], int(e), n)
      expire_in(k[1], reset)
    end
  end
  return 1, available - n, 0, reset, e
end

ALG[2].refund = function(k, n, limit, window, bucket, e)
  local stored = redis.call('HGET', k[1], int(e))
  -- A field that is not a count: another program's hash, refused as by a decision.
  local count = stored and count_of(stored)
  if count then
    redis.call('HSET', k[1], int(e), int(math.max(0, count - n)))
  end
end
