-- SPDX-License-Identifier: GPL-2.0-or-later
-- A heap of known contents for lj-gc-objs from the luajit CLI (t/60):
--   luajit heap.lua SECONDS
-- 50000 strings ("str N", 1-5 digits) and 10000 tables {i, i + 1, x = i},
-- then a full collection and "count BYTES" (collectgarbage("count") in
-- bytes), then SECONDS of collector steps and nothing else (a heap at
-- rest): collectgarbage("step", 0) runs one step of the collector
-- (lj_gc_step, where lj-gc-objs walks) and allocates nothing, so the
-- heap the walk sees is the one the count measured.  Every 0.2 s of CPU
-- time and at the end "count BYTES" again (the same, but for the strings
-- of these lines).
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
jit.off()    -- no trace recording: nothing allocates
local t0 = os.clock()
local next_count = t0 + 0.2
while os.clock() - t0 < secs do
    collectgarbage("step", 0)
    -- 1 ms of work between two steps: lj-gc-objs's probe fires at each,
    -- and back to back they made SystemTap's overload guard end the walk
    local t = os.clock() + 0.001
    while os.clock() < t do end
    if os.clock() >= next_count then
        next_count = next_count + 0.2
        io.write(string.format("count %d\n", collectgarbage("count") * 1024))
        io.flush()
    end
end
io.write(string.format("count %d\n", collectgarbage("count") * 1024))
io.write(#strs + #tabs, "\n")
