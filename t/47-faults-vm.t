#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-stacks under faults mid-session, in the VM (one boot, two modules):
# the target exits while sampled; staprun gets SIGTERM or SIGINT (the end
# probe runs, the module unloads); the target's PID is reused by a program
# without LuaJIT (its samples count as "not running Lua"); 1,000 live
# coroutines under GC storms (non-GC64); nginx --master: a reload (old and
# new workers counted) and a worker killed with SIGSEGV (the master
# respawns it).  Every case ends with complete statistics; dev/vm-run
# fails on any kernel oops/WARN/BUG.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjStacks;
use Stats ();
use Test::More;

my $vm = VM->new;
my $app = "$ROOT/t/apps/hostile.lua";
my $lj = "$ROOT/build/luajit-nogc64/bin/luajit";
my $nginx = "$ROOT/build/nginx/sbin/nginx";
my $conf = "$ROOT/t/apps/nginx.conf";

my %ko;
# no time: every case stops staprun itself (SIGINT, SIGTERM or SIGKILL);
# hz=250: under TCG, 1,000 samples/s of deep stacks can pass SystemTap's
# overload guard (50% of a CPU), which ends the session
@ko{qw(lj ngx)} = $vm->builds(    # two at a time
	['ljs_faults', 'samples/lj-lua-stacks.sxx', exec => $lj, args => ['--arg', 'hz=250']],
	# (t/41's module: built for the executable alone, the master's PID
	# given at load time)
	['ljs_ngx_def', 'samples/lj-lua-stacks.sxx', exec => $nginx]);
ok $ko{lj}, 'lj-lua-stacks builds for the non-GC64 luajit';
ok $ko{ngx}, 'lj-lua-stacks builds for nginx (run in master mode)';

# Shell: starts staprun (ARGS) in the background, its stderr in stap.err,
# and waits until it samples; at the end, stap_end prints stap.err.
my $STAP = <<'SH';
stap_start() {
	staprun "$@" 2> stap.err &
	sp=$!
	for i in $(seq 1 300); do has '*lj-lua-stacks: sampling*' stap.err && return 0; sleep 0.1; done
	echo "# staprun did not start sampling"; return 1
}
stap_end() {
	wait $sp
	rc=$?
	cat stap.err >&2
}
SH
# the target, then sampling
my $LJ = $STAP . <<"SH";
$lj $ROOT/t/apps/run.lua 1000 jit plain 200000 > target.log 2>&1 &
pid=\$!
sleep 0.5
stap_start -x \$pid "\$VM_JOB"/ljs_faults.ko || exit 1
SH
# staprun gets SIG after 1 s of sampling; is the module gone after?
sub signal_sh {
	my ($sig) = @_;
	return $LJ . <<"SH";
sleep 1
kill -$sig \$sp
stap_end
kill \$pid
echo "# loaded after: \$(grep -c '^ljs_faults ' /proc/modules)"
exit \$rc
SH
}
if ($ko{lj}) {
	$vm->case(exits => $LJ . <<'SH', files => [$ko{lj}]);
sleep 1
kill -TERM $pid; wait $pid
echo "# target exited"
sleep 1
kill -INT $sp
stap_end
exit $rc
SH
	$vm->case(sigterm => signal_sh('TERM'), files => [$ko{lj}]);
	$vm->case(sigint => signal_sh('INT'), files => [$ko{lj}]);
	# SIGKILL: nothing runs the end probe, nothing is printed; what is
	# left is recorded, and removed with staprun -d if loaded
	$vm->case(sigkill => $LJ . <<'SH', files => [$ko{lj}]);
sleep 1
kill -KILL $sp
wait $sp
sleep 1
echo "# loaded after SIGKILL: $(grep -c '^ljs_faults ' /proc/modules)"
echo "# stapio left: $(pgrep -c stapio)"
if grep -q '^ljs_faults ' /proc/modules; then staprun -d ljs_faults; echo "# staprun -d: status $?"; fi
echo "# loaded at the end: $(grep -c '^ljs_faults ' /proc/modules)"
kill $pid
SH
	# the target dies after 1 s of sampling; dd gets its PID (ns_last_pid)
	$vm->case(pidreuse => $LJ . <<'SH', files => [$ko{lj}]);
sleep 1
kill -9 $pid; wait $pid 2>/dev/null
for i in $(seq 1 50); do
	echo $((pid - 1)) > /proc/sys/kernel/ns_last_pid
	dd if=/dev/zero of=/dev/null bs=1 2>/dev/null &
	dd=$!
	[ $dd = $pid ] && break
	kill $dd
done
echo "# reused: $dd (was $pid)"
sleep 1.5
kill -INT $sp
stap_end
kill $dd
exit $rc
SH
	$vm->case(coros => $STAP . <<"SH", files => [$ko{lj}]);
$lj $app 1000 coros > target.log 2>&1 &
pid=\$!
sleep 1
stap_start -x \$pid "\$VM_JOB"/ljs_faults.ko || exit 1
sleep 3
kill -INT \$sp
stap_end
kill \$pid
exit \$rc
SH
}
# nginx, two workers under wrk, sampled with --master; FAULT (shell) after
# 1 s, then 1.5 s after the new workers serve
sub ngx_sh {
	my ($fault) = @_;
	return $STAP . <<"SH";
mkdir -p logs
export TEST_APP_DIR=$ROOT/t/apps HEAVY_N=200000
$nginx -p "\$CASE" -c $conf -g 'worker_processes 2;' > nginx.out 2>&1 &
for i in \$(seq 1 150); do @{[ VM::get_sh('http://127.0.0.1:8080/', '/dev/null') ]} && break; sleep 0.2; done
master=\$(cat logs/nginx.pid)
wrk -t2 -c8 -d60s http://127.0.0.1:8080/ > wrk.txt 2>&1 &
wp=\$!
stap_start "\$VM_JOB"/ljs_ngx_def.ko stapxx_master=\$master || exit 1
sleep 1
kids \$master; old=\$kids
echo "# workers before: \$old"
$fault
# until every old worker is gone or replaced, for 30 s at most (of the
# guest's clock: /proc/uptime, no fork; under TCG on a loaded host a
# fork can take a few hundred ms)
read up x < /proc/uptime; end=\$((\${up%.*} + 30))
while :; do
	kids \$master; new=\$kids
	n=0; for w in \$new; do case " \$old " in *" \$w "*) ;; *) n=\$((n + 1)) ;; esac; done
	alive=0; for w in \$old; do kill -0 \$w 2>/dev/null && alive=\$((alive + 1)); done
	[ \$n -ge 1 ] && [ \$alive -lt 2 ] && break
	read up x < /proc/uptime; [ \${up%.*} -ge \$end ] && { echo "# old workers still there after 30 s"; break; }
	sleep 0.2
