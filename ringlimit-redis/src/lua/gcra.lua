-- Token bucket as GCRA (code 4): one permit every `interval` µs, `burst` at most at once.
-- Key: the theoretical arrival time `tat` (µs). Admits `n` iff
-- max(tat, now) + n * interval - now <= burst * interval.
ALG[4] = { keys = 1 }

local function gcra_tat(key)
  local stored = call('GET', key)
  if not stored then return now end
  -- Not a time this limiter writes: another program's string, which reading as no state
  -- would overwrite.
  local tat = time_of(stored)
  if tat < now then return now end
  return tat
end

-- The hot path of every batched check: `gcra_tat`, `whole` and `int` written inline (a Lua
-- call costs about a third of the `GET`'s own work).
ALG[4].decide = function(k, n, interval, burst, _, commit)
  local tat = call('GET', k[1])
  if tat then
    if not find(tat, '^%d+$') then foreign() end
    tat = tonumber(tat)
    if tat > now + AHEAD then foreign() end
    if tat < now then tat = now end
  else
    tat = now
  end
  local span = burst * interval
  -- Below zero only after the burst shrank under a bucket that was fuller.
  local available = max(0, div(span - (tat - now), interval))
  local after = tat + n * interval
  local due = after - now
  if due > span then
    local retry = due - span
    if n > burst then retry = NEVER end
    return 0, available, retry, tat - now, 0
  end
  if commit and n > 0 then
    -- `due` is at least one interval: at least 1 µs.
    call('SET', k[1], format(INT, after), 'PX', format(INT, ceil(due / 1000) + 1))
  end
  -- The token: the arrival time this grant left (its mark, for a refund).
  return 1, available - n, 0, due, after
end

-- Gives back what of the grant no later grant stands behind, and only the part still ahead
-- of the clock (`bucket/spec.rs`'s refund): `min(n·T - (tat - mark), mark - now)`.
ALG[4].refund = function(k, n, interval, burst, _, mark)
  local tat = gcra_tat(k[1])
  local restore = min(n * interval - max(0, tat - mark), mark - now)
  if restore <= 0 then return end
  local back = tat - restore
  if back > now then
    call('SET', k[1], int(back), 'PX', int(max(1, ceil((back - now) / 1000)) + 1))
  else
    call('DEL', k[1])
  end
end
