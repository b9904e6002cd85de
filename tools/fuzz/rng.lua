-- tools/fuzz/rng.lua: the seeded random numbers of `make fuzz`.
--
-- Every case draws from a generator of its own, derived from (seed,
-- target, case number) alone, so one case can be generated again without
-- the cases before it (that is how a crash is reproduced). splitmix64 on
-- Lua 5.4's 64-bit integers; never math.random, whose state is global.
-- Lua 5.4 only (integer operators): the fuzzer is a tool, not the library.

local R = {}
R.__index = R

local function mix(z)
  z = (z ~ (z >> 30)) * -4658895280553007687   -- 0xbf58476d1ce4e5b9
  z = (z ~ (z >> 27)) * -7723592293110705685   -- 0x94d049bb133111eb
  return z ~ (z >> 31)
end

local function hash_string(s)
  local h = 1469598103934665603                 -- FNV-1a offset basis
  for i = 1, #s do h = (h ~ s:byte(i)) * 1099511628211 end
  return h
end

-- new(seed, name, index) -> generator
function R.new(seed, name, index)
  local state = mix(mix(seed) ~ hash_string(name) ~ mix(index + 0x9E3779B9))
  return setmetatable({ s = state }, R)
end

-- next64() -> a 64-bit integer
function R:next64()
  self.s = self.s + -7046029254386353131        -- 0x9e3779b97f4a7c15
  return mix(self.s)
end

-- int(lo, hi) -> integer in [lo, hi]
function R:int(lo, hi)
  if hi <= lo then return lo end
  return lo + (self:next64() >> 1) % (hi - lo + 1)
end

-- float() -> [0, 1)
function R:float()
  return (self:next64() >> 11) * (1.0 / 9007199254740992.0)
end

function R:chance(p) return self:float() < p end

function R:pick(list) return list[self:int(1, #list)] end

-- Sizes mostly small, sometimes large: 0..max, log-uniform-ish.
function R:size(max)
  local bits = self:int(0, math.floor(math.log(max + 1, 2)))
  return math.min(max, self:int(0, (1 << bits)))
end

-- bytes(n, alphabet?) -> n random bytes (from alphabet, a string, if given)
function R:bytes(n, alphabet)
  local t = {}
  for i = 1, n do
    if alphabet then
      local k = self:int(1, #alphabet)
      t[i] = alphabet:sub(k, k)
    else
      t[i] = string.char(self:int(0, 255))
    end
  end
  return table.concat(t)
end

return R
