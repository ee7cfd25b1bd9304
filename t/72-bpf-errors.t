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
	my ($st, $out, $err) = run_cmd("$ROOT/stap++", '--runtime=bpf', "$ROOT/samples/lj-gco-ref.sxx", '-x', $$);
	is $st, 1, 'no native implementation: exit 1';
	like $err, qr/^stap\+\+: error: '\S*lj-gco-ref\.sxx' has no native eBPF implementation/m, 'and says so';
	for my $s (qw(lj-lua-stacks lj-lua-bt lj-vm-states lj-lua-off-cpu lj-lua-fio ngx-lua-yield lj-lua-alloc lj-gc-objs)) {
		like $err, qr/^hint: samples with one: samples\/\Q$s\E\.sxx$/m, "and lists the samples with one ($s)";
	}
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

# the options are the sample's own ($^arg_* and their defaults): one the
# eBPF implementation does not honour is refused unless at the sample's
# default, never ignored; one the sample lacks is warned about, as the
# SystemTap backend does; a value out of range is a usage error
{
	my $pid = Bpf::spawn($lj, "$ROOT/t/apps/run.lua", 3600, 'jit', 'plain');
	ok Bpf::ready($pid), 'options: the target runs';
	for my $c (['lj-lua-stacks', 'maxsyms=100', 'maxsyms \(a cache of symbols: the kernel side has the whole table\)'],
		   ['lj-lua-bt', 'slots=1', 'slots \(the stack slots \(local variables\)\)'],
		   ['lj-lua-stacks', 'interval=5', 'interval \(periodic profiles\)']) {
		my ($sample, $arg, $re) = @$c;
		my ($st, $out, $err) = Bpf::run($sample, ['-x', $pid], $arg);
		is $st, 2, "$sample --arg $arg: usage error (exit 2)" or diag $err;
		like $err, qr/^stap\+\+: error: --arg $re is not supported with --runtime=bpf$/m,
			"$sample --arg $arg: the error names the option and what it does" or diag $err;
		like $err, qr/^hint: run the sample without --runtime=bpf for it/m, "$sample --arg $arg: a hint";
	}
	# at the sample's default the option changes nothing: accepted
	my ($st, $out, $err) = Bpf::run('lj-lua-bt', ['-x', $pid], 'slots=0', 'time=5');
	is $st, 0, 'lj-lua-bt --arg slots=0 (its default): runs' or diag $err;
	like $out, qr/^Lua backtrace of process $pid \(luajit\), VM state \w+:$/m, 'lj-lua-bt --arg slots=0: prints the backtrace';
	($st, $out, $err) = Bpf::run('lj-vm-states', ['-x', $pid], 'time=1', 'nosuch=1');
	is $st, 0, 'lj-vm-states --arg nosuch=1: runs' or diag $err;
	like $err, qr/^stap\+\+: warning: --arg nosuch is not used by the script$/m, 'lj-vm-states --arg nosuch=1: warned' or diag $err;
	($st, $out, $err) = Bpf::run('lj-lua-off-cpu', ['-x', $pid], 'min_us=-1');
	is $st, 2, 'lj-lua-off-cpu --arg min_us=-1: usage error';
	like $err, qr/--arg min_us must be a number from 0 to \d+, not '-1'/, 'lj-lua-off-cpu --arg min_us=-1: the range' or diag $err;
	kill 'TERM', $pid;
	waitpid($pid, 0);
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
