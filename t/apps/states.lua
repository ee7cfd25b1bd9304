-- lj-vm-states' workload (t/75): the same arithmetic loop in two phases,
-- one compiled by the JIT (a hot loop), one interpreted (its function
-- excluded with jit.off(f)), each timed by the app on its CPU clock
-- (os.clock): the VM states' truth.  Neither allocates (no GC), and the
-- C calls between them (os.clock) are a few per round.
--   luajit states.lua CPU [GO]
-- runs rounds until CPU seconds of CPU time were used, then prints
-- "acct jit US" and "acct interp US" and exits.  GO: a file the test
-- makes once the sample has started; the app prints "ready" and polls
-- for it first.
local cpu = tonumber(arg[1]) or 3
local go = arg[2]

local function jitted(n)
    local s = 0
    for i = 1, n do s = (s + i * 3) % 1000003 end
    return s
end

local function interp(n)
    local s = 0
    for i = 1, n do s = (s + i * 3) % 1000003 end
    return s
end
jit.off(interp)

if go and go ~= "-" then
    package.path = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path
    require("go").wait(go)
end
local tj, ti, sum = 0, 0, 0
local c0 = os.clock()
while os.clock() - c0 < cpu do
    local t0 = os.clock()
    sum = sum + jitted(2000000)
    local t1 = os.clock()
    sum = sum + interp(600000)
    local t2 = os.clock()
    tj = tj + (t1 - t0)
    ti = ti + (t2 - t1)
end
io.write(string.format("acct jit %d\nacct interp %d\nsum %d\n", tj * 1e6, ti * 1e6, sum))
