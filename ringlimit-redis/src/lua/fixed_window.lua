-- Fixed window (code 1): at most `limit` per aligned window of `window` µs.
-- Key: a hash {w = window index, c = count in that window}; a count of an older window is
-- as good as none.
ALG[1] = { keys = 1 }

-- The stored window index and count, or nil when there are none; another program's hash
-- is `foreign`: one without our fields (only then: one more call per fresh key) or with
-- fields that are not whole numbers, since writing `w` and `c` into it would change it.
local function fixed_stored(key, window)
  local got = redis.call('HMGET', key, 'w', 'c')
  if got[1] then
    local at, count = whole(got[1]), count_of(got[2])
    -- A window starting more than `AHEAD` from now: not one this limiter opened.
    if at == nil or at * window > now + AHEAD then foreign() end
    return at, count
  elseif redis.call('EXISTS', key) == 1 then
    foreign()
  end
  return nil, 0
end

-- The window in force (the server's, or a newer one stored before its clock went back) and
-- its count.
local function fixed_window(key, window)
  local w = math.floor(now / window)
  local stored, count = fixed_stored(key, window)
  if stored and stored >= w then
    return stored, count
  end
  return w, 0
end

local function fixed_count(key, w, window)
  local stored, count = fixed_stored(key, window)
  if stored == w then return count end
  return 0
end

ALG[1].decide = function(k, n, limit, window, _, commit)
  local w, count = fixed_window(k[1], window)
  local reset_at = (w + 1) * window
  local available = limit - count
  if n > 0 and n > available then
    local retry = reset_at - now
    if n > limit then retry = NEVER end
    return 0, available, retry, count > 0 and reset_at - now or 0, w
  end
  local taken = count + n
  if commit and n > 0 then
    redis.call('HSET', k[1], 'w', int(w), 'c', int(taken))
    expire_in(k[1], reset_at - now)
  end
  return 1, available - n, 0, taken > 0 and reset_at - now or 0, w
end

ALG[1].refund = function(k, n, limit, window, _, w)
  local count = fixed_count(k[1], w, window)
  if count > 0 then
    redis.call('HSET', k[1], 'c', int(math.max(0, count - n)))
  end
end
