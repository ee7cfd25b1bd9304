#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# t/lib/Stats.pm, which every share assertion uses: the 4-sigma tolerance
# of a share from its sample count, the floor a claimed tolerance needs,
# and the tolerance of a difference (the figures issue 28 quotes).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Stats qw(tolerance floor diff_tolerance);

sub near { my ($got, $want, $name) = @_; ok(abs($got - $want) < 0.05, "$name: $want (got $got)") }

near(tolerance(2 / 3, 500), 8.4, 'a 2/3 share of 500 samples: +- 8.4 points');
near(tolerance(2 / 3, 3000), 3.4, 'of 3,000 samples: +- 3.4 points');
is(floor(2 / 3, 2), 8889, '+- 2 points on a 2/3 share needs 8,889 samples');
near(diff_tolerance(2 / 3, 500, 500), 11.9, 'two estimates of 500 samples each: +- 11.9');
ok(!eval { tolerance(0.5, 0); 1 }, 'no samples: no tolerance');
# clustered samples (design effect D): n / D independent ones
near(tolerance(2 / 3, 3000, 4), 6.9, 'of 3,000 samples at 4 times the binomial variance: +- 6.9');
is(floor(2 / 3, 4, 4), 8889, '+- 4 points at 4 times the variance: the samples of +- 2');
near(diff_tolerance(2 / 3, 500, 500, 1, 4), 18.9, 'two of 500, one at 4 times the variance: +- 18.9');
ok(!eval { floor(2 / 3, 2, 0.5); 1 }, 'a design effect below 1 is refused');
# share_ok and diff_ok pass design on, and say so
my @r;
{
	no warnings 'redefine';
	local *Test::More::ok = sub { push @r, [@_]; $_[0] };
	Stats::share_ok('s', 61.0, 66.7, 3000, design => 4);
	Stats::share_ok('t', 61.0, 66.7, 3000);
	Stats::diff_ok('d', 60.0, 500, 75.0, 500, design => [1, 4]);
}
ok($r[0][0], 'share_ok: 5.7 points off passes at 4 times the variance');
like($r[0][1], qr/\(66\.7 \+- 6\.9, at 4 times the binomial variance\)$/, 'share_ok names the design effect') or diag($r[0][1]);
ok(!$r[1][0], 'share_ok: the same 5.7 points fail on independent samples');
ok($r[2][0], 'diff_ok: 15 points within the difference at 4 times the variance on one side');
done_testing;
