-- SPDX-License-Identifier: GPL-2.0-or-later
-- A 1:2 allocation split for lj-lua-alloc (t/62, dev/bench-alloc):
--   luajit alloc.lua jit|nojit ROUNDS [SECONDS [GO]]
-- Each round, one(100) makes 100 tables {i, i, i} and two(100) makes 200,
-- each in its own loop (so that with the JIT on, each loop is a trace that
-- runs in its function's frame: an allocation in a trace inlined into a
-- caller's trace would have no frame of its own).  The tables are kept
-- for a while (they escape: JIT code must allocate them).  With SECONDS,
-- rounds go on until SECONDS of wall-clock time have passed since "start"
-- (and at least ROUNDS were made; 0: no time).  With GO (a path), prints
-- "ready" and waits for that file (made once a session has started), a
-- poll without a pause that allocates nothing, first.  Prints "start", then at the end "time
-- SECONDS" (CPU time of the rounds), "rounds N" and "tables one N two N"
-- (the tables each function made: the truth of the split).
local ffi = require("ffi")
ffi.cdef [[
struct stapxx_ts { long sec, nsec; };
int clock_gettime(int clk, struct stapxx_ts *ts);
int access(const char *path, int mode);
]]
if arg[1] == "nojit" then jit.off() end
local rounds = tonumber(arg[2]) or 200
local secs = tonumber(arg[3])
local ts = ffi.new("struct stapxx_ts")    -- made once: no cdata in the rounds
local function now()
    ffi.C.clock_gettime(1, ts)             -- CLOCK_MONOTONIC
    return tonumber(ts.sec) + tonumber(ts.nsec) * 1e-9
end
local sink = {}
local made = { one = 0, two = 0 }
local function one(n)
    for i = 1, n do sink[i % 64 + 1] = { i, i, i } end
    made.one = made.one + n
end
local function two(n)
    for i = 1, 2 * n do sink[i % 64 + 65] = { i, i, i } end
    made.two = made.two + 2 * n
end
if arg[4] then
    io.write("ready\n")
    io.flush()
    -- (access(2) through the FFI allocates nothing: io.open made a file
    -- object each time, a fifth of a session's bytes once)
    local C = ffi.C
    repeat until C.access(arg[4], 0) == 0
end
io.write("start\n")
io.flush()
local t0, w0, r = os.clock(), now(), 0
while r < rounds or (secs and now() - w0 < secs) do
    one(100)
    two(100)
    r = r + 1
end
io.write(string.format("time %.3f\nrounds %d\ntables one %d two %d\n", os.clock() - t0, r, made.one, made.two))
