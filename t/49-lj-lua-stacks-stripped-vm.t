#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# The SystemTap backend on stripped LuaJIT (issue 21), in the VM (one
# boot): lj-lua-stacks against copies of the GC64 and non-GC64 debug luajit
# CLI without DWARF and symbol table (strip --strip-all, as distributions
# ship it), whose layouts come from the layout database.  The tapset finds
# the VM from the interpreter's registers, names its handlers from the
# dispatch tables and reads the bytecode modes from the database.  The
# seed app with the JIT on and off, with the assertions of t/40 (foo's
# share within 3 points); the main C function (pmain, a local symbol that
# strip removed) named by stap++ from .eh_frame_hdr, "FILE+0xADDR" at the
# address the debug build's symbol table gives it, as the eBPF backend
# names it (t/70); the interpreter's leaves named as the
# symbols name them.  Traces that end in the interpreter (t/40).
# lj-lua-bt once.  lj-vm-states on the GC64 copy interpreting and on the
# non-GC64 one in its traces (where r14 is no DISPATCH: the VM is found
# from the C frame), with t/40's assertion, and at most 5% of its samples
# without the VM found.  Scripts that do not say they run without debug
# info are refused (t/24).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use Bpf;
use LjStacks;
use Cwd ();
use File::Basename ();
use File::Path ();
use POSIX ();
use Test::More;

my $vm = VM->new;
my $S = 'samples/lj-lua-stacks.sxx';
my %CLAIM = (jit => 6, nojit => 6);    # as t/40, at $VM::SAMPLE_DESIGN
# The default rate, and the loop counts t/40 had at it (see there): at
# 4,000 a second with loops a quarter as long, the stripped binary's
# unnamed C functions (skipped: no symbol) took 1.0% of the samples once.
my %N = (jit => 40000, nojit => 20000);
my $run = "$ROOT/t/apps/run.lua";
my $app = "$ROOT/t/apps/test.lua";
my $secs = 3600;    # the target runs until staprun ends

