-- SPDX-License-Identifier: GPL-2.0-or-later
-- A 1:2 allocation split for lj-lua-alloc (t/62):
--   luajit alloc.lua jit|nojit ROUNDS
-- Each round, one(100) makes 100 tables {i, i, i} and two(100) makes 200,
-- each in its own loop (so that with the JIT on, each loop is a trace that
-- runs in its function's frame: an allocation in a trace inlined into a
-- caller's trace would have no frame of its own).  The tables are kept
-- for a while (they escape: JIT code must allocate them).  Prints "start",
-- then "time SECONDS" (CPU time of the rounds) at the end.
if arg[1] == "nojit" then jit.off() end
local rounds = tonumber(arg[2]) or 200
local sink = {}
local function one(n)
    for i = 1, n do sink[i % 64 + 1] = { i, i, i } end
end
local function two(n)
    for i = 1, 2 * n do sink[i % 64 + 65] = { i, i, i } end
end
io.write("start\n")
io.flush()
local t0 = os.clock()
for _ = 1, rounds do
    one(100)
    two(100)
end
io.write(string.format("time %.3f\n", os.clock() - t0))
