#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# Inside JIT traces, the SystemTap backend shows the frames a trace
# inlined, from its snapshots (tapset/luajit_snap.sxx), as the eBPF backend
# does (t/85), in the VM (one boot).  t/apps/inline.lua: step() calls
# alpha(), beta() and gamma(), which call nap() 1, 2 and 3 times; nap()
# calls a C function through the FFI and checks its result; -jdump (t/85)
# shows that step() is one trace holding all six calls.
#
# - CPU (lj-lua-stacks, lines=1, 4,000 samples a second): nap() calls a
#   function of a library built here, which spins: for GC64, burn() has a
#   local symbol; for non-GC64, a stripped copy of the library, where it
#   has no symbol at all and is named from .eh_frame_hdr (stap++ gives stap
#   a symbol table that names every function of a stripped file), as
#   "C:libburn-stripped.so+0xADDR" at burn's address in the unstripped
#   library, as the eBPF backend names it (t/85); the module names the
#   library with -d.  Each helper's share of the
#   samples in the helpers is 1:2:3 within 4 points, on the samples that
#   claim needs at the design effect of the guest's samples
#   ($VM::SAMPLE_DESIGN: 2 points on independent ones); each such stack is the C leaf, the trace, nap at the line
#   of its call, the helper, step; the statistics count the samples in JIT
#   code by where they were, and those that show only the frames both
#   snapshots around them hold.  Debug builds, GC64 and non-GC64.  And a
#   GC64 copy without symbols or DWARF (the layout database) calling the
#   stripped library: the same leaf and stacks (a few hundred samples).
# - Off-CPU (lj-lua-off-cpu, lines=1): nap() blocks in usleep: each
#   helper's share of the time blocked within 3 points of the app's own
#   clock around its usleeps, on the waits that claim needs, none counted
#   as showing fewer frames (each is at a call the snapshots prove).  GC64,
#   non-GC64, and a GC64 copy without symbols or DWARF (the layout
#   database; the leaf named by libc's symbols there too).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjStacks;
use LjWait;
use Bpf;
use Stats;
use JitFrames;
use POSIX qw(ceil);
use Test::More;

my $vm = VM->new;
my ($CPU_CLAIM, $OFF_CLAIM) = (4, 3);
# gamma's share needs the most; some samples fall outside the helpers'
# calls (the app polling for the signal to start, the trace's own code,
# the interpreter between rounds: 1 to 6% seen; the first is left out of
# the check on them)
my $SAMPLES = ceil(1.2 * Stats::floor(1 / 2, $CPU_CLAIM, $VM::SAMPLE_DESIGN));
my $ROUNDS = ceil(1.1 * Stats::floor(1 / 2, $OFF_CLAIM) / 6);    # six waits a round
my $U = 2000;    # each usleep (t/63: under TCG a wait costs 0.2 ms on CPU)
my $app = $JitFrames::APP;

# The library whose burn() has only a local symbol (t/85), in t/out so
# that the guest sees it at the same path.
my $lib = $vm->out . '/libburn.so';
my ($rc, $o) = run_cmd({ merge => 1 }, 'sh', '-c', 'printf "%s\n" "static long burn(long n)" "{" '
	. '"volatile long i;" "for (i = 0; i < n; i++) ;" "return n;" "}" '
	. '"void *burn_ptr(void) { return (void *)burn; }" | cc -O1 -shared -fPIC -x c -o ' . $lib . ' -');
