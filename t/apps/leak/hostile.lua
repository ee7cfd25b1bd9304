-- SPDX-License-Identifier: GPL-2.0-or-later
-- Hostile object graphs for lj-gco-ref (t/61), from the luajit CLI:
--   luajit hostile.lua SECONDS
-- Each structure holds one big string (or cdata) of a known size, reachable
-- from a global by the path the test expects:
--   cyc      a cycle: cyc.b.a == cyc; cyc.big (100001 bytes)
--   deep     deep.a.b.held = held; held[1] (50001 bytes); weakv (weak
--            values) also refers to held: that edge must not count
--   withmt   its metatable's __index.payload (60001 bytes)
--   f1, f2   two closures sharing the upvalue shared; shared[1] (70001
--            bytes) counts once
--   co       a suspended coroutine holding data = {80001-byte string} in a
--            local on its stack
--   cd       cdata: char[90000]
--   ctl      under the key "a;b\n\1" (printed escaped: .a,b\n\x01), a
--            table holding a 40001-byte string
--   nums     under the number key 7 ([N]): 30001 bytes
--   tkey     under a table key ([table]): 20001 bytes
-- then "ready" and SECONDS of a little garbage so that the collector steps.
local ffi = require("ffi")
local secs = tonumber(arg[1]) or 5
local function build()
    local a, b = {}, {}
    a.b, b.a = b, a
    a.big = string.rep("a", 100000) .. "1"
    cyc = a
    local held = { string.rep("h", 50000) .. "1" }
    deep = { a = { b = { held = held } } }
    weakv = setmetatable({ x = held }, { __mode = "v" })
    withmt = setmetatable({}, { __index = { payload = string.rep("m", 60000) .. "1" } })
    local shared = { string.rep("s", 70000) .. "1" }
    f1 = function() return shared end
    f2 = function() return shared end
    co = coroutine.create(function()
        local data = { string.rep("c", 80000) .. "1" }
        coroutine.yield()
        return data
    end)
    coroutine.resume(co)
    cd = ffi.new("char[?]", 90000)
    ctl = { ["a;b\n\1"] = { string.rep("e", 40000) .. "1" } }
    nums = { [7] = { string.rep("n", 30000) .. "1" } }
    tkey = { [{}] = { string.rep("t", 20000) .. "1" } }
end
build()
collectgarbage()
io.write(string.format("ready %d\n", collectgarbage("count") * 1024))
io.flush()
collectgarbage("setpause", 100)
local junk = {}
local t0, k = os.clock(), 0
while os.clock() - t0 < secs do
    for _ = 1, 1000 do
        k = k + 1
        junk[k % 100] = { k }
    end
end
