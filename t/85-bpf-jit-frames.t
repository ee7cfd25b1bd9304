#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# Inside JIT traces, --runtime=bpf shows the frames a trace inlined, from
# its snapshots (lib/bpf/snapshot.c), and the C function a trace called as
# the leaf, named even without a symbol.  t/apps/inline.lua: step() calls
# alpha(), beta() and gamma(), which call nap() 1, 2 and 3 times; nap()
# calls a C function through the FFI and checks its result.  -jdump shows
# that step() is one trace holding all six calls (the helpers inlined),
# so their frames are nowhere on the Lua stack.
#
# - CPU (lj-lua-stacks): nap() calls libc's memset (its variant has no
#   symbol in Debian's libc: "C:libc.so.6+0x..."), or a function of a
#   library built here that has a local symbol only ("C:burn"), or none
#   (the library stripped: "C:libburn-stripped.so+0x...").  Each helper's
#   share of the samples in them is 1:2:3 within 2 points, on the samples
#   that claim needs (at 4,000 samples a second); each such stack is the C
#   leaf, the trace, nap at the line of its call, the helper, step.
# - Off-CPU (lj-lua-off-cpu): nap() blocks in usleep (2 ms): each helper's share
#   of the time blocked within 3 points of the app's own clock around its
#   usleeps (under load a wait lasts as long as the scheduler makes it),
#   on the waits that claim needs.
# The debug builds (GC64, whose snapshots keep frame links as constants,
# and non-GC64, which keeps them after the PC), a GC64 copy without
# symbols (the layout database) and Debian's stripped luajit CLI.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use LjStacks;
use LjWait;
use Bpf;
use Stats;
use JitFrames;
use POSIX qw(ceil);
use File::Path qw(make_path remove_tree);
use Test::More;

my $app = $JitFrames::APP;
my ($STEP, %CALL) = ($JitFrames::STEP, %JitFrames::CALL);
my ($CPU_CLAIM, $OFF_CLAIM) = (2, 3);
# gamma's share needs the most; a few samples fall outside the helpers'
# calls (the trace's own code, the interpreter between rounds)
my $SAMPLES = ceil(1.05 * Stats::floor(1 / 2, $CPU_CLAIM));
my $ROUNDS = ceil(1.1 * Stats::floor(1 / 2, $OFF_CLAIM) / 6);    # six waits a round
# Each usleep, in us.  The app's clock around a wait also holds any time
# it was preempted in that window (runnable, not blocked), which the
# sample does not count: under heavy load one preemption of a few ms lands
# on one helper (at 300 us, make check beside a build loop once measured
# beta 34.2% and gamma 49.0% against an app's account of 31.1% and
# 53.8%).  At 2 ms it weighs a seventh as much; the waits cost no CPU
# time.
my $U = 2000;

# A library whose function burn() has a local symbol, and a stripped copy
# (no .symtab: only burn_ptr, in .dynsym, has a name).
my $dir = "$ROOT/t/out/jit-frames.$$";
END { remove_tree($dir) if $dir }
make_path($dir);
open(my $fh, '>', "$dir/burn.c") or die "$dir/burn.c: $!";
print $fh "static long burn(long n)\n{\n\tvolatile long i;\n\tfor (i = 0; i < n; i++)\n\t\t;\n"
	. "\treturn n;\n}\nvoid *burn_ptr(void) { return (void *)burn; }\n";
close $fh;
my ($rc, $o) = run_cmd({ merge => 1 }, 'cc', '-O1', '-shared', '-fPIC', '-o', "$dir/libburn.so", "$dir/burn.c");
is $rc, 0, 'the burn library builds' or diag $o;
($rc, $o) = run_cmd({ merge => 1 }, 'sh', '-c', "cp $dir/libburn.so $dir/libburn-stripped.so && strip --strip-all $dir/libburn-stripped.so && readelf -S $dir/libburn-stripped.so");
is $rc, 0, 'the library strips' or diag $o;
unlike $o, qr/\.symtab/, 'its stripped copy has no symbol table';
($rc, $o) = run_cmd({ merge => 1 }, 'nm', "$dir/libburn.so");
like $o, qr/^[0-9a-f]+ t burn$/m, 'burn is a local symbol of the library';

