-- SPDX-License-Identifier: GPL-2.0-or-later
-- A hostile target for the reliability tests (t/46, t/47): chunk and
-- function names with ';' and control bytes, coroutines resumed from Lua
-- (coroutine.wrap, coroutine.resume, nested), 3,000-deep recursion,
-- pcall(error) storms, table churn, and (mode "coros") 1,000 live
-- coroutines under GC storms.  Every shape burns CPU in its own burn_*
-- function, so a test can find its stacks by name.  Mode "many" runs 2,000
-- chunks named =many1 .. =many2000: 2,000 distinct stacks.
--   luajit hostile.lua [SECONDS] [mix|coros|many] [N]
local secs = tonumber(arg[1]) or 5
local mode = arg[2] or "mix"
local N = tonumber(arg[3]) or 20000

local function spin(n)
    local s = 0
    for i = 1, n do s = s + i end
    return s
end

-- a chunk whose literal name holds ';' and control bytes
local evil = assert(load([[
local spin, N = ...
local function burn_evil() local r = spin(N) return r end
return function() burn_evil() end
]], "=evil;name\n\t12345\r\27\127"))(spin, N)
local function use_evil() evil() end

-- a file-like chunk name with a space and ';'
local path = assert(load([[
local spin, N = ...
local function burn_path() local r = spin(N) return r end
return function() burn_path() end
]], "@/tmp/a b/c;d.lua"))(spin, N)
local function use_path() path() end

-- a function named by a field key with control bytes
local t = {}
t["odd\tkey\1"] = function() local r = spin(N) return r end
local function use_key() t["odd\tkey\1"]() end

-- coroutine.wrap: burn_co runs inside a coroutine
local function burn_co() local r = spin(N) return r end
local co = coroutine.wrap(function()
    while true do
        burn_co()
        coroutine.yield()
    end
end)
local function use_co() co() end

-- coroutine.resume of a coroutine that resumes another (nested)
local function burn_nest() local r = spin(N) return r end
local inner = coroutine.create(function()
    while true do
        burn_nest()
        coroutine.yield()
    end
end)
local outer = coroutine.create(function()
    while true do
        coroutine.resume(inner)
        coroutine.yield()
    end
end)
local function use_nest() coroutine.resume(outer) end

-- 3,000-deep recursion
local function burn_deep() local r = spin(N) return r end
local function rec(n)
    if n == 0 then burn_deep() else rec(n - 1) end
    return n
end
local function use_deep() rec(3000) end

-- pcall(error) storms and table churn
local function burn_err()
    for i = 1, 200 do pcall(error, "boom") end
end
local function burn_churn()
    local keep
    for i = 1, 200 do keep = { i, tostring(i), { i } } end
    return keep
end

local t0 = os.time()
local rounds = 0
if mode == "coros" then
    -- 1,000 live coroutines, each resumed in turn, and a full GC every round
    local function burn_many(k) local r = spin(N / 20 + k) return r end
    local cos = {}
    for k = 1, 1000 do
        cos[k] = coroutine.create(function()
            while true do
                burn_many(k)
                local junk = {}
                for j = 1, 20 do junk[j] = { j } end
                coroutine.yield()
            end
        end)
    end
    while os.time() - t0 < secs do
        for k = 1, #cos do assert(coroutine.resume(cos[k])) end
        collectgarbage()
        rounds = rounds + 1
    end
elseif mode == "many" then
    local fs = {}
    for k = 1, 2000 do
        fs[k] = assert(load("local spin = ... return function() local r = spin(300) return r end",
                            "=many" .. k))(spin)
    end
    while os.time() - t0 < secs do
        for k = 1, #fs do fs[k]() end
        rounds = rounds + 1
    end
else
    while os.time() - t0 < secs do
        use_evil()
        use_path()
        use_key()
        use_co()
        use_nest()
        use_deep()
        burn_err()
        burn_churn()
        rounds = rounds + 1
    end
end
io.write("rounds ", rounds, "\n")
