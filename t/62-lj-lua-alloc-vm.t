#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-alloc end to end with the luajit CLI (GC64), in the VM (one boot):
# t/apps/leak/alloc.lua allocates tables 1:2 from one() and two(); with the
# JIT on and off, the sampled bytes split 1:2 between them within 5 points,
# the leaf is the type (table), and the slowdown of the workload with the
# module loaded (its own CPU time, with and without) is measured and printed.
# Then --master with two nginx workers under wrk on the leak app (module
# built with --master -, run as 'staprun MOD.ko stapxx_master=MASTER'):
# every stack ends in the root frame "worker PID" of one of the workers,
# both sampled, strings hold the most bytes, the master is not sampled.
# Last, a session that SystemTap ends on an error (its overload guard)
# still prints what it measured before it, and says so; and with a limit of
# one distinct stack (maxstacks=1 at run time) one stack is printed and
# stderr says how many bytes the limit left out and which option raises it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjStacks;
use LjGc;
use Pprof;
use Test::More;

my $vm = VM->new;
my $N = 10000;    # rounds: 3 million tables (about 3 s under TCG)
my $RATE = 512;
# armed 100 ms of every 1000: the slowdown shrinks with the share of time armed
my $lj = "$ROOT/build/luajit-gc64/bin/luajit";
my $app = "$ROOT/t/apps/leak/alloc.lua";
# Under TCG the probes take a share of the CPU that no hardware sees (a
# sample's stack walk costs 100-500 us there): SystemTap's overload guard
# (50% of a CPU) stopped the JIT case, and even at 90% it stopped it in CI
# when the host was busy.  So these modules are built without the guard...
my @over = ('-D', 'STP_NO_OVERLOAD');
# ...and one with a guard that trips for sure, but not at the first probe
# (SystemTap checks the first one alone: under load it took 25 million
# cycles, the symbol lookup of a first sample): 200 million cycles of
# probes in an interval of 1,000 million, where armed probes took 744 million.
# It shows what a user gets when a session ends on an error: the report
# of what was measured before it.
my @trip = ('-D', 'STP_OVERLOAD_THRESHOLD=200000000LL');
my ($ko, $kom, $koe) = $vm->builds(    # two at a time
	['ljalloc', 'samples/lj-lua-alloc.sxx', exec => 'build/luajit-gc64/bin/luajit',
	 args => ['--arg', "rate=$RATE", '--arg', 'on=100', '--arg', 'period=1000', '--arg', 'time=60', @over]],
	['ljalloc_master', 'samples/lj-lua-alloc.sxx', exec => 'build/nginx/sbin/nginx',
	 args => ['--master', '-', '--arg', 'time=3', '--arg', 'on=1000', '--arg', 'period=1000', @over]],
	['ljalloc_err', 'samples/lj-lua-alloc.sxx', exec => 'build/luajit-gc64/bin/luajit',
	 args => ['--arg', "rate=$RATE", '--arg', 'on=1000', '--arg', 'period=1000', @trip]]);
ok $ko, 'lj-lua-alloc builds for the luajit CLI';
ok $kom, 'lj-lua-alloc builds in master mode for nginx (--master -)';
ok $koe, 'lj-lua-alloc builds with an overload guard that trips';

for my $mode (qw(jit nojit)) {
	$vm->case("base_$mode" => "$lj $app $mode $N");
	$vm->case($mode => qq{timeout -s INT -k 10 60 staprun -c "$lj $app $mode $N" "\$VM_JOB"/ljalloc.ko},
		files => [$ko], timeout => 90) if $ko;
}
$vm->case(few => qq{staprun -c "$lj $app jit 1000" "\$VM_JOB"/ljalloc.ko maxstacks=1},
	files => [$ko], timeout => 60) if $ko;
$vm->case(err => qq{timeout -s INT -k 10 60 staprun -c "$lj $app jit $N" "\$VM_JOB"/ljalloc_err.ko},
	files => [$koe], timeout => 90) if $koe;
$vm->case(master => LjGc::leak_master_case(module => 'ljalloc_master.ko', counts => 0, n => 100),
	files => [$kom], timeout => 120) if $kom;
