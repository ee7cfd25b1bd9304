#!/usr/bin/perl
# $^pid_ok at run time, in Debian's kernel (VM): modules built on the host
# with -p4 and no PID, then run with staprun elsewhere.
#   --exec T               staprun -x WORKER: only that process is sampled
#   --exec T               staprun (no -x): every process named like T
#   --exec T --master -    staprun MOD.ko stapxx_master=MASTER: only the
#                          master's children, the worker that ran before
#                          staprun and workers started after it
# Targets: t/golden/fixture/target.c (fork, spin, respawn), next to a busy
# process with another name that must never be sampled.
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

my $exec_ko = $vm->build('pidok_exec', $S, exec => $T);
ok($exec_ko, 'build --exec T -p4 (no PID)') or diag($vm->build_log);
my $master_ko = $vm->build('pidok_master', $S, exec => $T, args => ['--master', '-']);
ok($master_ko, 'build --exec T --master - -p4 (no PID)') or diag($vm->build_log);
BAIL_OUT('module builds failed') unless $exec_ko && $master_ko;

# Shell for one case: start the target and a busy "noise" process, wait for
# the target's pids, run staprun, stop everything.
sub case_sh {
	my ($target_args, $module, $x, $params) = @_;
	$params //= '';
	my $t = VM::sh_quote($T);
	return <<"EOS";
$t $target_args > target.log 2>&1 &
tp=\$!
sh -c 'while :; do :; done' &
noise=\$!
echo "noise \$noise" > noise.log
for i in \$(seq 100); do grep -q '^worker' target.log && break; sleep 0.1; done
master=\$(sed -n 's/^master //p' target.log | head -1)
worker=\$(sed -n 's/^worker //p' target.log | head -1)
timeout -s INT -k 10 60 staprun $x "\$VM_JOB"/$module $params
st=\$?
kill \$noise \$tp \$(sed -n 's/^worker //p' target.log) 2>/dev/null
wait
exit \$st
EOS
}

$vm->case('exec-x', case_sh('fork spin', 'pidok_exec.ko', '-x $worker'), files => [$exec_ko]);
$vm->case('exec-name', case_sh('fork spin', 'pidok_exec.ko', ''), files => [$exec_ko]);
$vm->case('master', case_sh('fork spin respawn', 'pidok_master.ko', '', 'stapxx_master=$master'), files => [$master_ko]);
my $r = $vm->run;
is($r->{status}, 0, 'vm-run succeeded') or diag($r->{stderr});

# Per case: hits {pid => count}, the target's master/worker pids, noise pid.
sub result {
	my ($name) = @_;
	my $c = $r->{cases}{$name} // {};
	my $out = $c->{output} // '';
	my %hits;
	$hits{$1} += $3 while $out =~ /^hit (\d+) (\d+) (\d+)$/mg;
	my $log = VM::slurp("$c->{dir}/target.log") // '';
	my ($master) = $log =~ /^master (\d+)$/m;
	my @workers = $log =~ /^worker (\d+)$/mg;
	my ($noise) = (VM::slurp("$c->{dir}/noise.log") // '') =~ /^noise (\d+)/m;
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
