-- SPDX-License-Identifier: GPL-2.0-or-later
-- A luajit CLI process whose memory is known by construction (t/84:
-- resty-memory):  luajit cli.lua STRINGS_MB TABLE_MB MALLOC_MB [threads|-] [free]
-- keeps STRINGS_MB MB of distinct strings (1,000 bytes of text each), a
-- table whose array part is TABLE_MB MiB (8-byte numbers, filled to a
-- power of two when TABLE_MB is one: one block of LuaJIT's allocator,
-- mapped on its own), and MALLOC_MB MB of glibc malloc (FFI, every byte
-- written).  With "threads": a thread that waits in pause() forever
-- (its own stack) and one whose only call is malloc(100000), below
-- glibc's mmap threshold (a block of a new arena of glibc's), which
-- it leaves there.  With "free": the first half of the strings (made
-- first, so side by side in the allocator's segments) dropped, which
-- leaves STRINGS_MB / 2 MB free inside the segments, the rest in use.
-- Then prints "ready gc BYTES" (collectgarbage's count after a full
-- collection; with "free", then " freed BYTES": what the drop took off
-- it) and waits in pause() until killed.
local ffi = require("ffi")
ffi.cdef [[
void *malloc(size_t size);
void *memset(void *s, int c, size_t n);
typedef unsigned long stapxx_pthread_t;
int pthread_create(stapxx_pthread_t *t, const void *attr, void *(*f)(void *), void *arg);
int pthread_join(stapxx_pthread_t t, void **ret);
int pause(void);
]]
local smb, tmb, mmb = tonumber(arg[1]) or 0, tonumber(arg[2]) or 0, tonumber(arg[3]) or 0
local strings, pad = {}, string.rep("s", 990)
for i = 1, smb * 1000 do strings[i] = pad .. string.format("%10d", i) end
local freed
if arg[5] == "free" then
    collectgarbage()
    freed = collectgarbage("count")
    for i = 1, smb * 500 do strings[i] = false end
    collectgarbage()
    freed = (freed - collectgarbage("count")) * 1024
end
local big = {}
for i = 1, tmb * 1048576 / 8 do big[i] = i end
local n = mmb * 1000000
local block = n > 0 and ffi.C.malloc(n)
if block then ffi.C.memset(block, 1, n) end
if arg[4] == "threads" then
    -- (C functions as the threads' start routines: no Lua runs there)
    local start = "void *(*)(void *)"
    local t1, t2 = ffi.new("stapxx_pthread_t[1]"), ffi.new("stapxx_pthread_t[1]")
    assert(ffi.C.pthread_create(t1, nil, ffi.cast(start, ffi.C.pause), nil) == 0)
    assert(ffi.C.pthread_create(t2, nil, ffi.cast(start, ffi.C.malloc), ffi.cast("void *", 100000)) == 0)
    assert(ffi.C.pthread_join(t2[0], nil) == 0)
end
local pause = ffi.C.pause    -- (resolved now: nothing allocates after "ready")
collectgarbage()
io.write(string.format("ready gc %d", collectgarbage("count") * 1024),
         freed and string.format(" freed %d", freed) or "", "\n")
io.flush()
-- (waits without running any code: its memory stays as it is)
while true do pause() end
