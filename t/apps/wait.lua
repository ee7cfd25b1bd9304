-- Waiting-time app for lj-lua-off-cpu, lj-lua-fio and ngx-lua-yield
-- (t/63, t/64, t/65): each function waits a known share of the time.
-- off-CPU: a(), b(), c() block in FFI usleep(U) 5, 10 and 15 times (1:2:3:
-- the same call, so its overhead splits 1:2:3 too).  File I/O: read2()
-- reads a 2 MB file, read1() a 1 MB one.  Yield (nginx): sleep2() and
-- sleep1() yield in ngx.sleep(0.02) and ngx.sleep(0.01).
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

function _M.offcpu()
    a()
    b()
    c()
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

function _M.fio()
    return read2() + read1()
end

-- File I/O, writes too (t/64): read2(), write1() writes 1 MB to a file,
-- piped() moves 1 MB through a pipe (not file I/O: not counted).
local function write1()
    _M.MB = _M.MB or string.rep("w", 1048576)
    local f = assert(io.open(_M.dir .. "/out1", "wb"))
    assert(f:write(_M.MB))
    f:close()
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
    for _ = 1, 16 do
        C.write(fds[1], buf, 65536)
        C.read(fds[0], buf, 65536)
    end
    C.close(fds[0])
    C.close(fds[1])
end

function _M.fio_mixed()
    read2()
    write1()
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
    sleep2()
    sleep1()
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
    cosocket()
    waiter()
end

return _M
