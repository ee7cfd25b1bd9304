#!/usr/bin/perl
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
	my $dir = scratch('12-safety');
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
