#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lib/ is layered: each component (a folder) includes headers only of the
# components its line in lib/README.md ("The allowed uses") names, so
# nothing calls upward and the archives link in the Makefile's order.
# Reads the includes of every file in lib/; host-only, no build needed.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Test::More;

# "    C: A B ..." lines after the "## The allowed uses" heading.
sub allowed_uses {
	my ($readme) = @_;
	my ($section) = $readme =~ /^## The allowed uses\n(.*?)(?=^## |\z)/ms
		or return;
	my %uses;
	$uses{$1} = [split ' ', $2]
		while $section =~ /^    (\w+):[ \t]*(.*)$/mg;
	return \%uses;
}

# The includes of file TEXT in component COMP that break the rules: a
# quoted include is "C/NAME.h" of COMP itself or of an allowed C, or a
# file of COMP's own folder (the BPF program's "lj_stacks.h"); "../" and
# unknown folders are not allowed.  Returns "LINE: include (why)" texts.
sub bad_includes {
	my ($uses, $comp, $text, $own_files) = @_;
	my %ok = map { $_ => 1 } $comp, @{$uses->{$comp}};
	my @bad;
	my $n = 0;
	for my $line (split /\n/, $text) {
		$n++;
		my ($inc) = $line =~ /^\s*#\s*include\s+"([^"]+)"/ or next;
		if ($inc =~ m{^(\w+)/[\w.]+$}) {
			next if $ok{$1};
			push @bad, "$n: $inc (" . (exists $uses->{$1}
				? "$comp may not use $1" : "no component $1") . ')';
		} elsif ($inc !~ m{/} && $own_files->{$inc}) {
			next;
		} else {
			push @bad, "$n: $inc (name the component: \"C/NAME.h\")";
		}
	}
	return @bad;
}

my $uses = allowed_uses(slurp("$ROOT/lib/README.md"));
ok($uses && %$uses, 'lib/README.md lists the allowed uses')
	or BAIL_OUT('no "## The allowed uses" section in lib/README.md');

# The checker itself: an upward include, "../" and a sibling are caught.
my %toy = (low => [], mid => ['low'], top => ['mid', 'low']);
is_deeply([bad_includes(\%toy, 'mid', qq{#include "low/a.h"\n#include "mid/b.h"\n}, {})],
	[], 'checker: a downward and an own include pass');
is_deeply([bad_includes(\%toy, 'mid', qq{#include <stdio.h>\n#include "top/x.h"\n}, {})],
	['2: top/x.h (mid may not use top)'], 'checker: an upward include fails');
is(scalar(bad_includes(\%toy, 'low', qq{#include "../top/x.h"\n#include "y.h"\n}, {})),
	2, 'checker: "../" and a bare name not in the folder fail');
is(scalar(bad_includes(\%toy, 'low', qq{#include "nope/x.h"\n}, {})), 1,
	'checker: an unknown folder fails');

# Every folder of lib/ is a component with a line, and every line a folder.
my @dirs = sort map { m{([^/]+)$} } grep { -d } glob("$ROOT/lib/*");
is_deeply(\@dirs, [sort keys %$uses], 'each folder of lib/ has its line, each line a folder');

# A use names a component, and the uses have no cycle: each component
# comes after those it uses in the Makefile's COMPONENTS (highest first).
my ($order) = slurp("$ROOT/Makefile") =~ /^COMPONENTS\s*:=\s*(.*)$/m;
my @order = split ' ', $order // '';
is_deeply([sort @order], [sort keys %$uses], 'the Makefile builds each component');
my %rank;
@rank{@order} = 0 .. $#order;
for my $c (sort keys %$uses) {
	my @wrong = grep { !defined $rank{$_} || !defined $rank{$c} || $rank{$_} <= $rank{$c} }
		@{$uses->{$c}};
	is_deeply(\@wrong, [], "$c uses only components after it in COMPONENTS");
}

# The includes of every file.
for my $c (@dirs) {
	next unless $uses->{$c};
	my @files = sort grep { -f } glob("$ROOT/lib/$c/*.[ch]");
	my %own = map { m{([^/]+)$} => 1 } @files;
	my @bad;
	for my $f (@files) {
		my $name = substr($f, length("$ROOT/"));
		push @bad, map { "$name:$_" } bad_includes($uses, $c, slurp($f), \%own);
	}
	is_deeply(\@bad, [], "lib/$c includes only " .
		join(', ', $c, @{$uses->{$c}}));
}
done_testing();
