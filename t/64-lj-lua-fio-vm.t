#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-fio in the VM (one boot, one module; weight and files are runtime
# options): read2() and read1() of t/apps/wait.lua read files of 2 MB and
# 1 MB with io.open():read("*a").  By bytes the split is 2:1 within 2
# points; by latency (the default) it is what the page cache gives, noted.
# The files' names as leaves with files=1.  Bad input: a weight that is
# neither us nor bytes.  A limit of one distinct stack (ljw_maxstacks=1, the
# run-time value under --arg maxstacks): one stack printed, the bytes of
# the others counted on stderr with the option that raises it.  Writes
# count, a pipe does not: read2() reads 2 MB and write1() writes 1 MB of
# files, 2:1 by bytes within 2 points, while piped() moves 1 MB through a
# pipe (FFI write and read), counted on stderr as not regular files.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjStacks;
use LjWait;
use Test::More;

my $vm = VM->new;
my $T = 3;
my $ko = $vm->build('fio_gc64', 'samples/lj-lua-fio.sxx', exec => 'build/luajit-gc64/bin/luajit',
	args => ['--arg', "time=$T"]);
ok $ko, 'lj-lua-fio builds for luajit-gc64' or diag $vm->build_log;

my $lj = "$ROOT/build/luajit-gc64/bin/luajit";
my $run = "$ROOT/t/apps/wait-run.lua";
sub fio_case {
	my ($params, $fn) = @_;
	$fn //= 'fio';
	return <<"SH";
head -c 2097152 /dev/urandom > data2
head -c 1048576 /dev/urandom > data1
$lj $run 60 jit $fn "\$CASE" > target.log 2>&1 &
pid=\$!
sleep 0.5
timeout -s INT -k 10 30 staprun -x \$pid "\$VM_JOB"/fio_gc64.ko $params
rc=\$?
kill \$pid 2>/dev/null
wait
exit \$rc
SH
}
if ($ko) {
	$vm->case(us => fio_case(''), files => [$ko], timeout => 30);
	$vm->case(bytes => fio_case('weight=bytes files=1'), files => [$ko], timeout => 30);
	$vm->case(badweight => fio_case('weight=lines'), files => [$ko], timeout => 30);
	$vm->case(few => fio_case('weight=bytes ljw_maxstacks=1'), files => [$ko], timeout => 30);
	$vm->case(mixed => fio_case('weight=bytes', 'fio_mixed'), files => [$ko], timeout => 30);
}
my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors' or diag $r->{stderr};
my $c = $r->{cases};

my $frame_re = qr/^(?:[\w-]+\.lua(?::\w+)?|trace#\d+:\S+:\d+|C:[\w.\@]+|builtin(?::\w+|#\d+)|file:data[12])$/;
for my $w (qw(us bytes)) {
	my $case = $c->{$w} or next;
	my $p = LjWait::parse($case->{output}, 'lj-lua-fio');
	is $case->{status}, 0, "$w: staprun status 0" or diag $case->{output};
	like $case->{output}, qr/^# stap\+\+ type=$w$/m, "$w: the output's header gives the unit (type=$w)";
	is_deeply LjStacks::bad($p, $w), [], "$w: well-formed lj-lua-stacks output";
	my @garbage = grep { $_ !~ $frame_re } map { @{ $_->{frames} } } @{ $p->{stacks} };
	is_deeply \@garbage, [], "$w: every frame is a well-formed name" or diag $case->{output};
	ok $p->{total} > 0, "$w: a graph ($p->{total} $w)" or diag $case->{output};
	my ($r2, $r1) = map { LjWait::share($p, "wait.lua:$_") } qw(read2 read1);
	ok $r2 + $r1 >= 99, sprintf('%s: read2 and read1 hold the I/O (%.1f%%)', $w, $r2 + $r1)
		or diag LjStacks::dump_stacks($p, 8);
	note sprintf('%s: read2 %.1f%% read1 %.1f%% of %d %s', $w, $r2, $r1, $p->{total}, $w);
	if ($w eq 'bytes') {
		ok abs($r2 - 66.7) <= 2, sprintf('bytes: read2 %.1f%% (66.7 +- 2)', $r2);
		ok abs($r1 - 33.3) <= 2, sprintf('bytes: read1 %.1f%% (33.3 +- 2)', $r1);
		my ($f2, $f1) = map { my $f = $_; LjStacks::count_with($p, sub { $_[0] eq $f }) } qw(file:data2 file:data1);
		ok $f2 + $f1 == $p->{total}, "files=1: every stack has its file as the leaf ($f2 + $f1 of $p->{total})"
			or diag LjStacks::dump_stacks($p, 8);
		my $under = LjStacks::count_with($p, sub { $_[0] eq 'file:data2' && grep { $_ eq 'wait.lua:read2' } @_ });
		is $under, $f2, 'files=1: data2 is read under read2';
	} else {
		ok $r2 > $r1, sprintf('us: read2 waits longer than read1 (%.1f%% vs %.1f%%)', $r2, $r1);
	}
}
if (my $case = $c->{badweight}) {
	isnt $case->{status}, 0, 'weight=lines: fails';
	like $case->{output}, qr/--arg weight must be us or bytes, not 'lines'/, 'weight=lines: says what it takes'
		or diag $case->{output};
}
if (my $case = $c->{few}) {
	my $o = $case->{output};
	my $p = LjWait::parse($o, 'lj-lua-fio');
	is $case->{status}, 0, 'maxstacks 1: staprun status 0' or diag $o;
	is scalar @{ $p->{stacks} }, 1, 'maxstacks 1: one stack printed' or diag $o;
	my ($all, $printed) = $o =~ /^WARNING: lj-lua-fio: traced for \d+ us; \d+ us in \d+ calls with a Lua stack, (\d+) bytes \((\d+) bytes printed\)$/m;
	my ($lost) = $o =~ /^WARNING: lj-lua-fio: 0 bytes in stacks truncated at depth \d+ \(printed\), 0 bytes in inconsistent stacks \(dropped\), (\d+) bytes in stacks beyond the first 1 distinct ones \(dropped; --arg maxstacks=N raises it\)$/m;
	ok $lost, 'maxstacks 1: stderr says how many bytes the limit left out, and which option raises it (' . ($lost // '?') . ')' or diag $o;
	is(($printed // 0) + ($lost // 0), $all // -1, 'maxstacks 1: printed + left out = all bytes with a Lua stack') or diag $o;
}
if (my $case = $c->{mixed}) {
	my $o = $case->{output};
	my $p = LjWait::parse($o, 'lj-lua-fio');
	is $case->{status}, 0, 'writes: staprun status 0' or diag $o;
	is_deeply LjStacks::bad($p, 'writes'), [], 'writes: well-formed lj-lua-stacks output';
	my ($r2, $w1, $pipe) = map { LjWait::share($p, "wait.lua:$_") } qw(read2 write1 piped);
	ok abs($r2 - 66.7) <= 2, sprintf('writes: read2 %.1f%% of the bytes (66.7 +- 2)', $r2) or diag LjStacks::dump_stacks($p, 8);
	ok abs($w1 - 33.3) <= 2, sprintf('writes: write1 %.1f%% of the bytes (33.3 +- 2)', $w1);
	is $pipe, 0, 'writes: nothing under piped() (a pipe is not file I/O)' or diag LjStacks::dump_stacks($p, 8);
	my ($other) = $o =~ /(\d+) calls on files that are not regular \(not counted\)/;
	ok $other && $other >= 32, 'writes: the pipe\'s reads and writes counted on stderr as not regular files (' . ($other // '?') . ')'
		or diag $o;
}

done_testing;
