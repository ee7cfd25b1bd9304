#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# Both backends agree: the same deterministic workload (the seed app in the
# GC64 luajit CLI, JIT on) sampled by the SystemTap module in the VM and by
# the eBPF backend (--runtime=bpf) on this host.  The hot stacks (5% of the
# samples or more in either) are the same frame texts, and each one's
# share differs by at most 2 points between the backends.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjStacks;
use Bpf;
use Test::More;

my $T = 6;    # seconds of sampling: ~1,200 samples per 3 s under TCG were too few for 2 points
my $lj = "$ROOT/build/luajit-gc64/bin/luajit";
# 2000000 iterations per heavy() call: natively a call spans many 1 ms
# sampling periods (200000 would alias with them), in the VM few enough
# calls are cut by the window's ends
my @work = ("$ROOT/t/apps/run.lua", $T + 4, 'jit', 'plain', 2000000);

# the eBPF backend on the host
my $pid = Bpf::spawn($lj, @work);
select(undef, undef, undef, 0.5);
my ($st, $out, $err, $bpf) = Bpf::stacks(['-x', $pid], "time=$T");
kill 'TERM', $pid;
waitpid($pid, 0);
is $st, 0, 'eBPF backend: status 0' or diag $err;

# the SystemTap module in the VM
my $vm = VM->new;
my $ko = $vm->build('ljs_agree', 'samples/lj-lua-stacks.sxx', exec => $lj, args => ['--arg', "time=$T"]);
ok $ko, 'the SystemTap module builds' or diag $vm->build_log;
# the target outlives staprun's start-up on a busy machine (it is killed
# when staprun ends): 60 s instead of the host's $T + 4
my @vmwork = @work;
$vmwork[1] = 60;
$vm->case(agree => VM::staprun_sh(target => join(' ', $lj, @vmwork), module => 'ljs_agree.ko',
	ready => 'sleep 1'), files => [$ko]) if $ko;
my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: the case ran' or diag $r->{stderr};
my $stap = LjStacks::parse(($r->{cases}{agree} // {})->{output} // '');

# share (percent) of each stack text
sub shares {
	my ($p) = @_;
	my %s;
	$s{ join("\n", @{ $_->{frames} }) } += 100 * $_->{count} / ($p->{total} || 1) for @{ $p->{stacks} };
	return \%s;
}
my ($a, $b) = (shares($bpf), shares($stap));
cmp_ok $bpf->{total}, '>=', 500, "eBPF: at least 500 Lua samples ($bpf->{total})";
cmp_ok $stap->{total}, '>=', 500, "SystemTap: at least 500 Lua samples ($stap->{total})";
my %hot = map { $_ => 1 } grep { $a->{$_} >= 5 } keys %$a;
$hot{$_} = 1 for grep { $b->{$_} >= 5 } keys %$b;
ok keys(%hot) >= 2, 'two or more hot stacks (foo and bar)' or diag join("\n--\n", keys %hot);
for my $h (sort keys %hot) {
	my $name = join(' <- ', split /\n/, $h);
	ok exists $a->{$h} && exists $b->{$h}, "hot stack in both: $name"
		or diag "eBPF:\n" . LjStacks::dump_stacks($bpf, 5) . "\nSystemTap:\n" . LjStacks::dump_stacks($stap, 5);
	my ($x, $y) = ($a->{$h} // 0, $b->{$h} // 0);
	ok abs($x - $y) <= 2, sprintf('%s: %.1f%% (eBPF) vs %.1f%% (SystemTap), within 2 points', $name, $x, $y);
}

done_testing;
