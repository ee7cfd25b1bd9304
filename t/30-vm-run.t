#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# dev/vm-run itself: the interface (usage errors, --kernel-release), then
# one boot checking the guest environment, output, exit status and the job
# dir; one boot from a copy of the repository under /tmp (the guest's /tmp
# tmpfs must not hide it) stopped with SIGTERM; one boot that times out.
# Then the kept VM (STAPXX_VM_SERVER=1, as make test runs), in a VM dir of
# its own: jobs one after another in one boot, each with a fresh /tmp and
# nothing left running by the one before; a job whose guest kernel logged
# an error stops it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use Test::More;
use File::Temp qw(tempdir);
use File::Path qw(make_path remove_tree);
use Fcntl qw(:flock);

# the one-shot VM first: each job its own boot
delete $ENV{STAPXX_VM_SERVER};
my $vm = VM->new;
my $out = $vm->out;
my $run = "$ROOT/dev/vm-run";
my $in_out = { cwd => $out, merge => 1 };    # run_cmd in $out, one output

spit("$out/data.txt", "host data\n");

# --- interface, no boot ---
my ($st, $log) = run_cmd($in_out, $run, '--kernel-release');
is $st, 0, '--kernel-release: status 0';
chomp $log;
is $log, $vm->krel, '--kernel-release prints one release';
ok -f "/boot/vmlinuz-$log" && -d "/lib/modules/$log/build", '... with a kernel image and headers';

($st, $log) = run_cmd($in_out, $run, '--help');
is $st, 0, '--help: status 0';
like $log, qr/^usage: dev\/vm-run --kernel-release\n.*--timeout SECS/s, '--help: usage and options';
($st, $log) = run_cmd($in_out, $run);
is $st, 2, 'no script: exit 2';
like $log, qr/error: no job script given.*usage: dev\/vm-run/s, '... with usage';
($st, $log) = run_cmd($in_out, $run, '--bogus', 'x.sh');
is $st, 2, 'unknown option: exit 2';
like $log, qr/unknown option '--bogus'/, '... named';
($st, $log) = run_cmd($in_out, $run, '--append');
is $st, 2, '--append without a value: exit 2';
like $log, qr/option '--append' needs a value/, '... explained';
($st, $log) = run_cmd($in_out, $run, '--timeout', 'soon', 'x.sh');
is $st, 2, 'bad --timeout: exit 2';
like $log, qr/--timeout needs a positive integer, not 'soon'/, '... explained';
($st, $log) = run_cmd($in_out, $run, "$out/missing.sh");
is $st, 1, 'missing script: exit 1';
like $log, qr/cannot read job script '\Q$out\E\/missing\.sh'/, '... named';
($st, $log) = run_cmd($in_out, $run, "$out/data.txt", "$out/missing.ko");
is $st, 1, 'missing job file: exit 1';
like $log, qr/cannot find job file '\Q$out\E\/missing\.ko'/, '... named';

# --- one boot: the guest's environment ---
spit("$out/env.sh", <<"SH");
echo "job=\$VM_JOB"
echo "pwd=\$(pwd)"
echo "kernel=\$(uname -r)"
echo "user=\$(id -u)"
echo "data=\$(cat data.txt)"
echo "repo=\$(test -x $ROOT/dev/vm-run && echo visible)"
echo "rootfs=\$(touch /stappp-vm-test 2>/dev/null && echo writable || echo read-only)"
echo "tmp=\$(grep -c ' /tmp tmpfs ' /proc/mounts) \$(touch /tmp/x && echo writable)"
echo "debugfs=\$(grep -c ' /sys/kernel/debug debugfs ' /proc/mounts)"
echo "lo=\$(cat /sys/class/net/lo/operstate) \$(cat /sys/class/net/lo/flags)"
echo "cmdline=\$(cat /proc/cmdline)"
read line; echo "stdin=\$?"
echo written by the guest > result.txt
printf '\\033[1mbold\\033[0m and \\033[31mred\\033[0m\\r\\n'
printf 'no newline at the end'
exit 7
SH
remove_tree("$out/job");
($st, $log) = run_cmd($in_out, $run, '--timeout', '120', '--append', 'stappp.test=1 quiet',
                      '--out', "$out/job", "$out/env.sh", "$out/data.txt");
