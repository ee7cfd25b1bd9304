#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-off-cpu --runtime=bpf on this host (sched_switch, no VM): a(),
# b(), c() of t/apps/wait.lua block in FFI usleep 1:2:3; the luajit CLI,
# GC64 with the JIT on, non-GC64 with it off, and a stripped copy of the
# non-GC64 one with it on (layouts from the database, the VM found from
# the registers).  The app times a(), b() and
# c() itself: the split must be the app's within 3 points, on as many
# waits as that claim needs (the app runs that many rounds, then exits,
# which ends the session, as the sample says).  The output is the SystemTap
# sample's: the type=us header, lj-lua-stacks format, the statistics lines
# (t/lib/LjWait.pm parses both alike).  Bad input: a thread blocked longer
# than the session (an open wait, counted up to the end) and min_us above
# every wait.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use LjStacks;
use LjWait;
use Bpf;
use Stats;
use POSIX qw(ceil);
use Time::HiRes qw(sleep);
use Test::More;
# What a stack taken at an event reads of the target's memory (issue 26):
# the same on any machine, so a bound holds it, as t/70's does for a
# sample (4 reads a Lua frame: its two slots, its function's header, its
# prototype's chunk name, the call instruction; about 5 to find the first):
# 36 to 47 (wait.lua's a(), b() and c() at their FFI call) on average on
# 2026-12-06, 49 to 60 before the reads were merged.
my $READS = 56;

