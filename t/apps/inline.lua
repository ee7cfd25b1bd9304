-- Helpers that the JIT inlines (t/85): step() calls alpha(), beta() and
-- gamma(), which call nap() 1, 2 and 3 times; nap() calls a C function
-- through the FFI once.  step() becomes one trace that inlines all of
-- them (main() runs interpreted, as a request handler's caller does), so
-- their frames exist only in the trace's snapshots.  Each call's result
-- is checked, as real code does: the guard keeps the snapshot LuaJIT
-- takes after the call.
--   luajit inline.lua WHAT ROUNDS [GO [ARG [LIB]]]
-- WHAT: cpu (memset of ARG bytes, default 262144: libc's, whose variant
-- has no symbol in Debian's libc), burn (LIB's burn_ptr(): a function
-- with a local symbol, or none when LIB is stripped, that spins ARG
-- times, default 200000) or offcpu (usleep(ARG), default 300; the app
-- prints each helper's time in it: "acct NAME US").
-- Runs 200 rounds of step() to warm the JIT up, then ROUNDS (0:
-- forever); GO ("-": none): a file the test makes once the sample has
-- started (the app prints "ready" after the warm-up and polls for it).
local ffi = require "ffi"
ffi.cdef [[
void *memset(void *s, int c, size_t n);
int usleep(unsigned int usec);
void *burn_ptr(void);
]]
local what, rounds, go = arg[1], tonumber(arg[2]) or 0, arg[3]
local n = tonumber(arg[4])
local C = ffi.C
local acct = { 0, 0, 0 }
local nap
-- (the library stays referenced: a clib object that the GC collects
-- unloads its library, and burn() would then run into unmapped memory)
local lib
-- (each call's work is drawn from N/2..3N/2, the same for every call: a
-- sampler at a fixed rate cannot lock onto a strictly periodic loop)
local random = math.random
math.randomseed(1)
if what == "cpu" then
    n = n or 262144
    local buf = ffi.new("char[?]", 3 * n / 2)
    nap = function()
        if C.memset(buf, 1, random(n / 2, 3 * n / 2)) == nil then error("memset") end
    end
elseif what == "burn" then
    n = n or 200000
    lib = ffi.load(assert(arg[5], "burn needs LIB"))
    local burn = ffi.cast("long (*)(long)", lib.burn_ptr())
    nap = function()
        local k = random(n / 2, 3 * n / 2)
        if burn(k) ~= k then error("burn") end
    end
elseif what == "offcpu" then
    -- the app's own account of each helper's time in usleep (K: 1
    -- alpha, 2 beta, 3 gamma), the truth of the split under load, where
    -- a wait lasts as long as the scheduler makes it
    n = n or 300
    ffi.cdef [[
    struct inline_ts { long s, ns; };
    int clock_gettime(int clk, struct inline_ts *ts);
    ]]
    local ts = ffi.new("struct inline_ts")
    local function now()
        if C.clock_gettime(1, ts) ~= 0 then error("clock_gettime") end
        return tonumber(ts.s) * 1e6 + tonumber(ts.ns) / 1e3
    end
    nap = function(k)
        local t0 = now()
        if C.usleep(n) ~= 0 then error("usleep") end
        acct[k] = acct[k] + (now() - t0)
    end
else
    error("usage: luajit inline.lua cpu|burn|offcpu ROUNDS [GO [ARG [LIB]]]")
end

local function alpha() nap(1) end
local function beta() nap(2) nap(2) end
local function gamma() nap(3) nap(3) nap(3) end
local function step()
    alpha()
    beta()
    gamma()
end
local function main(k)
    for i = 1, k > 0 and k or math.huge do step() end
end
jit.off(main)

-- (the JIT compiles step() in its first rounds: those run before "ready")
main(200)
acct[1], acct[2], acct[3] = 0, 0, 0
if go and go ~= "-" then
    local dir = arg[0]:match("^(.*)/[^/]*$") or "."
    package.path = dir .. "/?.lua;" .. package.path
    require("go").wait(go)
end
main(rounds)
io.write("rounds ", rounds, "\n")
if what == "offcpu" then
    io.write(string.format("acct alpha %.0f\nacct beta %.0f\nacct gamma %.0f\n", acct[1], acct[2],
                           acct[3]))
end
