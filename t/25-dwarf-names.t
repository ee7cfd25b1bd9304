#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# The names cache of lib/dwarf (dwarf/names.h): a luajit CLI target's
# libraries are searched for nginx's types (lj-lua-stacks asks
# @has_type(ngx_http_lua_co_ctx_t)), which none defines.  The first run
# indexes them and stores each binary's names under its build-id in the
# cache dir; the next passes over them, their DWARF not loaded, with the
# same expansion.  A names file that is not one (cut short) is not used
# and is replaced; a build-id stored under another entry's name is not
# taken for it.  A stripped copy of the luajit, whose build-id is the
# debug build's, is not searched by the debug build's names: it has not
# their DWARF, and is opened and found without, as without the cache.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Test::More;

my $out = scratch('25-dwarf-names');
my $cache = "$out/cache";
my $lj = "$ROOT/build/luajit-gc64/bin/luajit";
ok -x $lj, 'the debug luajit of make deps is there' or do { done_testing; exit 1 };

# stap++ -v --dump-src [against EXEC, with the cache dir CACHE]: (expansion, stderr)
sub expand {
	my ($exec, $dir) = @_;
	my ($rc, $o, $e) = run_cmd({ env => { XDG_CACHE_HOME => $dir // $cache } }, $STAPXX, '-v', '--dump-src',
		'--exec', $exec // $lj, 'samples/lj-lua-stacks.sxx');
	is $rc, 0, 'stap++ --dump-src: status 0' or diag $e;
	return ($o, $e);
}

# the binaries indexed, and those whose names came from the cache
sub indexed { my ($e) = @_; return [ sort $e =~ /^stap\+\+: indexed '([^']+)'/mg ] }
sub from_cache { my ($e) = @_; return [ sort $e =~ /^stap\+\+: names of '([^']+)' \(build-id [0-9a-f]+\): \d+, from '[^']+'$/mg ] }

my ($first, $e1) = expand();
my $libc = (grep { m{/libc\.so\.6$} } @{ indexed($e1) })[0];
ok $libc, "first run: libc is indexed (searched for nginx's types)" or diag $e1;
is_deeply from_cache($e1), [], 'first run: no names from the cache';
my @entries = sort glob("$cache/stap++/names-*");
is scalar(@entries), scalar(@{ indexed($e1) }), 'one cache entry per binary indexed' or diag "@entries";
for my $d (@entries) {
	my $head = (split /\n/, slurp("$d/names") // '')[0] // '';
	like $head, qr/^stap\+\+ dwarf names 2 [0-9a-f]{40}$/, "$d: the names of one build-id";
	is slurp("$d/stamp"), ($head =~ /(\S+)$/)[0], "$d: its stamp holds the build-id";
}

my ($second, $e2) = expand();
is $second, $first, 'second run: the same expansion';
my @libs = grep { $_ ne $lj && !m{/luajit[^/]*$} } @{ indexed($e1) };
ok @libs >= 3, 'the libraries indexed the first time: ' . join(' ', @libs);
is_deeply [ grep { my $l = $_; grep { $_ eq $l } @{ indexed($e2) } } @libs ], [],
	'second run: no library indexed again' or diag $e2;
is_deeply [ grep { my $l = $_; grep { $_ eq $l } @{ from_cache($e2) } } @libs ], \@libs,
	'second run: their names came from the cache';

# a names file cut short is not used, and is stored anew
my ($libc_entry) = $e2 =~ /^stap\+\+: names of '\Q$libc\E' \(build-id [0-9a-f]+\): \d+, from '([^']+)\/names'$/m;
ok $libc_entry && -d $libc_entry, "libc's entry, from the second run's stderr";
if ($libc_entry) {
	my $text = slurp("$libc_entry/names");
	spit("$libc_entry/names", substr($text, 0, int(length($text) / 2)));
	my ($third, $e3) = expand();
	is $third, $first, 'a cut names file: the same expansion';
	like $e3, qr/^stap\+\+: not using the names file '\Q$libc_entry\E\/names': not one of build-id [0-9a-f]+$/m,
		'... says it does not use the file';
	ok((grep { $_ eq $libc } @{ indexed($e3) }), '... and indexes libc again');
	is slurp("$libc_entry/names"), $text, '... whose names are stored anew';
	# another build-id's file in libc's entry (a hash collision)
	my ($other) = grep { $_ ne $libc_entry } @entries;
	spit("$libc_entry/names", slurp("$other/names"));
	my ($fourth, $e4) = expand();
	is $fourth, $first, "another build-id's names in libc's entry: the same expansion";
	ok((grep { $_ eq $libc } @{ indexed($e4) }), '... libc indexed, the file not taken for its names');
}

# a stripped copy: the same build-id, no DWARF of its own
my $bare = "$out/luajit-stripped";
my ($rc, $log) = run_cmd({ merge => 1 }, 'strip', '--strip-all', '-o', $bare, $lj);
is $rc, 0, 'a stripped copy of the luajit' or diag $log;
my ($alone) = expand($bare, "$out/empty-cache");
my ($bare_out, $e5) = expand($bare);
is $bare_out, $alone, 'the stripped copy: the same expansion as with an empty cache';
like $e5, qr/^stap\+\+: not using the names file '[^']+': '\Q$bare\E' has not the DWARF it was made from \(from self\)$/m,
	"... the debug build's names are not used for it" or diag $e5;
like $e5, qr/^stap\+\+: using layout '\S+' for '\Q$bare\E' \(no debug info\)$/m, '... which the layout database answers for';

done_testing;
