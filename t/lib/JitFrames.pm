# SPDX-License-Identifier: GPL-2.0-or-later
# JitFrames.pm - the truths of t/apps/inline.lua, whose helpers the JIT
# inlines into one trace, and the checks both backends' tests make on
# them (t/85 for eBPF, t/86 for SystemTap).
#
#   use JitFrames;
#   my ($n, $other, $instep) = JitFrames::helpers($p, $leaf, $JitFrames::CALL{cpu});
#   JitFrames::check_split('gc64, CPU', $n, $sum, 2, 'samples');
package JitFrames;

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Stats;
use Test::More ();

=over

=item C<$APP>, C<%TRUTH>

The app, and each helper's share of its calls: alpha 1, beta 2, gamma 3
calls of nap() a round.

=item C<$STEP>, C<%CALL>

The line of C<local function step()> (where its trace starts), and of
nap()'s C call in each mode (cpu, burn, offcpu).

=item C<helpers(P, LEAF, CALL)>

Of LjStacks::parse result P: the weight in each helper's stacks of the
form LEAF (a regex; undef: no leaf, the stack starts at the trace), the
trace (or the FFI's call from the interpreter), nap at line CALL, nap,
the helper's line, the helper, step's line, step (lines=1: each Lua
frame's line first), as a hash ref; the weight of the other stacks
through nap that have such a leaf (each one in a diag); and the weight
of the first kind that is in step()'s trace.  (Before step() has its
trace, nap() may have its own, or none: the helpers then have frames on
the Lua stack.)

=item C<check_split(NAME, N, TOTAL, CLAIM, WHAT [, TRUTH [, DESIGN]])>

share_ok of each helper's weight in N (from C<helpers>) of TOTAL against
TRUTH (default C<%TRUTH>) within CLAIM points, the samples at design
effect DESIGN (Stats; default 1).

=back

=cut

our $APP = "$ROOT/t/apps/inline.lua";
our %TRUTH = (alpha => 1 / 6, beta => 2 / 6, gamma => 3 / 6);

my @src = split /\n/, slurp($APP);
sub _line_of {
	my ($re) = @_;
	my ($i) = grep { $src[$_] =~ $re } 0 .. $#src;
	die "t/apps/inline.lua has no line matching $re\n" unless defined $i;
	return $i + 1;
}
our $STEP = _line_of(qr/^local function step\(\)/);
our %CALL = (cpu => _line_of(qr/C\.memset\(/), burn => _line_of(qr/if burn\(k\) ~= k/),
	     offcpu => _line_of(qr/C\.usleep\(/));

sub helpers {
	my ($p, $leaf, $call) = @_;
	my (%n, $other, $instep);
	my $k = defined $leaf ? 1 : 0;
	for my $s (@{ $p->{stacks} }) {
		my @f = @{ $s->{frames} };
		next unless grep { $_ eq 'inline.lua:nap' } @f;
		next if $k && $f[0] !~ /^C:/;    # (samples in the trace's own code have none)
		next if !$k && $f[0] !~ /^trace#/;
		if ((!$k || $f[0] =~ $leaf) && $f[$k] =~ /^(?:trace#\d+:inline\.lua:\d+|builtin:\w+)$/
		    && $f[$k + 1] eq "inline.lua:$call" && $f[$k + 2] eq 'inline.lua:nap'
		    && ($f[$k + 4] // '') =~ /^inline\.lua:(alpha|beta|gamma)$/
		    && ($f[$k + 6] // '') eq 'inline.lua:step') {
			$n{$1} += $s->{count};
			$instep += $s->{count} if $f[$k] =~ /^trace#\d+:inline\.lua:$STEP$/;
		} else {
			$other += $s->{count};
			Test::More::diag('other: ' . join(' | ', @f) . " $s->{count}");
		}
	}
	return (\%n, $other // 0, $instep // 0);
}

sub check_split {
	my ($name, $n, $total, $claim, $what, $truth, $design) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	for my $h (qw(alpha beta gamma)) {
		share_ok("$name: $h\'s share of the $what in the helpers", 100 * ($n->{$h} // 0) / ($total || 1),
			 100 * ($truth // \%TRUTH)->{$h}, $total, claim => $claim, design => $design);
	}
}

1;