# -jdump: the trace that starts at step() holds the six FFI calls.
sub one_trace {
	my ($name, $lj, @args) = @_;
	my ($rc, $out) = run_cmd({ merge => 1 }, $lj, '-jdump=i', $app, $args[0], 300, '-', @args[1 .. $#args]);
	my ($ir) = $out =~ /^---- TRACE \d+ start inline\.lua:$STEP\n(.*?)^---- TRACE \d+ (?:stop|abort)/ms;
	my $calls = () = ($ir // '') =~ /\bCALLXS\b/g;
	is $calls, 6, "$name: -jdump: step()'s trace holds the six calls of the helpers it inlined"
		or diag $out;
}

sub helpers { JitFrames::helpers(@_) }
sub check_split { local $Test::Builder::Level = $Test::Builder::Level + 1; JitFrames::check_split(@_) }

my %lj = map { $_ => "$ROOT/build/luajit-$_/bin/luajit" } qw(gc64 nogc64);
one_trace($_, $lj{$_}, 'cpu') for qw(gc64 nogc64);
one_trace('gc64 burn', $lj{gc64}, 'burn', 200000, "$dir/libburn.so");

my $LIBC = qr/^C:libc\.so\.6\+0x[0-9a-f]+$/;
my @cpu = (
	['gc64', $lj{gc64}, 'cpu', $LIBC],
	['nogc64', $lj{nogc64}, 'cpu', $LIBC],
	['gc64 stripped', Bpf::stripped($lj{gc64}), 'cpu', $LIBC],
	['gc64, a local symbol', $lj{gc64}, 'burn', qr/^C:burn$/, "$dir/libburn.so"],
	['nogc64, no symbol', $lj{nogc64}, 'burn', qr/^C:libburn-stripped\.so\+0x[0-9a-f]+$/,
	 "$dir/libburn-stripped.so"],
);
for my $c (@cpu) {
	my ($name, $luajit, $what, $leaf, $lib) = @$c;
	my $pid = Bpf::spawn($luajit, $app, $what, 0, '-', $lib ? (200000, $lib) : ());
	ok Bpf::ready($pid), "$name: the target runs";
	my ($st, $out, $err, $p) = Bpf::stacks_samples(['-x', $pid], [$pid], $SAMPLES, 'lines=1', 'hz=4000');
	kill 'TERM', $pid;
	waitpid($pid, 0);
	is $st, 0, "$name: status 0" or diag $err;
	my ($n, $other, $instep) = helpers($p, $leaf, $CALL{$what});
	my $sum = 0;
	$sum += $_ for values %$n;
	check_split("$name, CPU", $n, $sum, $CPU_CLAIM, 'samples');
	ok $instep >= 0.8 * $sum, "$name: $instep of those $sum samples are in step()'s trace, its frames restored";
	is $other, 0, "$name: every stack through nap with a C leaf is the leaf, the trace (or the FFI), nap at its call's line, a helper, step"
		or diag LjStacks::dump_stacks($p, 12);
	ok $sum >= 0.9 * $p->{total}, "$name: $sum of the $p->{total} samples are in the helpers' C calls"
		or diag LjStacks::dump_stacks($p, 12);
}

my @off = (
	['gc64', $lj{gc64}],
	['nogc64', $lj{nogc64}],
	['debian luajit', "$ROOT/build/debian/luajit/usr/bin/luajit"],
);
for my $c (@off) {
	my ($name, $luajit) = @$c;
	my $r = Bpf::go_session(sample => 'lj-lua-off-cpu', args => ['lines=1'],
		cmd => [$luajit, $app, 'offcpu', $ROUNDS, 'GO', $U]);
	ok $r->{started}, "$name: the session started";
	ok $r->{ended}, "$name: the session ended when the target did";
	is $r->{status}, 0, "$name: status 0" or diag $r->{err};
	like $r->{app}, qr/^rounds $ROUNDS$/m, "$name: the app ran its $ROUNDS rounds";
	my $p = LjWait::parse("$r->{out}\n$r->{err}", 'lj-lua-off-cpu');
	my ($n, $other, $instep) = helpers($p, qr/^C:\w*(?:nanosleep|usleep)$/, $CALL{offcpu});
	my $us = 0;
	$us += $_ for values %$n;
	ok $instep >= 0.5 * $us, "$name: $instep of those $us us are in step()'s trace, its frames restored";
	# (the time's share, on the waits behind it: all of equal length)
	my $waits = $p->{wait}{waits} // 0;
	ok $waits >= 6 * $ROUNDS * 0.99, "$name: $waits waits of the app's " . 6 * $ROUNDS;
	# the truth: the app's own clock around each helper's usleeps
	my %acct = $r->{app} =~ /^acct (alpha|beta|gamma) (\d+)$/mg;
	my $sum = 0;
	$sum += $_ for values %acct;
	ok $sum > 0, "$name: the app's account of its helpers' time in usleep ($sum us)";
	check_split("$name, off-CPU", { map { $_ => $waits * ($n->{$_} // 0) / ($us || 1) } keys %$n },
		    $waits, $OFF_CLAIM, 'waits', { map { $_ => ($acct{$_} // 0) / ($sum || 1) } keys %acct });
	is $other, 0, "$name: every wait through nap is the C leaf, the trace (or the FFI), nap at its call's line, a helper, step"
		or diag LjStacks::dump_stacks($p, 12);
	ok $us >= 0.95 * $p->{total}, "$name: $us of the $p->{total} us off CPU are in the helpers' calls"
		or diag LjStacks::dump_stacks($p, 12);
}

done_testing;
