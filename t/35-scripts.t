#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# The shell scripts users and make run (dev/deps, dev/demo, dev/bench-*,
# dev/test-fresh, dev/test-cpu):
# -h/--help prints usage on stdout and exits 0; a bad argument exits 2 with
# one "NAME: error: ..." line and the usage on stderr, before anything is
# installed, built or booted (so this needs no root, apt, build/ or VM).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Test::More;
use File::Spec;

my %bad = (                     # script => a bad argument and the error it gets
	deps               => [['--bogus'], qr/unknown argument '--bogus'/],
	demo               => [['--bogus'], qr/unknown argument '--bogus'/],
	'bench-overhead'   => [['--bogus'], qr/unknown argument '--bogus'/],
	'bench-stap++'     => [['--bogus'], qr/unknown option '--bogus'/],
	'bench-flamegraph' => [['--bogus'], qr/unknown argument '--bogus'/],
	'bench-overhead-bpf' => [['--bogus'], qr/unknown option '--bogus'/],
	'bench-gc'         => [['--bogus'], qr/unknown argument '--bogus'/],
	'bench-gc-bpf'     => [['--bogus'], qr/unknown argument '--bogus'/],
	'bench-offcpu'     => [['--bogus'], qr/unknown argument '--bogus'/],
	'bench-alloc'      => [['--bogus'], qr/unknown argument '--bogus'/],
	'bench-probe'      => [['--bogus'], qr/unknown argument '--bogus'/],
	'bench-all'        => [['--bogus'], qr/unknown argument '--bogus'/],
	soak               => [['--bogus'], qr/unknown argument '--bogus'/],
	'test-fresh'       => [['--bogus'], qr/unknown argument '--bogus'/],
	'test-cpu'         => [['--bogus'], qr/unknown argument '--bogus'/],
);

