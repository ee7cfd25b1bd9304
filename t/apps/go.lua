-- The apps' start signals (t/apps/edge.lua, states.lua, inline.lua,
-- run.lua, exits.lua):
-- wait(GO) prints "ready" and polls, without a pause, for the file GO,
-- which the test makes once the sample has started.
-- started() makes the file that LJ_READY names, if it is set, once the
-- app's Lua code runs: a VM test (VM::lua_ready) samples only after it,
-- never the CLI's start in C.
local _M = {}

function _M.started()
    local ready = os.getenv("LJ_READY")
    if ready then
        assert(io.open(ready, "w")):close()
    end
end

function _M.wait(go)
    io.write("ready\n")
    io.flush()
    repeat
        local f = io.open(go, "r")
        if f then f:close() end
    until f
end

return _M
