#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-alloc end to end with the luajit CLI (GC64), in the VM (one boot):
# t/apps/leak/alloc.lua allocates tables 1:2 from one() and two() (it
# counts them: the truth); with the JIT on and off, armed all the time,
# the sampled bytes split as the app's tables within 3 points (the run
# reaches the floor of samples for that), the leaf is the type (table).
# Armed in windows (100 ms of every 1000 ms, what users run), the split
# holds within the tolerance of its samples, stderr counts the windows,
# and the slowdown of the workload with the module loaded (its own CPU
# time per round, with and without) is measured and printed.
# Then --master with two nginx workers under wrk on the leak app (module
# built with --master -, run as 'staprun MOD.ko stapxx_master=MASTER'):
# every stack ends in the root frame "worker PID" of one of the workers,
# both sampled, strings hold the most bytes, the master is not sampled.
# Last, a session that SystemTap ends on an error (its overload guard)
# still prints what it measured before it, and says so; and with a limit of
# one distinct stack (maxstacks=1 at run time) one stack is printed and
# stderr says how many bytes the limit left out and which option raises it.
# Every workload is started by 'staprun -c': it runs once the module's
# begin probe has run (the sign that sampling started).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjStacks;
use LjGc;
use LjAlloc;
use Pprof;
use Stats;
use Bpf;
use POSIX qw(ceil);
use Cwd ();
use Test::More;

my $vm = VM->new;
my $RATE = 512;
my $CLAIM = 3;    # points: one() 33.3 +- 3 with the module armed all the time
# Samples are the independent events of a byte share: one per RATE bytes
# on average, each picks the allocation it lands in (all tables are the
# same size).  A {i, i, i} table is 96 bytes on GC64 (a 64-byte GCtab with
# its 4 array slots colocated), 300 per round: the rounds that reach the
# floor of one()'s share, with a margin for the start-up's allocations and
# the random gaps.
my $FLOOR = Stats::floor(1 / 3, $CLAIM);
my $ROUNDS = ceil(1.25 * $FLOOR * $RATE / (300 * 96));
# Armed 100 ms of every 1000 ms: the slowdown shrinks with the share of
# time armed.  Those runs last two periods and a half of the app's own
# wall clock (stderr counts at least two windows).
my $PERIOD = 1000;
my $WIN_S = 2.5 * $PERIOD / 1000;
my $lj = "$ROOT/build/luajit-gc64/bin/luajit";
my $app = "$ROOT/t/apps/leak/alloc.lua";
# Under TCG the probes take a share of the CPU that no hardware sees (a
# sample's stack walk costs 100-500 us there): SystemTap's overload guard
# (50% of a CPU) stopped the JIT case, and even at 90% it stopped it in CI
# when the host was busy.  So these modules are built without the guard...
my @over = ('-D', 'STP_NO_OVERLOAD');
# ...and one with a guard that trips on any machine: 20 million cycles of
# probes in an interval of 1,000 million (2%).  Armed all the time, a
# workload that does nothing but allocate spends far more than that in
# the probes (under TCG 60-75%; on hardware a sampled allocation's stack
# walk alone costs more than the allocation between two of them).
# SystemTap checks the first probe alone (cycles since 0 exceed the
# interval), and a first sample's symbol lookup took 25 million cycles
# under load: the guard may trip there, at LuaJIT's start-up, before
# one() runs; the report must be printed either way.  It shows what a
# user gets when a session ends on an error: the report of what was
# measured before it.
my @trip = ('-D', 'STP_OVERLOAD_THRESHOLD=20000000LL');
# The windowed cases load the armed-all-the-time module with on and period
# set at load time (WIN_PARAMS): one build less, and staprun's module
# parameters for them tested end to end.
my $WIN_PARAMS = "stapxx_on=100 stapxx_period=$PERIOD";
# Debian's luajit CLI (stripped): no symbol for the allocation
# functions, so the module probes g->allocf, which stap++ reads from a
# process of that binary running on the host (--sample-pid); the module
# runs in the guest against another process of it.
my $deb = "$ROOT/build/debian/luajit/usr/bin/luajit";
my $host_app = LjAlloc::running($deb);
# Debian's stock nginx (stripped libluajit2): the allocator is in the
# library; found from a worker on the host, run with --master in the guest.
my $host_ngx = do {
	local $ENV{LEAK_APP_DIR} = "$ROOT/t/apps/leak";
	Bpf::nginx(conf => 't/apps/leak/nginx.conf', workers => 1, url => '/ping', stock => 1);
};
run_cmd('curl', '-s', "http://127.0.0.1:$host_ngx->{port}/go?n=0");
my ($ko, $kom, $koe, $kod, $kos) = $vm->builds(    # two at a time
	['ljalloc', 'samples/lj-lua-alloc.sxx', exec => 'build/luajit-gc64/bin/luajit',
	 args => ['--arg', "rate=$RATE", '--arg', 'on=1000', '--arg', 'period=1000', @over]],
	['ljalloc_master', 'samples/lj-lua-alloc.sxx', exec => 'build/nginx/sbin/nginx',
	 args => ['--master', '-', '--arg', 'time=3', '--arg', 'on=1000', '--arg', 'period=1000', @over]],
	['ljalloc_err', 'samples/lj-lua-alloc.sxx', exec => 'build/luajit-gc64/bin/luajit',
	 args => ['--arg', "rate=$RATE", '--arg', 'on=1000', '--arg', 'period=1000', @trip]],
	['ljalloc_deb', 'samples/lj-lua-alloc.sxx',
	 args => ['--sample-pid', $host_app->{pid}, '--arg', "rate=$RATE", '--arg', 'on=1000', '--arg', 'period=1000', @over]],
	['ljalloc_stock', 'samples/lj-lua-alloc.sxx',
	 args => ['--sample-pid', $host_ngx->{workers}[0], '--master', '-', '--arg', 'time=3', '--arg', 'on=1000',
		  '--arg', 'period=1000', @over]]);
