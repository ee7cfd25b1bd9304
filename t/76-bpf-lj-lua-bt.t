#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-bt --runtime=bpf on this host: the luajit CLI running the seed
# app (t/apps/run.lua, test.lua) interpreted and compiled, GC64 and not.
# The first sample in Lua is printed as the SystemTap sample prints it:
# the header with the process and its VM state, the frames innermost
# first, full paths and the executing line above each Lua function by
# default, and the session ends at once.  lines=0 fullpath=0, depth=3
# ([truncated]), and a process that never runs (an error after time).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Bpf;
use Time::HiRes qw(time);
use Test::More;

my $app = "$ROOT/t/apps/test.lua";
my $run = "$ROOT/t/apps/run.lua";

# heavy()'s loop count: 20 ms a call with the JIT, so that the first
# sample lands outside heavy() about once in ten thousand (with the JIT,
# the loop, its exits and main()'s own code take a few us a call)
my $N = 20000000;

for my $c (['gc64', 'nojit'], ['gc64', 'jit'], ['nogc64', 'nojit']) {
	my ($b, $mode) = @$c;
	my $name = "$b $mode";
	my $pid = Bpf::spawn("$ROOT/build/luajit-$b/bin/luajit", $run, 3600, $mode, 'plain', $N);
	ok Bpf::ready($pid), "$name: the target runs";
	my $t0 = time;
	my ($st, $out, $err) = Bpf::run('lj-lua-bt', ['-x', $pid]);
	my $dt = time - $t0;
	is $st, 0, "$name: status 0" or diag $err;
	my ($hpid, $state, @frames) = $out =~ /\ALua backtrace of process (\d+) \(luajit\), VM state (\w+):\n/
		? ($1, $2, split /\n/, substr($out, $+[0])) : ();
	is $hpid, $pid, "$name: the header names the process" or diag $out;
	like $state // '', qr/^(?:interp|trace|c|gc|exit|record|opt|asm)$/, "$name: and its VM state ($state)";
	is $state, 'interp', "$name: interpreted, the JIT being off" if $mode eq 'nojit';
	my $i = (grep { $frames[$_] eq "$app:heavy" } 0 .. $#frames)[0];
	ok defined $i, "$name: heavy() is on the stack, with its full path" or diag $out;
	like $frames[$i - 1] // '', qr/^(?:\Q$app\E:1[45]|trace#\d+:test\.lua:\d+)$/,
		"$name: above it, the line it executes (the loop, lines 14-15) or its trace" or diag $out if defined $i;
	ok((grep { $_ eq "$app:foo" || $_ eq "$app:bar" } @frames), "$name: its caller foo() or bar() below it") or diag $out;
	is $frames[-1], 'C:pmain', "$name: the outermost frame is the CLI's pmain" or diag $out;
	ok $dt < 10, sprintf('%s: the session ended at the first sample in Lua (%.1f s)', $name, $dt);
	kill 'TERM', $pid;
	waitpid($pid, 0);
}

# lines=0 fullpath=0: basenames, no line frames; depth=3: cut, [truncated]
# (heavy() of $N loops, as above: with run.lua's default a first sample in
# main()'s own code, 3 frames deep, once left nothing to cut)
{
	my $pid = Bpf::spawn("$ROOT/build/luajit-gc64/bin/luajit", $run, 3600, 'nojit', 'plain', $N);
	ok Bpf::ready($pid), 'options: the target runs';
	my ($st, $out, $err) = Bpf::run('lj-lua-bt', ['-x', $pid], 'lines=0', 'fullpath=0');
	is $st, 0, 'lines=0 fullpath=0: status 0' or diag $err;
	my @frames = grep { !/^Lua backtrace/ } split /\n/, $out;
	is_deeply [grep { m{/} || /^test\.lua:\d+$/ } @frames], [], 'lines=0 fullpath=0: no path, no line frame' or diag $out;
	ok((grep { $_ eq 'test.lua:heavy' } @frames), 'lines=0 fullpath=0: test.lua:heavy') or diag $out;
	($st, $out, $err) = Bpf::run('lj-lua-bt', ['-x', $pid], 'depth=3', 'lines=0');
	@frames = grep { !/^Lua backtrace/ } split /\n/, $out;
	is $st, 0, 'depth=3: status 0' or diag $err;
	is $frames[-1], '[truncated]', 'depth=3: the stack ends in [truncated]' or diag $out;
	ok @frames <= 5, 'depth=3: at most 3 frames, a leaf and [truncated] (' . scalar(@frames) . ')' or diag $out;
	kill 'TERM', $pid;
	waitpid($pid, 0);
}

# a process that never runs (blocked reading its stdin, a pipe): an error
# after time, as the SystemTap sample's
{
	pipe(my $r, my $w) or die "pipe: $!";
	my $pid = fork() // die "fork: $!";
	if (!$pid) {
		close $w;
		open(STDIN, '<&', $r);
		open(STDOUT, '>', '/dev/null');
		exec "$ROOT/build/luajit-gc64/bin/luajit", '-e', 'io.read()';
		exit 127;
	}
	close $r;
	sleep 1;
	my ($st, $out, $err) = Bpf::run('lj-lua-bt', ['-x', $pid], 'time=2');
	is $st, 1, 'a blocked process: exit 1';
	like $err, qr/^stap\+\+: error: no sample of the process in 2 s: it did not run on a CPU \(blocked or idle\?\)$/m,
		'a blocked process: the error says it did not run' or diag $err;
	is $out, '', 'a blocked process: nothing on stdout';
	close $w;
	waitpid($pid, 0);
}

done_testing;