done
sleep 1.5
kids \$master; echo "# workers after: \$kids"
kill -INT \$sp
stap_end
kill \$wp 2>/dev/null
kill -QUIT \$master
wait
grep -h 'exited on signal' logs/error.log | sed 's/^/# /'
exit \$rc
SH
}
if ($ko{ngx}) {
	$vm->case(reload => ngx_sh(qq{$nginx -p "\$CASE" -c $conf -g 'worker_processes 2;' -s reload}),
		files => [$ko{ngx}], timeout => 120);
	$vm->case(segv => ngx_sh(q{kids $master; kill -SEGV ${kids%% *}}), files => [$ko{ngx}], timeout => 120);
}

my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel oops/WARN/BUG' or diag $r->{stderr};
my $c = $r->{cases};

# complete statistics: all four lines of lj-lua-stacks' end probe
sub complete {
	my ($name, $case) = @_;
	my $p = LjStacks::parse($case->{output});
	my $st = $p->{stats} // {};
	ok defined $st->{samples} && defined $st->{nolua} && defined $st->{cost_us} && $p->{pids},
		"$name: complete statistics" or diag $case->{output};
	is_deeply LjStacks::bad($p, $name), [], "$name: well-formed output";
	my $unrooted = sub { $_[-1] ne 'C:pmain' && $_[-1] ne '[truncated]' && $_[-1] !~ /^content_by_lua/ };
	my $bad = LjStacks::count_with($p, $unrooted);
	is $bad, 0, "$name: every stack ends at its root" or diag LjStacks::dump_stacks($p, 8, $unrooted);
	return $p;
}