LjAlloc::stop($host_app);
Bpf::nginx_stop($host_ngx);
ok $ko, 'lj-lua-alloc builds for the luajit CLI, armed all the time';
ok $kom, 'lj-lua-alloc builds in master mode for nginx (--master -)';
ok $koe, 'lj-lua-alloc builds with an overload guard that trips';
ok $kod, "lj-lua-alloc builds for Debian's stripped luajit, from a running process of it";
ok $kos, "lj-lua-alloc builds in master mode for Debian's stock nginx, from a running worker of it";

# (staprun -c ends with the workload: the timeouts only catch a hang)
for my $mode (qw(jit nojit)) {
	$vm->case($mode => qq{timeout -s INT -k 10 90 staprun -c "$lj $app $mode $ROUNDS" "\$VM_JOB"/ljalloc.ko},
		files => [$ko], timeout => 120) if $ko;
	$vm->case("base_win_$mode" => "$lj $app $mode 1 $WIN_S");
	$vm->case("win_$mode" => qq{timeout -s INT -k 10 60 staprun -c "$lj $app $mode 1 $WIN_S" "\$VM_JOB"/ljalloc.ko $WIN_PARAMS},
		files => [$ko], timeout => 90) if $ko;
}
$vm->case(debian => qq{timeout -s INT -k 10 90 staprun -c "$deb $app jit $ROUNDS" "\$VM_JOB"/ljalloc_deb.ko},
	files => [$kod], timeout => 120) if $kod;
# one distinct stack kept: one() and two() make two at least, in any round
$vm->case(few => qq{timeout -s INT -k 10 60 staprun -c "$lj $app jit 10" "\$VM_JOB"/ljalloc.ko maxstacks=1},
	files => [$ko], timeout => 90) if $ko;
