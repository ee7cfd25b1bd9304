#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# Output that cannot be written is an error, never a silent success; a
# reader that goes away (SIGPIPE) does not leave stap++'s temp dir behind.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Golden;
use Test::More;

ok(-x $STAPXX, 'stap++ is built') or BAIL_OUT('run make first');
my $dir = scratch('19-io-errors');

# --dump-src and --args to a full device.
for my $c ([['--exec', '/bin/true', '--dump-src', '-e', 'probe begin {}'], '--dump-src'],
	   [['samples/lj-lua-stacks.sxx', '--exec', 'build/luajit-gc64/bin/luajit', '--args'], '--args']) {
	my ($args, $what) = @$c;
	my $pid = fork() // die "fork: $!";
	if (!$pid) {
		chdir($ROOT) or die;
		open(STDOUT, '>', '/dev/full') or die "/dev/full: $!";
		open(STDERR, '>', "$dir/err") or die;
		delete $ENV{STAPXX_STAP};
		exec { $STAPXX } $STAPXX, @$args or die;
	}
	waitpid($pid, 0);
	is($? >> 8, 1, "$what > /dev/full: exit 1");
	like(slurp("$dir/err"), qr/^stap\+\+: error: cannot write standard output: No space left on device$/m,
	     "$what > /dev/full: says so");
}

# stap's stderr goes through stap++; when its reader closes the pipe,
# stap++ still removes its temp dir and passes stap's status through.
{
	my $fake = "$dir/fake-stap";
	spit($fake, "#!/bin/sh\nfor i in \$(seq 5000); do echo \"line \$i\" >&2; done\nexit 3\n");
	chmod(0755, $fake);
	my $tmp = "$dir/tmp";
	mkdir($tmp);
	pipe(my $r, my $w) or die "pipe: $!";
	my $pid = fork() // die "fork: $!";
	if (!$pid) {
		close($r);
		chdir($ROOT) or die;
		open(STDOUT, '>', '/dev/null') or die;
		open(STDERR, '>&', $w) or die;
		$ENV{STAPXX_STAP} = $fake;
		$ENV{TMPDIR} = $tmp;
		exec { $STAPXX } $STAPXX, '--exec', '/bin/true', '-e', 'probe begin {}', '-p2' or die;
	}
	close($w);
	my $first = <$r>;
	close($r);			# the reader goes away
	waitpid($pid, 0);
	like($first, qr/^line 1$/, 'stap output arrives through stap++');
	is($? & 127, 0, 'stap++ is not killed by SIGPIPE');
	is($? >> 8, 3, "stap's exit status is passed through");
	opendir(my $dh, $tmp) or die;
	my @left = grep { !/^\.\.?$/ } readdir($dh);
	is_deeply(\@left, [], 'no temp dir left behind');
}

done_testing();