for my $name (sort keys %bad) {
	my $script = "$ROOT/dev/$name";
	my $usage = qr{^usage: dev/\Q$name\E(?=\s)}m;

	my @head = split(/^/m, slurp($script) // die("$script: $!"));
	is($head[0], "#!/usr/bin/env bash\n", "$name: #!/usr/bin/env bash");
	ok((grep { /^set -euo pipefail$/ } @head), "$name: set -euo pipefail");

	for my $h ('--help', '-h') {
		my ($rc, $out, $err) = run_cmd($script, $h);
		is($rc, 0, "$name $h: exit 0");
		like($out, $usage, "$name $h: usage on stdout");
		is($err, '', "$name $h: nothing on stderr");
	}

	my ($args, $msg) = @{ $bad{$name} };
	my ($rc, $out, $err) = run_cmd($script, @$args);
	is($rc, 2, "$name @$args: exit 2");
	is($out, '', "$name @$args: nothing on stdout");
	like($err, qr/\A\Q$name\E: error: $msg[^\n]*\n/, "$name @$args: first line names the error");
	like($err, $usage, "$name @$args: usage on stderr");
}

# options that take a value, given none or a bad one
for my $c (
	['bench-stap++',   ['-n'],         qr/-n needs a value/],
	['bench-stap++',   ['-n', 'x'],    qr/-n wants a positive number of runs, not 'x'/],
	['bench-stap++',   [qw(-n 3 a b c)], qr/too many arguments: a b c/],
	['bench-overhead', ['-n'],         qr/-n needs a value/],
	['bench-overhead', ['-d'],         qr/-d needs a value/],
	['bench-overhead', ['-d', '0'],    qr/-d wants a positive number, not '0'/],
	['bench-overhead', ['-n', '3'],    qr/-n must be at least 5/],
	['deps',           [qw(--check-debsrc x)], qr/too many arguments/],
	['demo',           ['-h', 'x'],    qr/unknown argument 'x'/],
	['bench-probe',    ['-d', '0'],    qr/-d wants a positive number, not '0'/],
	['bench-probe',    ['--only'],     qr/--only needs a value/],
	['bench-probe',    ['--only', 'co,nope'], qr/unknown case 'nope'/],
	['bench-all',      ['--only'],     qr/--only needs a value/],
	['bench-all',      ['--only', 'gc,nope'], qr/unknown benchmark 'nope'/],
	['test-fresh',     ['--demo-only', 'x'], qr/unknown argument 'x'/],
	['test-fresh',     ['--deps-only', 'x'], qr/unknown argument 'x'/],
	['test-cpu',       ['exec'],       qr/exec takes one test file/],
	['test-cpu',       ['report', 'x'], qr/too many arguments/],
) {
	my ($name, $args, $msg) = @$c;
	my ($rc, $out, $err) = run_cmd("$ROOT/dev/$name", @$args);
	is($rc, 2, "$name @$args: exit 2");
	like($err, qr/\A\Q$name\E: error: $msg[^\n]*\n.*^usage: /ms, "$name @$args: error, then usage, on stderr");
	unlike($err, qr/unbound variable/, "$name @$args: no shell error");
}

# dev/test-repeat counts each file's failed rounds from prove's summary,
# whose file names are padded: a passing and a failing file, two rounds;
# its record lets --resume go on with the rounds an interruption lost
{
	my $d = scratch('35-test-repeat');
	spit("$d/passes-and-has-a-long-name.t", "use Test::More; ok(1, 'passes'); done_testing;\n");
	spit("$d/fail.t", "use Test::More; ok(0, 'fails'); done_testing;\n");
	my $rel = File::Spec->abs2rel($d, $ROOT);
	my @files = ("$rel/passes-and-has-a-long-name.t", "$rel/fail.t");
	my $repeat = sub {
		run_cmd({ cwd => $ROOT, env => { STAPXX_PROVE_RULES => '', STAPXX_REPEAT_DIR => "$d/repeat" } },
			"$ROOT/dev/test-repeat", @_);
	};
	my ($rc, $out, $err) = $repeat->('-n', '2', '-j', '1', @files);
	is($rc, 1, 'test-repeat: exit 1 when a round failed') or diag($err);
	like($out, qr{^test-repeat: round 1: FAIL in \d+ s; failed: \Q$rel\E/fail\.t$}m,
		'test-repeat: each round names the failed file') or diag($out);
	like($out, qr{^  0/2  \Q$rel\E/passes-and-has-a-long-name\.t\n  2/2  \Q$rel\E/fail\.t$}m,
		'test-repeat: failures per file over the rounds') or diag($out);
	like($out, qr{^test-repeat: 2 failed file runs of 4$}m, 'test-repeat: the total') or diag($out);
	ok(-f "$d/repeat/round-2.log", 'test-repeat: a log per round in $STAPXX_REPEAT_DIR');

	# an interruption in round 2: the record keeps round 1 only
	my $state = slurp("$d/repeat/state");
	like($state, qr{^round 1 FAIL \d+ \S+ \Q$rel\E/fail\.t$}m, 'test-repeat: the record holds each round');
	spit("$d/repeat/state", $state =~ s/^round 2 .*\n//mr);
	($rc, $out, $err) = $repeat->('--resume', '-j', '1', @files);
	is($rc, 1, 'test-repeat --resume: exit 1 (a round failed)') or diag($err);
	like($out, qr{^test-repeat: round 1: FAIL in \d+ s; failed: \Q$rel\E/fail\.t \(recorded, started }m,
		'test-repeat --resume: the recorded round counts') or diag($out);
	like($out, qr{^test-repeat: round 2 of 2 }m, 'test-repeat --resume: runs the round that was lost') or diag($out);
	unlike($out, qr{^test-repeat: round 1 of }m, 'test-repeat --resume: not the round recorded') or diag($out);
	like($out, qr{^  2/2  \Q$rel\E/fail\.t$}m, 'test-repeat --resume: failures over all the rounds') or diag($out);

	# another tree, other files, no record: refused
	my $record = slurp("$d/repeat/state");
	spit("$d/repeat/state", $record =~ s/^tree .*/tree 0000/mr);
	($rc, $out, $err) = $repeat->('--resume', @files);
	is($rc, 1, 'test-repeat --resume on another tree: exit 1');
	like($err, qr{^test-repeat: error: the run in \S+ tested tree 0000, this is \S+\nhint: }m,
		'test-repeat --resume on another tree: says which') or diag($err);
	spit("$d/repeat/state", $record);
	($rc, $out, $err) = $repeat->('--resume', $files[0]);
	is($rc, 1, 'test-repeat --resume with other files: exit 1');
	like($err, qr{^test-repeat: error: the run in \S+ tested other files}m,
		'test-repeat --resume with other files: says so') or diag($err);
	unlink "$d/repeat/state";
	($rc, $out, $err) = $repeat->('--resume', @files);
	is($rc, 1, 'test-repeat --resume without a record: exit 1');
	like($err, qr{^test-repeat: error: nothing to resume: no \S+/state$}m,
		'test-repeat --resume without a record: says so') or diag($err);
	($rc, $out, $err) = $repeat->('--bogus');
	is($rc, 2, 'test-repeat --bogus: exit 2');
	like($err, qr{\Atest-repeat: error: unknown option '--bogus'\n.*^usage: dev/test-repeat }ms,
		'test-repeat --bogus: error, then usage') or diag($err);
}

done_testing();
