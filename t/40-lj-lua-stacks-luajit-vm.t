#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-stacks end to end against the luajit CLI, GC64 and non-GC64 debug
# builds, in the VM (one boot): the seed app (t/apps/test.lua via
# t/apps/run.lua) with the JIT on, off, with FFI calls and with lines=1;
# frame shapes (t/apps/edge.lua: coroutines, pcall, xpcall, tail calls,
# varargs, metamethods, 5000-deep recursion) with the JIT on and off;
# lj-vm-states and lj-lua-bt; and a target without LuaJIT.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjStacks;
use Test::More;

my $vm = VM->new;
my $T = 3;         # seconds of sampling per case
my $DEPTH = 20;    # depth of the plain modules (edge.lua recursion is cut there)

# --- a target without LuaJIT: clear error, non-zero exit (no VM needed) ---
{
	my ($st, $log) = run_cmd({ cwd => $vm->out, merge => 1 }, "$ROOT/stap++", '-p4', '-r', $vm->krel, '-m', 'ljs_sleep',
		'--exec', '/bin/sleep', "$ROOT/samples/lj-lua-stacks.sxx");
	isnt $st, 0, 'lj-lua-stacks against /bin/sleep fails';
	like $log, qr/^\S*tapset\/luajit\.sxx:\d+: error: no LuaJIT VM in '\/(?:usr\/)?bin\/sleep': no type 'lua_State'/m,
		'with an error saying there is no LuaJIT VM in it' or diag $log;
	like $log, qr/^hint: .*'\/(?:usr\/)?bin\/sleep'/m, 'and the target binary' or diag $log;
	is scalar(() = $log =~ /error:/g), 1, 'one error line' or diag $log;
}

# --- modules (built on the host, two at a time) ---
my $S = 'samples/lj-lua-stacks.sxx';
my $gc64 = 'build/luajit-gc64/bin/luajit';
my @mods = (    # key, module, script, options, what the build is
	map({ my $b = $_; my $exec = "build/luajit-$b/bin/luajit";
	      ([$b, "ljs_$b", $S, { exec => $exec, args => ['--arg', "time=$T", '--arg', "depth=$DEPTH"] },
	        "lj-lua-stacks for $exec"],
	       ["${b}_lines", "ljs_${b}_lines", $S, { exec => $exec, args => ['--arg', "time=$T", '--arg', 'lines=1'] },
	        "lj-lua-stacks lines=1 for $exec"]) } qw(gc64 nogc64)),
	# options: nojit/fullpath/limit on a JIT workload, nointerp on an interpreted one
	['opt_nojit', 'ljs_opt_nojit', $S, { exec => $gc64,
		args => ['--arg', "time=$T", '--arg', 'nojit=1', '--arg', 'fullpath=1', '--arg', 'limit=2'] },
	 'lj-lua-stacks nojit=1 fullpath=1 limit=2'],
	['opt_nointerp', 'ljs_opt_nointerp', $S, { exec => $gc64, args => ['--arg', "time=$T", '--arg', 'nointerp=1'] },
	 'lj-lua-stacks nointerp=1'],
	['opt_hz', 'ljs_opt_hz', $S, { exec => $gc64, args => ['--arg', "time=$T", '--arg', 'hz=250'] },
	 'lj-lua-stacks hz=250'],
	['states', 'ljvms', 'samples/lj-vm-states.sxx', { exec => $gc64, args => ['--arg', "time=$T"] }, 'lj-vm-states'],
	['bt', 'ljbt', 'samples/lj-lua-bt.sxx', { exec => $gc64 }, 'lj-lua-bt'],
);
my %ko;
@ko{ map { $_->[0] } @mods } = $vm->builds(map { [$_->[1], $_->[2], %{ $_->[3] }] } @mods);
ok $ko{ $_->[0] }, "$_->[4] builds" for @mods;
{
	my ($st, $log) = run_cmd({ cwd => $vm->out, merge => 1 }, "$ROOT/stap++", '--dump-src', '--exec', "$ROOT/build/luajit-gc64/bin/luajit",
		"$ROOT/samples/lj-lua-stacks.sxx", '--arg', 'hz=7');
	isnt $st, 0, 'hz=7: fails';
	like $log, qr/^\S*lj-lua-stacks\.sxx:\d+: error: --arg hz must be 100, 250, 500 or 1000, not '7'$/m,
		'hz=7: the error names the allowed rates' or diag $log;
}

