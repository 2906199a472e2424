-- Decides one request on one dimension in one pass (the per-algorithm scripts; policies use
-- `decide.lua`, which looks at every dimension before taking from any).
-- ARGV and reply as `decide.lua` with one dimension: mode (1: take, 0: only look), 1, then
-- the algorithm code, n, p1, p2, p3. KEYS: the algorithm's keys.
local ok, left, retry, reset, token = ALG[tonumber(ARGV[3])].decide(
  KEYS, tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[1] == '1')
return { ok, ok == 1 and 0 or 1, now, ok, left, retry, reset, token }
