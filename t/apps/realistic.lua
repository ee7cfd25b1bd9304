-- A realistic pure-Lua workload, built from Lua libraries that Debian
-- packages (make deps: lua-dkjson, lua-penlight, lua-lpeg, lua-cjson),
-- for what a sample costs on real code (dev/bench-sample-cost, issue 26):
-- each "request" parses a query string and a CSV body with LPeg, builds
-- records with Penlight's string and table utilities, round-trips them
-- through JSON (dkjson in Lua, cjson in C) and renders them with
-- pl.template.  Its stacks are 8 to 12 Lua frames deep, through the
-- libraries' own functions, and number several hundred distinct ones.
--
--   luajit t/apps/realistic.lua SECS [jit|nojit]
--
-- Runs SECS seconds of CPU time (0: until killed), then prints
-- "requests N".
package.path = "/usr/share/lua/5.1/?.lua;/usr/share/lua/5.1/?/init.lua;" .. package.path
package.cpath = "/usr/lib/x86_64-linux-gnu/lua/5.1/?.so;" .. package.cpath

local secs = tonumber(arg[1]) or 0
if arg[2] == "nojit" then jit.off() end

local lpeg = require "lpeg"
local dkjson = require "dkjson"
local cjson = require "cjson"
local stringx = require "pl.stringx"
local tablex = require "pl.tablex"
local template = require "pl.template"

local P, C, Ct, Cg, Cf, S, R = lpeg.P, lpeg.C, lpeg.Ct, lpeg.Cg, lpeg.Cf, lpeg.S, lpeg.R

-- query strings: a=1&b=two&c=%20x
local function unescape(s)
    return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end
local qchar = (1 - S"&=")
local pair = Cg((C(qchar ^ 1) / unescape) * "=" * (C(qchar ^ 0) / unescape))
local query = Cf(Ct"" * (pair * ("&" * pair) ^ 0) ^ -1, rawset)

-- CSV lines, with quoted fields
local field = '"' * C(((P(1) - '"') + P'""' / '"') ^ 0) * '"' + C((1 - S',\n"') ^ 0)
local record = Ct(field * ("," * field) ^ 0)

local page = [[
<ul>
# for _, r in ipairs(rows) do
  <li>$(r.name): $(r.total) ($(r.tags))</li>
# end
</ul>
]]

local function parse_body(body)
    local rows = {}
    for _, line in ipairs(stringx.splitlines(body)) do
        local f = record:match(line)
        if f and #f >= 3 then
            rows[#rows + 1] = { name = stringx.strip(f[1]), qty = tonumber(f[2]) or 0,
                                price = tonumber(f[3]) or 0, tags = stringx.split(f[4] or "", ";") }
        end
    end
    return rows
end

local function enrich(rows, params)
    local mult = tonumber(params.mult) or 1
    return tablex.map(function(r)
        return { name = stringx.title(r.name), total = r.qty * r.price * mult,
                 tags = table.concat(tablex.filter(r.tags, function(t) return #t > 0 end), ",") }
    end, rows)
end

local function round_trip(rows)
    local a = dkjson.decode(dkjson.encode({ rows = rows, n = #rows }))
    local b = cjson.decode(cjson.encode(a))
    return b.rows
end

local function render(rows)
    return template.substitute(page, { rows = rows, ipairs = ipairs })
end

local function handle(q, body)
    local params = query:match(q)
    local rows = enrich(parse_body(body), params)
    rows = round_trip(rows)
    return render(rows)
end

-- the requests: a few hundred distinct bodies, built once
local bodies, queries = {}, {}
for i = 1, 300 do
    local lines = {}
    for j = 1, 4 + i % 7 do
        lines[#lines + 1] = string.format('"item %d, %d",%d,%d.%02d,a;b%d;;c', i, j, j, i % 13, j, i % 5)
    end
    bodies[i] = table.concat(lines, "\n")
    queries[i] = string.format("mult=%d&page=%d&q=a%%20b%d", 1 + i % 3, i, i)
end

local clock, n = os.clock, 0
local t0 = clock()
while secs == 0 or clock() - t0 < secs do
    for i = 1, #bodies do
        local out = handle(queries[i], bodies[i])
        if #out == 0 then error("empty page") end
        n = n + 1
    end
end
print("requests " .. n)
