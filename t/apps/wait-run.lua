-- Drives t/apps/wait.lua from the luajit CLI:
--   luajit wait-run.lua SECONDS jit|nojit offcpu|fio|fio_mixed|long_wait [DIR]
-- runs that function of wait.lua for SECONDS (DIR: where fio's data1 and
-- data2 are).
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = dir .. "/?.lua;" .. package.path
local secs = tonumber(arg[1]) or 5
if arg[2] == "nojit" then jit.off() end
local w = require "wait"
w.dir = arg[4] or "."
local what = w[arg[3] or "offcpu"]
local t0 = os.time()
local rounds = 0
while os.time() - t0 < secs do
    what()
    rounds = rounds + 1
end
io.write("rounds ", rounds, "\n")