my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors' or diag $r->{stderr};
my $c = $r->{cases};
for my $mode (qw(jit nojit)) {
	my $case = $c->{$mode} or next;
	my $o = $case->{output};
	is $case->{status}, 0, "$mode: staprun status 0" or diag $o;
	my $stacks = join "\n", grep { !/^(?:start|time [\d.]+)$/ } split /\n/, $o;
	my $p = LjStacks::parse($stacks);
	is_deeply LjStacks::bad($p, $mode), [], "$mode: well-formed stacks" or diag $o;
	like $o, qr/^# stap\+\+ type=bytes$/m, "$mode: the output's header gives the unit (type=bytes)";
	if ($mode eq 'jit') {
		# the real output as a pprof profile, read back by go tool pprof
		Pprof::init($vm->out . '/pprof');
		Pprof::check_real('alloc', $stacks, types => 'space/bytes', frames => ['alloc.lua:one', 'alloc.lua:two']);
	}
	my $one = LjStacks::count_with($p, sub { $_[0] eq 'table' && grep { $_ eq 'alloc.lua:one' } @_ });
	my $two = LjStacks::count_with($p, sub { $_[0] eq 'table' && grep { $_ eq 'alloc.lua:two' } @_ });
	my $sum = $one + $two;
	ok $sum >= 0.8 * $p->{total}, "$mode: one() and two() hold most sampled bytes ($sum of $p->{total})" or diag $o;
	my $pct = $sum ? 100 * $one / $sum : 0;
	ok abs($pct - 33.3) <= 5, sprintf('%s: one() %.1f%% of their bytes (33.3 +- 5)', $mode, $pct) or diag $o;
	ok abs((100 - $pct) - 66.7) <= 5, sprintf('%s: two() %.1f%% (66.7 +- 5)', $mode, 100 - $pct);
	my ($faults) = $o =~ /(\d+) faults$/m;
	ok defined $faults && $faults <= 0.01 * ($p->{total} / $RATE + 1), "$mode: at most 1% of the samples faulted (" . ($faults // '?') . ')' or diag $o;
	like $o, qr/^WARNING: lj-lua-alloc: \d+ ns per allocation in the probes/m, "$mode: the probes' cost printed";
	my ($t1) = $o =~ /^time ([\d.]+)$/m;
	my ($t0) = ($c->{"base_$mode"}{output} // '') =~ /^time ([\d.]+)$/m;
	ok $t0 && $t1, "$mode: the workload's time with and without the module" or diag $o;
	note sprintf('%s: slowdown %.1fx (%.3f s with the module, %.3f s without)', $mode, $t1 / $t0, $t1, $t0) if $t0 && $t1;
	my ($win) = $o =~ /^WARNING: lj-lua-alloc: armed 100 ms of every 1000 ms \(10%\): (\d+) windows/m;
	ok $win && $win >= 2, "$mode: armed in windows, stderr says how many (" . ($win // '?') . ')' or diag $o;
	note "$mode: $_" for grep { /^WARNING: lj-lua-alloc/ } split /\n/, $o;
}
# The session ends on SystemTap's error; the error probe still prints the
# report, and says so.
if (my $case = $c->{err}) {
	my $o = $case->{output};
	isnt $case->{status}, 0, 'err: staprun fails (the overload guard tripped)' or diag $o;
	like $o, qr/^ERROR: probe overhead \(\d+ cycles\) exceeded threshold/m, 'err: SystemTap says why' or diag $o;
	like $o, qr/^WARNING: lj-lua-alloc: the session ended on the error above; the report covers the time before it$/m,
		'err: the sample says its report covers the time before the error' or diag $o;
	my $p = LjStacks::parse(join "\n", grep { !/^(?:start|time [\d.]+|ERROR: .*)$/ } split /\n/, $o);
	is_deeply LjStacks::bad($p, 'err', $o), [], 'err: well-formed stacks' or diag $o;
	# (when the guard trips depends on the host's load: in CI it tripped
	# during luajit's start-up, before one() and two() ran)
	my ($samples) = $o =~ /^WARNING: lj-lua-alloc: \d+ allocations, \d+ bytes; (\d+) samples of $RATE bytes/m;
	ok $samples, 'err: the summary is printed, with the samples taken (' . ($samples // '?') . ')' or diag $o;
	ok $p->{total} > 0 && $p->{total} <= ($samples // 0) * $RATE,
		"err: the bytes sampled before the error are printed ($p->{total})" or diag $o;
}
if (my $case = $c->{few}) {
	my $o = $case->{output};
	is $case->{status}, 0, 'maxstacks 1: staprun status 0' or diag $o;
	my $p = LjStacks::parse(join "\n", grep { !/^(?:start|time [\d.]+)$/ } split /\n/, $o);
	is scalar @{ $p->{stacks} }, 1, 'maxstacks 1: one stack printed' or diag $o;
	my ($lost) = $o =~ /^WARNING: lj-lua-alloc: limit hit: (\d+) bytes of stacks beyond the first 1 distinct ones are not printed; --arg maxstacks=N raises it$/m;
	ok $lost, 'maxstacks 1: stderr says how many bytes the limit left out, and which option raises it (' . ($lost // '?') . ')' or diag $o;
	my ($samples, $faults) = $o =~ /; (\d+) samples of $RATE bytes, \d+ without a Lua stack, (\d+) faults$/m;
	is(($lost // 0) + $p->{total} + ($faults // 0) * $RATE, ($samples // -1) * $RATE,
		'maxstacks 1: printed + left out + faulted = the bytes sampled') or diag $o;
}
if (my $case = $c->{master}) {
	my $o = $case->{output};
	is $case->{status}, 0, 'master: staprun status 0' or diag $o;
	my ($master, @workers) = $o =~ /^# master: (\d+) workers: (\d+) (\d+)/m;
	is scalar(@workers), 2, 'master: two workers' or diag $o;
	my $p = LjStacks::parse(LjGc::stdout_of($o));
	is_deeply LjStacks::bad($p, 'master', $o), [], 'master: well-formed stacks' or diag $o;
	ok $p->{total} > 0, "master: bytes sampled ($p->{total})" or diag $o;
	my %w = map { ("worker $_" => 1) } @workers;
	is LjStacks::count_with($p, sub { !$w{ $_[-1] } }), 0, 'master: every stack ends in "worker PID" of a worker (not the master)'
		or diag $o;
	for my $w (@workers) {
		my $n = LjStacks::count_with($p, sub { $_[-1] eq "worker $w" });
		ok $n >= 0.05 * $p->{total}, "master: worker $w sampled ($n of $p->{total} bytes)" or diag $o;
	}
	my $str = LjStacks::count_with($p, sub { $_[0] eq 'string' });
	ok $str >= 0.5 * $p->{total}, "master: strings (demo:go's) hold the most bytes ($str of $p->{total})" or diag $o;
	note "master: $_" for grep { /^WARNING: / } split /\n/, $o;
}
done_testing;
