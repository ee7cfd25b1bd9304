#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-stacks --runtime=bpf on this host's kernel (no VM) in OpenResty:
# t/apps/co.lua under wrk, the JIT on and off.  A coroutine.wrap function
# and an ngx.thread.spawn thread, resumed by ngx_lua's C scheduler, go on
# after [resume] in the handler that resumed them; the thread's samples
# after ngx.sleep end at its function; co_burn : th_burn is 1 : 2 (the
# assertions of t/48, t/lib/NgxCo.pm).  Each case samples for an amount
# of the worker's CPU time, under wrk until the session has ended.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use LjStacks;
use Bpf;
use NgxCo;
use Test::More;

# co_burn's share within 3 points (docs/bpf.md): 3,951 co_burn + th_burn
# samples, about 5,800 in all a case, taken at 4,000 a second (the share
# needs a count, not a rate): 13 samples a request, about 450 requests a
# session.
my $CLAIM = 3;
for my $c (['jit', 0, 1000000], ['nojit', 1, 200000]) {
	my ($mode, $nojit, $heavy) = @$c;
	my $n = NgxCo::nginx(nojit => $nojit, heavy => $heavy);
	ok @{ $n->{workers} } == 1, "$mode: nginx runs one worker";
	my $wrk = Bpf::load($n->{port}, '/', 8);
	my ($st, $out, $err, $p, $used, $wall) = Bpf::stacks_samples(['-x', $n->{workers}[0]], $n->{workers}, NgxCo::samples($CLAIM), 'hz=4000');
	Bpf::load_stop($wrk);
	Bpf::nginx_stop($n);
	is $st, 0, "$mode: status 0" or diag $err;
	note sprintf('%s: %d samples in %.1f s of CPU time (%.1f s wall)', $mode, ($p->{stats} // {})->{samples} // 0, $used, $wall);
	my $log = slurp("$n->{prefix}/logs/error.log") // '';
	unlike $log, qr/\[(alert|emerg|crit|error)\]/, "$mode: no errors in error.log";
	my @pct = NgxCo::check("bpf nginx coroutines $mode", $p, "nginx.conf", claim => $CLAIM);
	note sprintf('%s: co_burn %.1f%% th_burn %.1f%% late_burn %.1f%%, %s us per sample',
		$mode, @pct, $p->{stats}{cost_us} // '?');
}

done_testing;
