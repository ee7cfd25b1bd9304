-- SPDX-License-Identifier: GPL-2.0-or-later
-- A luajit CLI process whose memory is known by construction (t/84:
-- resty-memory):  luajit cli.lua STRINGS_MB TABLE_MB MALLOC_MB
-- keeps STRINGS_MB MB of distinct strings (1,000 bytes of text each), a
-- table whose array part is TABLE_MB MiB (8-byte numbers, filled to a
-- power of two when TABLE_MB is one: one block of LuaJIT's allocator,
-- mapped on its own), and MALLOC_MB MB of glibc malloc (FFI, every byte
-- written); then prints "ready gc BYTES" (collectgarbage's
-- count after a full collection) and sleeps until killed.
local ffi = require("ffi")
ffi.cdef [[
void *malloc(size_t size);
void *memset(void *s, int c, size_t n);
int usleep(unsigned int usec);
]]
local smb, tmb, mmb = tonumber(arg[1]) or 0, tonumber(arg[2]) or 0, tonumber(arg[3]) or 0
local strings, pad = {}, string.rep("s", 990)
for i = 1, smb * 1000 do strings[i] = pad .. string.format("%10d", i) end
local big = {}
for i = 1, tmb * 1048576 / 8 do big[i] = i end
local n = mmb * 1000000
local block = n > 0 and ffi.C.malloc(n)
if block then ffi.C.memset(block, 1, n) end
collectgarbage()
io.write(string.format("ready gc %d\n", collectgarbage("count") * 1024))
io.flush()
while true do ffi.C.usleep(100000) end
