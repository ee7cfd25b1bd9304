#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-bt and the tapset's luajit_debug_dumpstack end to end, in the VM
# (one boot), against the luajit CLI (GC64 and non-GC64 debug builds) and
# nginx.  t/40 and t/41 check lj-lua-bt's plain backtrace on t/apps; here:
# the stack slots (--arg slots=1) of a workload whose locals have known
# values, interpreted and JIT-compiled, lines=0 and fullpath=0, depth
# truncation, the error of a process that never runs, and a script of the
# kind users write, calling luajit_debug_dumpstack by name at a uprobe.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Test::More;
use VM;
use LjStacks;

my $vm = VM->new;
my $out = $vm->out;

# The workload: a loop in spin() (the hot frame) below outer(), whose
# locals hold one value of each kind; with "clock", outer() also calls
# os.clock() through call_clock(), for the uprobe case.
my $app = "$out/bt.lua";
spit($app, <<'LUA');
if arg[1] == "nojit" then jit.off() end
local mode = arg[1]
local clock = os.clock

local function spin(label, n, t)
    local s = 0
    for i = 1, n do s = s + i end
    return s
end

local function call_clock(tag)
    local big = 2^53
    local c = clock()
    return c
end

local function outer(name)
    local count, ratio, neg, yes, none = 42, 0.25, -7.5, true, nil
    local msg, long = 'say "hi"\n', string.rep("ab", 50)
    local tbl = {}
    while true do
        if arg[2] == "clock" then call_clock("tick") end
        spin("spinning", 1000000, tbl)
    end
end

