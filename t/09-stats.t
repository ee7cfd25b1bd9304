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
done_testing;
