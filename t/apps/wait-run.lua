-- Drives t/apps/wait.lua from the luajit CLI (t/63, t/64):
--   luajit wait-run.lua ROUNDS jit|nojit FUNC [DIR [GO [U]]]
-- runs FUNC (offcpu, fio, fio_mixed, long_wait) of wait.lua ROUNDS times,
-- then prints "rounds N", "blocks N" (the thread's voluntary context
-- switches over the rounds, from getrusage: its waits, and any other
-- block, a page fault's or a lock's) and the app's own accounting
-- (wait.lua's "acct NAME US CALLS BYTES LONG" lines) and exits.  DIR: where fio's data1
-- and data2 are (default "."); its size of data1 is write1()'s too.  GO
-- ("-": none): a file the test makes once the sample has started; the
-- app prints "ready" and polls for it without a pause (a wait, even one
-- that began before the session, shows: SystemTap's attach interrupts
-- a blocked open of a FIFO, which then blocks again, in the session).  U:
-- the microseconds of each of offcpu's usleeps (default 2000).
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = dir .. "/?.lua;" .. package.path
local rounds = tonumber(arg[1]) or 1
if arg[2] == "nojit" then jit.off() end
local w = require "wait"
w.dir = arg[4] or "."
w.U = tonumber(arg[6]) or w.U
local what = assert(w[arg[3] or "offcpu"], "no such function")
-- offcpu with the JIT on: no side traces.  The exit of c()'s loop trace
-- became a side trace that ran on through the next round into a(), whose
-- short loop it unrolled when a()'s own loop trace did not exist yet
-- (which loop gets hot first varies from run to run): a()'s waits then
-- ran inside that trace with a() and offcpu() inlined, frames that only
-- its snapshots hold (issue 22), and a() held 1.3% of a t/63 run.  Each
-- loop stays its own trace, whose function frames are on the stack.
if what == w.offcpu and arg[2] ~= "nojit" then jit.opt.start("hotexit=1000000") end
local f = io.open(w.dir .. "/data1", "rb")
if f then
    w.WSIZE = f:seek("end")
    f:close()
end
if arg[5] and arg[5] ~= "-" then
    io.write("ready\n")
    io.flush()
    repeat
        local go = io.open(arg[5], "r")
    until go
end
-- (getrusage, not /proc/self/status: a read would be the fio samples')
local ffi = require "ffi"
ffi.cdef [[
    struct wr_rusage { long tv[4]; long ru[14]; };
    int getrusage(int who, struct wr_rusage *ru);
]]
local function vcsw()
    local ru = ffi.new("struct wr_rusage")
    if ffi.C.getrusage(1, ru) ~= 0 then return -1 end    -- RUSAGE_THREAD
    return tonumber(ru.ru[12])                             -- ru_nvcsw
end
local v0 = vcsw()
for _ = 1, rounds do
    what()
end
local blocks = vcsw() - v0
io.write("rounds ", rounds, "\nblocks ", blocks, "\n", w.report())
