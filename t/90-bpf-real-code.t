#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-stacks --runtime=bpf on real Lua code (issue 26):
# t/apps/realistic.lua parses, transforms and renders with Debian's Lua
# libraries (LPeg, Penlight, dkjson, cjson), JIT and interpreted, in
# stacks 8 to 12 Lua frames deep: hundreds of distinct stacks, most of
# them new while the session runs, each named in user space as it comes.
#
# - The session ends on time: a 2 s session of a one-thread target at
#   1,000 samples a second takes at most 2,000 samples (and a few for the
#   timer's slack).  Naming a burst of new stacks once held the loop for a
#   minute, sampling all along (15,000 samples for `time=5`).
# - The stacks are named while their functions live: at most 0.2% of the
#   samples (plus 4 standard deviations of their count) lost because the
#   target's memory was gone before the stack was named (14% were, when
#   each value named was two system calls).
# - A function freed before its stack was named is named by what the
#   sample read: pl.template compiles each page with load(), so its
#   function dies with the request.  With stap++ stopped for 200 ms of
#   every 250 (a host too busy to run it), 7-10% of the samples were lost
#   to memory gone, and a name read from the reused memory could be
#   another function's; now they show the chunk by its first line, and
#   none is lost.
# - The libraries' functions are on the stacks, by name or file:line.
# - At most 1% of the samples skipped (LjStacks::skipped_ok), and the reads
#   of the target's memory per sample are bounded (see t/70).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use LjStacks;
use Bpf;
use Stats;
use Test::More;

my $lj = "$ROOT/build/luajit-gc64/bin/luajit";
my $app = "$ROOT/t/apps/realistic.lua";
my ($HZ, $SECS) = (1000, 2);
# 4 Lua frames a level deeper than the seed app's (t/70: 56), and the
# snapshots of longer traces
my $READS = 80;

for my $mode (qw(jit nojit)) {
	my $pid = Bpf::spawn($lj, $app, 0, $mode);
	# (the libraries loaded, the first requests done)
	sleep 0.05 until Bpf::cpu($pid) >= 0.3 || !kill 0, $pid;
	my ($st, $out, $err, $p) = Bpf::stacks(['-x', $pid], "time=$SECS");
	kill 'TERM', $pid;
	waitpid($pid, 0);
	is $st, 0, "$mode: status 0" or diag $err;
	my $s = $p->{stats} // {};
	my $taken = $s->{samples} // 0;
	ok $taken > 0 && $taken <= $HZ * $SECS * 1.02 + 20,
		"$mode: the $SECS s session ended on time: $taken samples taken at $HZ a second";
	my $gone = gone($err);
	my $tol = $taken ? Stats::tolerance(0.002, $taken) : 0;
	ok $taken && 100 * $gone / $taken <= 0.2 + $tol,
		sprintf('%s: %d of %d samples lost to memory gone before the stack was named (at most 0.2%% + %.2f points)',
			$mode, $gone, $taken, $tol);
	my $n = @{ $p->{stacks} // [] };
	ok $n >= 100, "$mode: $n distinct stacks";
	for my $lib (qw(dkjson.lua stringx.lua template.lua tablex.lua)) {
		my $k = LjStacks::count_with($p, sub { grep { /^\Q$lib\E:\w/ } @_ });
		ok $k > 0, "$mode: $k samples in stacks through $lib";
	}
	LjStacks::skipped_ok($mode, $p);
	Bpf::check_reads($mode, $err, 'lj-lua-stacks', 'sample', $READS);
}

# gone: the count of the "memory was gone" line in ERR (0 without it).
sub gone {
	my ($err) = @_;
	my ($n) = $err =~ /^WARNING: lj-lua-stacks: (\d+) samples skipped: the target's memory was gone before the stack was named$/m;
	return $n // 0;
}

{
	my $pid = Bpf::spawn($lj, $app, 0, 'jit');
	sleep 0.05 until Bpf::cpu($pid) >= 0.3 || !kill 0, $pid;
	my $h = Bpf::start(['-x', $pid], "time=$SECS");
	ok $h->{started}, 'starved: the session started';
	# stap++ runs 50 ms of every 250 until the session ends
	until (Bpf::wait_end($h, 0.05)) {
		kill 'STOP', $h->{pid};
		select(undef, undef, undef, 0.2);
		kill 'CONT', $h->{pid};
	}
	my ($st, $out, $err, $p) = Bpf::finish($h);
	kill 'TERM', $pid;
	waitpid($pid, 0);
	is $st, 0, 'starved: status 0' or diag $err;
	my $taken = $p->{stats}{samples} // 0;
	my $gone = gone($err);
	my $tol = $taken ? Stats::tolerance(0.002, $taken) : 0;
	ok $taken && 100 * $gone / $taken <= 0.2 + $tol,
		sprintf('starved: %d of %d samples lost to memory gone (at most 0.2%% + %.2f points)',
			$gone, $taken, $tol);
	my ($freed) = $err =~ /^WARNING: lj-lua-stacks: (\d+) samples in stacks with a function the target freed before the stack was named/m;
	ok $freed, sprintf('starved: %d samples in stacks with a function freed before they were named', $freed // 0);
	my $tmp = LjStacks::count_with($p, sub { grep { /^\[string "TMP"\]:\d+$/ } @_ });
	ok $tmp > 0, "starved: $tmp samples in pl.template's compiled pages, by their first line";
	LjStacks::skipped_ok('starved', $p);
}

done_testing;
