-- Traces that end in the interpreter, for the tests of the VM's exit
-- from a trace (lib/dwarf/vmexit.h):  luajit exits.lua [SECONDS]
-- The loop's trace inlines top(), mid() and leaf() and ends at io.type,
-- a C function the JIT does not compile: it writes the three frames to
-- the Lua stack, sets up io.type's frame and leaves through
-- lj_vm_exit_interp, on each of the loop's iterations.  (No tail calls:
-- each function keeps its caller's frame.)  A trace stitched after
-- io.type returns to the loop.
local function leaf(x)
    local t = io.type(x)
    return t
end

local function mid(x)
    local t = leaf(x)
    return t
end

local function top(x)
    local t = mid(x)
    return t
end

local secs = tonumber(arg and arg[1]) or 5
package.path = ((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path
require("go").started()
local t0 = os.time()
while os.time() - t0 < secs do
    for i = 1, 1000000 do top(i) end
end
