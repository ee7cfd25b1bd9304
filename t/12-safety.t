#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# --arg values cannot change the script's structure: inside a string
# literal they are escaped and stay one string (checked with the real stap
# parser); in code, values with a newline, ';', braces, comments, '%{',
# @define or unbalanced quotes/brackets are rejected with a clear error,
# while numbers, names, expressions and probe points pass.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Golden;
use Test::More;

ok(-x $STAPXX, 'stap++ is built') or BAIL_OUT('run make first');
my $S = 't/golden/cases/safety.sxx';
my $dir = scratch('12-safety');
my ($krel) = map { m{/lib/modules/([^/]+)/build$} } grep { -e "$_/.config" }
	glob('/lib/modules/*/build');
ok($krel, 'a kernel build tree for stap -p1') or BAIL_OUT('no kernel headers: run make deps');

# In code: rejected.
my @bad = (
	[n => "1; system(\"id\")"], [n => "1\n}"], [n => "1\r"], [n => "{"],
	[n => "1 }"], [n => '%{ evil() %}'], [n => '"unterminated'],
	[n => '(1'], [n => '1)'], [n => '[1'], [n => '1]'], [n => '1 # rest'],
	[n => '1 // rest'], [n => '1 /* rest */'],
	[n => '@define X %( 1 %)'], [n => "1\x01"], [n => '%( 1 %? 2 %)'],
	[probe => 'begin { system("id") } probe end'],
	[probe => 'process("/bin/sh").function("main") ; probe begin'],
	[probe => "timer.profile\n"],
);
my $report = '';
for my $c (@bad) {
	my ($name, $value) = @$c;
	my ($rc, $o, $e) = stapxx($S, '--exec', '/bin/true', '--dump-src',
				  '--arg', "$name=$value");
	(my $shown = $value) =~ s/([\x00-\x1f])/sprintf('\\x%02x', ord $1)/ge;
	is($rc, 1, "rejected in code: $name=$shown");
	is($o, '', "nothing printed for $name=$shown");
	$report .= "## --arg $name=$shown\nexit: $rc\n$e";
}
golden('safety-reject', [$S, '--exec', '/bin/true', '--dump-src', '--arg', '...'],
       0, $report, '');

# In code: a value that would fuse with the script bytes next to it into a
# comment or a %-directive ("8/$^arg_v" with v = "*2" opens a comment).
{
	my $f = "$dir/fuse.sxx";
	spit($f, "probe begin { x = 8/\$^arg_v/2; y = 8 % \$^arg_w(1); println(x, y) }\n");
	for my $c (['*2', '1'], ['1/', '1'], ['1', '1%'], ['/2', '1']) {
		my ($v, $w) = @$c;
		my ($rc, $o, $e) = stapxx($f, '--exec', '/bin/true', '--dump-src',
					  '--arg', "v=$v", '--arg', "w=$w");
		is($rc, 1, "rejected next to the script text: v=$v w=$w");
		like($e, qr/^\Q$f\E:1: error: the value of --arg [vw] would join the script text next to it into a comment or a '%' directive$/m,
		     "says why: v=$v w=$w") or diag($e);
	}
	my ($rc, $o, $e) = stapxx($f, '--exec', '/bin/true', '--dump-src',
				  '--arg', 'v=1', '--arg', 'w=max');
	is($rc, 0, 'plain values next to / and % pass') or diag($e);
	like($o, qr{x = 8/1/2; y = 8 % max\(1\)}, 'substituted verbatim');
}

# Defaults that name other defaults cannot blow up: 15 levels of ten
# references each stop at the 64 KiB cap, with one error.
{
	my $f = "$dir/blow.sxx";
	spit($f, "probe begin {\n  x = \$^arg_a0 :default(1)\n" .
		 join('', map { sprintf("  x = \$^arg_a%d :default(%s)\n", $_,
					join(' + ', ("\$^arg_a" . ($_ - 1)) x 10)) } 1 .. 15) .
		 "}\n");
	my ($rc, $o, $e) = stapxx($f, '--exec', '/bin/true', '--dump-src');
	is($rc, 1, 'exponential defaults: rejected');
	my @errs = $e =~ /expands to more than 65536 bytes/g;
	is(scalar(@errs), 1, 'exponential defaults: one error') or diag($e);
}

# In code: accepted as is.
for my $c ([n => '42'], [n => '-7'], [n => '0x10'], [n => '(1 + 2) * 3'],
	   [n => 'other_global'], [n => '"a string; {with} #stuff"'],
	   [probe => 'process("/bin/true").function("main")'],
	   [probe => 'timer.profile'], [probe => 'perf.sw.cpu_clock']) {
	my ($name, $value) = @$c;
	my ($rc, $o, $e) = stapxx($S, '--exec', '/bin/true', '--dump-src',
				  '--arg', "$name=$value");
	is($rc, 0, "accepted in code: $name=$value") or diag($e);
	like($o, $name eq 'n' ? qr/^\tx = \Q$value\E\n/m : qr/^probe \Q$value\E \{\n/m,
	     "substituted verbatim: $name=$value");
}

# In a string: escaped; stap parses one string literal with that value.
for my $value ('a"b', 'back\\slash\\', "two\nlines", '"; exit(); "',
	       '%{ x %}', "tab\there", "bell\x07", '$^arg_n @pfunc(x)', '') {
	(my $shown = $value) =~ s/([\x00-\x1f])/sprintf('\\x%02x', ord $1)/ge;
	my ($rc, $o, $e) = stapxx($S, '--exec', '/bin/true', '--dump-src',
				  '--arg', "s=$value");
	is($rc, 0, "string value accepted: $shown") or diag($e);
	my ($lit) = $o =~ /^\ts = (".*")$/m;
	ok(defined $lit, "one string literal on one line: $shown") or next;
	# Decode the literal the way stap does and compare.
	my $dec = substr($lit, 1, -1);
	ok($dec !~ /(?<!\\)(?:\\\\)*"/, "no unescaped quote inside: $shown");
	my %esc = (n => "\n", t => "\t", r => "\r", '\\' => '\\', '"' => '"');
	$dec =~ s{\\([0-7]{3}|[ntr"\\])}{ $esc{$1} // chr(oct($1)) }ge;
	is($dec, $value, "the literal decodes to the value: $shown");
	# stap's own parser agrees that the script is still well-formed.
	my ($prc, $po, $pe) = stapxx($S, '--exec', '/bin/true', '-p1', '-r', $krel,
				     '--arg', "s=$value");
	is($prc, 0, "stap -p1 parses it: $shown") or diag($pe);
	my @assign = $po =~ /^\(s\) = \(/mg;
	is(scalar @assign, 1, "stap sees one assignment to s: $shown");
}

# Paths and process names are outside input too: an executable named
# 'we"ird\' is escaped in strings and in $^pid_ok, and rejected in code.
{
	my $weird = "$dir/we\"ird\\";
	system('cp', '/bin/true', $weird) == 0 or die;
	my @args = ('-e', 'probe begin { if ($^pid_ok) println("$^exec_path") }',
		    '--exec', $weird, '--dump-src');
	my ($rc, $o, $e) = stapxx(@args);
	golden('safety-weird-exec', \@args, $rc, $o, $e);
	@args = ('-e', 'probe begin { x = $^exec_path }', '--exec', $weird, '--dump-src');
	($rc, $o, $e) = stapxx(@args);
	is($rc, 1, 'a weird executable path in code is rejected');
	golden('safety-weird-exec-code', \@args, $rc, $o, $e);
}

done_testing();
