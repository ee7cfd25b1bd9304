#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# sample-bt --runtime=bpf on this host's kernel (no VM): the C-level
# stacks of a process, unwound by its binaries' CFI from the registers
# and stack copy each sample sends.
# - t/apps/spin.c (built here with -O2 -fomit-frame-pointer: no frame
#   pointers): every stack is whole, spin <- a or b <- main <-
#   __libc_start_call_main <- __libc_start_main <- _start (kernel frames
#   above it, named, when the sample found the CPU in the kernel); spin
#   under b holds 2/3 of spin's samples within 3 points; kernel=0 and
#   limit=5 as the options say;
# - a debug nginx worker under wrk: t/44's truths (the event loop, main,
#   the Lua content handler, named kernel frames above the user ones),
#   and user=0 (kernel frames only);
# - util/fold reads the output; a bad option is a usage error.
# Each case samples until it has taken the samples it needs (--arg
# samples), with time as a bound.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Bpf;
use SampleBt;
use Stats;
use Test::More;

my $out = scratch('89-bpf-sample-bt');
my $CLAIM = 3;

# The C target, built from t/apps/spin.c as a distribution builds.
my $spin = "$out/spin";
my ($rc, $o) = run_cmd({ merge => 1 }, 'gcc', '-O2', '-fomit-frame-pointer', '-o', $spin, "$ROOT/t/apps/spin.c");
is $rc, 0, 'spin.c builds' or diag $o;

