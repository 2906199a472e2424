-- Decides several independent requests (each on one dimension) in one call, in order, each
-- as its own one-pass script would at this `now`: concurrent checks on one connection,
-- gathered by the client (`batch.rs`). One request's error (a foreign value) is its own:
-- it is caught and reported, and the others are decided.
-- ARGV: the request count, then runs of consecutive requests of one limiter: algorithm
-- code, p1, p2, p3, the run's length, then each request's n, and last the call's tag (a
-- number the client matches the reply with). KEYS: each request's keys in order. Reply:
-- {now, then three values per request, then the tag: ADMITTED, left, reset_us when it was
-- admitted; retry_us (NEVER included), left, reset_us when refused; FAILED, the error
-- message, 0 for its own error}.
--
-- Per request this is one `pcall` and the algorithm's own commands: the limiter's four
-- numbers are parsed once per run, and an `n` of 1 (nearly every check) is not parsed at
-- all (`tonumber` is `strtod`, dearer than a `GET`). Each value in the reply costs about as
-- much as an arithmetic step of the algorithm, on both sides: a retry of 0 when admitted is
-- not sent.
local ADMITTED, FAILED = -2, -3
local reply = { now }
local m = 1
local keys = {}
local arg, at, decided, count = 2, 1, 0, tonumber(ARGV[1])
while decided < count do
  local alg = ALG[tonumber(ARGV[arg])]
  local p1, p2, p3 = tonumber(ARGV[arg + 1]), tonumber(ARGV[arg + 2]), tonumber(ARGV[arg + 3])
  local width, decide = alg.keys, alg.decide
  local last = arg + 4 + tonumber(ARGV[arg + 4])
  for a = arg + 5, last do
    -- One table for every request: the algorithms read their keys and keep none.
    for i = 1, width do keys[i] = KEYS[at + i - 1] end
    at = at + width
    local n = ARGV[a]
    if n == '1' then n = 1 else n = tonumber(n) end
    local fine, ok, left, retry, reset = pcall(decide, keys, n, p1, p2, p3, true)
    if fine then
      if ok == 1 then retry = ADMITTED end
      reply[m + 1], reply[m + 2], reply[m + 3] = retry, left, reset
    else
      local message = ok
      if type(message) == 'table' then message = message.err end
      reply[m + 1], reply[m + 2], reply[m + 3] = FAILED, tostring(message), 0
    end
    m = m + 3
    decided = decided + 1
  end
  arg = last + 1
end
reply[m + 1] = ARGV[arg]
return reply
