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
-- times, default 200000) or offcpu (usleep(ARG), default 300).
-- Runs ROUNDS rounds of step() (0: forever); GO ("-": none): a file the
-- test makes once the sample has started (the app prints "ready" and
-- polls for it).
local ffi = require "ffi"
ffi.cdef [[
void *memset(void *s, int c, size_t n);
int usleep(unsigned int usec);
void *burn_ptr(void);
]]
local what, rounds, go = arg[1], tonumber(arg[2]) or 0, arg[3]
local n = tonumber(arg[4])
local C = ffi.C
local nap
if what == "cpu" then
    n = n or 262144
    local buf = ffi.new("char[?]", n)
    nap = function()
        if C.memset(buf, 1, n) == nil then error("memset") end
    end
elseif what == "burn" then
    n = n or 200000
    local lib = ffi.load(assert(arg[5], "burn needs LIB"))
    local burn = ffi.cast("long (*)(long)", lib.burn_ptr())
    nap = function()
        if burn(n) ~= n then error("burn") end
    end
elseif what == "offcpu" then
    n = n or 300
    nap = function()
        if C.usleep(n) ~= 0 then error("usleep") end
    end
else
    error("usage: luajit inline.lua cpu|burn|offcpu ROUNDS [GO [ARG [LIB]]]")
end

local function alpha() nap() end
local function beta() nap() nap() end
local function gamma() nap() nap() nap() end
local function step()
    alpha()
    beta()
    gamma()
end
local function main()
    for i = 1, rounds > 0 and rounds or math.huge do step() end
end
jit.off(main)

if go and go ~= "-" then
    io.write("ready\n")
    io.flush()
    repeat
        local f = io.open(go, "r")
        if f then f:close() end
    until f
end
main()
io.write("rounds ", rounds, "\n")
