-- Waiting-time app for lj-lua-off-cpu, lj-lua-fio and ngx-lua-yield
-- (t/63, t/64, t/65): each function waits a known share of the time.
-- off-CPU: a(), b(), c() block in FFI usleep(U) 5, 10 and 15 times (1:2:3:
-- the same call, so its overhead splits 1:2:3 too).  File I/O: read2()
-- reads data2, read1() data1 (files of 2:1).  Yield (nginx): sleep2()
-- and sleep1() yield in ngx.sleep(0.02) and ngx.sleep(0.01).
local _M = { U = 2000 }

local ffi = require "ffi"
ffi.cdef [[ int usleep(unsigned int usec); ]]
local C = ffi.C

local function a()
    for _ = 1, 5 do C.usleep(_M.U) end
end

local function b()
    for _ = 1, 10 do C.usleep(_M.U) end
end

local function c()
    for _ = 1, 15 do C.usleep(_M.U) end
end

-- The app's own accounting (the truth the tests hold the samples
-- against): _M.acct[NAME] = { us, calls, bytes, long } of each timed
-- function, from a monotonic clock read around its call (long: the calls
-- that took LONG_US or more); _M.report() prints it as lines "acct NAME
-- US CALLS BYTES LONG", _M.reset() clears it.  Timing adds no wait and no
-- file I/O.
ffi.cdef [[
struct wait_ts { long sec, nsec; };
int clock_gettime(int clk, struct wait_ts *ts);
]]
local ts = ffi.new("struct wait_ts")
local function now_us()
    C.clock_gettime(1, ts)    -- CLOCK_MONOTONIC
    return tonumber(ts.sec) * 1000000 + tonumber(ts.nsec) / 1000
end
_M.acct = {}
_M.LONG_US = 100000
-- adds a call of NAME that took US microseconds and moved BYTES
local function account_us(name, us, bytes)
    local e = _M.acct[name]
    if not e then
        e = { 0, 0, 0, 0 }
        _M.acct[name] = e
    end
    e[1] = e[1] + us
    e[2] = e[2] + 1
    e[3] = e[3] + (bytes or 0)
    if us >= _M.LONG_US then e[4] = e[4] + 1 end
end
-- adds a call of NAME that started at T0 (now_us()) and moved BYTES
local function account(name, t0, bytes)
    account_us(name, now_us() - t0, bytes)
end

function _M.reset()
    _M.acct = {}
end

