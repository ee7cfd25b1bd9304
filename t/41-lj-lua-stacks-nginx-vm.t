#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-stacks end to end against the debug nginx + lua module, in the VM
# (one boot): the seed app (t/apps/nginx.conf, t/apps/test.lua) under wrk,
# sampling one worker with the JIT on, off (jit.off() in init_by_lua), with
# FFI calls and with lines=1; then --master with two workers that already
# run when staprun starts (module built with --master -, run as
# 'staprun MOD.ko stapxx_master=MASTER': no -x, which would keep SystemTap
# from tracking the mappings of children that predate staprun).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjStacks;
use Test::More;

my $vm = VM->new;
my $T = 4;    # seconds of sampling per case
my $nginx = 'build/nginx/sbin/nginx';
my $conf = "$ROOT/t/apps/nginx.conf";
my $chunk_line = LjStacks::line_of($conf, qr/content_by_lua_block \{ require "test"\.main\(\) \}/);
my $ffi_line = LjStacks::line_of($conf, qr/t\.ffi = true/);

my %ko;
@ko{qw(plain lines bt master)} = $vm->builds(    # two at a time
	['ljs_ngx', 'samples/lj-lua-stacks.sxx', exec => $nginx, args => ['--arg', "time=$T"]],
	['ljs_ngx_lines', 'samples/lj-lua-stacks.sxx', exec => $nginx, args => ['--arg', "time=$T", '--arg', 'lines=1']],
	['ljbt_ngx', 'samples/lj-lua-bt.sxx', exec => $nginx],
	['ljs_ngx_master', 'samples/lj-lua-stacks.sxx', exec => $nginx, args => ['--master', '-', '--arg', 'time=' . ($T + 3)]]);
ok $ko{plain}, 'lj-lua-stacks builds for nginx';
ok $ko{lines}, 'lj-lua-stacks lines=1 builds for nginx';
ok $ko{bt}, 'lj-lua-bt builds for nginx';
ok $ko{master}, 'lj-lua-stacks builds in master mode (--master -)';

# Start nginx with WORKERS workers, load URL with wrk, run MODULE on the
# first worker (or on the master with master => 1).
sub ngx_case {
	my (%o) = @_;
	my $env = $o{nojit} ? 'export LJ_NOJIT=1' : ':';
	# per-request work outside heavy() (ngx.say, require) must stay well
	# below the 3-point tolerance: a long heavy() loop, JIT code is fast
	$o{heavy} //= $o{nojit} ? 300000 : 2000000;
	my $run = $o{master} ? qq{"\$VM_JOB"/$o{module} stapxx_master=\$master}
	                     : qq{-x \$worker "\$VM_JOB"/$o{module}};
	# reuseport spreads connections over the workers by hash: with two
	# workers and 8 connections, all go to one in 1 of 128 runs
	my $conns = $o{workers} > 1 ? 32 : 8;
	return <<"SH";
mkdir -p logs
export TEST_APP_DIR=$ROOT/t/apps HEAVY_N=$o{heavy}
$env
$ROOT/$nginx -p "\$CASE" -c $conf -g 'worker_processes $o{workers};' > nginx.out 2>&1 &
for i in \$(seq 1 150); do curl -s -o /dev/null http://127.0.0.1:8080/ && break; sleep 0.2; done
master=\$(cat logs/nginx.pid)
for i in \$(seq 1 50); do [ \$(pgrep -P \$master | wc -l) -ge $o{workers} ] && break; sleep 0.1; done
worker=\$(pgrep -P \$master | head -1)
echo "# master: \$master workers: \$(pgrep -P \$master | tr '\\n' ' ')"
@{[ VM::under_wrk("-t2 -c$conns http://127.0.0.1:8080$o{url}", "timeout -s INT -k 10 40 staprun $run") ]}kill -QUIT \$master
wait
grep -E '\\[(alert|emerg|crit)\\]' logs/error.log | sed 's/^/# /'
exit \$rc
SH
}

$vm->case(jit => ngx_case(workers => 1, url => '/', module => 'ljs_ngx.ko'), files => [$ko{plain}], timeout => 90)
	if $ko{plain};