$vm->case(err => qq{timeout -s INT -k 10 60 staprun -c "$lj $app jit 10000" "\$VM_JOB"/ljalloc_err.ko},
	files => [$koe], timeout => 90) if $koe;
$vm->case(master => LjGc::leak_master_case(module => 'ljalloc_master.ko', counts => 0, n => 100),
	files => [$kom], timeout => 120) if $kom;
$vm->case(master_stock => LjGc::leak_master_case(module => 'ljalloc_stock.ko', counts => 0, n => 100, LjGc::stock_case($vm)),
	files => [$kos], timeout => 120) if $kos;
my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors' or diag $r->{stderr};
my $c = $r->{cases};

# The split of one case (LjAlloc::check_split), its status first.
sub check_split {
	my ($name, $case, %o) = @_;
	is $case->{status}, 0, "$name: staprun status 0" or diag $case->{output};
	return LjAlloc::check_split($name, $case->{output}, $RATE, %o);
}

for my $mode (qw(jit nojit)) {
	if (my $case = $c->{$mode}) {
		my $p = check_split($mode, $case, claim => $CLAIM);
		if ($mode eq 'jit') {
			# the real output as a pprof profile, read back by go tool pprof
			Pprof::init($vm->out . '/pprof');
			Pprof::check_real('alloc', LjAlloc::stacks_of($case->{output}), types => 'space/bytes',
				frames => ['alloc.lua:one', 'alloc.lua:two']);
		}
	}
	if (my $case = $c->{"win_$mode"}) {
		my $o = $case->{output};
		check_split("windows $mode", $case);
		my ($win) = $o =~ /^WARNING: lj-lua-alloc: armed 100 ms of every $PERIOD ms \(10%\): (\d+) windows/m;
		ok $win && $win >= 2, "windows $mode: armed in windows, stderr says how many (" . ($win // '?') . ')' or diag $o;
		# the slowdown: CPU time per round, with the module and without
		my %per;
		for my $k ("win_$mode", "base_win_$mode") {
			my ($t, $n) = ($c->{$k}{output} // '') =~ /^time ([\d.]+)\nrounds (\d+)$/m;
			$per{$k} = $t / $n if $t && $n;
		}
		ok $per{"win_$mode"} && $per{"base_win_$mode"}, "windows $mode: the workload's CPU time per round with and without the module"
			or diag $o;
		note sprintf('windows %s: slowdown %.2fx (%.3f ms per round with the module, %.3f ms without)', $mode,
			$per{"win_$mode"} / $per{"base_win_$mode"}, 1000 * $per{"win_$mode"}, 1000 * $per{"base_win_$mode"})
			if $per{"win_$mode"} && $per{"base_win_$mode"};
	}
}
# Without debug info the allocator's caller is unknown, so is the type;
# the VM is found from the allocator's state.  Before lua_newstate has
# made the VM (its own first allocations: the global_State, the main
# thread, the string table...), a sample has no VM to walk: at most the
# bytes of those, a few samples.
if (my $case = $c->{debian}) {
	my $o = $case->{output};
	check_split("debian's luajit", $case, claim => $CLAIM, type => '(type unknown)');
	my ($samples) = $o =~ /^WARNING: lj-lua-alloc: \d+ allocations, \d+ bytes; (\d+) samples of/m;
	my ($novm) = $o =~ /^WARNING: lj-lua-alloc: (\d+) samples left out: their LuaJIT VM was not found/m;
	ok $samples && ($novm // 0) <= 32 * 1024 / $RATE, "debian's luajit: samples without a VM: at most the VM's own start-up ("
		. ($novm // 0) . " of " . ($samples // '?') . ')' or diag $o;
	my $p = LjStacks::parse(LjAlloc::stacks_of($o));
	is LjStacks::count_with($p, sub { $_[0] ne '(type unknown)' }), 0, "debian's luajit: every leaf is (type unknown)"
		or diag $o;
	# (the file as the process's maps name it: its real path)
	like $o, qr/^WARNING: lj-lua-alloc: no symbols for LuaJIT's lj_mem_newgco and lj_mem_realloc: probing the allocator they call, g->allocf \(stapxx_lj_allocf in \Q${\ Cwd::abs_path($deb)}\E\), which tells no object type/m,
		"debian's luajit: stderr says the allocator is probed at g->allocf" or diag $o;
	is LjStacks::count_with($p, sub { grep { /stapxx_lj_allocf/ } @_ }), 0, "debian's luajit: the allocator's symbol (stap++'s) is no frame"
		or diag $o;
}
# The session ends on SystemTap's error; the error probe still prints the
# report, and says so.
if (my $case = $c->{err}) {
	my $o = $case->{output};
	isnt $case->{status}, 0, 'err: staprun fails (the overload guard tripped)' or diag $o;
	like $o, qr/^ERROR: probe overhead \(\d+ cycles\) exceeded threshold/m, 'err: SystemTap says why' or diag $o;
	like $o, qr/^WARNING: lj-lua-alloc: the session ended on the error above; the report covers the time before it$/m,
		'err: the sample says its report covers the time before the error' or diag $o;
	my $p = LjStacks::parse(LjAlloc::stacks_of($o));
	is_deeply LjStacks::bad($p, 'err', $o), [], 'err: well-formed stacks' or diag $o;
	# When the guard trips depends on the host's load: it may trip at the
	# first probes, during luajit's start-up, before one() and two() ran,
	# where a sample can fault (a CI run had no stack to print).  So
	# what is checked is the account: every byte sampled before the error
	# is printed, or counted as faulted or left out by the limit.
	LjAlloc::accounted('err', $o, $RATE);
}
if (my $case = $c->{few}) {
	my $o = $case->{output};
	is $case->{status}, 0, 'maxstacks 1: staprun status 0' or diag $o;
	my $p = LjAlloc::accounted('maxstacks 1', $o, $RATE);
	is scalar @{ $p->{stacks} }, 1, 'maxstacks 1: one stack printed' or diag $o;
	my ($lost) = $o =~ /^WARNING: lj-lua-alloc: limit hit: (\d+) bytes of stacks beyond the first 1 distinct ones are not printed; --arg maxstacks=N raises it$/m;
	ok $lost, 'maxstacks 1: stderr says how many bytes the limit left out, and which option raises it (' . ($lost // '?') . ')' or diag $o;
}
for my $name (qw(master master_stock)) {
	my $case = $c->{$name} or next;
	my $o = $case->{output};
	is $case->{status}, 0, "$name: staprun status 0" or diag $o;
	my ($master, @workers) = $o =~ /^# master: (\d+) workers: (\d+) (\d+)/m;
	is scalar(@workers), 2, "$name: two workers" or diag $o;
	my $p = LjStacks::parse(LjGc::stdout_of($o));
	is_deeply LjStacks::bad($p, $name, $o), [], "$name: well-formed stacks" or diag $o;
	ok $p->{total} > 0, "$name: bytes sampled ($p->{total})" or diag $o;
	my %w = map { ("worker $_" => 1) } @workers;
	is LjStacks::count_with($p, sub { !$w{ $_[-1] } }), 0, "$name: every stack ends in \"worker PID\" of a worker (not the master)"
		or diag $o;
	for my $w (@workers) {
		my $n = LjStacks::count_with($p, sub { $_[-1] eq "worker $w" });
		ok $n >= 0.05 * $p->{total}, "$name: worker $w sampled ($n of $p->{total} bytes)" or diag $o;
	}
	LjAlloc::check_leak_go($name, $p, $o, stock => $name eq 'master_stock');
	note "$name: $_" for grep { /^WARNING: / } split /\n/, $o;
}
done_testing;
