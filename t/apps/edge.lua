-- Frame shapes for the lj-lua-stacks tests: coroutines, pcall, xpcall,
-- tail calls, varargs, metamethods and deep recursion.  Every shape burns
-- CPU in its own burn_* function, so a test can find its stacks by name.
--   luajit edge.lua [SECONDS] [jit|nojit] [N] [GO]
-- GO: a file the test makes once the sample has started; the app prints
-- "ready" and polls for it before the shapes run.
local secs = tonumber(arg[1]) or 5
if arg[2] == "nojit" then jit.off() end
local N = tonumber(arg[3]) or 20000
local go = arg[4]

local function spin(n)
    local s = 0
    for i = 1, n do s = s + i end
    return s
end

-- coroutine: burn_co runs inside a coroutine resumed via coroutine.wrap
local function burn_co() local r = spin(N) return r end
local co = coroutine.wrap(function()
    while true do
        burn_co()
        coroutine.yield()
    end
end)
local function use_co() co() end

-- pcall / xpcall
local function burn_pcall() local r = spin(N) return r end
local function use_pcall() local ok = pcall(function() burn_pcall() end) return ok end
local function burn_xpcall() local r = spin(N) return r end
local function use_xpcall()
    local ok = xpcall(function() burn_xpcall() end, debug.traceback)
    return ok
end

-- tail call: tail_entry's frame is replaced by tail_target's
local function tail_target() local r = spin(N) return r end
local function tail_entry() return tail_target() end
local function use_tail() local r = tail_entry() return r end

-- varargs
local function burn_va(...) local r = spin(N) return r, select("#", ...) end
local function va(...) local r = burn_va(...) return r end
local function use_va() local r = va(1, 2, 3) return r end

-- metamethods: __index and __add run Lua functions
local function burn_mm() local r = spin(N) return r end
local mt = {
    __index = function(t, k) burn_mm() return 1 end,
    __add = function(a, b) burn_mm() return 2 end,
}
local obj = setmetatable({}, mt)
local function use_mm() local v = obj.x local w = obj + obj return v + w end

-- deep recursion: 5000 frames of rec below burn_deep
local function burn_deep() local r = spin(N) return r end
local function rec(n)
    if n == 0 then burn_deep() else rec(n - 1) end
    return n
end
local function use_deep() rec(5000) end

package.path = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path
require("go").started()
if go then
    require("go").wait(go)
end
local t0 = os.time()
local rounds = 0
while os.time() - t0 < secs do
    use_co()
    use_pcall()
    use_xpcall()
    use_tail()
    use_va()
    use_mm()
    use_deep()
    rounds = rounds + 1
end
io.write("rounds ", rounds, "\n")