is $st, 7, "the job's exit status (7) is vm-run's" or diag $log;
my %v = $log =~ /^(\w+)=(.*)$/mg;
like $v{job}, qr{^\Q$ROOT\E/build/vm/jobs/[^/]+$}, '$VM_JOB: a fresh dir under build/vm/jobs (same path as on the host)';
is $v{pwd}, $v{job}, 'the job runs in $VM_JOB';
is $v{kernel}, $vm->krel, 'the guest runs the --kernel-release kernel';
is $v{user}, 0, 'as root';
is $v{data}, 'host data', 'FILE arguments are in the job dir';
is $v{repo}, 'visible', 'the repository is visible at its host path';
is $v{rootfs}, 'read-only', 'the host root is read-only';
is $v{tmp}, '1 writable', '/tmp is a writable tmpfs';
is $v{debugfs}, 1, 'debugfs is mounted for staprun';
like $v{lo}, qr/^(unknown|up) 0x\d*9$/, 'lo is up';
is $v{stdin}, 1, 'the job reads EOF from standard input';
like $v{cmdline}, qr/^console=ttyS0 .* stappp\.test=1 quiet$/, '--append: the arguments end the kernel command line';
like $log, qr/^bold and red$/m, 'console escape codes and CRs are stripped';
like $log, qr/^no newline at the end$/m, 'output without a final newline is complete';
unlike $log, qr/==stap\+\+ vm-run|SeaBIOS|\e/, 'no markers, firmware text or escapes in the output';
like $log, qr/vm-run: job dir: \Q$out\E\/job \([\d.]+ s, status 7\)/, 'vm-run names the job dir and status';
is slurp("$out/job/result.txt"), "written by the guest\n", 'files the job wrote come back (--out)';
ok !-e $v{job}, 'with --out, the build/vm/jobs dir is moved there';
like slurp("$out/job/.vm/dmesg") // '', qr/Linux version \Q${\ $vm->krel}\E/, 'the guest dmesg is kept in .vm/dmesg';

