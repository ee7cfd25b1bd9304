# SPDX-License-Identifier: GPL-2.0-or-later
# DwarfTest.pm - helpers shared by the DWARF tests (t/2*.t): compile
# fixtures, turn a layout program's output into stap++ queries, run
# ./stap++ --dump-src and compare what it resolved.  Running commands and
# scratch dirs come from TestUtil.pm.
package DwarfTest;

use strict;
use warnings;
use Test::More;
use TestUtil;
use Exporter 'import';

# Everything TestUtil exports too.
our @EXPORT = (@TestUtil::EXPORT, qw(build layout_lines script_for
		 check_resolved dump_src));

# Run a build command; returns its stdout.  A failure ends the test file
# (not the whole prove run).
sub build {
	my (@cmd) = @_;
	my ($rc, $out, $err) = run_cmd(@cmd);
	die("build failed (exit $rc): @cmd\n$out$err") if $rc;
	return $out;
}

# Parse a layout program's output ("GROUP\tQUERY\tTYPE\tMEMBER\tVALUE"
# lines) into hashes, keeping GROUP's lines only.
sub layout_lines {
	my ($text, $group) = @_;
	my @q;
	for (split /\n/, $text) {
		my ($g, $op, $type, $member, $value) = split /\t/, $_, -1;
		next unless defined $value && $g eq $group;
		push @q, { op => $op, type => $type, member => $member,
			   value => $value };
	}
	return @q;
}

# The stap++ macro text for query Q, with optional MODULE.
sub macro_for {
	my ($q, $module) = @_;
	my $m = defined $module ? qq(, "$module") : '';
	return "\@sizeof($q->{type}$m)" if $q->{op} eq 'sizeof';
	return "\@offsetof($q->{type}, $q->{member}$m)" if $q->{op} eq 'offsetof';
	return "\@has_member($q->{type}, $q->{member}$m)" if $q->{op} eq 'has_member';
	return "\@has_type($q->{type}$m)" if $q->{op} eq 'has_type';
	return "\@enum($q->{type}$m)" if $q->{op} eq 'enum';
	die "unknown query $q->{op}";
}

# A script that prints every query, one per line: 'printf("Qn %d\n", M)'.
sub script_for {
	my ($queries, $module) = @_;
	my $s = "probe begin {\n";
	my $n = 0;
	for my $q (@$queries) {
		$q->{macro} = macro_for($q, $module);
		$s .= sprintf(qq{\tprintf("Q%d %%d\\n", %s)\n}, $n++, $q->{macro});
	}
	return $s . "\texit()\n}\n";
}

# ./stap++ ARGS --dump-src FILE; returns (exit status, stdout, stderr).
sub dump_src {
	my ($script_file, @args) = @_;
	return run_cmd($STAPXX, @args, '--dump-src', $script_file);
}

# One test per query: the value stap++ substituted equals the expected one.
sub check_resolved {
	my ($label, $queries, $out) = @_;
	my %got;
	while ($out =~ /"Q(\d+) %d\\n", \(?(-?\d+)\)?\)/g) {
		$got{$1} = $2;
	}
	my $n = 0;
	for my $q (@$queries) {
		is($got{$n}, $q->{value}, "$label: $q->{macro}");
		$n++;
	}
}

1;
