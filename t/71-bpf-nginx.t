#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-stacks --runtime=bpf on this host's kernel (no VM) against the
# debug nginx + lua module (t/apps/nginx.conf on a free port) under wrk:
# one worker with the JIT on, off and with FFI calls (the assertions of
# t/41, shares within 2 points), then --master with two workers.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use LjStacks;
use Bpf;
use Test::More;

my $T = 3;
my $conf = "$ROOT/t/apps/nginx.conf";
my $chunk_line = LjStacks::line_of($conf, qr/content_by_lua_block \{ require "test"\.main\(\) \}/);
my $ffi_line = LjStacks::line_of($conf, qr/t\.ffi = true/);
my $app = "$ROOT/t/apps/test.lua";


for my $c (['jit', '/', 0], ['nojit', '/', 1], ['ffi', '/ffi', 0]) {
	my ($mode, $url, $nojit) = @$c;
	# heavy() calls of 7 to 16 ms, far from the 1 ms sampling period
	# (t/70: a trace runs 2000000 iterations in 1.6 ms, and aliases)
	my $n = Bpf::nginx(workers => 1, nojit => $nojit, heavy => $mode eq 'jit' ? 20000000 : 2000000);
	ok @{ $n->{workers} } == 1, "$mode: nginx runs one worker";
	my $wrk = Bpf::load($n->{port}, $url, $T + 3);
	select(undef, undef, undef, 0.5);
	my ($st, $out, $err, $p) = Bpf::stacks(['-x', $n->{workers}[0]], "time=$T");
	kill "TERM", $wrk;
	waitpid($wrk, 0);
	Bpf::nginx_stop($n);
	is $st, 0, "$mode: status 0" or diag $err;
	my $line = $mode eq 'ffi' ? $ffi_line : $chunk_line;
	LjStacks::check_seed("nginx $mode", $p, app => $app, root => ["content_by_lua(nginx.conf:$line)"],
		mode => $mode eq 'ffi' ? 'ffi-native' : $mode, lines => 0);
	Bpf::shares_ok("nginx $mode", $p);
	if ($mode eq 'ffi') {
		my $sqrt = LjStacks::count_with($p, sub { $_[0] eq 'C:sqrt' });
		ok $sqrt > 0, "nginx ffi: C:sqrt leaves ($sqrt)";
	}
}

# --master: both workers sampled, both in the per-process line
{
	my $n = Bpf::nginx(workers => 2, heavy => 2000000);
	ok @{ $n->{workers} } == 2, 'master: nginx runs two workers';
	# 32 connections: the kernel spreads them over the workers' reuseport
	# sockets by hash, and with 4 all went to one worker in 1 of 8 runs
	my $wrk = Bpf::load($n->{port}, '/', $T + 3, 32);
	select(undef, undef, undef, 0.5);
	my ($st, $out, $err, $p) = Bpf::stacks(['--master', $n->{master}], "time=$T");
	kill "TERM", $wrk;
	waitpid($wrk, 0);
	Bpf::nginx_stop($n);
	is $st, 0, 'master: status 0' or diag $err;
	LjStacks::check_seed('nginx master', $p, app => $app, root => ["content_by_lua(nginx.conf:$chunk_line)"],
		mode => 'jit', lines => 0);
	my @w = grep { ($p->{pids}{$_} // 0) > 100 } @{ $n->{workers} };
	is scalar(@w), 2, 'master: both workers sampled (' . join(' ', map { "$_:" . ($p->{pids}{$_} // 0) } @{ $n->{workers} }) . ')';
	ok !exists $p->{pids}{ $n->{master} }, 'master: the master itself is not sampled';
}

done_testing;
