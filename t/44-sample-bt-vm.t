#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# samples/sample-bt.sxx in the VM (one boot): the C-level stacks of a debug
# nginx worker under wrk (the seed app with a short heavy(), so the time
# goes to nginx, libc and the kernel rather than to JIT code), the module
# built against the kernel build tree build/kernel/KREL (stap++ -r DIR), so
# kernel frames resolve with the guest kernel's System.map.  The output
# must be what util/fold reads, with nginx frames down to the event loop and
# named kernel frames; then kernel=0 user=1, and user=0 (kernel only).
# Each case samples until it has taken $N samples (--arg samples), with
# time as a bound: on a loaded host the guest's worker may run for a
# small part of any fixed time (a case once printed no stack in CI).
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use SampleBt;

my $R = $ROOT;
my $vm = VM->new;
my $out = $vm->out;
my $tree = $vm->ktree or do { done_testing(); exit };
my $nginx = "$R/build/nginx/sbin/nginx";
my $N = 150;    # samples each case takes: 1.5 s of the worker's CPU time at 100 Hz
my $T = 40;     # ... unless this many seconds end the session first


# The module: samples/sample-bt.sxx against the tree, with the kernel's
# symbols and unwind data (-d kernel).  Under qemu TCG a sample (user and
# kernel unwinding) costs several times what it does on hardware: at 1000
# Hz SystemTap's overload guard (probes over 50% of a CPU) stopped one
# run, so the test samples at 100 Hz (docs/sample-bt.md).  limit, kernel
# and user are the module's parameters (set when staprun loads it): the
# kernel=0 and user=0 cases also print only the 5 most frequent stacks;
# both prints 50 (1,000, and once 230 on a loaded machine, made
# SystemTap's transport lose output: docs/sample-bt.md).
my %params = (both => 'stapxx_limit=50', user => 'stapxx_kernel=0 stapxx_limit=5',
              kernel => 'stapxx_user=0 stapxx_limit=5');
my $ko = $vm->build('sbt', 'samples/sample-bt.sxx', exec => $nginx,
	args => ['-d', 'kernel', '--arg', "time=$T", '--arg', "samples=$N", '--arg', 'hz=100']);
ok $ko, 'sample-bt builds against the tree (-d kernel)' or diag $vm->build_log;

# nginx (one worker) under wrk; MODULE on the worker, stdout in bt.out.  wrk
# runs until staprun has ended: loading the module can take seconds under
# load, and an idle worker gives no samples.  A session whose output
# SystemTap's transport corrupted (it says "transport failures": see
# docs/sample-bt.md) runs again, three sessions at most; the checks below
# read the last one.
sub ngx_case {
	my ($module) = @_;
	return VM::nginx_up(env => 'export HEAVY_N=1000') . <<"SH" . VM::nginx_down() . <<"SH2";
wrk -t2 -c8 -d @{[ 3 * $T + 30 ]}s http://127.0.0.1:8080/ > wrk.txt 2>&1 &
wp=\$!
sleep 1
for try in 1 2 3; do
	timeout -s INT -k 10 @{[ $T + 20 ]} staprun -x \$worker "\$VM_JOB"/$module > bt.out 2> stap.err
	rc=\$?
	grep -q 'transport failures' stap.err || break
	echo "# session \$try: SystemTap's transport corrupted the output; again"
	sed 's/^/#   /' stap.err
done
cat stap.err
kill -INT \$wp
wait \$wp
SH
grep -h 'Requests/sec' wrk.txt | sed 's/^/# /'
exit \$rc
SH2
}

for my $k (sort keys %params) {
	$vm->case($k => ngx_case("sbt.ko $params{$k}"), files => [$ko], timeout => 3 * $T + 60) if $ko;
}
my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors'
	or diag "$r->{stderr}\n" . substr($r->{stdout} // '', -4000) . "\n" . substr($r->{dmesg} // '', -3000);

# The stacks of a case's bt.out (SampleBt::parse), and its text.
sub stacks {
	my ($case) = @_;
	my $bt = slurp("$case->{dir}/bt.out") // '';
	return (SampleBt::parse($bt), $bt);
}

my %st;
for my $k (qw(both user kernel)) {
	my $case = $r->{cases}{$k} or next;
	is $case->{status}, 0, "$k: staprun status 0" or diag $case->{output};
	note "$k: $_" for $case->{output} =~ /^# (session \d+: .*)$/mg;
	my ($n) = $case->{output} =~ /^WARNING: sample-bt: (\d+) samples, (\d+) in user mode, (\d+) in kernel mode, (\d+) skipped \(no frames\), (\d+) distinct stacks$/m;
	ok defined $n, "$k: statistics on stderr" or diag $case->{output};
	ok(($n // 0) >= $N, "$k: the $N samples asked for were taken (" . ($n // '?') . ')') or diag $case->{output};
	my ($s, $bt) = stacks($case);
	ok $s && @$s > 0, "$k: stacks in stackcollapse-stap form"
		or diag "$case->{output}\n" . substr($bt, 0, 1500) . "\n...\n" . substr($bt, -1500);
	$st{$k} = $s if $s;
	my ($ret, $fold) = run_cmd({ cwd => $out, merge => 1 }, "$R/util/fold", "$case->{dir}/bt.out");
	is $ret, 0, "$k: util/fold reads it" or diag $fold;
	ok scalar(() = $fold =~ /^\S.* \d+$/mg) > 0, "$k: ... into folded lines" or diag $fold;
}

SampleBt::check_nginx('both', $st{both}) if $st{both};
if (my $s = $st{user}) {
	ok @$s >= 1 && @$s <= 5, 'limit=5: at most 5 stacks (' . scalar(@$s) . ')';
	is SampleBt::with($s, qr/^(?:entry_SYSCALL_64\w*|do_syscall_64|__x64_sys_\w+)$/), 0, 'kernel=0: no kernel frames';
	ok SampleBt::with($s, qr/^main$/) > 0, 'kernel=0: user frames';
}
if (my $s = $st{kernel}) {
	is SampleBt::with($s, qr/^(?:main|ngx_\w+)$/), 0, 'user=0: no user frames';
	ok SampleBt::with($s, qr/^(?:entry_SYSCALL_64\w*|do_syscall_64)$/) > 0, 'user=0: kernel frames';
}

done_testing;
