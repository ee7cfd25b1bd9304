#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-stacks --runtime=bpf on traces that end in the interpreter
# (t/apps/exits.lua: the loop's trace inlines three functions and leaves
# through lj_vm_exit_interp on every iteration, a stitch around io.type).
# There, vmstate still holds the trace's number while jit_base is the base
# the trace was entered with: the stack is the interpreter's, from its
# BASE register (lib/dwarf/vmexit.h).  A walk from jit_base printed the
# trace frame over the main chunk for 50% of the samples (GC64) or 5%
# (non-GC64), without the three frames.  The debug builds, their copies
# without symbols (the window found in the machine code alone), and
# Debian's stripped luajit CLI (upstream 2.1.0-beta3).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use LjStacks;
use Bpf;
use Test::More;

my $app = "$ROOT/t/apps/exits.lua";
my $SAMPLES = 8000;    # 0.2% is 16 samples; 1% in the exit is 80
my $HZ = 4000;

my @targets;
for my $b (qw(gc64 nogc64)) {
	my $lj = "$ROOT/build/luajit-$b/bin/luajit";
	push @targets, [$b, $lj, 1], ["$b stripped", Bpf::stripped($lj), 0];
}
push @targets, ['debian luajit', "$ROOT/build/debian/luajit/usr/bin/luajit", 0];

for my $t (@targets) {
	my ($name, $lj, $named) = @$t;
	my $pid = Bpf::spawn($lj, $app, 3600);
	ok Bpf::ready($pid), "$name: the target runs";
	my ($st, $out, $err, $p) = Bpf::stacks_samples(['-x', $pid], [$pid], $SAMPLES, "hz=$HZ");
	kill 'TERM', $pid;
	waitpid($pid, 0);
	is $st, 0, "$name: status 0" or diag $err;
	unlike $err, qr/lj_vm_exit_interp\) was not found/, "$name: the VM's exit code was found";
	LjStacks::check_exits($name, $p, named => $named, samples => $SAMPLES);
	Bpf::check_accounted($name, $p, !$named);
}

done_testing;
