#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# $^pid_ok at run time, in Debian's kernel (VM): modules built on the host
# with -p4 and no PID, then run with staprun elsewhere.
#   --exec T               staprun -x WORKER: only that process is sampled
#   --exec T               staprun (no -x): every process named like T
#   --exec T --master -    staprun MOD.ko stapxx_master=MASTER: only the
#                          master's children, the worker that ran before
#                          staprun and workers started after it
# Targets: t/golden/fixture/target.c (fork, spin, respawn, hold), next to a
# busy process with another name that must never be sampled.  The master
# case does not race the clock: its first worker runs until the module has
# sampled it (the module prints "sampled PID"), and staprun runs until a
# worker started after that one has been sampled too.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Golden;
use VM;
use Test::More;

ok(-x $STAPXX, 'stap++ is built') or BAIL_OUT('run make first');
my $f = fixture();
my $T = $f->{target};
my $S = "$ROOT/t/golden/cases/pidok.sxx";
my $vm = VM->new;

# (secs=600: the master case ends the module itself, with SIGINT; the two
# build side by side, a failure's log in the diagnostics)
my ($exec_ko, $master_ko) = $vm->builds(['pidok_exec', $S, exec => $T],
	['pidok_master', $S, exec => $T, args => ['--master', '-', '--arg', 'secs=600']]);
ok($exec_ko, 'build --exec T -p4 (no PID)');
ok($master_ko, 'build --exec T --master - -p4 (no PID)');
BAIL_OUT('module builds failed') unless $exec_ko && $master_ko;

# Shell for one case: start the target and a busy "noise" process, wait for
# the target's pids, run STAPRUN (shell, its status in $st), stop
# everything.
sub case_sh {
	my ($target_args, $staprun) = @_;
	my $t = VM::sh_quote($T);
	return <<"EOS";
$t $target_args > target.log 2>&1 &
tp=\$!
sh -c 'while :; do :; done' &
noise=\$!
echo "noise \$noise" > noise.log
for i in \$(seq 100); do has 'worker*' target.log && break; sleep 0.1; done
master=\$(sed -n 's/^master //p' target.log | head -1)
worker=\$(sed -n 's/^worker //p' target.log | head -1)
$staprun
kill \$noise \$tp \$(sed -n 's/^worker //p' target.log) 2>/dev/null
wait
exit \$st
EOS
}

# staprun in the foreground; the module ends itself (after 4 s).
sub staprun_sh {
	my ($args) = @_;
	return "timeout -s INT -k 10 60 staprun $args\nst=\$?";
}

# The master case: the first worker (target ... hold) runs until the
# module has sampled it; then it is let go (SIGUSR1), the master starts
# new workers, and staprun is stopped (SIGINT: the end probe runs) once one
# of those has been sampled too.  Each wait also ends if staprun does.
my $master_sh = <<'EOS';
timeout -s INT -k 10 60 staprun "$VM_JOB"/pidok_master.ko stapxx_master=$master > staprun.out 2>&1 &
run=$!
until has "sampled $worker" staprun.out || ! kill -0 $run 2>/dev/null; do sleep 0.1; done
kill -USR1 $worker
# (a line "sampled PID" of another PID than $worker)
other() { [ -f staprun.out ] && while IFS= read -r l; do case $l in "sampled $worker") ;; 'sampled '*) return 0;; esac; done < staprun.out; return 1; }
until other || ! kill -0 $run 2>/dev/null; do
	sleep 0.1
done
kill -INT $run 2>/dev/null
wait $run
st=$?
cat staprun.out
EOS

$vm->case('exec-x', case_sh('fork spin', staprun_sh('-x $worker "$VM_JOB"/pidok_exec.ko')), files => [$exec_ko]);
$vm->case('exec-name', case_sh('fork spin', staprun_sh('"$VM_JOB"/pidok_exec.ko')), files => [$exec_ko]);
$vm->case('master', case_sh('fork spin respawn hold', $master_sh), files => [$master_ko]);
my $r = $vm->run;
is($r->{status}, 0, 'vm-run succeeded') or diag($r->{stderr});

# Per case: hits {pid => count}, the target's master/worker pids, noise pid.
sub result {
	my ($name) = @_;
	my $c = $r->{cases}{$name} // {};
	my $out = $c->{output} // '';
	my %hits;
	$hits{$1} += $3 while $out =~ /^hit (\d+) (\d+) (\d+)$/mg;
	my $log = slurp("$c->{dir}/target.log") // '';
	my ($master) = $log =~ /^master (\d+)$/m;
	my @workers = $log =~ /^worker (\d+)$/mg;
	my ($noise) = (slurp("$c->{dir}/noise.log") // '') =~ /^noise (\d+)/m;
	is($c->{status}, 0, "$name: staprun exit 0") or diag($out);
	like($out, qr/^done$/m, "$name: the module ran to its end probe") or diag($out);
	ok($master && @workers && $noise, "$name: target and noise pids known");
	return (\%hits, $master // -1, \@workers, $noise // -1, $out);
}

{
	my ($hits, $master, $workers, $noise, $out) = result('exec-x');
	is_deeply([keys %$hits], [$workers->[0]], 'exec, staprun -x WORKER: only the worker is sampled')
		or diag($out);
}
{
	my ($hits, $master, $workers, $noise, $out) = result('exec-name');
	ok($hits->{$master} && $hits->{$workers->[0]}, 'exec, no -x: master and worker (named like T) sampled')
		or diag($out);
	ok(!$hits->{$noise}, 'exec, no -x: a process with another name is not sampled');
	is(scalar(grep { $_ != $master && $_ != $workers->[0] } keys %$hits), 0, 'exec, no -x: nothing else sampled')
		or diag($out);
}
{
	my ($hits, $master, $workers, $noise, $out) = result('master');
	my %w = map { $_ => 1 } @$workers;
	ok(!$hits->{$master}, 'master: the master itself is not sampled') or diag($out);
	ok(!$hits->{$noise}, 'master: another process is not sampled');
	is(scalar(grep { !$w{$_} } keys %$hits), 0, 'master: only workers sampled') or diag($out);
	ok($hits->{$workers->[0]}, 'master: the worker that ran before staprun is sampled') or diag($out);
	cmp_ok(scalar(keys %$hits), '>=', 2, 'master: workers started while tracing are sampled too (respawns)')
		or diag($out);
}

done_testing();
