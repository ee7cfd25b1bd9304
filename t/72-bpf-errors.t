#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-stacks --runtime=bpf on this host: what is not a normal session.
# A target without LuaJIT, an unprivileged user, a script without a native
# implementation, a kernel without BTF, a target that exits mid-session, a
# chunk name with a ';' and control bytes (printed escaped), bad --arg
# values.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use LjStacks;
use Bpf;
use Test::More;
use Time::HiRes qw(time sleep);

my $lj = "$ROOT/build/luajit-gc64/bin/luajit";

# a target without LuaJIT: clear error, exit 1
{
	my $pid = Bpf::spawn('/bin/sleep', 30);
	my ($st, $out, $err) = Bpf::stacks(['-x', $pid], 'time=1');
	kill 'TERM', $pid;
	waitpid($pid, 0);
	is $st, 1, 'no LuaJIT: exit 1';
	like $err, qr/^stap\+\+: error: no LuaJIT VM in '\/(?:usr\/)?bin\/sleep': no type 'lua_State'/m,
		'no LuaJIT: the error says so' or diag $err;
	like $err, qr/^hint: .*luajit CLI or nginx/m, 'no LuaJIT: a hint names what can be sampled';
	is scalar(() = $err =~ /error:/g), 1, 'no LuaJIT: one error line' or diag $err;
}

# not root: clear error before anything else
{
	my ($st, $out, $err) = run_cmd('setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups',
		"$ROOT/stap++", '--runtime=bpf', "$ROOT/samples/lj-lua-stacks.sxx", '-x', 1);
	is $st, 1, 'unprivileged: exit 1';
	like $err, qr/^stap\+\+: error: --runtime=bpf needs root, or the capabilities CAP_BPF and CAP_PERFMON/m,
		'unprivileged: the error names root and the capabilities' or diag $err;
	like $err, qr/^hint: run stap\+\+ with sudo/m, 'unprivileged: a hint';
}

# a kernel without BTF (/sys/kernel/btf hidden under an empty tmpfs in a
# mount namespace of its own): clear error, exit 1, nothing loaded
{
	my $pid = Bpf::spawn($lj, "$ROOT/t/apps/run.lua", 10, 'jit', 'plain');
	my ($st, $out, $err) = run_cmd('unshare', '--mount', '--propagation', 'private', 'sh', '-c',
		'mount -t tmpfs none /sys/kernel/btf && exec "$@"', 'sh',
		"$ROOT/stap++", '--runtime=bpf', "$ROOT/samples/lj-lua-stacks.sxx", '-x', $pid, '--arg', 'time=1');
	kill 'TERM', $pid;
	waitpid($pid, 0);
	is $st, 1, 'no BTF: exit 1' or diag $err;
	like $err, qr{^stap\+\+: error: this kernel has no BTF \(/sys/kernel/btf/vmlinux\): the eBPF backend needs it$}m,
		'no BTF: the error says so' or diag $err;
	like $err, qr/^hint: use the SystemTap backend \(without --runtime=bpf\)/m, 'no BTF: a hint names the other backend';
}

# a script without a native implementation
{
	my ($st, $out, $err) = run_cmd("$ROOT/stap++", '--runtime=bpf', "$ROOT/samples/lj-vm-states.sxx", '-x', $$);
	is $st, 1, 'no native implementation: exit 1';
	like $err, qr/^stap\+\+: error: '\S*lj-vm-states\.sxx' has no native eBPF implementation/m, 'and says so';
	like $err, qr/^hint: samples with one: samples\/lj-lua-stacks\.sxx$/m, 'and lists the samples with one';
	($st, $out, $err) = run_cmd("$ROOT/stap++", '--runtime=dyninst', "$ROOT/samples/lj-lua-stacks.sxx", '-x', $$);
	is $st, 2, '--runtime=dyninst: usage error';
	($st, $out, $err) = run_cmd("$ROOT/stap++", '--runtime=bpf', "$ROOT/samples/lj-lua-stacks.sxx", '-x', $$,
		'--arg', 'depth=0');
	is $st, 2, 'depth=0: usage error';
	like $err, qr/--arg depth must be a number from 1 to 256, not '0'/, 'depth=0: the range' or diag $err;
	($st, $out, $err) = run_cmd("$ROOT/stap++", '--runtime=bpf', "$ROOT/samples/lj-lua-stacks.sxx", '-x', $$,
		'--arg', 'interval=5');
	is $st, 2, 'interval=5: usage error';
	like $err, qr/--arg interval \(periodic profiles\) is not supported with --runtime=bpf/, 'interval: says so';
}

# a target that exits mid-session: the session ends, statistics printed
{
	my $pid = Bpf::spawn($lj, "$ROOT/t/apps/run.lua", 3600, 'jit', 'plain', 200000);
	ok Bpf::ready($pid), 'target exits: the target runs';
	my $h = Bpf::start(['-x', $pid], 'time=600');
	ok $h->{started}, 'target exits: the session started';
	# a second of the target's CPU time sampled, then it is killed
	my $c0 = Bpf::cpu($pid);
	my $t0 = time;
	sleep 0.05 while Bpf::cpu($pid) - $c0 < 1 && time - $t0 < 60;
	kill 'KILL', $pid;
	waitpid($pid, 0);
	$t0 = time;
	my ($st, $out, $err, $p) = Bpf::finish($h);
	my $dt = time - $t0;
	is $st, 0, 'target exits: status 0' or diag $err;
	# the session checks its target every 50 ms: seconds would be a bug,
	# however busy the host
	ok $dt < 10, sprintf('target exits: the session ends with it (%.1f s later, of time=600)', $dt);
	ok $p->{stats} && $p->{stats}{samples} > 0, 'target exits: statistics printed' or diag $err;
	ok $p->{total} > 0 && !@{ $p->{bad} }, 'target exits: its stacks printed';
}

# escaping: ';' as ',', control bytes visible
{
	my $src = "$ROOT/t/out/bpf-evil.$$.lua";
	spit($src, <<'LUA');
local f = assert(loadstring("local function spin(n) local s = 0 for i = 1, n do s = s + i end return s end\n" ..
	"return function() while true do spin(100000) end end", "=evil;name\n\t12\1\127\200x"))
f()()
LUA
	my $pid = Bpf::spawn($lj, $src);
	ok Bpf::ready($pid), 'escaping: the target runs';
	my ($st, $out, $err, $p) = Bpf::stacks_cpu(['-x', $pid], [$pid], 0.5);
	kill 'TERM', $pid;
	waitpid($pid, 0);
	is $st, 0, 'escaping: status 0';
	my $chunk = "evil,name\\n\\t12\\x01\\x7f\xc8x";
	my $n = LjStacks::count_with($p, sub { grep { $_ eq "$chunk:spin" } @_ });
	ok $n > 0, "escaping: the chunk shows as '$chunk' ($n samples)" or diag $out;
	unlike $out, qr/[\x00-\x08\x0b-\x1f\x7f]/, 'escaping: no raw control byte in the output';
	unlink $src;
}

done_testing;
