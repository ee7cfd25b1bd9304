#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# DWARF macros against the debug LuaJIT builds of `make deps`
# (build/luajit-gc64, build/luajit-nogc64) and the nginx linked with the
# GC64 one: sizes and offsets in lua_State, global_State, GCproto, TValue,
# MRef and friends, LuaJIT's enumerators, GC64-dependent @has_member and
# @var.  Expected values come from t/fixtures/dwarf/lj_layout.c compiled
# against LuaJIT's own headers (build/src/luajit2/src) with each build's
# layout-relevant defines.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use DwarfTest;
use Test::More;
use Cwd qw(abs_path);

my $F = "$ROOT/t/fixtures/dwarf";
my $B = "$ROOT/build";
my $src = "$B/src/luajit2/src";
my $out = scratch('21-dwarf-luajit');
ok(-x $STAPXX, 'stap++ is built') or die('run make first');

my @missing = grep { !-e $_ } ("$src/lj_obj.h", "$B/luajit-gc64/bin/luajit",
	"$B/luajit-nogc64/bin/luajit", "$B/luajit-gc64/lib/libluajit-5.1.so.2",
	"$B/luajit-nogc64/lib/libluajit-5.1.so.2", "$B/nginx/sbin/nginx");
is_deeply(\@missing, [], 'the debug builds of make deps are there')
	or do { diag('run make deps first'); done_testing(); exit 1 };

my %builds = (
	'gc64'   => [],
	'nogc64' => ['-DLUAJIT_DISABLE_GC64'],
);