# --- cases (one boot) ---
my $run  = "$ROOT/t/apps/run.lua";
my $edge = "$ROOT/t/apps/edge.lua";
# the target outlives the sampling, however late the module starts on a
# loaded host (staprun_sh kills it when staprun ends)
my $secs = 60;
my @seed = (jit => 'jit plain', nojit => 'nojit plain', ffi => 'jit ffi');
for my $b (qw(gc64 nogc64)) {
	my $lj = "$ROOT/build/luajit-$b/bin/luajit";
	next unless $ko{$b} && $ko{"${b}_lines"};
	for (my $i = 0; $i < @seed; $i += 2) {
		my ($mode, $a) = @seed[$i, $i + 1];
		$vm->case("${b}_$mode" => VM::staprun_sh(target => "$lj $run $secs $a 200000",
			module => "ljs_$b.ko", ready => 'sleep 1'), files => [$ko{$b}]);
	}
	for my $mode (qw(jit nojit)) {
		$vm->case("${b}_lines_$mode" => VM::staprun_sh(target => "$lj $run $secs $mode plain 200000",
			module => "ljs_${b}_lines.ko", ready => 'sleep 1'), files => [$ko{"${b}_lines"}]);
		$vm->case("${b}_edge_$mode" => VM::staprun_sh(target => "$lj $edge $secs $mode",
			module => "ljs_$b.ko", ready => 'sleep 1'), files => [$ko{$b}]);
	}
}
my $lj = "$ROOT/build/luajit-gc64/bin/luajit";
for my $mode (qw(jit nojit)) {
	$vm->case("states_$mode" => VM::staprun_sh(target => "$lj $run $secs $mode plain 200000",
		module => 'ljvms.ko', ready => 'sleep 1'), files => [$ko{states}]) if $ko{states};
}
$vm->case(opt_nojit => VM::staprun_sh(target => "$lj $run $secs jit plain 200000",
	module => 'ljs_opt_nojit.ko', ready => 'sleep 1'), files => [$ko{opt_nojit}]) if $ko{opt_nojit};
$vm->case(opt_nointerp => VM::staprun_sh(target => "$lj $run $secs nojit plain 200000",
	module => 'ljs_opt_nointerp.ko', ready => 'sleep 1'), files => [$ko{opt_nointerp}]) if $ko{opt_nointerp};
$vm->case(opt_hz => VM::staprun_sh(target => "$lj $run $secs jit plain 200000",
	module => 'ljs_opt_hz.ko', ready => 'sleep 1'), files => [$ko{opt_hz}]) if $ko{opt_hz};
$vm->case(bt => VM::staprun_sh(target => "$lj $run $secs nojit plain 200000",
	module => 'ljbt.ko', ready => 'sleep 1'), files => [$ko{bt}]) if $ko{bt};

my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors' or diag $r->{stderr};
my $c = $r->{cases};

for my $b (qw(gc64 nogc64)) {
	for my $mode (qw(jit nojit ffi)) {
		my $case = $c->{"${b}_$mode"} or next;
		is $case->{status}, 0, "$b $mode: staprun status 0" or diag $case->{output};
		my $p = LjStacks::parse($case->{output});
		my ($f, $g) = LjStacks::check_seed("$b $mode", $p, app => "$ROOT/t/apps/test.lua",
			root => ['run.lua', 'C:pmain'], mode => $mode, lines => 0);
		note sprintf('%s %s: foo %.1f%% bar %.1f%% of %d Lua samples', $b, $mode, $f, $g, $p->{total});
	}
	for my $mode (qw(jit nojit)) {
		my $case = $c->{"${b}_lines_$mode"} or next;
		is $case->{status}, 0, "$b lines $mode: staprun status 0" or diag $case->{output};
		LjStacks::check_seed("$b lines=1 $mode", LjStacks::parse($case->{output}),
			app => "$ROOT/t/apps/test.lua", root => ['run.lua', 'C:pmain'], mode => $mode, lines => 1);
		$case = $c->{"${b}_edge_$mode"} or next;
		is $case->{status}, 0, "$b edge $mode: staprun status 0" or diag $case->{output};
		LjStacks::check_edge("$b edge $mode", LjStacks::parse($case->{output}),
			app => $edge, depth => $DEPTH);
	}
}

