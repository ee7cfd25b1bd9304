#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# Command line: --help, --version, and every usage error (exit 2, one
# clear line, a hint), against golden files.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Golden;
use Test::More;

ok(-x $STAPXX, 'stap++ is built') or BAIL_OUT('run make first');

{
	my ($rc, $o, $e) = stapxx('--help');
	is($rc, 0, '--help: exit 0');
	is($e, '', '--help: nothing on stderr');
	like($o, qr/^usage: stap\+\+ /, '--help starts with usage');
	like($o, qr/\nExamples:\n(  .*\n|         .*\n)+\z/, '--help ends with examples');
	for my $opt (qw(-x --master --exec --sample-pid -e -I -D -d -c -v
			--skip-badvars --dump-src --args --arg -p -m -r -R -k
			-o -B --no-runtime-fix --help --version)) {
		like($o, qr/^  \Q$opt\E\b|\s\Q$opt\E\s/m, "--help documents $opt");
	}
	like($o, qr/--master -\s/, '--help documents master-mode builds without a PID');
	like($o, qr/staprun -x/, '--help says how to run a -p4 module');
	my ($rc2, $o2) = stapxx('-h');
	is($o2, $o, '-h is --help');
}
{
	my ($rc, $o, $e) = stapxx('--version');
	is($rc, 0, '--version: exit 0');
	like($o, qr/^stap\+\+ \d+\.\d+\.\d+\n\z/, '--version prints the version');
}

for my $c (
	['usage-no-script',      []],
	['usage-unknown-long',   ['--frobnicate', 'x.sxx']],
	['usage-unknown-short',  ['-Z', 'x.sxx']],
	['usage-missing-value',  ['x.sxx', '--exec']],
	['usage-missing-short',  ['x.sxx', '-x']],
	['usage-flag-value',     ['--dump-src=yes', 'x.sxx']],
	['usage-pass',           ['-p', '9', 'x.sxx']],
	['usage-define',         ['-D', '1X=2', 'x.sxx']],
	['usage-define-chars',   ['-D', 'A-B=2', 'x.sxx']],
	['usage-arg-noeq',       ['--arg', 'foo', 'x.sxx']],
	['usage-arg-name',       ['--arg', 'a.b=1', 'x.sxx']],
	['usage-x-master',       ['-x', '1', '--master', '1', 'x.sxx']],
	['usage-x-sample',       ['-x', '1', '--sample-pid', '1', 'x.sxx']],
	['usage-c-x',            ['-c', 'ls', '-x', '1', 'x.sxx']],
	['usage-master-dash',    ['--master', '-', 'x.sxx']],
) {
	my ($name, $args) = @$c;
	my ($rc, $o, $e) = stapxx(@$args);
	is($rc, 2, "$name: exit 2");
	golden($name, $args, $rc, $o, $e);
}

# Option spellings: --opt=value, --opt value, -xVALUE, -x VALUE, and
# clustered flags all mean the same.
{
	my @base = ('-e', 'probe begin { println("$^exec_path") }', '--dump-src');
	my ($r1, $o1) = stapxx(@base, '--exec=/bin/true');
	my ($r2, $o2) = stapxx(@base, '--exec', '/bin/true');
	is($r1, 0, '--exec=PATH');
	is($o1, $o2, '--exec=PATH == --exec PATH');
	like($o1, qr{"/\S*/true"}, 'exec path expanded');
	my ($r3, $o3, $e3) = stapxx('-vv', @base, '--exec', 'true');
	is($r3, 0, '-vv and a PATH lookup of the executable');
	is($o3, $o1, 'executable found in $PATH');
	like($e3, qr/^stap\+\+: executable: /m, '-v says what it found');
}

# The script file may come after options; -e turns it into a script arg.
{
	my ($rc, $o, $e) = stapxx('--dump-src', '--exec', '/bin/true', '-e',
				  'probe begin { exit() }', 'extra');
	is($rc, 0, '-e with a script arg');
	is($o, "probe begin { exit() }\n", '-e script printed');
}

# "-" reads the script from standard input; messages name it <stdin>.
{
	my $dir = scratch('10-cli');
	spit("$dir/in.sxx", "probe begin {\n\tprintln(\"\$^arg_x :default(1)\")\n\t\$^oops\n}\n");
	my ($rc, $o, $e) = stapxx({ stdin => "$dir/in.sxx" }, '-', '--dump-src');
	is($rc, 1, 'stdin script with an error: exit 1');
	is($e, "<stdin>:3: error: unknown macro '\$^oops'\nhint: known: \$^arg_NAME, \$^exec_path, \$^libNAME_path, \$^dso_NAME_path, \$^target, \$^pid_ok, \$^vm_allocf_path, \$^vm_allocf, \$^vm_allocd_to_G\n",
	   'stdin script: errors name <stdin>');
	spit("$dir/ok.sxx", "probe begin { println(\"\$^arg_x :default(1)\") }\n");
	($rc, $o, $e) = stapxx({ stdin => "$dir/ok.sxx" }, '-', '--dump-src', '--arg', 'x=2');
	is($rc, 0, 'stdin script: exit 0');
	is($o, "probe begin { println(\"2\") }\n", 'stdin script expanded');
}

done_testing();
