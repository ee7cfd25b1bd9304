#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# DWARF resolution through ./stap++ --dump-src: @sizeof, @offsetof,
# @has_member, @has_type, @enum and @var against C fixtures compiled here
# with several debug-info flavours.  Every expected size, offset and
# enumerator value comes from t/fixtures/dwarf/layout.c, compiled from the
# same headers: nothing is typed by hand.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use DwarfTest;
use Test::More;
use Cwd qw(abs_path);

my $F = "$ROOT/t/fixtures/dwarf";
my $out = scratch('20-dwarf');
ok(-x $STAPXX, 'stap++ is built') or die('run make first');

# ---- expected values, from the compiler
build('cc', '-Wall', '-o', "$out/layout", "$F/layout.c");
my $layout = build("$out/layout");
my @prog = layout_lines($layout, 'prog');
my @lib = layout_lines($layout, 'lib');
cmp_ok(scalar @prog, '>', 80, 'layout.c printed the fixture layouts');

# has_member/has_type follow from the same lines, plus cases whose answer
# is a matter of definition, not of layout.
my @derived = (
	(map { { %$_, op => 'has_member', value => 1 } }
	 grep { $_->{op} eq 'offsetof' } @prog),
	(map { { %$_, op => 'has_type', value => 1 } }
	 grep { $_->{op} eq 'sizeof' } @prog),
	# blanks in a member path do not matter
	(map { { %$_, member => $_->{member} =~ s/([.\[\]])/ $1 /gr } }
	 grep { $_->{op} eq 'offsetof' && $_->{member} =~ /\[.*\./ } @prog),
	{ op => 'has_member', type => 'struct outer', member => 'nope', value => 0 },
	{ op => 'has_member', type => 'struct outer', member => 'in.nope', value => 0 },
	{ op => 'has_member', type => 'struct outer', member => 'c.x', value => 0 },
	{ op => 'has_member', type => 'struct outer', member => 'arr[3]', value => 0 },
	{ op => 'has_member', type => 'outer_alias_t', member => 'halves.mid', value => 0 },
	{ op => 'has_member', type => 'struct outer', member => 'flag1', value => 1 },
	{ op => 'has_member', type => 'struct outer', member => 'flag2', value => 1 },
	{ op => 'has_type', type => 'struct opaque', value => 0 },
	{ op => 'has_type', type => 'opaque_t', value => 0 },
	{ op => 'has_type', type => 'struct nope', value => 0 },
	{ op => 'has_type', type => 'union outer', value => 0 },
	{ op => 'has_type', type => 'const struct point', value => 1 },
	{ op => 'has_type', type => 'unsigned long long', value => 1 },
);
my @queries = (@prog, @derived);

# ---- the fixture in several debug-info flavours
my @src = ("$F/prog.c", "$F/late.c");
my %flavours = (
	'g'      => ['cc', '-g'],		# GCC's default: DWARF 5
	'dwarf4' => ['cc', '-gdwarf-4'],
	'dwarf2' => ['cc', '-gdwarf-2'],	# member offsets as exprlocs
	'O2'     => ['cc', '-O2', '-g'],
	'types'  => ['cc', '-gdwarf-4', '-fdebug-types-section'],	# type units
	'strict' => ['cc', '-gdwarf-2', '-gstrict-dwarf'],	# enums without DW_AT_type
	'split'  => ['cc', '-g', '-gsplit-dwarf'],	# skeleton + .dwo files
	'clang'  => ['clang', '-g'],
	'clang-O2-dwarf4' => ['clang', '-O2', '-gdwarf-4'],
);
for my $fl (sort keys %flavours) {
	build(@{ $flavours{$fl} }, '-o', "$out/prog-$fl", @src);
}
# stripped, with its DWARF in a separate file found by .gnu_debuglink
build('cc', '-g', '-o', "$out/prog-full", @src);
build('objcopy', '--only-keep-debug', "$out/prog-full", "$out/prog-stripped.debug");
build('strip', '-o', "$out/prog-stripped", "$out/prog-full");
build('objcopy', "--add-gnu-debuglink=$out/prog-stripped.debug", "$out/prog-stripped");
# and a copy whose debug file is gone
build('cp', "$out/prog-stripped.debug", "$out/prog-lost.debug");
build('strip', '-o', "$out/prog-lost", "$out/prog-full");
build('objcopy', "--add-gnu-debuglink=$out/prog-lost.debug", "$out/prog-lost");
unlink("$out/prog-lost.debug") or die;
build('cc', '-O2', '-o', "$out/prog-nodebug", @src);
# dwz, as Debian's -dbgsym packages have it: types moved to partial units
# and to a common file named by .gnu_debugaltlink
my $has_dwz = ok(-x '/usr/bin/dwz', 'dwz is installed (apt-get install dwz)');
build('cc', '-g', '-o', "$out/prog-dwz", @src);
build('cc', '-gdwarf-4', '-o', "$out/prog-dwz4", @src);
build('dwz', '-m', "$out/dwz-common.debug", '-M', "$out/dwz-common.debug",
      "$out/prog-dwz", "$out/prog-dwz4") if $has_dwz;
like(build('readelf', '-S', '-W', "$out/prog-dwz"), qr/\.gnu_debugaltlink/,
     'dwz made a common debug file');

for my $bin ("$out/prog-stripped", "$out/prog-lost", "$out/prog-nodebug") {
	unlike(build('readelf', '-S', '-W', $bin), qr/\.debug_info/,
	       "$bin has no .debug_info of its own");
}

my $script = "$out/queries.stp";
spit($script, script_for(\@queries));
for my $fl ((sort keys %flavours), 'stripped', 'dwz') {
	my $bin = "$out/prog-$fl";
	my ($rc, $o, $e) = dump_src($script, '--exec', $bin);
	is($rc, 0, "$fl: stap++ --dump-src exits 0") or diag($e);
	is($e, '', "$fl: no messages");
	check_resolved($fl, \@queries, $o);
}

# The module named explicitly gives the same answers.
{
	my $mscript = "$out/queries-module.stp";
	spit($mscript, script_for(\@prog, "$out/prog-dwarf4"));
	my ($rc, $o, $e) = dump_src($mscript, '--exec', "$out/prog-g");
	is($rc, 0, 'explicit module: exits 0') or diag($e);
	check_resolved('explicit module', \@prog, $o);
}

# ---- @var: the module and CU that define a global
sub var_script {
	my ($file, @syms) = @_;
	spit($file, "probe begin {\n" . join('', map { "\tprintln(\@var(\"$_\"))\n" } @syms) . "}\n");
}
var_script("$out/var.stp", qw(g_counter s_hidden g_late g_outer g_spec));
for my $fl ('g', 'O2', 'stripped', 'dwz', 'clang', 'split') {
	my $bin = "$out/prog-$fl";
	my ($rc, $o, $e) = dump_src("$out/var.stp", '--exec', $bin);
	is($rc, 0, "\@var $fl: exits 0") or diag($e);
	for (['g_counter', "$F/prog.c"], ['s_hidden', "$F/prog.c"],
	     ['g_late', "$F/late.c"], ['g_outer', "$F/prog.c"],
	     ['g_spec', "$F/prog.c"]) {
		my ($sym, $cu) = @$_;
		my $want = qq{\@var("$sym\@$cu", "$bin")};
		like($o, qr/\Q$want\E/, "\@var $fl: $sym is in $cu of $bin");
	}
}

# A name that no binary defines as a global (a probed function's parameter
# or local) is left unchanged for stap, without a message.
{
	var_script("$out/var-ctx.stp", 'nope');
	my ($rc, $o, $e) = dump_src("$out/var-ctx.stp", '--exec', "$out/prog-g");
	is($rc, 0, '@var of no global: exits 0') or diag($e);
	like($o, qr/^\tprintln\(\@var\("nope"\)\)$/m, '@var of no global: unchanged');
	is($e, '', '@var of no global: nothing on stderr');

	# also when a binary without debug info was skipped: system libraries
	# often have none, and a warning for every context variable of every
	# legacy script would be noise
	($rc, $o, $e) = dump_src("$out/var-ctx.stp", '--exec', "$out/prog-g", '-d', "$out/prog-nodebug");
	is($rc, 0, '@var of no global, a binary without DWARF: exits 0') or diag($e);
	like($o, qr/^\tprintln\(\@var\("nope"\)\)$/m, '@var of no global, a binary without DWARF: unchanged');
	is($e, '', '@var of no global, a binary without DWARF: nothing on stderr');
}

# A file-local variable defined in several files: the first, with a warning.
{
	my $bin = "$out/prog-g";
	var_script("$out/var-twice.stp", 's_twice');
	my ($rc, $o, $e) = dump_src("$out/var-twice.stp", '--exec', $bin);
	is($rc, 0, '@var of a static in two files: exits 0') or diag($e);
	my $want = qq{\@var("s_twice\@$F/prog.c", "$bin")};
	like($o, qr/\Q$want\E/, '@var of a static in two files: the first one');
	like($e, qr/^\Q$out\E\/var-twice.stp:2: warning: 's_twice' is file-local \(static\) in 2 compile units of '\Q$bin\E'; using the one in '\Q$F\E\/prog.c'$/m,
	     '@var of a static in two files: warning');
	like($e, qr/^hint: to pick another, write \@var\("s_twice\@CU", "MODULE"\)$/m,
	     '@var of a static in two files: hint');
}

# ---- errors: one script, each line its own error, all reported
my @errors = (
	['@sizeof(struct nope)', "cannot find struct 'nope' in '%B'"],
	['@offsetof(struct outer, nope)', "no member 'nope' in struct 'outer' (in '%B')"],
	['@offsetof(outer_t, in.nope)', "no member 'nope' in 'in' of type 'outer_t' (in '%B')"],
	['@offsetof(anon_typedef_t, zz)', "no member 'zz' in type 'anon_typedef_t' (in '%B')"],
	['@offsetof(struct outer, c.x)', "member 'c' of struct 'outer' is not a struct or union (looking up 'x') (in '%B')"],
	['@offsetof(struct outer, c[1])', "member 'c' of struct 'outer' is not an array (in '%B')"],
	['@offsetof(struct outer, arr[3])', "index 3 out of range for 'arr' of struct 'outer' (3 elements) (in '%B')"],
	['@offsetof(struct outer, grid[1][5])', "index 5 out of range for 'grid[1]' of struct 'outer' (5 elements) (in '%B')"],
	['@offsetof(struct outer, flag1)', "member 'flag1' of struct 'outer' is a bit-field: it has no byte offset (in '%B')"],
	['@offsetof(enum color, x)', "enum 'color' is not a struct or union (in '%B')"],
	['@offsetof(struct outer, a..b)', "invalid member path 'a..b' for struct 'outer'"],
	['@offsetof(struct outer, arr[x])', "invalid array index in 'arr[x]' for struct 'outer'"],
	['@offsetof(struct outer, in d)', "invalid member path 'in d' for struct 'outer'"],
	['@sizeof(opaque_t)', "cannot find type 'opaque_t' in '%B'"],
	['@sizeof(struct outer *)', "invalid type 'struct outer *': pointer types are not supported"],
	['@sizeof(struct 9x)', "invalid type 'struct 9x': expected 'struct NAME', 'union NAME', 'enum NAME' or a type name"],
	['@sizeof(struct)', "invalid type 'struct': expected 'struct NAME', 'union NAME', 'enum NAME' or a type name"],
	['@enum(NOPE)', "cannot find enumerator 'NOPE' in '%B'"],
	['@has_member(struct nope, x)', "cannot find struct 'nope' in '%B'"],
	['@sizeof(int, "/nonexistent/libx.so")', "cannot open '/nonexistent/libx.so': No such file or directory"],
	['@sizeof(int, "%F/types.h")', "'%F/types.h' is not an ELF file"],
);
{
	my $bin = "$out/prog-g";
	my $escript = "$out/errors.stp";
	spit($escript, "probe begin {\n" . join('', map { "\tx = $_->[0]\n" =~ s/%F/$F/gr } @errors) . "}\n");
	my ($rc, $o, $e) = dump_src($escript, '--exec', $bin);
	is($rc, 1, 'errors: exit status 1');
	my $line = 2;
	for (@errors) {
		my $msg = $_->[1] =~ s/%B/$bin/gr =~ s/%F/$F/gr;
		# "in LIST": the target's libraries with DWARF (libc6-dbg...)
		# may follow the binary itself
		my $more = $msg =~ /^cannot find .* in '[^']*'$/ ? qr/(?:, '[^']*')*/ : '';
		like($e, qr/^\Q$escript:$line: error: $msg\E$more$/m,
		     "error for $_->[0]");
		$line++;
	}
	like($e, qr/^hint: '\Q$bin\E' declares it but has no complete definition$/m,
	     'hint for a type that is only declared');
}

