-- Seed app for the lj-lua-stacks tests: main() calls foo() then bar();
-- foo() calls heavy() twice, bar() once, so foo burns 2/3 of the CPU and
-- bar 1/3.  No tail calls here: each call keeps its caller's frame.
local _M = { N = 1000000, ffi = false }

local ffi = require "ffi"
ffi.cdef [[ double sqrt(double x); ]]
local C = ffi.C

local function heavy()
    local n, s = _M.N, 0
    if _M.ffi then
        for i = 1, n do s = s + C.sqrt(i) end
    else
        for i = 1, n do s = s + i end
    end
    return s
end

local function foo()
    local a = heavy()
    local b = heavy()
    return a + b
end

local function bar()
    local c = heavy()
    return c
end

function _M.main()
    local x = foo()
    local y = bar()
    if ngx then
        ngx.say(x, " ", y)
    end
    return x, y
end

-- main() with bar() first.  The servers (t/apps/nginx.conf) alternate the
-- two, so that foo and bar each run early and late in a request: under
-- TCG on a loaded host, a vCPU that woke for a request is more likely
-- preempted by the host late in it, and the guest's clock, which is the
-- host's, then lets the samples pile up there (foo at 62.9% of 4,751
-- samples with main() alone; 66.0% +- 0.2 alternating, under load).
_M.bar_first = {}
function _M.bar_first.main()
    local y = bar()
    local x = foo()
    if ngx then
        ngx.say(x, " ", y)
    end
    return x, y
end

return _M