# Globals: the file that defines each, per LuaJIT's source.
my %var_file;
for my $sym (qw(lj_obj_itypename lj_ir_mode)) {
	my ($file) = grep {
		(slurp($_) // die "$_: $!") =~ /^LJ_DATADEF\b[^;=]*\b\Q$sym\E\s*\[[^\]]*\]\s*=/m;
	} glob("$src/*.c");
	ok($file, "LuaJIT's source defines $sym") or next;
	$var_file{$sym} = $file =~ s{.*/}{}r;
}

for my $name (sort keys %builds) {
	my $prefix = "$B/luajit-$name";
	build('cc', "-I$src", @{ $builds{$name} }, '-o', "$out/layout-$name",
	      "$F/lj_layout.c");
	my $layout = build("$out/layout-$name");
	my ($gc64) = $layout =~ /^lj\tgc64\t(\d)/m;
	is($gc64, $name eq 'gc64' ? 1 : 0, "$name: layout built with LJ_GC64=$gc64");
	my ($fr2) = $layout =~ /^lj\tfr2\t(\d)/m;
	my @q = grep { $_->{op} !~ /^(?:gc64|fr2)$/ } layout_lines($layout, 'lj');
	cmp_ok(scalar @q, '>', 50, "$name: lj_layout.c printed the layouts");
	push @q,
	    (map { { op => 'has_type', type => $_, value => 1 } }
	     qw(lua_State global_State GCproto TValue MRef GCRef GG_State),
	     'struct lua_State'),
	    { op => 'has_member', type => 'MRef', member => 'ptr64', value => $gc64 },
	    { op => 'has_member', type => 'MRef', member => 'ptr32', value => 1 - $gc64 },
	    { op => 'has_member', type => 'TValue', member => 'it64', value => $gc64 },
	    { op => 'has_member', type => 'TValue', member => 'fr.tp', value => 1 - $fr2 },
	    { op => 'has_member', type => 'GCproto', member => 'unused_gc64', value => $gc64 },
	    { op => 'has_member', type => 'TValue', member => 'ftsz', value => $fr2 },
	    { op => 'has_member', type => 'GCstr', member => 'sid', value => 1 },
	    { op => 'has_member', type => 'lua_State', member => 'nope', value => 0 };

	# the luajit executable (LuaJIT linked in statically), searched
	my $script = "$out/$name.stp";
	spit($script, script_for(\@q));
	my $exe = "$prefix/bin/luajit";
	my $exe_real = abs_path($exe);	# stap++ names the real file
	my ($rc, $o, $e) = dump_src($script, '--exec', $exe);
	is($rc, 0, "$name: luajit: exits 0") or diag($e);
	is($e, '', "$name: luajit: no messages");
	check_resolved("$name luajit", \@q, $o);

	# libluajit named as the module
	my $so = "$prefix/lib/libluajit-5.1.so.2";
	$script = "$out/$name-so.stp";
	spit($script, script_for(\@q, $so));
	($rc, $o, $e) = dump_src($script, '--exec', $exe);
	is($rc, 0, "$name: libluajit named: exits 0") or diag($e);
	check_resolved("$name libluajit", \@q, $o);

	# @var: module and compile unit
	spit("$out/$name-var.stp", "probe begin {\n" .
	     join('', map { "\tprintln(\@var(\"$_\"))\n" } sort keys %var_file) . "}\n");
	($rc, $o, $e) = dump_src("$out/$name-var.stp", '--exec', $exe);
	is($rc, 0, "$name: \@var: exits 0") or diag($e);
	for my $sym (sort keys %var_file) {
		like($o, qr/\@var\("\Q$sym\E\@(?:[^"]*\/)?\Q$var_file{$sym}\E", "\Q$exe_real\E"\)/,
		     "$name: \@var(\"$sym\") is in $var_file{$sym} of $exe");
	}

	# errors name the binary searched
	spit("$out/$name-err.stp", "probe begin {\n\tx = \@offsetof(lua_State, nope)\n" .
	     "\ty = \@offsetof(TValue, it64.x)\n\tz = \@enum(LJ_VMST_NOPE, \"$so\")\n}\n");
	($rc, $o, $e) = dump_src("$out/$name-err.stp", '--exec', $exe);
	is($rc, 1, "$name: errors: exit status 1");
	like($e, qr/^\Q$out\/$name-err.stp\E:2: error: no member 'nope' in struct 'lua_State' \(in '\Q$exe_real\E'\)$/m,
	     "$name: unknown member of lua_State");
	if ($gc64) {
		like($e, qr/^\Q$out\/$name-err.stp\E:3: error: member 'it64' of union 'TValue' is not a struct or union \(looking up 'x'\) \(in '\Q$exe_real\E'\)$/m,
		     "$name: path through a scalar");
	} else {
		like($e, qr/^\Q$out\/$name-err.stp\E:3: error: no member 'it64' in union 'TValue' \(in '\Q$exe_real\E'\)$/m,
		     "$name: GC64-only member");
	}
	like($e, qr/^\Q$out\/$name-err.stp\E:4: error: cannot find enumerator 'LJ_VMST_NOPE' in '\Q$so\E'$/m,
	     "$name: unknown enumerator");

	next unless $gc64;

	# nginx, linked with this libluajit: nginx's own DWARF only declares
	# lua_State (lua.h), the definitions are in the library.
	my $nginx = "$B/nginx/sbin/nginx";
	$script = "$out/nginx.stp";
	spit($script, script_for(\@q));
	($rc, $o, $e) = dump_src($script, '--exec', $nginx);
	is($rc, 0, 'nginx: exits 0') or diag($e);
	is($e, '', 'nginx: no messages');
	check_resolved('nginx + libluajit', \@q, $o);

	# the same, naming the library with $^libluajit_path
	$script = "$out/nginx-libpath.stp";
	spit($script, script_for(\@q, '$^libluajit_path'));
	($rc, $o, $e) = dump_src($script, '--exec', $nginx);
	is($rc, 0, 'nginx, $^libluajit_path: exits 0') or diag($e);
	is($e, '', 'nginx, $^libluajit_path: no messages');
	check_resolved('nginx, $^libluajit_path', \@q, $o);
}

done_testing();