my $CLAIM = 3;
# The independent events of a share of the time off CPU are the waits: a
# round makes 30 (5, 10, 15 usleeps); c()'s share (1/2) needs the most.
my $ROUNDS = ceil(1.1 * Stats::floor(1 / 2, $CLAIM) / 30);
my $FEW = 10;
my $U = 2000;
my $run = "$ROOT/t/apps/wait-run.lua";
my $frame_re = qr/^(?:[\w-]+\.lua(?::\w+)?|trace#\d+:\S+:\d+|$LjStacks::C_FRAME|builtin(?::\w+|#\d+))$/;

# Runs FUNC of wait-run.lua ROUNDS times under BUILD (gc64, nogc64) and
# MODE (jit, nojit) with a session started before the app's first wait
# (Bpf::go_session); ARGS: the session's --arg values; AFTER: as there.
# Returns (status, stdout, stderr, parsed with LjWait::parse, the app's
# accounting, the app's blocks: its voluntary context switches).
sub session {
	my (%o) = @_;
	my $r = Bpf::go_session(sample => 'lj-lua-off-cpu', args => $o{args}, after => $o{after},
		cmd => [$o{luajit} // "$ROOT/build/luajit-$o{build}/bin/luajit", $run, $o{rounds}, $o{mode}, $o{func} // 'offcpu', '.', 'GO', $U]);
	ok $r->{started}, "$o{name}: the session started";
	ok $r->{ended} || $o{after}, "$o{name}: the session ended when the target did";
	my $acct = LjWait::acct(join('', map { "# app: $_\n" } split /\n/, $r->{app}));
	my ($blocks) = $r->{app} =~ /^blocks (\d+)$/m;
	return ($r->{status}, $r->{out}, $r->{err}, LjWait::parse("$r->{out}\n$r->{err}", 'lj-lua-off-cpu'), $acct,
		$blocks);
}

# Every switch-out taken (the cost line's count) is accounted for on
# stderr: a wait in the graph, one not in it (no Lua stack, before the VM
# was found, skipped, shorter than min_us), or one dropped because its
# end was not seen; none is still open, the app having exited.  WAITS:
# the app's usleeps, each one switch-out; BLOCKS: the app's count of its
# voluntary context switches over its rounds, which are its usleeps and
# any other block (a page fault's, or the mmap lock's while the sample's
# user space reads the app's memory: once in a make test, 4,891 switch-
# outs for 4,890 usleeps).
sub accounted {
	my ($name, $err, $waits, $blocks) = @_;
	my $p = LjWait::parse($err, 'lj-lua-off-cpu');
	my $w = $p->{wait};
	my ($taken) = $err =~ /in the switch-out probe on average \((\d+) waits\)$/m;
	my ($nv) = $err =~ /(\d+) waits before the VM was found/;
	my ($unseen) = $err =~ /^WARNING: lj-lua-off-cpu: (\d+) waits dropped: the thread was not seen switched in/m;
	my $sum = 0;
	$sum += $_ // 0 for $w->{waits}, $w->{nolua}, $nv, $w->{skipped}, $w->{short}, $unseen;
	# (a usleep whose timer expired before the thread could block, under
	# load, is no block: 4,889 for 4,890 once)
	ok defined $blocks && $blocks >= 0.99 * $waits, "$name: the app blocked at its $waits usleeps, nearly all ("
		. ($blocks // 'no count') . ' blocks)';
	# the session also sees the app outside its rounds: where it polls
	# for GO, and where it writes its report and exits; a block in each
	# at most (302 switch-outs for 301 blocks over the rounds once)
	ok defined $taken && defined $blocks && $taken >= $blocks && $taken <= $blocks + 2,
		"$name: a switch-out per block of the app over its rounds, and at most 2 around them ("
		. ($taken // 'none') . ' for ' . ($blocks // 'no count') . ')' or diag $err;
	is $sum, $taken // -1, "$name: every switch-out accounted for on stderr ($sum"
		. ($unseen ? ", $unseen dropped unseen" : '') . ')' or diag $err;
	ok !$w->{open}, "$name: none still open at the end";
}

for my $c (['gc64', 'jit'], ['nogc64', 'nojit'], ['nogc64', 'jit', 'stripped']) {
	my ($b, $mode, $strip) = @$c;
	my $name = join ' ', grep { defined } $b, $mode, $strip;
	my ($st, $out, $err, $p, $acct, $blocks) = session(name => $name, build => $b, mode => $mode, rounds => $ROUNDS,
		luajit => $strip ? Bpf::stripped("$ROOT/build/luajit-$b/bin/luajit") : undef);
	my $w = $p->{wait};
	is $st, 0, "$name: status 0" or diag $err;
	is_deeply LjStacks::bad($p, $name), [], "$name: well-formed lj-lua-stacks output";
	like $out, qr/\A# stap\+\+ type=us\n/, "$name: the output's first line gives the unit (type=us)";
	my @garbage = grep { $_ !~ $frame_re } map { @{ $_->{frames} } } @{ $p->{stacks} };
	is_deeply \@garbage, [], "$name: every frame is a well-formed name" or diag $out;
	ok $p->{total} > 0 && defined $w->{graph_us} && $p->{total} == $w->{graph_us},
		"$name: the graph's total is the Lua off-CPU time on stderr ($p->{total} us)" or diag $err;
	like $err, qr/^WARNING: lj-lua-off-cpu: process \d+ exited; stopping$/m, "$name: a line says the process exited";
	ok $p->{total} <= ($w->{traced_us} // 0), "$name: the graph within the traced time ($w->{traced_us} us)";
	my @calls = map { ($acct->{$_} // {})->{calls} // 0 } qw(a b c);
	ok $calls[0] == $ROUNDS && $calls[1] == $ROUNDS && $calls[2] == $ROUNDS,
		"$name: the app ran a(), b() and c() $ROUNDS times each (@calls)";
	# the rest of the app's time in them is on CPU: the loop, the FFI call,
	# the switch-out probe (natively a few us of a 2 ms wait): 90%
	LjWait::check_abc($name, $p, $acct, $w->{waits}, $CLAIM, 90, $err);
	my @f = qw(a b c);
	my $tr = LjStacks::count_with($p, sub { grep { /^trace#\d+:wait\.lua:\d+$/ } @_ });
	if ($mode eq 'jit') {
		ok $tr >= 0.5 * $p->{total}, "$name: FFI calls from JIT traces show the trace frame ($tr of $p->{total} us)";
	} else {
		is $tr, 0, "$name: no trace frames with the JIT off";
	}
	like $err, qr/^WARNING: lj-lua-off-cpu: \d+\.\d us per wait in the switch-out probe on average \(\d+ waits\)$/m,
		"$name: the cost per wait is printed";
	Bpf::check_cost($name, $err, 'lj-lua-off-cpu', 'waits', 'switch-out probe');
	Bpf::check_reads($name, $err, 'lj-lua-off-cpu', 'wait', $READS);
	accounted($name, $err, 30 * $ROUNDS, $blocks);
	like $err, qr/^WARNING: lj-lua-off-cpu: us off CPU per process \(pid:us\): \d+:\d+$/m, "$name: the time per process";
	note sprintf('%s: %s of %d us in %d waits; %s', $name, join(', ', map { sprintf('%s %.1f%%', $_, LjWait::share($p, "wait.lua:$_")) } @f),
		$p->{total}, $w->{waits} // 0, join(', ', grep { /per wait/ } split /\n/, $err));
}

# blocked in one usleep of 30 s: the session ends (Ctrl-C) 2 s after the
# wait began, which is counted up to the end, in the graph
{
	my ($st, $out, $err, $p) = session(name => 'long', build => 'gc64', mode => 'jit', rounds => 1,
		func => 'long_wait', after => sub {
			my ($h, $app) = @_;
			sleep 2;
			kill 'INT', $h->{pid};
			Bpf::wait_end($h, 10);
			kill 'TERM', $app;
		});
	my $w = $p->{wait};
	is $st, 0, 'blocked longer than the session: status 0' or diag $err;
	is $w->{open}, 1, 'blocked longer than the session: one wait still open at the end' or diag $err;
	my $n = LjStacks::count_with($p, sub { grep { $_ eq 'wait.lua:block_long' } @_ });
	ok $n >= 1.5e6 && $n <= ($w->{traced_us} // 0) && $n == ($w->{open_us} // 0),
		"blocked longer than the session: counted up to the end under block_long ($n us)" or diag "$out\n$err";
}

# min_us above every wait: none in the graph, all counted as short
{
	my ($st, $out, $err, $p, undef, $blocks) = session(name => 'min_us', build => 'gc64', mode => 'jit', rounds => $FEW,
		args => ['min_us=100000']);
	my ($n, $short) = ($p->{wait}{waits} // 1e9, $p->{wait}{short} // 0);
	is $st, 0, 'min_us=100000: status 0' or diag $err;
	# a rare wait on a loaded host lasts longer than 100 ms: only those
	ok $n <= 0.01 * $short && $p->{total} >= 100000 * $n,
		"min_us=100000: only waits of 100 ms or more in the graph ($n waits, $p->{total} us)" or diag $err;
	accounted("min_us=100000", $err, 30 * $FEW, $blocks);
	# (the rare wait dropped unseen: accounted above)
	ok $short >= 0.99 * 30 * $FEW, "min_us=100000: the short waits counted on stderr ($short of " . 30 * $FEW . ')';
}

done_testing;
