#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# The SystemTap backend on nginx in a container (issue 24): the module is
# built on this host from a container's running nginx (t/lib/Container.pm,
# --sample-pid HOSTPID: its binaries read through /proc/PID/root, handed
# to stap with --sysroot), then run in the VM's guest against the same
# container made there (its own mount, PID and UTS namespaces, its root on
# the guest's /tmp, nginx at /srv/edge.N/sbin/nginx, which neither host
# has), where the container's processes have other PIDs:
# - lj-lua-stacks -x WORKER (the guest's PID): foo/bar as t/41's jit case;
# - master mode (the same module, stapxx_master=MASTER at load time,
#   nginx being PID 1 in its namespace): both workers sampled, the master
#   not;
# - lj-gco-ref on the leak app of t/61 in the container: the walk
#   completes, with t/61's truths (LjGc::check_leak).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjStacks;
use Container;
use LjGc;
use POSIX ();
use Test::More;

my $vm = VM->new;
my %CLAIM = (x => 6, master => 10);    # at $VM::SAMPLE_DESIGN (t/40)
my $HZ = 2000;
my $app = "$ROOT/t/apps/test.lua";

# the containers the modules are built from, on this host
my $c = Container::nginx(workers => 1);
my $leak = Container::nginx(workers => 1, conf => 't/apps/leak/nginx.conf');
my ($w, $lw) = ($c->{workers}[0], $leak->{workers}[0]);
my %ko;
@ko{qw(x gcoref)} = $vm->builds(
	['ct_ljs', 'samples/lj-lua-stacks.sxx', args => ['--sample-pid', $w, '--arg', "hz=$HZ"]],
	['ct_gcoref', 'samples/lj-gco-ref.sxx', args => ['--sample-pid', $lw, '--arg', 'time=60', '--arg', 'gap=5']]);
Container::stop($_) for $c, $leak;
ok $ko{gcoref}, 'lj-gco-ref builds from a container\'s nginx';
ok $ko{x}, 'lj-lua-stacks builds from a container\'s nginx (--sample-pid)';
$ko{master} = $ko{x};    # (run with stapxx_master=MASTER)

# (t/41: a request must be short beside a session)
for my $name (grep { $ko{$_} } qw(x master)) {
	my $master = $name eq 'master';
	my $run = $master ? qq{"\$VM_JOB"/ct_ljs.ko stapxx_master=\$master} : qq{-x \$worker "\$VM_JOB"/ct_ljs.ko};
	my $samples = POSIX::ceil(1.2 * LjStacks::seed_samples($CLAIM{$name}, $VM::SAMPLE_DESIGN));
	my $sample = VM::sample_sh("staprun $run", $master ? '$(kids $master; echo $kids)' : '$worker', $samples, undef,
		stop => 1, hz => $HZ);
	my $conns = $master ? 32 : 8;
	$vm->case($name => Container::guest_sh($c, workers => $master ? 2 : 1, heavy => 100000)
		. VM::under_wrk("-t2 -c$conns http://127.0.0.1:$c->{port}/", $sample) . <<"SH",
kill -QUIT \$master
wait
grep -E '\\[(alert|emerg|crit)\\]' /tmp/container/app/logs/error.log | sed 's/^/# /'
exit \$rc
SH
		files => [$ko{$name}], timeout => 180);
}
$vm->case(gcoref => LjGc::leak_ngx_case(module => 'ct_gcoref.ko', load => 2, n => 100, port => $leak->{port},
	up => Container::guest_sh($leak)), files => [$ko{gcoref}], timeout => 150) if $ko{gcoref};
my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors' or diag $r->{stderr};
my $line = LjStacks::chunk_line("$ROOT/t/apps/nginx.conf");
for my $name (grep { $ko{$_} } qw(x master)) {
	my $case = $r->{cases}{$name};
	my $o = $case->{output};
	is $case->{status}, 0, "$name: staprun status 0" or diag $o;
	unlike $o, qr/\[(alert|emerg|crit)\]/, "$name: no errors in nginx's error.log";
	my ($master, @workers) = $o =~ /^# master: (\d+) workers: (\d+)(?: (\d+))?/m;
	@workers = grep { defined } @workers;
	my %ns = $o =~ /^# pid (\d+): NSpid: \d+ (\d+)$/mg;
	is $ns{$master // 0}, 1, "$name: nginx's master is PID 1 in the guest's container";
	my $p = LjStacks::parse($o);
	LjStacks::check_seed("$name", $p, app => $app, root => ["content_by_lua(nginx.conf:$line)"],
		mode => 'jit', lines => 0, claim => $CLAIM{$name}, design => $VM::SAMPLE_DESIGN);
	my $pids = $p->{pids} // {};
	my $all = 0;
	$all += $_ for values %$pids;
	for my $w (@workers) {
		my $n = $pids->{$w} // 0;
		ok $n >= 0.05 * $all, "$name: worker $w (PID $ns{$w} in the container) sampled, by the guest's PID ($n of $all samples)"
			or diag $o;
	}
	ok !exists $pids->{$master}, "$name: the master itself is not sampled" if $master;
}

if (my $case = $r->{cases}{gcoref}) {
	my $o = $case->{output};
	is $case->{status}, 0, 'lj-gco-ref: staprun status 0' or diag $o;
	like $o, qr/^WARNING: lj-gco-ref: process \d+: walk complete;/m, 'lj-gco-ref: the walk completes' or diag $o;
	my $p = LjStacks::parse(LjGc::stdout_of($o));
	my ($base) = $o =~ /^# count base: (\d+)$/m;
	my ($before) = $o =~ /^# count before: (\d+)$/m;
	LjGc::check_leak('lj-gco-ref', $p, $base, $before, $o);
}

done_testing;
