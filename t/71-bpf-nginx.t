#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-stacks --runtime=bpf on this host's kernel (no VM) against the
# debug nginx + lua module (t/apps/nginx.conf on a free port) under wrk:
# one worker with the JIT on, off and with FFI calls (the assertions of
# t/41, foo's share within 2 points), the JIT off again with nginx and
# libluajit without their symbol tables, the JIT on with Debian's own
# stripped nginx, lua module and libluajit2 (issue 21), then --master
# with two workers.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use LjStacks;
use Bpf;
use File::Basename ();
use Cwd ();
use Test::More;

my $conf = "$ROOT/t/apps/nginx.conf";
my $chunk_line = LjStacks::chunk_line($conf);
my $app = "$ROOT/t/apps/test.lua";
# foo's share of the foo + bar samples within 2 points, as t/70 (8,889
# samples, 2.2 s of the worker's CPU time at 4,000 samples a second: the
# shares need a count, not a rate); --master is about the workers: 4
# points (2,223 samples over both).  A session spans about 100 requests
# or more (one request is foo, then bar: 12 to 21 ms), so that the
# requests it cuts at its ends stay far below the claim (t/40 says why).
my $CLAIM = 2;
my $CLAIM_MASTER = 4;

# Samples the seed app in nginx (N: Bpf::nginx) under wrk on URL with
# CONNS connections, TARGET (-x WORKER or --master MASTER) until the
# output holds SAMPLES samples; returns the parsed output.
sub sample {
	my ($name, $n, $url, $conns, $target, $samples) = @_;
	my $wrk = Bpf::load($n->{port}, $url, $conns);
	my ($st, $out, $err, $p, $used, $wall) = Bpf::stacks_samples($target, $n->{workers}, $samples, 'hz=4000');
	Bpf::load_stop($wrk);
	Bpf::nginx_stop($n);
	is $st, 0, "$name: status 0" or diag $err;
	# (stapxx-era runbooks read the stacks from the first line: util/pprof's
	# cgroup header is for processes in a container, t/80)
	ok !grep({ /^# stap\+\+/ } @{ $p->{warnings} // [] }), "$name: no header line above the stacks of a process of the host";
	note sprintf('%s: %d samples in %.1f s of CPU time (%.1f s wall)', $name, ($p->{stats} // {})->{samples} // 0, $used, $wall);
	note $_ for LjStacks::session_lines($name, $p);
	return $p;
}

# nginx and its libluajit stripped (issue 21): libluajit as a distribution
# ships it (its layouts from the layout database), nginx with its DWARF
# as from a -dbgsym package (the database holds no nginx types); the VM
# found from the exported ngx_cycle and modules, the handlers of the
# shared library named from its dispatch table
my %bare = (nginx => Bpf::stripped("$ROOT/build/nginx/sbin/nginx", undef, 1),
	libs => File::Basename::dirname(Bpf::stripped("$ROOT/build/luajit-gc64/lib/libluajit-5.1.so.2",
		'libluajit-5.1.so.2')));
my %p;
# Debian's own nginx, lua module and libluajit2, stripped and without
# debug symbols (Bpf::nginx stock => 1): the LuaJIT from the layout
# database, the VM found as in the luajit CLI (nginx's own layouts are
# unknown), and stderr says both
for my $c (['jit', '/', 0], ['nojit', '/', 1], ['ffi', '/ffi', 0], ['nojit stripped', '/', 1, %bare],
           ['jit stock', '/', 0, stock => 1]) {
	my ($mode, $url, $nojit, %bin) = @$c;
	(my $seed = $mode) =~ s/ (?:stripped|stock)$//;
	# heavy() calls of 4 to 7 ms, far from the 0.25 ms sampling period
	# (t/70: a trace runs 2000000 iterations in 1.6 ms)
	my $n = Bpf::nginx(workers => 1, nojit => $nojit, heavy => $mode eq 'jit' ? 5000000 : 2000000, %bin);
	ok @{ $n->{workers} } == 1, "$mode: nginx runs one worker";
	my $p = $p{$mode} = sample("nginx $mode", $n, $url, 4, ['-x', $n->{workers}[0]], LjStacks::seed_samples($CLAIM));
	# (the config nginx runs: the stock one has Debian's load_module lines on top)
	my $line = LjStacks::chunk_line("$n->{prefix}/nginx.conf", $mode eq 'ffi');
	LjStacks::check_seed("nginx $mode", $p, app => $app, root => ["content_by_lua(nginx.conf:$line)"],
		mode => $seed eq 'ffi' ? 'ffi-native' : $seed, lines => 0, claim => $CLAIM);
	Bpf::check_accounted("nginx $mode", $p);
}
my $stock = $p{'jit stock'};
my $lj2 = Cwd::abs_path('/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2');
is_deeply $stock->{layout}, { $lj2 => 'luajit2-2.1-20230119-gc64' },
	"nginx jit stock: stderr names the layout database's entry for Debian's libluajit2";
ok scalar(grep { m{^stap\+\+: warning: no debug info in '/usr/sbin/nginx': .* found as in the luajit CLI} }
	@{ $stock->{warnings} // [] }), 'nginx jit stock: stderr says the VM is found as in the luajit CLI'
	or diag join("\n", @{ $stock->{warnings} // [] });
# (lj_BC_ADDVV and lj_BC_IFORL, 30 to 65% each)
is_deeply LjStacks::top_leaves($p{'nojit stripped'}, 0.05), LjStacks::top_leaves($p{nojit}, 0.05),
	'nginx nojit stripped: the main leaves named as with symbols';
ok scalar(grep { /no symbols of ngx_lua's coroutine functions/ } @{ $p{'nojit stripped'}{warnings} // [] }),
	'nginx nojit stripped: stderr says that coroutines are not followed into their parent';

# --master: both workers sampled, both in the per-process line
{
	my $n = Bpf::nginx(workers => 2, heavy => 5000000);
	ok @{ $n->{workers} } == 2, 'master: nginx runs two workers';
	# 32 connections: the kernel spreads them over the workers' reuseport
	# sockets by hash, and with 4 all went to one worker in 1 of 8 runs
	my $p = sample('nginx master', $n, '/', 32, ['--master', $n->{master}], LjStacks::seed_samples($CLAIM_MASTER));
	LjStacks::check_seed('nginx master', $p, app => $app, root => ["content_by_lua(nginx.conf:$chunk_line)"],
		mode => 'jit', lines => 0, claim => $CLAIM_MASTER);
	my @w = grep { ($p->{pids}{$_} // 0) > 100 } @{ $n->{workers} };
	is scalar(@w), 2, 'master: both workers sampled (' . join(' ', map { "$_:" . ($p->{pids}{$_} // 0) } @{ $n->{workers} }) . ')';
	ok !exists $p->{pids}{ $n->{master} }, 'master: the master itself is not sampled';
}

done_testing;
