-- Exact sliding log (code 3): at most `limit` admitted in every interval (t - window, t].
-- Keys: a sorted set of admissions (score: the server time in µs, member: a sequence
-- number, unique even when two admissions share a microsecond) and the sequence counter.
-- Both expire together, `window` after the last admission, when the set is empty anyway.
ALG[3] = { keys = 2 }

-- The sequence as this script writes it (a count of admissions, at most `MOST`, so that
-- members stay distinct below 2^53), else `foreign`: read before anything is written, by a
-- decision and by the look of every dimension of a policy that will take permits.
ALG[3].validate = function(k)
  local seq = redis.call('GET', k[2])
  if seq then count_of(seq) end
end

ALG[3].decide = function(k, n, limit, window, _, commit)
  local log, seq = k[1], k[2]
  if commit then ALG[3].validate(k) end
  -- The log's time: the server's, or the newest admission's if the clock went back.
  -- Scores are this script's times: a newest one that is not a whole number below 2^53
  -- (`+inf`, `1e300`: another program's set) is refused before anything is written. (Older
  -- members are not each checked, which would read the whole log: a foreign set whose
  -- newest score is such a time reads as a log.)
  local newest = redis.call('ZRANGE', log, -1, -1, 'WITHSCORES')
  local t, newest_at = now, nil
  if newest[2] then
    newest_at = time_of(newest[2])
    t = math.max(now, newest_at)
  end
  if commit then
    redis.call('ZREMRANGEBYSCORE', log, '-inf', int(t - window))
  end
  local count = redis.call('ZCOUNT', log, '(' .. int(t - window), '+inf')
  local available = limit - count
  local reset = 0
  if newest_at then reset = newest_at + window - now end
  if n > 0 and n > available then
    if n > limit then return 0, available, NEVER, reset, 0 end
    -- The admission whose leaving makes room: the (count + n - limit)-th oldest in the window.
    local first = redis.call('ZCOUNT', log, '-inf', int(t - window))
    local at = redis.call('ZRANGE', log, first + count + n - limit - 1, first + count + n - limit - 1, 'WITHSCORES')
    -- At most the newest score, which was checked: a whole number too, or a negative one
    -- (another program's) that `whole` refuses.
    local at_score = whole(at[2])
    if not at_score then foreign() end
    return 0, available, at_score + window - now, reset, 0
  end
  local token = 0
  if commit and n > 0 then
    token = redis.call('INCRBY', seq, n) - n + 1
    local batch = {}
    for i = 0, n - 1 do
      batch[#batch + 1] = int(t)
      batch[#batch + 1] = int(token + i)
      if #batch >= 1000 or i == n - 1 then
        redis.call('ZADD', log, unpack(batch))
        batch = {}
      end
    end
    expire_in(log, t + window - now)
    expire_in(seq, t + window - now)
    reset = t + window - now
  end
  return 1, available - n, 0, reset, token
end

-- Removes the grant's members: those still scored within a window from the grant's time
-- `at` (the log decided at `at` or, after a clock stepped back, at its newest entry, within
-- a window of it; after the log emptied and its sequence restarted, the same numbers are
-- someone else's, scored a window or more later).
ALG[3].refund = function(k, n, limit, window, _, token, at)
  for i = 0, n - 1 do
    local member = int(token + i)
    local score = whole(redis.call('ZSCORE', k[1], member))
    if score and score >= at and score < at + window then
      redis.call('ZREM', k[1], member)
    end
  end
end
