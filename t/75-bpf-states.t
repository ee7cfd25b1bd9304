#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-vm-states --runtime=bpf on this host: t/apps/states.lua runs the same
# loop compiled (JIT) and interpreted (jit.off on its function) and times
# both phases on its CPU clock: the shares of "trace" and "interp" must be
# the app's within the tolerance of the samples taken (t/lib/Stats.pm);
# the app runs until it used enough CPU time for the samples the claim
# needs (1,000 a second), then exits, which ends the session.  With the
# JIT off (luajit -joff) no sample is in a trace.  The output is the
# SystemTap sample's (one line per state, then the samples outside Lua),
# and its numbers add up.  The JIT-on case again on a stripped copy of
# the non-GC64 luajit (layouts from the database, the VM found in its
# memory: its traces hide the DISPATCH register).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Bpf;
use Stats;
use Test::More;

my $CLAIM = 3;
# samples for the claim on the larger share's worst case (1/2), a fifth
# more for samples outside the phases, at 1,000 a second
my $CPU = 1.2 * Stats::floor(1 / 2, $CLAIM) / 1000;

# The sample's output: { samples, lua, states => { NAME => [pct, n] },
# nolua, novm, skipped }.
sub parse {
	my ($out) = @_;
	my %p;
	@p{qw(samples lua)} = $out =~ /^(\d+) samples of the process, (\d+) running Lua:$/m;
	while ($out =~ /^ *(\d+\.\d)%  (\w+) +.*? \((\d+) samples\)$/mg) {
		$p{states}{$2} = [$1, $3];
	}
	@p{qw(nolua novm skipped)} = $out =~ /^not running Lua: (\d+), VM not found: (\d+), unreadable \(skipped\): (\d+)$/m;
	return \%p;
}

# Runs states.lua under LUAJIT (LUAJIT_ARGS first) under a session;
# returns (status, stdout, stderr, the app's accounting { jit, interp }).
sub session {
	my ($name, $lj, @ljargs) = @_;
	my $r = Bpf::go_session(sample => 'lj-vm-states',
		cmd => [$lj, @ljargs, "$ROOT/t/apps/states.lua", $CPU, 'GO']);
	ok $r->{started}, "$name: the session started";
	ok $r->{ended}, "$name: the session ended when the target did";
	my %acct = $r->{app} =~ /^acct (\w+) (\d+)$/mg;
	return ($r->{status}, $r->{out}, $r->{err}, \%acct);
}

for my $c (['jit on', "$ROOT/build/luajit-gc64/bin/luajit"],
	   ['jit on stripped', Bpf::stripped("$ROOT/build/luajit-nogc64/bin/luajit")]) {
	my ($name, $lj) = @$c;
	my ($st, $out, $err, $acct) = session($name, $lj);
	my $p = parse($out);
	is $st, 0, "$name: status 0" or diag $err;
	ok $p->{samples} && $p->{lua}, "$name: the header line ($p->{samples} samples, $p->{lua} running Lua)" or diag $out;
	my $sum = 0;
	$sum += $_->[1] for values %{ $p->{states} // {} };
	is $sum, $p->{lua}, "$name: the states add up to the samples running Lua" or diag $out;
	is $p->{lua} + $p->{nolua} + $p->{novm} + $p->{skipped}, $p->{samples},
		"$name: with those outside Lua, to the samples taken" or diag $out;
	ok defined $p->{novm} && $p->{novm} <= 0.01 * $p->{samples},
		"$name: the VM found in all but 1% of the samples (" . ($p->{novm} // '?') . ' before)' or diag $out;
	my $all = $acct->{jit} + $acct->{interp};
	for my $c (['trace', 'jit'], ['interp', 'interp']) {
		my ($state, $phase) = @$c;
		my $n = ($p->{states}{$state} // [0, 0])->[1];
		share_ok("$name: $state", 100 * $n / ($p->{lua} || 1), 100 * $acct->{$phase} / $all, $p->{lua},
			claim => $CLAIM) or diag $out;
	}
	my @lines = $out =~ /^ *\d+\.\d%  (\w+) /mg;
	is_deeply \@lines, [sort { $p->{states}{$b}[1] <=> $p->{states}{$a}[1] } @lines], "$name: most frequent first";
	note $out;
}

{
	my ($st, $out, $err) = session('jit off', "$ROOT/build/luajit-gc64/bin/luajit", '-joff');
	my $p = parse($out);
	is $st, 0, 'jit off: status 0' or diag $err;
	ok !$p->{states}{trace}, 'jit off: no sample in a trace' or diag $out;
	my $n = ($p->{states}{interp} // [0, 0])->[1];
	ok $p->{lua} && $n >= 0.95 * $p->{lua}, "jit off: interpreted nearly always ($n of $p->{lua})" or diag $out;
	note $out;
}

done_testing;
