-- SPDX-License-Identifier: GPL-2.0-or-later
-- The leak of issue 12: a module that keeps everything it is given.
local _M = {}
local foo = {}
function _M.go(self) foo[#foo + 1] = "hello " .. #foo end
return _M
