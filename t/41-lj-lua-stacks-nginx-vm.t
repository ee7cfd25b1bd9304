#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-stacks end to end against the debug nginx + lua module, in the VM
# (one boot): the seed app (t/apps/nginx.conf, t/apps/test.lua) under wrk,
# sampling one worker with the JIT on, off (jit.off() in init_by_lua), with
# FFI calls and with lines=1 (foo's share of foo + bar within 6 or 10
# points, see %CLAIM); then master mode with two workers that already
# run when staprun starts (the default-rate module, built for the
# executable alone, run as 'staprun MOD.ko stapxx_master=MASTER': no -x,
# which would keep SystemTap from tracking the mappings of children that
# predate staprun).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjStacks;
use POSIX ();
use Test::More;

my $vm = VM->new;
# Every case samples until its output holds the samples it needs
# (VM::sample_sh).  foo's share of the foo + bar samples: within 6 points
# with the JIT on and off (3,951 samples each), within 10 with FFI calls,
# lines=1 and --master (1,423 samples: those cases are about frames and
# workers, and the VM's time is what the whole test suite waits for): at
# the design effect of the guest's samples ($VM::SAMPLE_DESIGN, t/40).
my %CLAIM = (jit => 6, nojit => 6, ffi => 10, lines => 10, master => 10);
# The plain module samples at 2,000 a second: its samples in half the
# worker's time (a session still spans hundreds of requests); under TCG
# nginx's stacks cost the probe 100-300 us, up to the whole period at
# 4,000 (t/40's rate for the luajit CLI).  The lines=1 case (t/48's
# module, with stapxx_lines=1) and the master case keep the default,
# timer.profile.
my $HZ = 2000;
my $nginx = 'build/nginx/sbin/nginx';
my $conf = "$ROOT/t/apps/nginx.conf";
my $chunk_line = LjStacks::chunk_line($conf);
my $ffi_line = LjStacks::chunk_line($conf, 'ffi');

my %ko;
@ko{qw(plain lines bt)} = $vm->builds(    # two at a time
	['ljs_ngx', 'samples/lj-lua-stacks.sxx', exec => $nginx, args => ['--arg', "hz=$HZ"]],
	# t/48's and t/47's too; lines=1, stapxx_master=PID at load time
	['ljs_ngx_def', 'samples/lj-lua-stacks.sxx', exec => $nginx],
	['ljbt_ngx', 'samples/lj-lua-bt.sxx', exec => $nginx]);
ok $ko{plain}, 'lj-lua-stacks builds for nginx';
ok $ko{lines}, 'lj-lua-stacks builds for nginx at the default rate (the lines=1 and master cases)';
ok $ko{bt}, 'lj-lua-bt builds for nginx';

# Start nginx with WORKERS workers, load URL with wrk, run MODULE on the
# first worker (or on the master with master => 1).
sub ngx_case {
	my (%o) = @_;
	my $nojit = $o{nojit} ? ' LJ_NOJIT=1' : '';
	# A request (main: foo, then bar) must be short beside a session: a
	# session that starts and ends inside requests is off by up to 2/3 of
	# a request's samples, so it must span about 100 requests for that to
	# stay below a quarter of the claim.  With 2 M loops a request took
	# 850 ms under TCG: 2 to 6 requests a session, and foo at 72% once.
	# The work outside heavy() (ngx.say) is in neither foo's nor bar's
	# samples: it costs samples, not accuracy (a fifth more are asked).
	$o{heavy} //= $o{nojit} ? 40000 : $o{url} eq '/ffi' ? 60000 : 100000;
	my $params = defined $o{params} ? " $o{params}" : '';
	my $run = $o{master} ? qq{"\$VM_JOB"/$o{module} stapxx_master=\$master$params}
	                     : qq{-x \$worker "\$VM_JOB"/$o{module}$params};
	# reuseport spreads connections over the workers by hash: with two
	# workers and 8 connections, all go to one in 1 of 128 runs
	my $conns = $o{workers} > 1 ? 32 : 8;
	# (until its output holds the samples its claim needs)
	my $sample = VM::sample_sh("staprun $run", $o{master} ? '$(kids $master; echo $kids)' : '$worker', $o{samples}, undef,
		stop => 1, hz => $o{hz});
	return VM::nginx_up(conf => $conf, workers => $o{workers}, env => "export HEAVY_N=$o{heavy}$nojit") . <<"SH";
kids \$master; echo "# master: \$master workers: \$kids"
@{[ VM::under_wrk("-t2 -c$conns http://127.0.0.1:8080$o{url}", $sample) ]}kill -QUIT \$master
wait
grep -E '\\[(alert|emerg|crit)\\]' logs/error.log | sed 's/^/# /'
exit \$rc
SH
}

