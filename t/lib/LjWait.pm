# SPDX-License-Identifier: GPL-2.0-or-later
package LjWait;

=head1 NAME

LjWait - read the output of the waiting-time samples (lj-lua-off-cpu,
lj-lua-fio, ngx-lua-yield) in t/63-t/65.

=head1 FUNCTIONS

=over 4

=item C<parse(TEXT, TOOL)>

LjStacks::parse of the stacks (weights in the counts), plus the tool's
summary lines on stderr (C<WARNING: TOOL: ...>) in C<stats>: C<traced_us>,
C<graph_us> (the weight with a Lua stack), C<waits>, C<nolua_us>,
C<nolua>, C<open>, C<open_us>, C<short>, C<skipped>, C<exited> (the pid
of "process N exited"), and C<lines> (every such line).

=item C<share(P, FRAME)>

Percentage of the printed weight in stacks that hold FRAME.

=back

=cut

use strict;
use warnings;
use LjStacks;

sub parse {
	my ($text, $tool) = @_;
	my $p = LjStacks::parse($text);
	my %s;
	for my $l (grep { /^WARNING: \Q$tool\E: / } split /\n/, $text) {
		push @{ $s{lines} }, $l;
		if ($l =~ /traced for (\d+) us; (\d+) us \S.*? in (\d+) \w+ with a Lua stack/) {
			@s{qw(traced_us graph_us waits)} = ($1, $2, $3);
		}
		if ($l =~ /(\d+) us in (\d+) waits without a Lua stack/) {
			@s{qw(nolua_us nolua)} = ($1, $2);
		}
		if ($l =~ /in (\d+) \w+ skipped \(faults\)/) {
			$s{skipped} = $1;
		}
		if ($l =~ /(\d+) \w+ shorter than min_us/) {
			$s{short} = $1;
		}
		if ($l =~ /(\d+) \w+ still open at the end, counted up to it: (\d+) us/) {
			@s{qw(open open_us)} = ($1, $2);
		}
		if ($l =~ /process (\d+) exited/) {
			$s{exited} = $1;
		}
	}
	$p->{wait} = \%s;
	return $p;
}

sub share {
	my ($p, $frame) = @_;
	return 0 unless $p->{total};
	return 100 * LjStacks::count_with($p, sub { grep { $_ eq $frame } @_ }) / $p->{total};
}

1;
