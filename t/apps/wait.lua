-- Waiting-time app for lj-lua-off-cpu, lj-lua-fio and ngx-lua-yield
-- (t/63, t/64, t/65): each function waits a known share of the time.
-- off-CPU: a(), b(), c() block in FFI usleep(U) 5, 10 and 15 times (1:2:3:
-- the same call, so its overhead splits 1:2:3 too).  File I/O: read2()
-- reads a 2 MB file, read1() a 1 MB one.  Yield (nginx): sleep2() and
-- sleep1() yield in ngx.sleep(0.002) and ngx.sleep(0.001).
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

-- a wait longer than any session
local function block_long()
    C.usleep(30000000)
end

function _M.long_wait()
    block_long()
end

local function sleep2()
    ngx.sleep(0.002)
end

local function sleep1()
    ngx.sleep(0.001)
end

function _M.yield()
    sleep2()
    sleep1()
end

return _M