# ---- no debug info: error and hint, with the build-id path to look for
for my $fl ('nodebug', 'lost') {
	my $bin = "$out/prog-$fl";
	my ($id) = build('readelf', '-n', $bin) =~ /Build ID: ([0-9a-f]+)/;
	ok($id, "$fl: has a build-id");
	my $p = '/usr/lib/debug/.build-id/' . substr($id, 0, 2) . '/' . substr($id, 2) . '.debug';
	my $hint1 = qr/^hint: install the debug symbols of '\Q$bin\E' \(Debian: its -dbgsym package from the debian-debug archive\) or rebuild it with -g$/m;
	my $hint2 = qr/^hint: a separate debug file is found by build-id as \Q$p\E$/m;
	my $hint3 = qr/^hint: or by its \.gnu_debuglink as 'prog-lost\.debug' in '\Q$out\E\/', '\Q$out\E\/\.debug\/' or '\/usr\/lib\/debug\Q$out\E\/' \(with a matching CRC\)$/m;

	# named as the module: exactly this binary
	my $nscript = "$out/nodebug-$fl.stp";
	spit($nscript, "probe begin {\n\tprintln(\@sizeof(struct outer, \"$bin\"))\n}\n");
	my ($rc, $o, $e) = dump_src($nscript, '--exec', $bin);
	is($rc, 1, "$fl named: exit status 1");
	like($e, qr/^\Q$nscript\E:2: error: no debug info in '\Q$bin\E'$/m,
	     "$fl named: no debug info error");
	like($e, $hint1, "$fl named: hint: dbgsym or -g");
	like($e, $hint2, "$fl named: hint names the build-id path");
	if ($fl eq 'lost') {
		like($e, $hint3, "$fl named: hint names the .gnu_debuglink file and where it was looked for");
	} else {
		unlike($e, qr/gnu_debuglink/, "$fl named: no .gnu_debuglink, no hint about it");
	}

	# searched: the executable's missing DWARF is reported (its libraries
	# may have theirs, e.g. with libc6-dbg installed)
	($rc, $o, $e) = dump_src($script, '--exec', $bin);
	is($rc, 1, "$fl searched: exit status 1");
	like($e, qr/^(?:\Q$script\E:\d+: error: |hint: not searched, )no debug info in '\Q$bin\E'/m,
	     "$fl searched: says the executable has no debug info");
	like($e, $hint1, "$fl searched: hint: dbgsym or -g");
	like($e, $hint2, "$fl searched: hint names the build-id path");
}

