-- OpenResty app for the coroutine tests (t/48, t/73): one request runs
-- co_burn inside a coroutine.wrap function (1 unit of CPU), th_burn inside
-- an ngx.thread.spawn light thread before it yields (2 units), and
-- late_burn in the same thread after ngx.sleep(0.001), when the nginx event
-- loop, not the handler, resumed it (1 unit).  ngx_lua resumes all three
-- from C (ngx_http_lua_run_thread), not through lj_vm_resume.
local _M = { N = 1000000 }

local function spin(n)
    local s = 0
    for i = 1, n do s = s + i end
    return s
end

local function co_burn() local r = spin(_M.N) return r end
local function th_burn() local r = spin(2 * _M.N) return r end
local function late_burn() local r = spin(_M.N) return r end

local function in_wrap() local r = co_burn() return r end
local function in_thread()
    local r = th_burn()
    ngx.sleep(0.001)
    return r + late_burn()
end

function _M.handler()
    local w = coroutine.wrap(in_wrap)
    local a = w()
    local t = ngx.thread.spawn(in_thread)
    local ok, b = ngx.thread.wait(t)
    ngx.say(a, " ", b)
end

return _M