my %cases = (    # name => module key, ngx_case options
	jit => [plain => url => '/', hz => $HZ], nojit => [plain => url => '/', nojit => 1, hz => $HZ],
	ffi => [plain => url => '/ffi', hz => $HZ],
	lines => [lines => url => '/', params => 'stapxx_lines=1'], master => [lines => url => '/', workers => 2, master => 1]);
for my $name (sort keys %cases) {
	my ($k, %o) = @{ $cases{$name} };
	next unless $ko{$k};
	(my $file = $ko{$k}) =~ s{.*/}{};
	$vm->case($name => ngx_case(workers => 1, %o, module => $file, samples => POSIX::ceil(1.2 * LjStacks::seed_samples($CLAIM{$name}, $VM::SAMPLE_DESIGN))),
		files => [$ko{$k}], timeout => 180);
}
# (a backtrace in heavy(), its long loop: taken again until one lands
# there, as in t/42)
$vm->case(bt => LjStacks::ngx_bt_sh(module => 'ljbt_ngx.ko'), files => [$ko{bt}], timeout => 90) if $ko{bt};

my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors' or diag $r->{stderr};
my $c = $r->{cases};

my %root = (jit => $chunk_line, nojit => $chunk_line, ffi => $ffi_line, lines => $chunk_line, master => $chunk_line);
for my $name (qw(jit nojit ffi lines master)) {
	# a missing case (its module failed to build) fails, never skips
	my $case = $c->{$name};
	ok $case, "nginx $name: the case ran" or next;
	is $case->{status}, 0, "nginx $name: staprun status 0" or diag $case->{output};
	unlike $case->{output}, qr/\[(alert|emerg|crit)\]/, "nginx $name: no errors in error.log";
	my $p = LjStacks::parse($case->{output});
	my $chunk = "content_by_lua(nginx.conf:$root{$name})";
	my $mode = $name eq 'nojit' ? 'nojit' : $name eq 'ffi' ? 'ffi' : 'jit';
	my ($f, $n) = LjStacks::check_seed("nginx $name", $p, app => "$ROOT/t/apps/test.lua",
		root => [$chunk], mode => $mode, lines => $name eq 'lines' ? 1 : 0, claim => $CLAIM{$name},
		design => $VM::SAMPLE_DESIGN);
	note sprintf('nginx %s: foo %.1f%% of %d foo + bar samples, %d samples in %.1f s of CPU time', $name,
		$f // 0, $n, ($p->{stats} // {})->{samples} // 0, $p->{cpu} // 0);
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

# lj-lua-bt on a busy worker (JIT off): backtraces with full paths and
# lines, each a whole stack down to the content_by_lua chunk, the last one
# in heavy() (a try lands in ngx.say's C code or main()'s own bytecode now
# and then: LjStacks::ngx_bt_sh)
if (my $case = $c->{bt}) {
	my $o = $case->{output};
	is $case->{status}, 0, 'nginx lj-lua-bt: status 0' or diag $o;
	my @tries = LjStacks::bt_tries($o);
	ok @tries >= 1 && @tries <= 5, 'nginx lj-lua-bt: 1 to 5 tries (' . scalar(@tries) . ')' or diag $o;
	for my $k (0 .. $#tries) {
		my $t = $tries[$k];
		like $t, qr/^Lua backtrace of process \d+ \(nginx\), VM state \w+:$/m, "nginx lj-lua-bt try @{[$k + 1]}: header"
			or diag $o;
		like $t, qr{^/\S+/test\.lua:main\ncontent_by_lua\(nginx\.conf:$chunk_line\):1\ncontent_by_lua\(nginx\.conf:$chunk_line\)$}m,
			"nginx lj-lua-bt try @{[$k + 1]}: down to main() <- content_by_lua, with lines" or diag $o;
	}
	like $tries[-1] // '', qr{^C:lj_BC_\w+\n(?:/\S+/test\.lua:\d+\n)?/\S+/test\.lua:heavy\n/\S+/test\.lua:\d+\n/\S+/test\.lua:(?:foo|bar)\n/\S+/test\.lua:\d+\n/\S+/test\.lua:main\ncontent_by_lua\(nginx\.conf:$chunk_line\):1\ncontent_by_lua\(nginx\.conf:$chunk_line\)$}m,
		'nginx lj-lua-bt: heavy <- foo|bar <- main <- content_by_lua, with lines' or diag $o;
}

done_testing;
