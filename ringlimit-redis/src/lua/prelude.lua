-- ringlimit-redis: the part every script starts with.
--
-- Time is the server's (`TIME`), in whole microseconds since the Unix epoch: about 1.8e15
-- today, so every quantity these scripts compute (times, counts, products of a count and
-- a microsecond interval) is an integer below 2^53 and exact in Lua's doubles. The client
-- checks the quotas so that this holds (`quota.rs`: every span at most 2^50 µs, about 35
-- years, every count at most 2^50).
-- The functions of the hot paths (GCRA, the batch) as locals: a global's is two table lookups
-- per use.
local call, format, find, floor, ceil, max, min =
  redis.call, string.format, string.find, math.floor, math.ceil, math.max, math.min
local time = call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])

-- `-1` in a reply: the request can never be admitted (more than the limit).
local NEVER = -1

-- An integer as a decimal string, exactly (Redis may print large doubles with an exponent).
-- `%d` formats it as a C `long`: exact below 2^63 on a 64-bit server, a few times cheaper
-- than `%.0f` or than passing the number to `redis.call` (Redis 7.0 prints it with `%.17g`).
-- A server whose `long` is 32 bits would overflow every time (about 2^50 µs); it gets
-- `%.0f`, exact below 2^53 like every quantity here (checked once per call).
local INT = (format('%d', 2^40) == '1099511627776') and '%d' or '%.0f'

-- A key holding a value of the limiter's type that the limiter cannot have written (another
-- program's): the same error as a value of another type, raised before anything is written,
-- so that nothing of it is lost (reading it as no state would overwrite it).
local function foreign()
  error({ err = 'WRONGTYPE a limiter key holds a value the limiter did not write' })
end

-- A stored time or count as these scripts write it: decimal digits of a whole number below
-- 2^53, else nil. `tonumber` alone is C's `strtod`, which also reads "nan", "inf",
-- hexadecimal, exponents, fractions and signs: another program's values, which these scripts
-- never write (and a NaN compares false with everything: a decision on one would admit).
local WHOLE = 9007199254740992
local function whole(s)
  if s and find(s, '^%d+$') then
    local x = tonumber(s)
    if x < WHOLE then return x end
  end
  return nil
end

-- The most any quota holds, and the furthest ahead of the server's clock any stored time
-- may be: 2^50 (`MAX_LIMIT`, `MAX_SPAN_MICROS`). A stored count above `MOST`, or a time
-- (or a window's or bucket's start) more than `AHEAD` after `now`, is not this limiter's:
-- refused (`foreign`) before anything is written, so that every sum and product of the
-- scripts stays below 2^53 and a key is never given an expiry from a number that overflowed.
local MOST, AHEAD = 1125899906842624, 1125899906842624

-- A stored count: whole and at most `MOST`, else `foreign`.
local function count_of(s)
  local x = whole(s)
  if x == nil or x > MOST then foreign() end
  return x
end

-- A stored time (µs): whole and at most `AHEAD` after `now`, else `foreign`.
local function time_of(s)
  local x = whole(s)
  if x == nil or x > now + AHEAD then foreign() end
  return x
end

-- An integer as a decimal string; a value at or beyond 2^53 (which the checks above keep
-- out) is an error rather than a wrong number.
local function int(x)
  if x >= WHOLE or x <= -WHOLE then foreign() end
  return format(INT, x)
end

-- Keys live until their state is indistinguishable from none: `us` microseconds, rounded up
-- to whole milliseconds, plus one (Redis counts a key's expiry from its own clock reading
-- at the script's start, which may be up to a millisecond before `now`).
local function expire_in(key, us)
  call('PEXPIRE', key, int(max(1, ceil(us / 1000)) + 1))
end

-- floor(x / d) for integers 0 <= x < 2^53 and 0 < d, exactly: the double quotient may
-- round up to the next integer when x is just below a multiple of d.
local function div(x, d)
  local q = floor(x / d)
  if q * d > x then
    q = q - 1
  elseif (q + 1) * d <= x then
    q = q + 1
  end
  return q
end

-- A clock that went back (an NTP step, a failover to a server whose clock is behind) must
-- not erase newer state: each algorithm decides at the newest time its state has seen, so
-- a step back only delays, never re-admits.

-- The algorithms, by code. Each has `keys` (how many KEYS it takes), `decide(k, n, p1, p2,
-- p3, commit)` returning `ok, left, retry_us, reset_us, token` and `refund(k, n, p1, p2,
-- p3, token)`:
--   ok        1 when `n` fit (and were taken when `commit`), else 0;
--   left      permits left after taking `n` when ok, else permits available now;
--   retry_us  when refused, the microseconds until `n` could fit if nobody took any;
--             NEVER when `n` exceeds the limit; 0 when ok;
--   reset_us  microseconds until the state is back to full (nothing counted);
--   token     what a refund of this grant needs (window index, first log member).
local ALG = {}