if (my $case = $c->{exits}) {
	is $case->{status}, 0, 'target exits while sampled: staprun status 0' or diag $case->{output};
	like $case->{output}, qr/^# target exited$/m, 'target exits: it did';
	my $p = complete('target exits', $case);
	ok $p->{total} > 0, "target exits: its samples are printed ($p->{total})";
}
for my $sig (qw(sigterm sigint)) {
	my $case = $c->{$sig} or next;
	my $p = complete($sig, $case);
	ok $p->{total} > 0, "$sig: the stacks sampled until then are printed ($p->{total})";
	like $case->{output}, qr/^# loaded after: 0$/m, "$sig: the module is unloaded";
}
if (my $case = $c->{sigkill}) {
	my $o = $case->{output};
	my ($loaded) = $o =~ /^# loaded after SIGKILL: (\d+)$/m;
	my ($stapio) = $o =~ /^# stapio left: (\d+)$/m;
	note "SIGKILL: module loaded after: " . ($loaded // '?') . ", stapio processes left: " . ($stapio // '?');
	unlike $o, qr/^\t\d+$/m, 'SIGKILL: no output (the end probe never ran)';
	like $o, qr/^# staprun -d: status 0$/m, 'SIGKILL: staprun -d MODULE removes what is left' if $loaded;
	like $o, qr/^# loaded at the end: 0$/m, 'SIGKILL: no module left at the end' or diag $o;
}
if (my $case = $c->{pidreuse}) {
	my $o = $case->{output};
	is $case->{status}, 0, 'PID reuse: staprun status 0' or diag $o;
	like $o, qr/^# reused: (\d+) \(was \1\)$/m, 'PID reuse: dd got the target\'s PID' or diag $o;
	my $p = complete('PID reuse', $case);
	my $st = $p->{stats} // {};
	ok(($st->{nolua} // 0) >= 50, "PID reuse: dd's samples counted as not running Lua ($st->{nolua})") or diag $o;
	ok(($st->{lua} // 0) >= 50, "PID reuse: the target's samples before ($st->{lua})") or diag $o;
	# dd's samples are not faults: the skipped ones are held to the bound
	# of every lj-lua-stacks run (the start-up window of the C functions'
	# symbols apart)
	LjStacks::skipped_ok('PID reuse', $p);
	my $alien = LjStacks::count_with($p, sub { !grep { /^(?:run|test)\.lua/ } @_ });
	is $alien, 0, 'PID reuse: no stack outside the target\'s Lua code (nothing misattributed)';
}
if (my $case = $c->{coros}) {
	is $case->{status}, 0, '1,000 coroutines: staprun status 0' or diag $case->{output};
	my $p = complete('1,000 coroutines', $case);
	my $st = $p->{stats} // {};
	# lost: skipped (held as in every run) or dropped as inconsistent,
	# at most 1% of the samples plus 4 standard deviations of that count
	LjStacks::skipped_ok('1,000 coroutines and GC storms', $p);
	my $n = $st->{samples} // 0;
	my $tol = $n ? Stats::tolerance(0.01, $n) : 0;
	my $broken = $st->{broken} // 1e9;
	ok $n && 100 * $broken / $n <= 1 + $tol,
		sprintf('1,000 coroutines and GC storms: at most 1%% of the stacks inconsistent, +%.2f points at 4 sigma (%s of %d)',
			$tol, $broken, $n) or diag $case->{output};
	my $co = LjStacks::count_with($p, sub { LjStacks::has_seq(\@_, '[resume]', 'builtin:resume') && $_[-1] eq 'C:pmain'
		&& grep { $_ eq 'hostile.lua:burn_many' } @_ });
	ok $co > 0, "1,000 coroutines: burn_many <- [resume] <- builtin:resume <- ... <- C:pmain ($co samples)"
		or diag LjStacks::dump_stacks($p, 8);
	note "1,000 coroutines: $st->{cost_us} us per sample";
}
for my $k (qw(reload segv)) {
	my $case = $c->{$k} or next;
	my $o = $case->{output};
	is $case->{status}, 0, "$k: staprun status 0" or diag $o;
	my $p = complete($k, $case);
	my ($before) = $o =~ /^# workers before: (.*)$/m;
	my ($after) = $o =~ /^# workers after: (.*)$/m;
	my %new = map { $_ => 1 } split ' ', $after // '';
	delete $new{$_} for split ' ', $before // '';
	ok %new, "$k: new workers (" . join(' ', sort keys %new) . ')' or diag $o;
	my @sampled_new = grep { $new{$_} } keys %{ $p->{pids} // {} };
	my @sampled_old = grep { !$new{$_} } keys %{ $p->{pids} // {} };
	ok @sampled_new && @sampled_old, "$k: old and new workers both sampled (old: @sampled_old, new: @sampled_new)" or diag $o;
	like $o, qr/^# .*worker process \d+ exited on signal 11/m, 'segv: nginx saw the worker die of SIGSEGV' if $k eq 'segv';
}
done_testing;
