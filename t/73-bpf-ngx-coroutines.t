#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-stacks --runtime=bpf on this host's kernel (no VM) in OpenResty:
# t/apps/co.lua under wrk, the JIT on and off.  A coroutine.wrap function
# and an ngx.thread.spawn thread, resumed by ngx_lua's C scheduler, go on
# after [resume] in the handler that resumed them; the thread's samples
# after ngx.sleep end at its function; co_burn : th_burn is 1 : 2 (the
# assertions of t/48, t/lib/NgxCo.pm).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use LjStacks;
use Bpf;
use NgxCo;
use Test::More;

my $T = 3;
for my $c (['jit', 0, 1000000], ['nojit', 1, 200000]) {
	my ($mode, $nojit, $heavy) = @$c;
	my $n = NgxCo::nginx(nojit => $nojit, heavy => $heavy);
	ok @{ $n->{workers} } == 1, "$mode: nginx runs one worker";
	my $wrk = Bpf::load($n->{port}, '/', $T + 3, 8);
	select(undef, undef, undef, 0.5);
	my ($st, $out, $err, $p) = Bpf::stacks(['-x', $n->{workers}[0]], "time=$T");
	kill 'TERM', $wrk;
	waitpid($wrk, 0);
	Bpf::nginx_stop($n);
	is $st, 0, "$mode: status 0" or diag $err;
	my $log = slurp("$n->{prefix}/logs/error.log") // '';
	unlike $log, qr/\[(alert|emerg|crit|error)\]/, "$mode: no errors in error.log";
	my @pct = NgxCo::check("bpf nginx coroutines $mode", $p, "nginx.conf");
	note sprintf('%s: co_burn %.1f%% th_burn %.1f%% late_burn %.1f%%, %s us per sample',
		$mode, @pct, $p->{stats}{cost_us} // '?');
}

done_testing;