# --- a checkout under /tmp; SIGTERM stops the VM ---
my $tmp = tempdir('stappp-vm-XXXXXX', DIR => '/tmp', CLEANUP => 1);
make_path("$tmp/dev", "$tmp/build");
system('cp', $run, "$tmp/dev/vm-run") == 0 or die;
spit("$tmp/marker", "from the host's /tmp\n");
spit("$out/tmp.sh", <<"SH");
echo "marker=\$(cat $tmp/marker)"
echo "job=\$VM_JOB"
echo "tmp=\$(grep -c ' /tmp tmpfs ' /proc/mounts)"
echo ready
sleep 300
SH
my $pid = fork // die;
if (!$pid) {
	open STDIN, '<', '/dev/null';
	open STDOUT, '>', "$out/term.out";
	open STDERR, '>&', \*STDOUT;
	$ENV{STAPXX_VM_LOCK} = "$ROOT/build/vm.lock";    # still one VM at a time
	exec "$tmp/dev/vm-run", '--timeout', '600', "$out/tmp.sh" or die;
}
my $ready;
for (1 .. 1800) {    # other tests' VMs may hold build/vm.lock
	$ready = (slurp("$out/term.out") // '') =~ /^ready$/m and last;
	select undef, undef, undef, 0.5;
}
ok $ready, 'the job streams its output while it runs';
kill 'TERM', $pid;
waitpid $pid, 0;
is $? >> 8, 143, 'SIGTERM: vm-run exits 143';
$log = slurp("$out/term.out") // '';
%v = $log =~ /^(\w+)=(.*)$/mg;
is $v{marker}, "from the host's /tmp", 'a checkout under /tmp stays visible over the tmpfs';
like $v{job}, qr{^\Q$tmp\E/build/vm/jobs/}, '... and its job dir works';
is $v{tmp}, 1, '... while /tmp is still a tmpfs';
my ($qemu) = $log =~ /stopped the VM \(qemu pid (\d+)\)/;
ok $qemu, 'SIGTERM: vm-run says it stopped the VM' or diag $log;
ok $qemu && !kill(0, $qemu), '... and qemu is gone';

# --- timeout ---
# 30 s: the guest boots in about 8 s on a quiet machine, 20 s on a loaded one,
# and the job must have started for its output to be shown.
spit("$out/slow.sh", "echo started\nsleep 300\n");
($st, $log) = run_cmd($in_out, $run, '--timeout', '30', "$out/slow.sh");
is $st, 1, 'timeout: exit 1';
like $log, qr/^started$/m, 'timeout: the output so far is shown' or diag $log;
like $log, qr/error: the job timed out after 30 s \(--timeout\)/, 'timeout: said';

# --- the kept VM ---
# In a VM dir of this test's own (STAPXX_VM_DIR, with the shared
# initramfs and kernel copied in): the kept VM of make test's VM tests
# is not stopped, so their next job does not boot another.
my $vmd = "$out/vmdir";
remove_tree($vmd);
make_path($vmd);
system('cp', glob("$ROOT/build/vm/initramfs-* $ROOT/build/vm/vmlinux-*.pvh"), $vmd);
local $ENV{STAPXX_VM_DIR} = $vmd;
local $ENV{STAPXX_VM_LOCK} = "$out/keep.lock";
local $ENV{STAPXX_VM_SERVER} = 1;
spit("$out/keep1.sh", <<'SH');
echo "boot=$(cat /proc/sys/kernel/random/boot_id)"
touch /tmp/left-by-job1
sleep 1000 &
echo "sleeper=$!"
exit 5
SH
spit("$out/keep2.sh", <<'SH');
echo "boot=$(cat /proc/sys/kernel/random/boot_id)"
echo "tmp=$(ls /tmp | wc -l)"
echo "sleepers=$(pgrep -x sleep | wc -l)"
SH
spit("$out/keep3.sh", <<'SH');
echo "boot=$(cat /proc/sys/kernel/random/boot_id)"
echo '<3>stappp test: an error in the kernel log' > /dev/kmsg
SH
# The four jobs run back to back while this test holds build/vm.lock:
# make test's VM tests, which run beside this file, wait (two VMs at
# once on two cores bias the share tests' samples: docs/development.md,
# session 18); its jobs take a lock of their own.
open(my $vm_lock, '>', "$ROOT/build/vm.lock") or BAIL_OUT("cannot open $ROOT/build/vm.lock: $!");
flock($vm_lock, LOCK_EX) or BAIL_OUT("cannot lock $ROOT/build/vm.lock: $!");
my %k;
for my $n (1 .. 4) {
	my $script = $n == 4 ? 'keep2.sh' : "keep$n.sh";
	remove_tree("$out/keep$n");
	($st, $log) = run_cmd($in_out, $run, '--timeout', '120', '--out', "$out/keep$n", "$out/$script");
	$k{$n} = { $log =~ /^(\w+)=(.*)$/mg };
	@{ $k{$n} }{qw(st log)} = ($st, $log);
}
is $k{1}{st}, 5, "kept VM: the job's exit status (5) is vm-run's" or diag $k{1}{log};
ok $k{1}{boot} && $k{2}{boot} && $k{1}{boot} eq $k{2}{boot}, 'kept VM: the next job runs in the same boot'
	or diag "$k{1}{log}\n$k{2}{log}";
is $k{2}{tmp}, 0, 'kept VM: each job gets a fresh /tmp';
is $k{2}{sleepers}, 0, 'kept VM: what a job left running is gone before the next one' or diag $k{2}{log};
unlike slurp("$out/keep2/.vm/dmesg") // '', qr/Linux version/, 'kept VM: .vm/dmesg holds the job\'s kernel log, not the boot\'s';
is $k{3}{st}, 1, 'kept VM: a job whose guest kernel logged an error fails' or diag $k{3}{log};
like $k{3}{log}, qr/stappp test: an error in the kernel log/, '... and the error is shown';
ok $k{4}{boot} && $k{4}{boot} ne $k{3}{boot}, 'kept VM: after a failed job, the next one boots a fresh VM' or diag $k{4}{log};
ok -e "$vmd/server/qemu.pid", 'kept VM: it runs in the VM dir of STAPXX_VM_DIR';
($st, $log) = run_cmd($in_out, $run, '--stop-server');
is $st, 0, '--stop-server: status 0' or diag $log;
ok !-e "$vmd/server/qemu.pid", '--stop-server: the kept VM is gone';
close $vm_lock;

done_testing;
