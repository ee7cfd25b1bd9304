-- Drives t/apps/test.lua from the luajit CLI:
--   luajit run.lua [SECONDS] [jit|nojit] [plain|ffi] [N]
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = dir .. "/?.lua;" .. package.path
local secs = tonumber(arg[1]) or 5
if arg[2] == "nojit" then jit.off() end
local test = require "test"
test.ffi = arg[3] == "ffi"
test.N = tonumber(arg[4]) or test.N
local t0 = os.time()
local rounds = 0
while os.time() - t0 < secs do
    test.main()
    rounds = rounds + 1
end
io.write("rounds ", rounds, "\n")
