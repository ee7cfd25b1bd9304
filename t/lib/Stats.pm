# SPDX-License-Identifier: GPL-2.0-or-later
# Stats.pm - how far a measured share may be from its truth, from the
# number of samples behind it.
#
# A share p measured on n independent samples has a standard deviation of
# sqrt(p(1-p)/n).  Every share assertion in t/ allows SIGMAS (4) of them,
# in percentage points:
#
#   tolerance(p, n) = 400 * sqrt(p(1-p)/n)
#
# so a correct tool fails such an assertion about once in 16,000 runs.  A
# test that claims a tighter tolerance than that (the product says "within
# 2 points") must first take enough samples: floor(p, claim) is that count,
# and share_ok() fails when the run took fewer, naming the floor.  Two
# estimates compared with each other (two backends on one workload) use the
# tolerance of their difference, diff_tolerance(p, n1, n2).
#
# Samples that are not independent spread more than that.  A sampler whose
# samples are clustered (a timer in a TCG guest on a loaded host: see
# $VM::SAMPLE_DESIGN) is given its design effect, design => D: the
# variance it measured, as a multiple of the binomial one.  The share
# then counts as n / D independent samples: the tolerance grows by
# sqrt(D) and a claim's floor by D.
#
# A known bias of the tool (a fixed overrun, a frame that cannot be named)
# is never dropped: it is passed as bias => POINTS with why => 'sentence',
# and the assertion allows it on top of the statistical tolerance, saying
# so in its name.
#
#   use Stats;
#   share_ok('foo', 100 * $foo / $n, 66.7, $n, claim => 2);
#   my $need = Stats::floor(2 / 3, 2);          # 8,889 samples
#   my $vm = Stats::floor(2 / 3, 4, 4);         # the same for +- 4 at D 4
package Stats;

use strict;
use warnings;
use POSIX qw(ceil);
use Exporter 'import';
use Test::More ();

our @EXPORT = qw(share_ok diff_ok);
our @EXPORT_OK = qw(tolerance floor diff_tolerance);

# Standard deviations an assertion allows.
our $SIGMAS = 4;

# A design effect D (default 1: independent samples); 1 or more.
sub _design {
	my ($d) = @_;
	$d //= 1;
	die "Stats: a design effect is 1 or more, not $d\n" unless $d >= 1;
	return $d;
}

# The tolerance, in points, of a share P (0..1) measured on N samples of
# design effect D (default 1).
sub tolerance {
	my ($p, $n, $d) = @_;
	die "Stats::tolerance: no samples\n" unless $n && $n > 0;
	return 100 * $SIGMAS * sqrt(_design($d) * $p * (1 - $p) / $n);
}

# The number of samples of design effect D (default 1) a share P needs for
# a tolerance of CLAIM points.
sub floor {
	my ($p, $claim, $d) = @_;
	die "Stats::floor: the claim must be positive\n" unless $claim > 0;
	return ceil((100 * $SIGMAS) ** 2 * _design($d) * $p * (1 - $p) / $claim ** 2);
}

# The tolerance, in points, of the difference of two estimates of a share P
# measured on N1 and N2 samples of design effects D1 and D2 (default 1).
sub diff_tolerance {
	my ($p, $n1, $n2, $d1, $d2) = @_;
	die "Stats::diff_tolerance: no samples\n" unless $n1 && $n1 > 0 && $n2 && $n2 > 0;
	return 100 * $SIGMAS * sqrt($p * (1 - $p) * (_design($d1) / $n1 + _design($d2) / $n2));
}

# ' at D times the binomial variance' when D is more than 1
sub _design_text {
	my ($d) = @_;
	return _design($d) > 1 ? sprintf(', at %g times the binomial variance', $d) : '';
}

# The tolerance an assertion allows: the statistical one, or CLAIM when
# one is given (then N must reach its floor), plus any bias.
sub _allowed {
	my ($name, $p, $n, %o) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 2;
	my $tol = tolerance($p, $n, $o{design});
	my $ok = 1;
	if (defined $o{claim}) {
		my $need = floor($p, $o{claim}, $o{design});
		$ok = Test::More::ok($n >= $need,
			sprintf('%s: %d samples reach the floor %d for +- %g points%s', $name, $n, $need, $o{claim},
				_design_text($o{design})));
		$tol = $o{claim} if $n >= $need;
	}
	my $bias = $o{bias} // 0;
	die "Stats: a bias needs why => 'the reason'\n" if $bias && !$o{why};
	return ($ok, $tol, $bias);
}

# share_ok(NAME, GOT, TRUTH, N, %opts) - GOT and TRUTH are shares in
# percent, N the samples GOT was measured on.  Options: claim => POINTS
# (the tolerance the test promises; N must reach its floor), design => D
# (the samples' design effect, see above), bias =>
# POINTS and why => SENTENCE (a known, explained bias of the tool, allowed
# on top).  One or two assertions; their names print p, n and the
# tolerance.  No samples at all is a failure, never a pass.
sub share_ok {
	my ($name, $got, $truth, $n, %o) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	if (!$n || $n <= 0 || !defined $got) {
		Test::More::ok(0, "$name: no samples to measure a share on");
		return 0;
	}
	my ($ok, $tol, $bias) = _allowed($name, $truth / 100, $n, %o);
	my $what = sprintf('%s: %.1f%% of %d samples (%.1f +- %.1f%s%s)', $name, $got, $n, $truth,
		$tol, _design_text($o{design}), $bias ? sprintf(' + %.1f bias: %s', $bias, $o{why}) : '');
	return Test::More::ok(abs($got - $truth) <= $tol + $bias, $what) && $ok;
}

# diff_ok(NAME, GOT1, N1, GOT2, N2, %opts) - two estimates (percent) of the
# same share agree within the tolerance of their difference at 4 sigma
# (around their pooled share).  design => [D1, D2]: the design effects of
# the two (default 1 each).  bias/why as for share_ok.
sub diff_ok {
	my ($name, $g1, $n1, $g2, $n2, %o) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	if (!$n1 || !$n2) {
		Test::More::ok(0, "$name: no samples to compare");
		return 0;
	}
	my $p = ($g1 * $n1 + $g2 * $n2) / (100 * ($n1 + $n2));
	my ($d1, $d2) = @{ $o{design} // [1, 1] };
	my $tol = diff_tolerance($p, $n1, $n2, $d1, $d2);
	my $bias = $o{bias} // 0;
	die "Stats: a bias needs why => 'the reason'\n" if $bias && !$o{why};
	return Test::More::ok(abs($g1 - $g2) <= $tol + $bias,
		sprintf('%s: %.1f%% of %d vs %.1f%% of %d (difference within %.1f%s)', $name, $g1, $n1,
			$g2, $n2, $tol, $bias ? sprintf(' + %.1f bias: %s', $bias, $o{why}) : ''));
}

1;
