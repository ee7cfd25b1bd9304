#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-stacks --runtime=bpf names a function after what its caller
# called only while that still holds the function, as the tapset does
# (__lj_slotname): t/apps/tailcall.lua's wrapper (a local), M.wrap (a
# field of a local table) and gwrap (a global) tail-call work(), whose
# frame then replaces theirs; the call in the main chunk names what it
# called, which is not work.  That frame is printed unnamed (its chunk and
# first line, tailcall.lua:9), never as wrapper, wrap or gwrap: the eBPF
# side named it "wrapper" and "wrap" until it checked locals and fields
# too.  (A frame of wrapper running its own code, at its call, is named
# wrapper: with lines=1 the line tells whose code a frame runs.)
# direct() calls work() and both keep their names.  The debug
# builds, their copies without symbols, and Debian's stripped luajit CLI.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use LjStacks;
use Bpf;
use Test::More;

my $app = "$ROOT/t/apps/tailcall.lua";
# direct() runs as long as the three tail calls together: about half the
# samples each; 2,000 samples leave no doubt that each call site was seen.
# At 4,000 a second: the names need a count, not a rate (a quarter of the
# target's CPU time of the default 1,000).
my $SAMPLES = 2000;
# work()'s body: lines 10-13 of the app (it starts at line 9, the name of
# its frame when the frame has none)
my $WORK = qr/^tailcall\.lua:1[0-3]$/;

my @targets;
for my $b (qw(gc64 nogc64)) {
	my $lj = "$ROOT/build/luajit-$b/bin/luajit";
	push @targets, [$b, $lj], ["$b stripped", Bpf::stripped($lj)];
}
push @targets, ['debian luajit', "$ROOT/build/debian/luajit/usr/bin/luajit"];

for my $t (@targets) {
	my ($name, $lj) = @$t;
	my $pid = Bpf::spawn($lj, $app, 3600);
	ok Bpf::ready($pid), "$name: the target runs";
	my ($st, $out, $err, $p) = Bpf::stacks_samples(['-x', $pid], [$pid], $SAMPLES, 'lines=1', 'hz=4000');
	kill 'TERM', $pid;
	waitpid($pid, 0);
	is $st, 0, "$name: status 0" or diag $err;
	ok $p->{total} >= $SAMPLES, "$name: $p->{total} samples" or diag $err;
	# With lines, each Lua frame is its name, then its line (innermost
	# first: the line first).  A frame of wrapper, M.wrap or gwrap that
	# runs its own code is named so; one whose line is in work() is
	# work's frame, misnamed.
	my $wrong = LjStacks::count_with($p, sub {
		my @l = grep { !/^C:/ } @_;
		grep { $l[$_] =~ /^tailcall\.lua:(?:wrapper|wrap|gwrap)$/ && $l[$_ - 1] =~ $WORK } 1 .. $#l });
	is $wrong, 0, "$name: no frame of work() is named after the function that tail-called it"
		or diag LjStacks::dump_stacks($p, 10);
	my $unnamed = LjStacks::count_with($p, sub {
		my @l = grep { !/^C:/ } @_;
		@l == 4 && $l[0] =~ $WORK && $l[1] eq 'tailcall.lua:9' && $l[3] eq 'tailcall.lua' });
	my $direct = LjStacks::count_with($p, sub {
		my @l = grep { !/^C:/ } @_;
		@l == 6 && $l[0] =~ $WORK && $l[1] eq 'tailcall.lua:work' && $l[3] eq 'tailcall.lua:direct' && $l[5] eq 'tailcall.lua' });
	ok $unnamed >= 0.2 * $p->{total}, "$name: work() reached by a tail call is unnamed, over the main chunk ($unnamed of $p->{total})"
		or diag LjStacks::dump_stacks($p, 10);
	ok $direct >= 0.2 * $p->{total}, "$name: work() called by direct() keeps both names ($direct of $p->{total})"
		or diag LjStacks::dump_stacks($p, 10);
}

done_testing;
