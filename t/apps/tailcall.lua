-- SPDX-License-Identifier: GPL-2.0-or-later
-- Functions reached by a tail call (t/83): wrapper(n), M.wrap(n) and
-- gwrap(n) tail-call work(n), so work's frame replaces theirs, and the
-- call their caller made names a local, a field and a global that do not
-- hold work: that frame has no name.  direct(n) calls work(n) and keeps
-- its own frame, named.  Interpreted (jit.off: a trace would inline them).
--   luajit tailcall.lua [SECONDS]
jit.off()
local function work(n)
    local s = 0
    for i = 1, n do s = s + i % 7 end
    return s
end
local function wrapper(n) return work(n) end
local M = {}
M.wrap = function(n) return work(n) end
gwrap = function(n) return work(n) end
local function direct(n) local r = work(n) return r end
local secs = tonumber(arg[1]) or 60
local t0 = os.clock()
while os.clock() - t0 < secs do
    wrapper(20000)
    M.wrap(20000)
    gwrap(20000)
    direct(60000)
end