is $rc, 0, 'the burn library builds' or diag $o;
my $libs = $vm->out . '/libburn-stripped.so';
($rc, $o) = run_cmd({ merge => 1 }, 'strip', '--strip-all', '-o', $libs, $lib);
is $rc, 0, 'its stripped copy' or diag $o;
my ($burn) = `nm $lib` =~ /^0*([0-9a-f]+) t burn$/m;
ok $burn, "burn()'s address in the library: 0x" . ($burn // '?');
# (the naming needs no share: a few hundred stacks)
my $STRIP_SAMPLES = 1000;
# each build's library, and its name of burn()
my %burnlib = (gc64 => $lib, nogc64 => $libs);
my %burnleaf = (gc64 => 'C:burn', nogc64 => 'C:libburn-stripped.so+0x' . ($burn // '?'));

my %lj = map { $_ => "$ROOT/build/luajit-$_/bin/luajit" } qw(gc64 nogc64);
my $bare = Bpf::stripped($lj{gc64});
my @mods = (
	(map { ["cpu_$_", "ljjf_cpu_$_", 'samples/lj-lua-stacks.sxx', exec => $lj{$_},
		args => ['-d', $burnlib{$_}, '--arg', 'lines=1', '--arg', 'hz=4000']] } qw(gc64 nogc64)),
	# (t/63's modules: make test builds them once; lines=1 at load time)
	(map { ["off_$_", "offcpu_$_", 'samples/lj-lua-off-cpu.sxx', exec => "build/luajit-$_/bin/luajit"] }
	 qw(gc64 nogc64)),
	['off_strip', 'ljjf_off_strip', 'samples/lj-lua-off-cpu.sxx', exec => $bare],
	['cpu_strip', 'ljjf_cpu_strip', 'samples/lj-lua-stacks.sxx', exec => $bare,
		args => ['-d', $libs, '--arg', 'lines=1', '--arg', 'hz=4000']],
);
my %ko;
@ko{ map { $_->[0] } @mods } = $vm->builds(map { [@$_[1 .. $#$_]] } @mods);
ok $ko{ $_->[0] }, "$_->[2] builds for $_->[4]" for @mods;

for my $b (qw(gc64 nogc64)) {
	# (the module stops itself once it took the samples: stapxx_samples)
	$vm->case("cpu_$b" => LjWait::go_case(target => "$lj{$b} $app burn 0 \$go 20000 $burnlib{$b}",
		module => "ljjf_cpu_$b.ko", params => "stapxx_samples=$SAMPLES", timeout => 200),
		files => [$ko{"cpu_$b"}], timeout => 240) if $ko{"cpu_$b"};
}
$vm->case(cpu_strip => LjWait::go_case(target => "$bare $app burn 0 \$go 20000 $libs",
	module => 'ljjf_cpu_strip.ko', params => "stapxx_samples=$STRIP_SAMPLES", timeout => 200),
	files => [$ko{cpu_strip}], timeout => 240) if $ko{cpu_strip};
for my $b (qw(gc64 nogc64 strip)) {
	my $lj = $b eq 'strip' ? $bare : $lj{$b};
	$vm->case("off_$b" => LjWait::go_case(target => "$lj $app offcpu $ROUNDS \$go $U",
		module => ($b eq 'strip' ? 'ljjf_off_strip' : "offcpu_$b") . '.ko', params => 'show_lines=1',
		timeout => 200), files => [$ko{"off_$b"}], timeout => 240) if $ko{"off_$b"};
}

my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors' or diag $r->{stderr};
my $c = $r->{cases};

for my $b (qw(gc64 nogc64)) {
	my $name = "$b, CPU";
	my $case = $c->{"cpu_$b"};
	ok $case, "$name: the case ran" or next;
	is $case->{status}, 0, "$name: staprun status 0" or diag $case->{output};
	my $p = LjStacks::parse($case->{output});
	my ($n, $other, $instep) = JitFrames::helpers($p, qr/^\Q$burnleaf{$b}\E$/, $JitFrames::CALL{burn});
	my $sum = 0;
	$sum += $_ for values %$n;
	JitFrames::check_split($name, $n, $sum, $CPU_CLAIM, 'samples', undef, $VM::SAMPLE_DESIGN);
	ok $instep >= 0.8 * $sum, "$name: $instep of those $sum samples are in step()'s trace, its frames restored";
	is $other, 0, "$name: every stack through nap with a C leaf is the leaf, the trace (or the FFI), nap at its call's line, a helper, step"
		or diag LjStacks::dump_stacks($p, 12);
	# (the app's wait for the signal to start is left out: under load
	# the signal may come a second or more after the sampling started)
	my $start = LjStacks::count_with($p, sub { grep { $_ eq 'go.lua:wait' } @_ });
	ok $sum >= 0.9 * ($p->{total} - $start),
		"$name: $sum of the $p->{total} samples are in the helpers' C calls ($start before the workload started)"
		or diag LjStacks::dump_stacks($p, 12);
	# the statistics say where in the trace the samples were
	my ($jit, $call, $code, $loop, $none) = $case->{output} =~ /^WARNING: lj-lua-stacks: of the (\d+) samples in JIT code, (\d+) in a C function the trace called, (\d+) in the trace's own code, (\d+) in a loop's body before its first snapshot and (\d+) elsewhere/m;
	ok defined $jit && $call + $code + $loop + $none == $jit && $call >= 0.9 * $jit,
		"$name: the statistics count the samples in JIT code by where they were, most in a C function the trace called ("
		. join('/', map { $_ // '?' } $jit, $call, $code, $loop, $none) . ')';
	# a sample in the trace's own code shows only what both snapshots
	# around it hold (or no frames, a kind not restored), and is counted so
	my ($approx) = $case->{output} =~ /^WARNING: lj-lua-stacks: (\d+) samples in traces show only the frames that the snapshots around their position both hold/m;
	my ($kinds) = $case->{output} =~ /^WARNING: lj-lua-stacks: (\d+) samples in traces show no frames the trace inlined: their snapshot holds a frame/m;
	ok(($approx // 0) + ($kinds // 0) >= ($code // 1), "$name: the samples that show only the frames both snapshots hold are counted ("
		. ($approx // 0) . ' and ' . ($kinds // 0) . ' not restored, of them ' . ($code // '?') . ' in the trace\'s own code)');
}

{
	my $name = 'stripped luajit and library, CPU';
	my $case = $c->{cpu_strip};
	if (ok $case, "$name: the case ran") {
		is $case->{status}, 0, "$name: staprun status 0" or diag $case->{output};
		my $p = LjStacks::parse($case->{output});
		my $leaf = 'C:libburn-stripped.so+0x' . ($burn // '?');
		my ($n, $other) = JitFrames::helpers($p, qr/^\Q$leaf\E$/, $JitFrames::CALL{burn});
		my $sum = 0;
		$sum += $_ for values %$n;
		# (a few hundred samples: the app's wait for the signal to start
		# is a third of them, and is left out)
		my $start = LjStacks::count_with($p, sub { grep { $_ eq 'go.lua:wait' } @_ });
		ok $sum >= 0.9 * ($p->{total} - $start) && $p->{total} >= $STRIP_SAMPLES,
			"$name: $sum of the $p->{total} samples are in burn(), named $leaf ($start before the workload started)"
			or diag LjStacks::dump_stacks($p, 12);
		is $other, 0, "$name: every stack through nap with a C leaf is $leaf, the trace (or the FFI), nap at its call's line, a helper, step"
			or diag LjStacks::dump_stacks($p, 12);
	}
}

for my $b (qw(gc64 nogc64 strip)) {
	my $name = "$b, off-CPU";
	my $case = $c->{"off_$b"};
	ok $case, "$name: the case ran" or next;
	is $case->{status}, 0, "$name: staprun status 0" or diag $case->{output};
	my $p = LjWait::parse($case->{output}, 'lj-lua-off-cpu');
	my $leaf = qr/^C:\w*(?:nanosleep|usleep)(?:\@\@?[\w.]+)?$/;
	my ($n, $other, $instep) = JitFrames::helpers($p, $leaf, $JitFrames::CALL{offcpu});
	my $us = 0;
	$us += $_ for values %$n;
	ok $instep >= 0.5 * $us, "$name: $instep of those $us us are in step()'s trace, its frames restored";
	my $waits = $p->{wait}{waits} // 0;
	ok $waits >= 6 * $ROUNDS * 0.99, "$name: $waits waits of the app's " . 6 * $ROUNDS;
	my %acct = $case->{output} =~ /^# app: acct (alpha|beta|gamma) (\d+)$/mg;
	my $sum = 0;
	$sum += $_ for values %acct;
	ok $sum > 0, "$name: the app's account of its helpers' time in usleep ($sum us)";
	JitFrames::check_split($name, { map { $_ => $waits * ($n->{$_} // 0) / ($us || 1) } keys %$n },
		    $waits, $OFF_CLAIM, 'waits', { map { $_ => ($acct{$_} // 0) / ($sum || 1) } keys %acct });
	is $other, 0, "$name: every wait through nap is the C leaf, the trace, nap at its call's line, a helper, step"
		or diag LjStacks::dump_stacks($p, 12);
	unlike $case->{output}, qr/in traces show (?:only|no) (?:the )?frames/,
		"$name: no wait is counted as showing fewer frames than the trace inlined (each is at a call the snapshots prove)";
	ok $us >= 0.9 * $p->{total}, "$name: $us of the $p->{total} us off CPU are in the helpers' calls"
		or diag LjStacks::dump_stacks($p, 12);
}

done_testing;
