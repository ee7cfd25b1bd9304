-- Drives t/apps/test.lua from the luajit CLI:
--   luajit run.lua [SECONDS] [jit|nojit] [plain|ffi] [N] [ROUNDS]
-- runs main() for SECONDS, or exactly ROUNDS times when SECONDS is 0.
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = dir .. "/?.lua;" .. package.path
local secs = tonumber(arg[1]) or 5
if arg[2] == "nojit" then jit.off() end
local test = require "test"
test.ffi = arg[3] == "ffi"
test.N = tonumber(arg[4]) or test.N
local function uptime()
    local f = io.open("/proc/uptime")
    local t = f and tonumber(f:read("*l"):match("^(%S+)")) or 0
    if f then f:close() end
    return t
end
require("go").started()
local t0, w0, c0 = os.time(), uptime(), os.clock()
local rounds = 0
local want = tonumber(arg[5]) or 0
while (secs > 0 and os.time() - t0 < secs) or (secs == 0 and rounds < want) do
    test.main()
    rounds = rounds + 1
end
io.write("rounds ", rounds, "\n")
if secs == 0 then
    io.write(string.format("cpu %.3f wall %.2f\n", os.clock() - c0, uptime() - w0))
end
