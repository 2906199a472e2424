-- Decides several independent requests (each on one dimension) in one call, in order, each
-- as its own one-pass script would at this `now`: concurrent checks on one connection,
-- gathered by the client (`batch.rs`). One request's error (a foreign value) is its own:
-- it is caught and reported, and the others are decided.
-- ARGV: count, then five values per request: algorithm code, n, p1, p2, p3. KEYS: each
-- request's keys in order. Reply: {now, then per request: 0, ok, left, retry_us, reset_us,
-- token; or 1, the error message, 0, 0, 0, 0}.
local reply = { now }
local at = 1
for r = 1, tonumber(ARGV[1]) do
  local base = 1 + (r - 1) * 5
  local alg = ALG[tonumber(ARGV[base + 1])]
  local keys = {}
  for i = 1, alg.keys do keys[i] = KEYS[at + i - 1] end
  at = at + alg.keys
  local fine, ok, left, retry, reset, token = pcall(alg.decide, keys, tonumber(ARGV[base + 2]),
    tonumber(ARGV[base + 3]), tonumber(ARGV[base + 4]), tonumber(ARGV[base + 5]), true)
  local n = #reply
  if fine then
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5], reply[n + 6] = 0, ok, left, retry, reset, token
  else
    local message = ok
    if type(message) == 'table' then message = message.err end
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5], reply[n + 6] = 1, tostring(message), 0, 0, 0, 0
  end
end
return reply
