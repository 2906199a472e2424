-- Decides one request on one or several dimensions, all or nothing, atomically.
-- ARGV: mode (1: take the permits, 0: only look), dimension count, then five values per
-- dimension: algorithm code, n, p1, p2, p3. KEYS: each dimension's keys in order.
-- Reply: {all ok, index of the first dimension that refused (0: none), now (µs), then per
-- dimension: ok, left, retry_us, reset_us, token}.
local commit = ARGV[1] == '1'
local dims = tonumber(ARGV[2])
local plan, at, all_ok, first_refusal = {}, 1, true, 0
for d = 1, dims do
  local base = 2 + (d - 1) * 5
  local alg = ALG[tonumber(ARGV[base + 1])]
  local keys = {}
  for i = 1, alg.keys do keys[i] = KEYS[at + i - 1] end
  at = at + alg.keys
  plan[d] = { alg, keys, tonumber(ARGV[base + 2]), tonumber(ARGV[base + 3]), tonumber(ARGV[base + 4]), tonumber(ARGV[base + 5]) }
end
-- First look at every dimension, checking before anything is written every stored value
-- that taking would read; take only when all of them admit.
local reply = { 0, 0, now }
for d = 1, dims do
  local p = plan[d]
  if commit and p[1].validate then p[1].validate(p[2]) end
  local ok, left, retry, reset, token = p[1].decide(p[2], p[3], p[4], p[5], p[6], false)
  if ok == 0 and all_ok then
    all_ok = false
    first_refusal = d
  end
  for _, v in ipairs({ ok, left, retry, reset, token }) do reply[#reply + 1] = v end
end
if all_ok and commit then
  for d = 1, dims do
    local p = plan[d]
    local ok, left, retry, reset, token = p[1].decide(p[2], p[3], p[4], p[5], p[6], true)
    local o = 3 + (d - 1) * 5
    reply[o + 1], reply[o + 2], reply[o + 3], reply[o + 4], reply[o + 5] = ok, left, retry, reset, token
  end
end
reply[1] = all_ok and 1 or 0
reply[2] = first_refusal
return reply
