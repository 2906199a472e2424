-- Gives back grants of `decide` (a policy whose dimensions live in several Cluster slots,
-- when a later slot refused). ARGV: dimension count, then seven values per dimension:
-- algorithm code, n, p1, p2, p3, token, the grant's server time. KEYS: each dimension's
-- keys in order.
local dims = tonumber(ARGV[1])
local at = 1
for d = 1, dims do
  local base = 1 + (d - 1) * 7
  local alg = ALG[tonumber(ARGV[base + 1])]
  local keys = {}
  for i = 1, alg.keys do keys[i] = KEYS[at + i - 1] end
  at = at + alg.keys
  alg.refund(keys, tonumber(ARGV[base + 2]), tonumber(ARGV[base + 3]), tonumber(ARGV[base + 4]), tonumber(ARGV[base + 5]), tonumber(ARGV[base + 6]), tonumber(ARGV[base + 7]))
end
return now
