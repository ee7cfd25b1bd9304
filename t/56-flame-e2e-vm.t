#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# End to end: a real lj-lua-stacks run (the luajit CLI running the seed app,
# JIT on, GC64 debug build, in the VM) folded by util/fold and drawn by
# util/flamegraph.  The folded stacks carry every sample of the run; the SVG
# is well-formed and its frame widths draw the counts, foo's 2/3 of foo +
# bar within 5 points.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjStacks;
use Stats;
use Test::More;

my $vm = VM->new;
my $out = $vm->out;
# foo's share of foo + bar within 10 points: 1,423 samples (VM::sample_sh)
# at the design effect of the guest's samples ($VM::SAMPLE_DESIGN); t/40
# holds the share closer.
my $CLAIM = 10;

my $ko = $vm->build('ljs_gc64_def', 'samples/lj-lua-stacks.sxx', exec => 'build/luajit-gc64/bin/luajit');
ok $ko, 'lj-lua-stacks builds' or diag $vm->build_log;
$ko or do { done_testing; exit 1 };
# 40,000 loops: a session spans about 100 cycles of main() (t/40 says why)
$vm->case(seed => VM::staprun_sh(
	target => "$ROOT/build/luajit-gc64/bin/luajit $ROOT/t/apps/run.lua 3600 jit plain 40000",
	module => 'ljs_gc64_def.ko', ready => VM::lua_ready(300), samples => LjStacks::seed_samples($CLAIM, $VM::SAMPLE_DESIGN)),
	files => [$ko], timeout => 180);
my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: the case ran, no kernel errors' or diag $r->{stderr};
my $case = $r->{cases}{seed};
is $case->{status}, 0, 'staprun status 0' or diag $case->{output};
# its stdout: the stacks of every session (VM::sample_sh), without the
# statistics and notes
my $raw = "$case->{dir}/stacks.txt";
spit($raw, join('', grep { !/^(?:WARNING: |# )/ } split /^/m, $case->{output}));
ok -s $raw, 'lj-lua-stacks wrote stacks' or diag $case->{output};

# The real output, counted independently of util/fold.
my ($total, $nstacks) = (0, 0);
open my $fh, '<', $raw or die "$raw: $!";
while (<$fh>) { if (/^\t(\d+)$/) { $total += $1; $nstacks++ } }
close $fh;
ok $total > 0, "$total samples in $nstacks stacks";

my ($rc, undef, $err) = run_cmd({ stdout => "$out/seed.folded" }, "$ROOT/util/fold", $raw);
is $rc, 0, 'util/fold exit 0' or diag $err;
my %folded;
my $sum = 0;
open $fh, '<', "$out/seed.folded" or die;
while (<$fh>) {
	chomp;
	my ($stack, $n) = /^(.*) (\d+)$/ or do { fail("folded line '$_'"); next };
	$folded{$stack} += $n;
	$sum += $n;
}
close $fh;
is $sum, $total, 'folded stacks hold every sample';
ok scalar(keys %folded) <= $nstacks, 'equal stacks merged';
ok((grep { /;test\.lua:main;test\.lua:foo;test\.lua:heavy(;|$)/ } keys %folded), 'main;foo;heavy folded root first');

($rc, my $svg, $err) = run_cmd("$ROOT/util/flamegraph", '--title', 'seed app (luajit, JIT on)', "$out/seed.folded");
is $rc, 0, 'util/flamegraph exit 0' or diag $err;
spit("$out/seed.svg", $svg);
($rc, undef, $err) = run_cmd('xmllint', '--noout', "$out/seed.svg");
is $rc, 0, 'SVG well-formed' or diag $err;
my (%w, $all);
while ($svg =~ m{<g><title>(.*?) \(([\d,]+) samples, [\d.]+%\)</title><rect x="[\d.]+" y="[\d.]+" width="([\d.]+)"}g) {
	my ($name, $n, $width) = ($1, $2, $3);
	$n =~ s/,//g;
	$all = $n if $name eq 'all';
	$w{$name} += $width;
}
is $all, $total, "root frame counts all $total samples";
ok $w{'test.lua:foo'} && $w{'test.lua:bar'}, 'foo and bar drawn';
# the widths draw the folded counts (to the SVG's 0.01-pixel rounding of
# each rectangle), and the counts carry the workload's 2 : 1
my ($foo, $bar) = (0, 0);
for my $k (keys %folded) {
	$foo += $folded{$k} if $k =~ /(?:^|;)test\.lua:foo(?:;|$)/;
	$bar += $folded{$k} if $k =~ /(?:^|;)test\.lua:bar(?:;|$)/;
}
my ($wf, $wb) = map { $_ // 0 } @w{'test.lua:foo', 'test.lua:bar'};
my $ratio = $wf + $wb ? $wf / ($wf + $wb) : 0;
my $counts = $foo + $bar ? $foo / ($foo + $bar) : 0;
ok abs($ratio - $counts) < 0.005, sprintf('foo is %.2f%% of foo+bar by width, %.2f%% by count', 100 * $ratio, 100 * $counts);
share_ok('foo of foo + bar in the folded stacks', 100 * $counts, 200 / 3, $foo + $bar, claim => $CLAIM,
	design => $VM::SAMPLE_DESIGN);
done_testing;