function _M.report()
    local names = {}
    for k in pairs(_M.acct) do names[#names + 1] = k end
    table.sort(names)
    local out = {}
    for _, k in ipairs(names) do
        local e = _M.acct[k]
        out[#out + 1] = string.format("acct %s %d %d %d %d\n", k, e[1], e[2], e[3], e[4])
    end
    return table.concat(out)
end

function _M.offcpu()
    local t = now_us()
    a()
    account("a", t)
    t = now_us()
    b()
    account("b", t)
    t = now_us()
    c()
    account("c", t)
end

local function slurp(name)
    local f = assert(io.open(name, "rb"))
    local s = f:read("*a")
    f:close()
    return #s
end

local function read2()
    local n = slurp(_M.dir .. "/data2")
    return n
end

local function read1()
    local n = slurp(_M.dir .. "/data1")
    return n
end

-- (each function called by its own name: a frame is named by its call)
function _M.fio()
    local t = now_us()
    local n2 = read2()
    account("read2", t, n2)
    t = now_us()
    local n1 = read1()
    account("read1", t, n1)
end

-- File I/O timed as lj-lua-fio's latency counts it (t/64, t/77): read2() and
-- read1() read data2 and data1 with read(2) through the FFI, data1's size
-- at a time (5 calls a round with data2 twice its size: two, one, and
-- each file's last call, which moves nothing), and the app times only
-- those read(2) calls.  io.open():read()
-- (fio above) also spends time outside the system calls (opening, the
-- Lua string), which the app's clock counted and the tool did not: on a
-- loaded host a preemption there moved the app's share away from the
-- tool's by 9 points.  Run it with the JIT off: read2 and read1 then
-- keep their frames (a trace would inline them).
ffi.cdef [[
int open(const char *path, int flags);
]]
local RBUF, rbuf
local function sysread(path)
    if not rbuf then
        local f = assert(io.open(_M.dir .. "/data1", "rb"))
        RBUF = f:seek("end")
        f:close()
        rbuf = ffi.new("char[?]", RBUF)
    end
    local fd = C.open(path, 0)
    assert(fd >= 0, "cannot open " .. path)
    local n, us = 0, 0
    while true do
        local t = now_us()
        local r = tonumber(C.read(fd, rbuf, RBUF))
        us = us + (now_us() - t)
        if r <= 0 then break end
        n = n + r
    end
    C.close(fd)
    return n, us
end
-- (no tail calls: sysread's frame would replace theirs, and SystemTap's
-- walker leaves a tail-called frame unnamed, wait.lua:LINE, in both)
local function sysread2()
    local n, us = sysread(_M.dir .. "/data2")
    return n, us
end
local function sysread1()
    local n, us = sysread(_M.dir .. "/data1")
    return n, us
end

-- (called as read2 and read1: a frame is named by its call)
function _M.fio_sys()
    local read2, read1 = sysread2, sysread1
    local n2, u2 = read2()
    account_us("read2", u2, n2)
    local n1, u1 = read1()
    account_us("read1", u1, n1)
end

-- File I/O, writes too (t/64): read2(), write1() writes 1 MB (_M.WSIZE) to a file,
-- piped() moves as much, in 64 KB pieces, through a pipe (not file I/O:
-- not counted).
local function write1()
    _M.MB = _M.MB or string.rep("w", _M.WSIZE or 1048576)
    local f = assert(io.open(_M.dir .. "/out1", "wb"))
    assert(f:write(_M.MB))
    f:close()
    return #_M.MB
end

ffi.cdef [[
int pipe(int fds[2]);
long write(int fd, const void *buf, unsigned long n);
long read(int fd, void *buf, unsigned long n);
int close(int fd);
]]
local function piped()
    local fds = ffi.new("int[2]")
    assert(C.pipe(fds) == 0)
    local buf = ffi.new("char[65536]")
    for _ = 1, math.max(1, math.floor((_M.WSIZE or 1048576) / 65536)) do
        C.write(fds[1], buf, 65536)
        C.read(fds[0], buf, 65536)
    end
    C.close(fds[0])
    C.close(fds[1])
end

function _M.fio_mixed()
    local t = now_us()
    local n2 = read2()
    account("read2", t, n2)
    t = now_us()
    local n1 = write1()
    account("write1", t, n1)
    piped()
end

-- a wait longer than any session
local function block_long()
    C.usleep(30000000)
end

function _M.long_wait()
    block_long()
end

local function sleep2()
    ngx.sleep(0.02)
end

local function sleep1()
    ngx.sleep(0.01)
end

function _M.yield()
    _M.active = (_M.active or 0) + 1
    local t = now_us()
    sleep2()
    account("sleep2", t)
    t = now_us()
    sleep1()
    account("sleep1", t)
    _M.active = _M.active - 1
end

-- Yield (nginx, /waits): cosocket() waits on a cosocket for /slow (which
-- sleeps 0.002 s), waiter() in ngx.thread.wait for a light thread, napper(),
-- that sleeps 0.001 s.
local function cosocket()
    local sock = ngx.socket.tcp()
    assert(sock:connect("127.0.0.1", ngx.var.server_port))
    assert(sock:send("GET /slow HTTP/1.0\r\nHost: localhost\r\n\r\n"))
    local body = assert(sock:receive("*a"))
    sock:close()
    return #body
end

local function napper()
    ngx.sleep(0.001)
end

local function waiter()
    local t = ngx.thread.spawn(napper)
    local ok = ngx.thread.wait(t)   -- not a tail call: waiter() keeps its frame
    return ok
end

function _M.waits()
    _M.active = (_M.active or 0) + 1
    local t = now_us()
    cosocket()
    account("cosocket", t)
    t = now_us()
    waiter()
    account("waiter", t)
    _M.active = _M.active - 1
end

return _M