# A system library without debug info: the hint names the Debian package
# that installed it (ground truth: dpkg -S).
{
	my ($lib, $pkg);
	for my $cand (map { "/lib/x86_64-linux-gnu/$_" } qw(libz.so.1 libpcre.so.3 libcrypt.so.1)) {
		next unless -e $cand;
		my $real = abs_path($cand);
		next if build('readelf', '-S', '-W', $real) =~ /\.debug_info/;
		my ($id) = build('readelf', '-n', $real) =~ /Build ID: ([0-9a-f]+)/;
		next if $id && -e '/usr/lib/debug/.build-id/' . substr($id, 0, 2) . '/' . substr($id, 2) . '.debug';
		for my $p ($real, $real =~ s{^/usr/}{/}r) {
			my ($rc, $o) = run_cmd('dpkg', '-S', $p);
			($pkg) = $o =~ /^([^:\s]+)(?::[^:\s]+)?: /m if $rc == 0;
			last if $pkg;
		}
		if ($pkg) { $lib = $real; last }
	}
	ok($lib, "a system library without debug info, from package '" . ($pkg // '?') . "'")
		or diag('none of libz, libpcre, libcrypt lacks debug info');
	if ($lib) {
		my $pscript = "$out/pkg.stp";
		spit($pscript, "probe begin {\n\tprintln(\@sizeof(int, \"$lib\"))\n}\n");
		my ($rc, $o, $e) = dump_src($pscript, '--exec', "$out/prog-g");
		is($rc, 1, 'system library without debug info: exit status 1');
		like($e, qr/^\Q$pscript\E:2: error: no debug info in '\Q$lib\E'$/m,
		     'system library without debug info: error');
		like($e, qr/^hint: install the debug symbols of '\Q$lib\E' \(Debian: \Q$pkg\E-dbgsym from the debian-debug archive, or \Q$pkg\E-dbg\) or rebuild it with -g$/m,
		     "system library without debug info: hint names $pkg-dbgsym");
	}
}

# ---- a type only in a shared library
build('cc', '-g', '-shared', '-fPIC', '-o', "$out/libshared.so", "$F/libshared.c");
build('cc', '-g', '-o', "$out/app", "$F/app.c", "-L$out", '-lshared',
      '-Wl,-rpath,$ORIGIN');
{
	my $lscript = "$out/lib.stp";
	my @libq = (@lib, { op => 'has_type', type => 'struct only_in_lib', value => 1 });
	spit($lscript, script_for(\@libq));
	my ($rc, $o, $e) = dump_src($lscript, '--exec', "$out/app");
	is($rc, 0, 'shared library: exits 0') or diag($e);
	check_resolved('shared library, searched', \@libq, $o);

	spit($lscript, script_for(\@libq, "$out/libshared.so"));
	($rc, $o, $e) = dump_src($lscript, '--exec', "$out/app");
	is($rc, 0, 'shared library named: exits 0') or diag($e);
	check_resolved('shared library, named', \@libq, $o);

	var_script("$out/libvar.stp", qw(lib_state app_counter));
	($rc, $o, $e) = dump_src("$out/libvar.stp", '--exec', "$out/app");
	is($rc, 0, 'shared library @var: exits 0') or diag($e);
	my $want = qq{\@var("lib_state\@$F/libshared.c", "$out/libshared.so")};
	like($o, qr/\Q$want\E/, '@var finds lib_state in the library');
	$want = qq{\@var("app_counter\@$F/app.c", "$out/app")};
	like($o, qr/\Q$want\E/, '@var finds app_counter in the executable');

	spit("$out/liberr.stp", "probe begin {\n" .
	     "\tx = \@sizeof(struct only_in_lib, \"$out/app\")\n" .
	     "\ty = \@sizeof(struct nope)\n" .
	     "}\n");
	($rc, $o, $e) = dump_src("$out/liberr.stp", '--exec', "$out/app");
	is($rc, 1, 'shared library errors: exit status 1');
	like($e, qr/^\Q$out\E\/liberr.stp:2: error: cannot find struct 'only_in_lib' in '\Q$out\E\/app'$/m,
	     'type absent from the named module');
	like($e, qr/^\Q$out\E\/liberr.stp:3: error: cannot find struct 'nope' in '\Q$out\E\/app', '\Q$out\E\/libshared.so'/m,
	     'every searched binary is listed');
}

done_testing();
