-- SPDX-License-Identifier: GPL-2.0-or-later
-- A heap of known contents for lj-gc-objs from the luajit CLI (t/60):
--   luajit heap.lua SECONDS
-- 50000 strings ("str N", 1-5 digits) and 10000 tables {i, i + 1, x = i},
-- then a full collection and "count BYTES" (collectgarbage("count") in
-- bytes), then SECONDS of a little garbage (a table per iteration, kept
-- for 100 iterations) so that the collector steps, where lj-gc-objs walks.
-- The collector runs without pause (setpause 100) and fast (setstepmul
-- 1000), so that little garbage accumulates; at the end "count BYTES" again.
-- The biggest string (5001 bytes) starts with a ';', a tab, a newline and
-- the byte 1: its preview is printed escaped (",\t\n\x01zzz...").
local secs = tonumber(arg[1]) or 5
local strs, tabs = {}, {}
for i = 1, 50000 do strs[i] = "str " .. i end
strs[50001] = ";\t\n\1" .. string.rep("z", 4997)
for i = 1, 10000 do tabs[i] = { i, i + 1, x = i } end
collectgarbage()
collectgarbage()
io.write(string.format("count %d\n", collectgarbage("count") * 1024))
io.flush()
collectgarbage("setpause", 100)
collectgarbage("setstepmul", 1000)
local junk = {}
local t0, k = os.clock(), 0
while os.clock() - t0 < secs do
    for _ = 1, 1000 do
        k = k + 1
        junk[k % 100] = { k }
    end
end
io.write(string.format("count %d\n", collectgarbage("count") * 1024))
io.write(#strs + #tabs, "\n")
