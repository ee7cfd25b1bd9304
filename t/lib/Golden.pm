# SPDX-License-Identifier: GPL-2.0-or-later
# Golden.pm - helpers for the stap++ preprocessor/driver tests (t/1*.t):
# run ./stap++, normalise its output and compare it with t/golden/*.out;
# build the target fixture (t/golden/fixture/).
#
# The tests only compare: a run that differs from its golden file (or has
# none) fails and leaves what it got in t/out/golden-new/NAME.out.  After
# an intended change, `make regen-golden` runs them and copies those files
# over t/golden/; review the diff (git diff t/golden/) before committing.
package Golden;

use strict;
use warnings;
use File::Path qw(make_path remove_tree);
use Fcntl qw(:flock);
use Test::More;
use TestUtil;
use Exporter 'import';

# Everything TestUtil exports too: a golden test needs only "use Golden".
our @EXPORT = (@TestUtil::EXPORT, qw($G stapxx golden fixture normalise));

our $G = "$ROOT/t/golden";

# Run ./stap++ with ARGS (first arg may be an options hash for run_cmd).
# $STAPXX_STAP is cleared unless given, so the real stap is used.
sub stapxx {
	my ($opt, @args) = ref $_[0] eq 'HASH' ? @_ : ({}, @_);
	my %env = (STAPXX_STAP => undef, %{ $opt->{env} // {} });
	return run_cmd({ %$opt, env => \%env }, $STAPXX, @args);
}

# Replace what differs between machines and runs: the checkout path, temp
# dirs, and the PIDs given in $subst (hash: value => placeholder).
sub normalise {
	my ($s, $subst) = @_;
	$s =~ s{/[^\s'"]*/stap\+\+-[A-Za-z0-9]{6}}{\@TMP\@}g;
	$s =~ s{\Q$ROOT\E}{\@ROOT\@}g;
	for my $k (sort { length $b <=> length $a } keys %{ $subst // {} }) {
		$s =~ s{\b\Q$k\E\b}{$subst->{$k}}g;
	}
	return $s;
}

# Compare a run with t/golden/NAME.out.  A run that differs (or has no
# golden file) fails and is written to t/out/golden-new/NAME.out, which
# `make regen-golden` copies over t/golden/.
sub golden {
	my ($name, $args, $rc, $out, $err, $subst) = @_;
	my $got = "# stap++ " . normalise(join(' ', @$args), $subst) . "\n" .
		  "exit: $rc\n--- stdout\n" . normalise($out, $subst) .
		  "--- stderr\n" . normalise($err, $subst);
	my $file = "$G/$name.out";
	my $want = -e $file ? slurp($file) : undef;
	if (defined $want && $got eq $want) {
		pass("$name matches golden");
		return 1;
	}
	make_path("$ROOT/t/out/golden-new");
	spit("$ROOT/t/out/golden-new/$name.out", $got);
	if (!defined $want) {
		fail("$name: no golden file $file (make regen-golden writes it)");
		diag($got);
		return 0;
	}
	fail("$name differs from golden $file (make regen-golden takes the new output)");
	my $tmp = "$ROOT/t/out/.golden-diff.$$";
	spit("$tmp.got", $got);
	diag(scalar `diff -u $file $tmp.got`);
	unlink "$tmp.got";
	return 0;
}

# Build the target fixture (t/golden/fixture/*.c) once into
# t/out/golden-fixture/; returns a hash of paths:
#   target  - executable linked with libgxtra.so then libgx-1.2.so.3
#   gx, gxtra - the two shared libraries
#   static  - a statically linked executable (no shared libraries)
#   nolib   - linked with libgxtra.so but without an rpath: ldd cannot
#             find it
sub fixture {
	my $src = "$G/fixture";
	my $dir = "$ROOT/t/out/golden-fixture";
	my %f = (
		dir => $dir,
		target => "$dir/target",
		gx => "$dir/libgx-1.2.so.3",
		gxtra => "$dir/libgxtra.so",
		static => "$dir/static",
		nolib => "$dir/nolib",
	);
	my $stamp = "$dir/.built";
	my @inputs = (glob("$src/*.c"), __FILE__);
	# make test runs two tests at a time, and several of them build
	# this: one builds, the others wait for it, then find it built.
	make_path("$ROOT/t/out");
	open(my $lock, '>', "$dir.lock") or BAIL_OUT("cannot open $dir.lock: $!");
	flock($lock, LOCK_EX) or BAIL_OUT("cannot lock $dir.lock: $!");
	return \%f if -e $stamp && !grep { -M $stamp > -M $_ } @inputs;
	remove_tree($dir);
	make_path($dir);
	my @cc = ('cc', '-g', '-O0', '-Wall');
	for my $cmd (
		[@cc, '-shared', '-fPIC', '-Wl,-soname,libgx-1.2.so.3',
		 '-o', $f{gx}, "$src/gx.c"],
		[@cc, '-shared', '-fPIC', '-o', $f{gxtra}, "$src/gxtra.c"],
		[@cc, '-o', $f{target}, "$src/target.c", "-L$dir", '-lgxtra',
		 "-l:libgx-1.2.so.3", "-Wl,-rpath,$dir"],
		[@cc, '-static', '-o', $f{static}, "$src/static.c"],
		[@cc, '-o', $f{nolib}, "$src/static.c", '-Wl,--no-as-needed',
		 "-L$dir", '-lgxtra'],
	) {
		my ($rc, $o, $e) = run_cmd(@$cmd);
		BAIL_OUT("fixture build failed: @$cmd\n$o$e") if $rc;
	}
	spit($stamp, '');
	return \%f;
}

1;
