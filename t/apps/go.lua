-- The apps' start signal (t/apps/edge.lua, states.lua, inline.lua):
-- wait(GO) prints "ready" and polls, without a pause, for the file GO,
-- which the test makes once the sample has started.
local _M = {}

function _M.wait(go)
    io.write("ready\n")
    io.flush()
    repeat
        local f = io.open(go, "r")
        if f then f:close() end
    until f
end

return _M