outer("worker")
LUA
sub line_of {
	my ($re) = @_;
	my @lines = split(/^/m, slurp($app));
	for my $i (0 .. $#lines) { return $i + 1 if $lines[$i] =~ /$re/ }
	die "no line matching $re in $app\n";
}
my %L = (loop => line_of(qr/for i = 1, n do/), spin_call => line_of(qr/spin\("spinning"/),
         clock_call => line_of(qr/local c = clock\(\)/), cc_call => line_of(qr/call_clock\("tick"\)/),
         outer_call => line_of(qr/^outer\("worker"\)/), spin_def => line_of(qr/^local function spin/),
         cc_def => line_of(qr/^local function call_clock/), outer_def => line_of(qr/^local function outer/));

# --- modules (built on the host, two at a time) ---
# A user's script (ljdump): at each os.clock() call, the Lua stack as the VM
# saved it (L->base is exact while a C function runs), with lines, paths and
# slots.
my $DUMP = <<'SXX';
@use luajit

probe @pfunc(lj_cf_os_clock)
{
	if ($^pid_ok) {
		L = luajit_cur_thread(luajit_find_G())
		base = user_uint64_error(L + @offsetof(lua_State, base))
		printf("dumpstack:\n%s", luajit_debug_dumpstack(L, base, -1, 20, 1 | 2 | 4))
		exit()
	}
}
SXX
# lj-lua-bt takes its options again when staprun loads it: one module per
# target, with slots=1 or lines=0 fullpath=0 depth=2 time=3 as parameters
my %ko;
@ko{qw(gc64 nogc64 nginx dump)} = $vm->builds(
	(map { ["ljbt_$_", 'samples/lj-lua-bt.sxx', exec => "build/luajit-$_/bin/luajit"] } qw(gc64 nogc64)),
	['ljbt_ngx', 'samples/lj-lua-bt.sxx', exec => 'build/nginx/sbin/nginx'],
	['ljdump', undef, exec => 'build/luajit-gc64/bin/luajit', source => $DUMP]);
ok($ko{$_}, "lj-lua-bt builds for build/luajit-$_") for qw(gc64 nogc64);
ok($ko{nginx}, 'lj-lua-bt builds for nginx');
ok($ko{dump}, 'a script calling luajit_debug_dumpstack at a uprobe builds');
my $SHORT = 'stapxx_lines=0 stapxx_fullpath=0 stapxx_depth=2 stapxx_time=3';

# --- cases (one boot) ---
for my $b (qw(gc64 nogc64)) {
	my $lj = "$ROOT/build/luajit-$b/bin/luajit";
	for my $mode (qw(nojit jit)) {
		$vm->case("${b}_$mode" => VM::staprun_sh(target => "$lj $app $mode", module => "ljbt_$b.ko",
			params => 'stapxx_slots=1', ready => 'sleep 2'), files => [$ko{$b}]) if $ko{$b};
	}
}
my $lj = "$ROOT/build/luajit-gc64/bin/luajit";
$vm->case(short => VM::staprun_sh(target => "$lj $app nojit", module => 'ljbt_gc64.ko', params => $SHORT,
	ready => 'sleep 1'), files => [$ko{gc64}]) if $ko{gc64};
$vm->case(idle => VM::staprun_sh(target => 'sleep 30', module => 'ljbt_gc64.ko', params => $SHORT),
	files => [$ko{gc64}]) if $ko{gc64};
$vm->case(dump => VM::staprun_sh(target => "$lj $app nojit clock", module => 'ljdump.ko', ready => 'sleep 1'),
	files => [$ko{dump}]) if $ko{dump};
# (a backtrace in heavy(), its long loop, with its locals: taken again
# until one lands there)
$vm->case(nginx => LjStacks::ngx_bt_sh(module => 'ljbt_ngx.ko', params => 'stapxx_slots=1'), files => [$ko{nginx}],
	timeout => 90) if $ko{nginx};

my $r = $vm->run;
is($r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors') or diag($r->{stderr});
my $c = $r->{cases};

# The locals of outer(), the same whichever frame is on top.
my $outer_locals = qr{
	^\Q$app\E:$L{spin_call}\n
	\Q$app\E:outer\n
	\tname\ =\ "worker"\n
	\tcount\ =\ 42\n
	\tratio\ =\ 0\.25\n
	\tneg\ =\ -7\.5\n
	\tyes\ =\ true\n
	\tnone\ =\ nil\n
	\tmsg\ =\ "say\ \\"hi\\"\\n"\n
	\tlong\ =\ "(?:ab){15,20}a?"\.\.\.\n
	\ttbl\ =\ table:\ 0x[0-9a-f]+\n
	\Q$app\E:$L{outer_call}\n
	\Q$app\E\n
	\tmode\ =\ "(?:no)?jit"\n
	\tclock\ =\ function:\ builtin\#\d+\n
	\tspin\ =\ function:\ \Q$app\E:$L{spin_def}\n
	\tcall_clock\ =\ function:\ \Q$app\E:$L{cc_def}\n
	\touter\ =\ function:\ \Q$app\E:$L{outer_def}\n
	C:pmain$
}mx;

for my $b (qw(gc64 nogc64)) {
	# Interpreted: spin() on top, its loop variables read live.
	if (my $case = $c->{"${b}_nojit"}) {
		my $o = $case->{output};
		is($case->{status}, 0, "$b nojit: status 0") or diag($o);
		like($o, qr/^Lua backtrace of process \d+ \(luajit\), VM state interp:$/m, "$b nojit: header");
		# (i is not live at the loop's FORL instruction)
		like($o, qr{^C:lj_BC_\w+\n\Q$app\E:$L{loop}\n\Q$app\E:spin\n\tlabel = "spinning"\n\tn = 1000000\n}m,
			"$b nojit: spin()'s arguments below its frame") or diag($o);
		like($o, qr{^\tt = table: 0x[0-9a-f]+\n\ts = \d+\n(?:\ti = \d+\n)?\Q$app\E:$L{spin_call}\n}m,
			"$b nojit: and its locals") or diag($o);
		like($o, $outer_locals, "$b nojit: outer()'s locals (numbers, booleans, nil, an escaped "
			. 'string, a table) and the main chunk\'s (functions)') or diag($o);
		# s is the sum of 1..i or of 1..i-1: the sample reads the slots
		# between two instructions of the loop (at most the sum up to n
		# when i is not live)
		my ($s, $i) = $o =~ /^\ts = (\d+)\n(?:\ti = (\d+)\n)?/m;
		$i //= 1000000;
		ok(defined $s && ($s == $i * ($i + 1) / 2 || $s == $i * ($i - 1) / 2
		                  || ($i == 1000000 && $s < $i * ($i + 1) / 2)),
			"$b nojit: s = " . ($s // '?') . " is the sum of 1 to i = $i") or diag($o);
		is(scalar(() = $o =~ /^\t\(for /mg), 0, "$b nojit: LuaJIT's hidden loop variables left out");
	}
	# JIT-compiled: spin()'s loop is a trace; the frames below it are the same.
	if (my $case = $c->{"${b}_jit"}) {
		my $o = $case->{output};
		is($case->{status}, 0, "$b jit: status 0") or diag($o);
		like($o, qr/^Lua backtrace of process \d+ \(luajit\), VM state trace:$/m, "$b jit: header");
		like($o, qr{^trace\#\d+:\Q$app\E:$L{loop}\n\Q$app\E:$L{loop}\n\Q$app\E:spin\n
					\tlabel\ =\ "spinning"\n\tn\ =\ 1000000\n}mx,
			"$b jit: the trace, then spin() with its arguments") or diag($o);
		like($o, $outer_locals, "$b jit: outer()'s and the main chunk's locals") or diag($o);
	}
}

# lines=0 fullpath=0 depth=2: two frames, basenames, no lines, no slots.
if (my $case = $c->{short}) {
	my $o = $case->{output};
	is($case->{status}, 0, 'lines=0 depth=2: status 0') or diag($o);
	like($o, qr/^Lua\ backtrace\ of\ process\ \d+\ \(luajit\),\ VM\ state\ interp:\n
				C:lj_BC_\w+\nbt\.lua:spin\nbt\.lua:outer\n\[truncated\]\n/mx,
		'lines=0 fullpath=0 depth=2: the leaf, spin, outer, then the root pseudo frame "[truncated]"') or diag($o);
}

# A process that never runs Lua code (sleep): an error after `time`
# seconds.  (A LuaJIT process blocked in a read is no such process: a
# sample can catch it entering the system call, in io.read.)
if (my $case = $c->{idle}) {
	my $o = $case->{output};
	isnt($case->{status}, 0, 'a process that never runs Lua: non-zero exit') or diag($o);
	my $never_ran = qr/no sample of the process in 3 s: it did not run on a CPU \(blocked or idle\?\)/;
	my $never_lua = qr/the process ran \(\d+ samples, \d+ unreadable\) but never in Lua code in 3 s/;
	like($o, qr/^ERROR: (?:$never_ran|$never_lua)$/m,
		'a process that never runs Lua: the error says so') or diag($o);
	unlike($o, qr/Lua backtrace/, 'a process that never runs Lua: no backtrace');
}

# luajit_debug_dumpstack by name, at the entry of os.clock's C code: the
# fast function's frame (named as its caller called it), then the callers
# with their lines and locals.
if (my $case = $c->{dump}) {
	my $o = $case->{output};
	is($case->{status}, 0, 'luajit_debug_dumpstack at a uprobe: status 0') or diag($o);
	like($o, qr{^dumpstack:\nbuiltin:clock\n\Q$app\E:$L{clock_call}\n\Q$app\E:call_clock\n
				\ttag\ =\ "tick"\n\tbig\ =\ 9007199254740992\n
				\Q$app\E:$L{cc_call}\n\Q$app\E:outer\n\tname\ =\ "worker"\n}mx,
		'luajit_debug_dumpstack: builtin:clock, call_clock with its locals, outer') or diag($o);
	like($o, qr{^\Q$app\E:$L{outer_call}\n\Q$app\E\n\tmode = "nojit"\n}m,
		'luajit_debug_dumpstack: down to the main chunk') or diag($o);
}

# nginx: the request's handler in its coroutine, with the locals of heavy().
# The backtrace is that of the first sample in Lua code: under TCG the
# worker spends 10-15% of a request outside heavy() (ngx.say formats and
# sends the sum: C:hack_digit <- C:ngx_http_lua_ngx_say <- main, VM state
# c), so one try in eight or so lands there, and rarely one lands in
# main()'s own bytecode; the case tries again, five times at most
# (LjStacks::ngx_bt_sh; all five miss with p < 1e-4).  Every try is a
# whole backtrace down to main().
if (my $case = $c->{nginx}) {
	my $o = $case->{output};
	is($case->{status}, 0, 'nginx: status 0') or diag($o);
	my @tries = LjStacks::bt_tries($o);
	ok(@tries >= 1 && @tries <= 5, 'nginx: 1 to 5 tries (' . scalar(@tries) . ')') or diag($o);
	for my $k (0 .. $#tries) {
		my $t = $tries[$k];
		like($t, qr/^Lua backtrace of process \d+ \(nginx\), VM state \w+:$/m, "nginx try @{[$k + 1]}: header")
			or diag($o);
		like($t, qr{^/\S+/test\.lua:main\n}m, "nginx try @{[$k + 1]}: down to main()") or diag($o);
		like($t, qr{VM state c:\nC:\S+\n}, "nginx try @{[$k + 1]}: in the C state, a C function on top") or diag($o)
			if $t =~ /VM state c:$/m;
	}
	my $last = $tries[-1] // '';
	like($last, qr/^Lua backtrace of process \d+ \(nginx\), VM state interp:$/m, 'nginx: a try in the interpreter')
		or diag($o);
	like($last, qr{^/\S+/test\.lua:\d+\n/\S+/test\.lua:heavy\n\tn = 300000\n\ts = \d+\n}m,
		'nginx: heavy() with its locals n (HEAVY_N) and s') or diag($o);
}

done_testing();