$vm->case(nojit => ngx_case(workers => 1, url => '/', module => 'ljs_ngx.ko', nojit => 1),
	files => [$ko{plain}], timeout => 90) if $ko{plain};
$vm->case(ffi => ngx_case(workers => 1, url => '/ffi', module => 'ljs_ngx.ko'), files => [$ko{plain}], timeout => 90)
	if $ko{plain};
$vm->case(lines => ngx_case(workers => 1, url => '/', module => 'ljs_ngx_lines.ko'),
	files => [$ko{lines}], timeout => 90) if $ko{lines};
$vm->case(bt => ngx_case(workers => 1, url => '/', module => 'ljbt_ngx.ko', nojit => 1),
	files => [$ko{bt}], timeout => 90) if $ko{bt};
$vm->case(master => ngx_case(workers => 2, url => '/', module => 'ljs_ngx_master.ko', master => 1),
	files => [$ko{master}], timeout => 90) if $ko{master};

my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors' or diag $r->{stderr};
my $c = $r->{cases};

my %root = (jit => $chunk_line, nojit => $chunk_line, ffi => $ffi_line, lines => $chunk_line, master => $chunk_line);
for my $name (qw(jit nojit ffi lines master)) {
	my $case = $c->{$name} or next;
	is $case->{status}, 0, "nginx $name: staprun status 0" or diag $case->{output};
	unlike $case->{output}, qr/\[(alert|emerg|crit)\]/, "nginx $name: no errors in error.log";
	my $p = LjStacks::parse($case->{output});
	my $chunk = "content_by_lua(nginx.conf:$root{$name})";
	my $mode = $name eq 'nojit' ? 'nojit' : $name eq 'ffi' ? 'ffi' : 'jit';
	my ($f, $b) = LjStacks::check_seed("nginx $name", $p, app => "$ROOT/t/apps/test.lua",
		root => [$chunk], mode => $mode, lines => $name eq 'lines' ? 1 : 0);
	note sprintf('nginx %s: foo %.1f%% bar %.1f%% of %d Lua samples', $name, $f, $b, $p->{total});
	if ($name eq 'lines') {
		my $n = LjStacks::count_with($p, sub { my @f = @_; LjStacks::has_seq(\@f, "$chunk:1", $chunk) });
		ok $n > 0, "nginx lines: the chunk's own line above it ($chunk:1)";
	}
	if ($name eq 'master') {
		my ($master, @workers) = $case->{output} =~ /^# master: (\d+) workers: (\d+) (\d+)/m;
		is scalar(@workers), 2, 'nginx master: two workers' or diag $case->{output};
		my $pids = $p->{pids} // {};
		ok !exists $pids->{$master}, 'nginx master: the master itself is not sampled' if $master;
		my $all = 0;
		$all += $_ for values %$pids;
		for my $w (@workers) {
			my $n = $pids->{$w} // 0;
			ok $n >= 0.05 * $all, "nginx master: worker $w sampled ($n of $all samples)"
				or diag $case->{output};
		}
	}
}

# lj-lua-bt on a busy worker (JIT off): one backtrace with full paths and lines
if (my $case = $c->{bt}) {
	my $o = $case->{output};
	is $case->{status}, 0, 'nginx lj-lua-bt: status 0' or diag $o;
	like $o, qr/^Lua backtrace of process \d+ \(nginx\), VM state \w+:$/m, 'nginx lj-lua-bt: header' or diag $o;
	like $o, qr{^C:lj_BC_\w+\n(?:/\S+/test\.lua:\d+\n)?/\S+/test\.lua:heavy\n/\S+/test\.lua:\d+\n/\S+/test\.lua:(?:foo|bar)\n/\S+/test\.lua:\d+\n/\S+/test\.lua:main\ncontent_by_lua\(nginx\.conf:$chunk_line\):1\ncontent_by_lua\(nginx\.conf:$chunk_line\)$}m,
		'nginx lj-lua-bt: heavy <- foo|bar <- main <- content_by_lua, with lines' or diag $o;
}

done_testing;