# options
if (my $case = $c->{opt_nojit}) {
	is $case->{status}, 0, 'nojit=1 fullpath=1 limit=2: status 0' or diag $case->{output};
	LjStacks::check_options('options', LjStacks::parse($case->{output}));
}
if (my $case = $c->{opt_nointerp}) {
	is $case->{status}, 0, 'nointerp=1: status 0' or diag $case->{output};
	LjStacks::check_dropping('nointerp=1', LjStacks::parse($case->{output}), 'interpreter', 'interpreter leaves',
		sub { $_[0] =~ /^C:lj_BC_/ });
}

# hz: timer.profile (1000 samples/s on this kernel) by default, 250 with hz=250
if (my $case = $c->{opt_hz}) {
	my $p = LjStacks::parse($case->{output});
	is $case->{status}, 0, 'hz=250: status 0' or diag $case->{output};
	my $n = ($p->{stats} // {})->{samples} // 0;
	ok($n >= 0.6 * 250 * $T && $n <= 1.4 * 250 * $T, "hz=250: $n samples in $T s (250/s)") or diag $case->{output};
	my $d = (LjStacks::parse($c->{gc64_jit}{output})->{stats} // {})->{samples} // 0;
	ok($d >= 0.6 * 1000 * $T && $d <= 1.4 * 1000 * $T, "default (timer.profile): $d samples in $T s (1000/s)");
	my $foo = LjStacks::count_with($p, sub { grep({ $_ eq 'test.lua:foo' } @_) && $_[0] =~ /^trace#\d+:test\.lua:\d+$/ });
	my $bar = LjStacks::count_with($p, sub { grep({ $_ eq 'test.lua:bar' } @_) && $_[0] =~ /^trace#\d+:test\.lua:\d+$/ });
	ok($foo + $bar > 0.8 * $n && $foo > 1.5 * $bar, "hz=250: trace leaves under foo ($foo) and bar ($bar)") or diag $case->{output};
}

# lj-vm-states: the share of the state the workload runs in
for my $mode (qw(jit nojit)) {
	my $case = $c->{"states_$mode"} or next;
	my $o = $case->{output};
	is $case->{status}, 0, "lj-vm-states $mode: status 0" or diag $o;
	my %pct = map { $_->[1] => $_->[0] } ($o =~ /^\s*([\d.]+)%\s+(\w+)\s/mg) ? map { [/^\s*([\d.]+)%\s+(\w+)/] } grep { /%/ } split /\n/, $o : ();
	my $want = $mode eq 'jit' ? 'trace' : 'interp';
	ok(($pct{$want} // 0) >= 90, "lj-vm-states $mode: >= 90% in state '$want'") or diag $o;
	like $o, qr/^\d+ samples of the process, \d+ running Lua:$/m, "lj-vm-states $mode: header";
}

# lj-lua-bt: one backtrace, innermost first, with lines
if (my $case = $c->{bt}) {
	my $o = $case->{output};
	is $case->{status}, 0, 'lj-lua-bt: status 0' or diag $o;
	like $o, qr/^Lua backtrace of process \d+ \(\S+\), VM state interp:$/m, 'lj-lua-bt: header';
	like $o, qr{^C:lj_BC_\w+\n(?:/\S+/test\.lua:\d+\n)?/\S+/test\.lua:heavy\n/\S+/test\.lua:\d+\n/\S+/test\.lua:(?:foo|bar)\n/\S+/test\.lua:\d+\n/\S+/test\.lua:main\n/\S+/run\.lua:\d+\n/\S+/run\.lua\nC:pmain$}m,
		'lj-lua-bt: heavy <- foo|bar <- main <- run.lua with full paths and lines' or diag $o;
}

done_testing;