my (%bare, %pmain, @mods);
for my $b (qw(gc64 nogc64)) {
	$bare{$b} = Bpf::stripped("$ROOT/build/luajit-$b/bin/luajit");
	my ($addr) = `nm $ROOT/build/luajit-$b/bin/luajit` =~ /^0*([0-9a-f]+) t pmain$/m;
	ok $addr, "$b: the debug build's symbol table gives pmain's address";
	$pmain{$b} = 'C:' . File::Basename::basename($bare{$b}) . '+0x' . ($addr // '?');
	push @mods, [$b, "ljs_strip_$b", $S, exec => $bare{$b}];
}
push @mods, ['bt', 'ljbt_strip', 'samples/lj-lua-bt.sxx', exec => $bare{gc64}];
# lj-vm-states: which build runs the workload in which mode
my %STATES = (gc64 => 'nojit', nogc64 => 'jit');
push @mods, map { ["states_$_", "ljvms_strip_$_", 'samples/lj-vm-states.sxx', exec => $bare{$_}, args => ['--arg', 'time=3']] }
	sort keys %STATES;
# Debian's stock nginx, lua module and libluajit2 (no debug info at all),
# loaded by the config, so named with -d
my $lj2 = Cwd::abs_path('/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2');
# (2,000 samples a second: under TCG nginx's deeper stacks cost the probe
# twice what the CLI's do; t/41)
push @mods, ['stock', 'ljs_stock', $S, exec => '/usr/sbin/nginx',
	args => [VM::stock_d(), '--arg', 'hz=2000']];
my %ko;
@ko{ map { $_->[0] } @mods } = $vm->builds(map { [@$_[1 .. $#$_]] } @mods);
ok $ko{ $_->[0] }, "$_->[2] builds for the stripped $_->[4]" for @mods;
like $vm->build_log, qr/^stap\+\+: using layout 'luajit2-2\.1-20230119-gc64' for '\Q$lj2\E' \(no debug info\)$/m,
	"stock nginx: stderr names the layout database's entry for Debian's libluajit2";
like $vm->build_log, qr{^stap\+\+: warning: no debug info in '/usr/sbin/nginx': .* found as in the luajit CLI .* end at their own frames$}m,
	'stock nginx: stderr says how its VM is found, and that coroutines end at their own frames';

for my $b (qw(gc64 nogc64)) {
	next unless $ko{$b};
	for my $mode (qw(jit nojit)) {
		$vm->case("${b}_$mode" => VM::staprun_sh(target => "$bare{$b} $run $secs $mode plain $N{$mode}",
			module => "ljs_strip_$b.ko", ready => VM::lua_ready(300), samples => LjStacks::seed_samples($CLAIM{$mode}, $VM::SAMPLE_DESIGN)),
			files => [$ko{$b}], timeout => 180);
	}
}
# the stock nginx under wrk, one worker, the JIT on (t/41's loop count)
my $conf = "$ROOT/t/apps/nginx.conf";
# (named nginx.conf, as content_by_lua's chunk names show it)
File::Path::make_path($vm->out . '/stock');
my $stock_conf = $vm->out . '/stock/nginx.conf';
spit($stock_conf, Bpf::stock_conf(slurp($conf), $conf));
my $chunk_line = LjStacks::chunk_line($stock_conf);
my $stock_samples = POSIX::ceil(1.2 * LjStacks::seed_samples($CLAIM{jit}, $VM::SAMPLE_DESIGN));
$vm->case(stock => <<"SH", files => [$ko{stock}, $stock_conf], timeout => 180) if $ko{stock};
mkdir -p logs
export TEST_APP_DIR=$ROOT/t/apps HEAVY_N=100000
/usr/sbin/nginx -p "\$CASE" -e "\$CASE/logs/error.log" -c "\$VM_JOB/nginx.conf" -g 'worker_processes 1;' > nginx.out 2>&1 &
for i in \$(seq 1 150); do @{[ VM::get_sh('http://127.0.0.1:8080/', '/dev/null') ]} && break; sleep 0.2; done
master=\$(cat logs/nginx.pid)
for i in \$(seq 1 50); do kids \$master; [ \$nkids -ge 1 ] && break; sleep 0.1; done
worker=\${kids%% *}
@{[ VM::under_wrk('-t2 -c8 http://127.0.0.1:8080/',
	VM::sample_sh(qq{staprun -x \$worker "\$VM_JOB"/ljs_stock.ko}, '$worker', $stock_samples, undef, stop => 1, hz => 2000)) ]}kill -QUIT \$master
wait
grep -E '\\[(alert|emerg|crit)\\]' logs/error.log | sed 's/^/# /'
exit \$rc
SH
# traces that end in the interpreter (t/40): the window of
# lj_vm_exit_interp from the driver's scan of the machine code
my $SAMPLES_EXITS = 4000;
$vm->case(exits => VM::staprun_sh(target => "$bare{gc64} $ROOT/t/apps/exits.lua $secs", module => 'ljs_strip_gc64.ko',
	ready => VM::lua_ready(300), samples => $SAMPLES_EXITS), files => [$ko{gc64}], timeout => 180) if $ko{gc64};
$vm->case(bt => VM::staprun_sh(target => "$bare{gc64} $run $secs nojit plain 200000", module => 'ljbt_strip.ko',
	ready => VM::lua_ready(300)), files => [$ko{bt}]) if $ko{bt};

for my $b (sort keys %STATES) {
	$vm->case("states_$b" => VM::staprun_sh(target => "$bare{$b} $run $secs $STATES{$b} plain 200000",
		module => "ljvms_strip_$b.ko", ready => VM::lua_ready(300)), files => [$ko{"states_$b"}]) if $ko{"states_$b"};
}

my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors' or diag $r->{stderr};
my $c = $r->{cases};

# The last handler (FUNCCW) runs into the VM's subroutines, whose end no
# dispatch table gives: its code is lj_vm_unnamed, never lj_BC_FUNCCW.
sub check_vm_names {
	my ($name, $p) = @_;
	my $n = LjStacks::count_with($p, sub { grep { $_ eq 'C:lj_BC_FUNCCW' } @_ });
	is $n, 0, "$name: no code named after the last handler (C:lj_BC_FUNCCW)";
}

for my $b (qw(gc64 nogc64)) {
	for my $mode (qw(jit nojit)) {
		my $name = "$b stripped $mode";
		my $case = $c->{"${b}_$mode"};
		ok $case, "$name: the case ran" or next;
		is $case->{status}, 0, "$name: staprun status 0" or diag $case->{output};
		my $p = LjStacks::parse($case->{output});
		my ($f, $n) = LjStacks::check_seed($name, $p, app => $app, root => ['run.lua', $pmain{$b}], mode => $mode,
			lines => 0, claim => $CLAIM{$mode}, design => $VM::SAMPLE_DESIGN);
		note sprintf('%s: foo %.1f%% of %d foo + bar samples, %d samples (%d before the VM was found) in %.1f s',
			$name, $f // 0, $n, $p->{stats}{samples} // 0, $p->{stats}{novm} // 0, $p->{wall} // 0);
		Bpf::check_accounted($name, $p);
		LjStacks::check_stopped($name, $p);
		check_vm_names($name, $p);
		next unless $mode eq 'nojit';
		# the loop's two handlers, as the debug build's symbols name them
		# (t/70): a wrong range would show other names or lj_vm_unnamed
		my $leaves = LjStacks::top_leaves($p, 0.05);
		is_deeply [grep { $_ ne 'C:lj_BC_ADDVV' && $_ ne 'C:lj_BC_IFORL' } @$leaves], [],
			"$name: the leaves with 5% of the samples are the loop's handlers (@$leaves)";
		my $loop = LjStacks::count_with($p, sub { $_[0] eq 'C:lj_BC_ADDVV' || $_[0] eq 'C:lj_BC_IFORL' });
		ok $loop >= 0.5 * $p->{total}, "$name: C:lj_BC_ADDVV and C:lj_BC_IFORL hold $loop of $p->{total} samples";
	}
}

{
	my $case = $c->{stock};
	ok $case, 'stock nginx: the case ran';
	if ($case) {
		is $case->{status}, 0, 'stock nginx: staprun status 0' or diag $case->{output};
		unlike $case->{output}, qr/\[(alert|emerg|crit)\]/, 'stock nginx: no errors in error.log';
		my $p = LjStacks::parse($case->{output});
		my ($f, $n) = LjStacks::check_seed('stock nginx', $p, app => $app, root => ["content_by_lua(nginx.conf:$chunk_line)"],
			mode => 'jit', lines => 0, claim => $CLAIM{jit}, design => $VM::SAMPLE_DESIGN);
		note sprintf('stock nginx: foo %.1f%% of %d foo + bar samples, %d samples (%d before the VM was found)',
			$f // 0, $n, $p->{stats}{samples} // 0, $p->{stats}{novm} // 0);
		Bpf::check_accounted('stock nginx', $p);
		check_vm_names('stock nginx', $p);
	}
}

if (my $case = $c->{exits}) {
	is $case->{status}, 0, 'gc64 stripped exits: staprun status 0' or diag $case->{output};
	LjStacks::check_exits('gc64 stripped exits', LjStacks::parse($case->{output}), samples => $SAMPLES_EXITS);
} else {
	fail 'gc64 stripped exits: the case ran';
}

# lj-vm-states: the share of the state the workload runs in (t/40)
for my $b (sort keys %STATES) {
	my $name = "lj-vm-states $b stripped $STATES{$b}";
	my $case = $c->{"states_$b"};
	ok $case, "$name: the case ran" or next;
	my $o = $case->{output};
	is $case->{status}, 0, "$name: status 0" or diag $o;
	my %pct = map { /^\s*([\d.]+)%\s+(\w+)/ ? ($2 => $1) : () } split /\n/, $o;
	my $want = $STATES{$b} eq 'jit' ? 'trace' : 'interp';
	ok(($pct{$want} // 0) >= 90, "$name: >= 90% in state '$want'") or diag $o;
	my ($all, $lua) = $o =~ /^(\d+) samples of the process, (\d+) running Lua:$/m;
	ok $all, "$name: header" or diag $o;
	my ($novm) = $o =~ /VM not found: (\d+)/;
	ok defined $novm && $all && $novm <= 0.05 * $all, "$name: the VM found in all but 5% of the samples ("
		. ($novm // '?') . ' of ' . ($all // '?') . ')' or diag $o;
}

if (my $case = $c->{bt}) {
	my $o = $case->{output};
	is $case->{status}, 0, 'lj-lua-bt stripped: status 0' or diag $o;
	like $o, qr/^Lua backtrace of process \d+ \(\S+\), VM state interp:$/m, 'lj-lua-bt stripped: header';
	like $o, qr{^C:lj_BC_\w+\n(?:/\S+/test\.lua:\d+\n)?/\S+/test\.lua:heavy\n/\S+/test\.lua:\d+\n/\S+/test\.lua:(?:foo|bar)\n/\S+/test\.lua:\d+\n/\S+/test\.lua:main\n/\S+/run\.lua:\d+\n/\S+/run\.lua\n\Q$pmain{gc64}\E$}m,
		'lj-lua-bt stripped: heavy <- foo|bar <- main <- run.lua <- the main C function, as t/40' or diag $o;
} else {
	fail 'lj-lua-bt stripped: the case ran';
}

done_testing;