# Runs sample-bt on TARGET with ARGS; returns its status, the parsed
# stacks, stdout and stderr, and the statistics line's numbers.
sub sample {
	my ($name, $target, @args) = @_;
	my ($st, $so, $se) = Bpf::run('sample-bt', $target, @args);
	is $st, 0, "$name: status 0" or diag $se;
	spit("$out/$name.bt" =~ s/ /_/gr, $so);
	my %n;
	@n{qw(samples user kernel skipped distinct)} =
		$se =~ /^WARNING: sample-bt: (\d+) samples, (\d+) in user mode, (\d+) in kernel mode, (\d+) skipped \(no frames\), (\d+) distinct stacks$/m;
	ok defined $n{samples}, "$name: the statistics line on stderr" or diag $se;
	like $se, qr/^WARNING: sample-bt: [\d.]+ us per sample in the sampling program on average \(\d+ bytes of user stack copied per sample\); [\d.]+ us per sample in stap\+\+ unwinding and naming it$/m,
		"$name: what a sample cost, on stderr";
	my $s = SampleBt::parse($so);
	ok $s && @$s, "$name: stacks in stackcollapse-stap form" or diag substr($so, 0, 2000);
	return ($s // [], $so, $se, \%n);
}

# The user frames of stack S (those after its kernel ones).
sub user_frames {
	my ($s) = @_;
	my @f = @{ $s->{frames} };
	my @m = @{ $s->{mods} };
	return map { $f[$_] } grep { $m[$_] ne 'kernel' } 0 .. $#f;
}

{
	my $need = Stats::floor(2 / 3, $CLAIM);
	my $pid = Bpf::spawn($spin);
	ok Bpf::ready($pid), 'spin: the target runs';
	my $ask = int(1.1 * $need);
	my ($s, $so, $se, $n) = sample('spin', ['-x', $pid], 'time=900', "samples=$ask");
	ok(($n->{samples} // 0) >= $ask, "spin: the $ask samples asked for were taken (" . ($n->{samples} // '?') . ')');
	my ($whole, $wrong, @wrong) = (0, 0);
	my %under = (a => 0, b => 0);
	for my $st (@$s) {
		my @u = user_frames($st);
		my @k = grep { $_ eq 'kernel' } @{ $st->{mods} };
		my $kfirst = join('', map { $_ eq 'kernel' ? 'k' : 'u' } @{ $st->{mods} }) =~ /^k*u+$/;
		if ("@u" =~ /^spin (a|b) main __libc_start_call_main __libc_start_main\S* _start$/ && $kfirst) {
			$under{$1} += $st->{count};
			$whole += $st->{count};
		} elsif ("@u" =~ /^(?:(?:a|b) )?main __libc_start_call_main __libc_start_main\S* _start$/ && $kfirst) {
			$whole += $st->{count};	# (in a, b or main, between two calls of spin)
		} else {
			$wrong += $st->{count};
			push @wrong, join(' <- ', @{ $st->{frames} }) . " ($st->{count})";
		}
	}
	is $wrong, 0, 'spin: every stack is whole, down to _start, kernel frames first'
		or diag join("\n", @wrong[0 .. ($#wrong < 9 ? $#wrong : 9)]);
	is $whole, SampleBt::total($s), "spin: ... in all $whole samples";
	my $ab = $under{a} + $under{b};
	share_ok('spin: spin under b of spin under a and b', $ab ? 100 * $under{b} / $ab : undef, 200 / 3, $ab,
		claim => $CLAIM);
	is SampleBt::total($s), $n->{samples} - $n->{skipped},
		"spin: every sample taken but the skipped ones is in a stack printed ($n->{samples} taken, $n->{skipped} skipped)";
	my ($frc, $fold) = run_cmd("$ROOT/util/fold", "$out/spin.bt");
	is $frc, 0, 'spin: util/fold reads it';
	like $fold, qr/^_start;__libc_start_main\S*;__libc_start_call_main;main;b;spin \d+$/m,
		'spin: ... into folded stacks, outermost first';
	# kernel=0, limit=5: user frames only, five stacks at most
	my ($s2) = sample('spin kernel=0', ['-x', $pid], 'time=300', 'samples=500', 'kernel=0', 'limit=5');
	ok @$s2 >= 1 && @$s2 <= 5, 'kernel=0 limit=5: at most 5 stacks (' . scalar(@$s2) . ')';
	is scalar(grep { $_ eq 'kernel' } map { @{ $_->{mods} } } @$s2), 0, 'kernel=0: no kernel frames';
	kill 'TERM', $pid;
	waitpid($pid, 0);
}

# A debug nginx worker under wrk (a short heavy(): the time goes to nginx,
# libc and the kernel rather than to JIT code)
{
	my $n = Bpf::nginx(workers => 1, heavy => 1000);
	my $w = $n->{workers}[0];
	my $wrk = Bpf::load($n->{port}, '/', 8);
	my ($s, $so, $se, $c) = sample('nginx', ['-x', $w], 'time=300', 'samples=1500');
	SampleBt::check_nginx('nginx', $s);
	my ($k, undef, $ke, $kn) = sample('nginx user=0', ['-x', $w], 'time=300', 'samples=1500', 'user=0');
	is SampleBt::with($k, qr/^(?:main|ngx_\w+)$/), 0, 'user=0: no user frames';
	ok SampleBt::with($k, qr/^(?:entry_SYSCALL_64\w*|do_syscall_64)$/) > 0, 'user=0: kernel frames';
	# (and those in kernel mode whose kernel stack the kernel did not give,
	# which stderr counts)
	my ($nok) = $ke =~ /^WARNING: sample-bt: (\d+) samples in kernel mode whose kernel stack the kernel did not give/m;
	is $kn->{skipped}, $kn->{user} + ($nok // 0),
		'user=0: the samples skipped (no frames) are those in user mode, and those without a kernel stack (' . ($nok // 0) . ')';
	Bpf::load_stop($wrk);
	Bpf::nginx_stop($n);
}

# bad input
{
	my ($st, undef, $err) = Bpf::run('sample-bt', ['-x', $$], 'kernel=2');
	is $st, 2, 'kernel=2: usage error';
	like $err, qr/^stap\+\+: error: --arg kernel must be/m, '... saying what it must be' or diag $err;
}

done_testing;
