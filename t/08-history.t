#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# History that explains itself: every commit since the rule was made
# (ca06bd6, 2026-11-26) has a subject of at most 72 characters in the
# imperative (a capitalised verb, no trailing period) and a body that says
# why.  The commits before it are left as they are: main is never
# rewritten.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Test::More;

my $since = 'ca06bd6';
my ($rc, $out, $err) = run_cmd({ cwd => $ROOT }, 'git', 'rev-parse', '--verify', '-q', "$since^{commit}");
is($rc, 0, "the rule's first commit $since is in the history") or diag($err);

# subject NUL body RS, for every non-merge commit from $since on
($rc, $out, $err) = run_cmd({ cwd => $ROOT }, 'git', 'log', '--no-merges',
	'--format=%h %s%x00%b%x1e', "$since^..HEAD");
is($rc, 0, 'git log') or diag($err);
my @commits = grep { /\S/ } split(/\x1e\n?/, $out);
ok(@commits >= 1, scalar(@commits) . ' commits to check');
for my $c (@commits) {
	my ($head, $body) = split(/\x00/, $c, 2);
	my ($h, $subject) = $head =~ /^(\S+) (.*)$/s;
	ok(length($subject) <= 72, "$h: subject of " . length($subject) . " characters (at most 72)")
		or diag($subject);
	like($subject, qr/^[A-Z][a-z]+\b/, "$h: subject starts with a capitalised verb") or diag($subject);
	unlike($subject, qr/\.$/, "$h: subject has no trailing period");
	like($body // '', qr/\S/, "$h: a body that says why");
}
done_testing;
