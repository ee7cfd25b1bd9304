#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# The layout database (layouts/, layouts/README.md): stripped LuaJIT
# binaries get the same answers as their debug builds, and a build that
# no entry describes is refused.
#
# - dev/capture-layout, run again on each entry's debug build, reproduces
#   the committed entry byte for byte (a drifted entry fails);
# - strip --strip-all copies of build/luajit-gc64 and -nogc64: every
#   sample expands (--dump-src) to the debug build's text but for the
#   binary's path and the tapsets' code for a LuaJIT without debug info
#   (the conditionals on @layout_db(on)), stderr names the entry once, and
#   --runtime=bpf loads the same struct ljb_layout
#   (STAPXX_BPF_LAYOUT_DUMP); so do Debian's own stripped libluajit2 and
#   an -O1 build without -g of the same source; the SystemTap backend
#   passes lj-lua-stacks to stap (its header says it runs without debug
#   info) but refuses a script that does not say so, clearly, before
#   stap, naming the scripts that run and the eBPF backend;
# - a copy of build/src/luajit2 with one more field in global_State (under
#   #ifdef, only the CLI, at -O0, stripped) is refused: the error names its version
#   string, GC64 mode and build-id, the hints the capture command, and
#   nothing else is printed.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use LjAlloc;
use Test::More;
use Cwd qw(abs_path);
use File::Copy qw(copy);
use File::Path qw(make_path);

my $B = "$ROOT/build";
my $out = scratch('24-layouts');
ok(-x $STAPXX, 'stap++ is built') or die('run make first');

# Each entry and the debug build(s) it is captured from (build/lj/: the
# other LuaJIT sources of dev/deps).
my %capture = (
	'luajit2-2.1-20230119-gc64' => ["$B/luajit-gc64/bin/luajit", "$B/nginx/sbin/nginx"],
	'luajit2-2.1-20230119-nogc64' => ["$B/luajit-nogc64/bin/luajit"],
	'luajit-2.1.0-beta3-20220320-gc64' => ["$B/lj/deb-luajit-gc64/bin/luajit"],
	'luajit-2.1.0-beta3-20220320-nogc64' => ["$B/lj/deb-luajit-nogc64/bin/luajit"],
	'luajit2-2.1-20240314-gc64' => ["$B/lj/or2-20240314-gc64/bin/luajit"],
	'luajit2-2.1-20240314-nogc64' => ["$B/lj/or2-20240314-nogc64/bin/luajit"],
	'luajit-2.1-20260819-gc64' => ["$B/lj/lj-20260819-gc64/bin/luajit"],
	'luajit-2.1-20260819-nogc64' => ["$B/lj/lj-20260819-nogc64/bin/luajit"],
);

my @entries = map { s{.*/}{}r =~ s{\.layout$}{}r } glob("$ROOT/layouts/*.layout");
is_deeply([sort @entries], [sort keys %capture],
	  'every entry of layouts/ is one this test captures again');

subtest 'capturing again reproduces each entry' => sub {
	for my $name (sort keys %capture) {
		my @bins = @{ $capture{$name} };
		{
			# a missing build fails (make deps builds them), never skips
			ok(!(grep { !-e } @bins), "$name: its debug build is there (make deps)") or next;
			my ($rc, $o, $e) = run_cmd("$ROOT/dev/capture-layout", @bins);
			is($rc, 0, "$name: dev/capture-layout succeeds") or diag($e);
			my $want = slurp("$ROOT/layouts/$name.layout");
			ok($o eq $want, "$name: the capture is the committed entry") or do {
				spit("$out/$name.layout", $o);
				diag(`diff -u '$ROOT/layouts/$name.layout' '$out/$name.layout' | head -20`);
			};
		}
	}
};

# A stripped copy of DEBUG under t/out (same file name: same comm).
sub stripped {
	my ($debug, $dir) = @_;
	my $real = abs_path($debug);
	my $copy = "$out/$dir/" . ($real =~ s{.*/}{}r);
	make_path("$out/$dir");
	copy($real, $copy) or die "$copy: $!";
	chmod(0755, $copy);
	my ($rc, $o, $e) = run_cmd('strip', '--strip-all', $copy);
	die "strip: $e" if $rc;
	return $copy;
}

# TEXT without what depends on whether LuaJIT has debug info: the
# tapsets' "@define __X_NODEBUG %( 1 %)" (0 with debug info) and each
# "%( @__X_NODEBUG == N %? ... %)" (nested ones included), whose live
# branch is the other one without debug info
sub without_nodebug {
	my ($text) = @_;
	$text =~ s/^\@define __\w+_NODEBUG %\( [01] %\)\n//mg;
	while ($text =~ /%\( \@__\w+_NODEBUG == [01] %\?/g) {
		my $start = $-[0];
		my $depth = 1;
		pos($text) = $+[0];
		while ($depth && $text =~ /(%\(|%\))/g) {
			$depth += $1 eq '%(' ? 1 : -1;
		}
		die "without_nodebug: unbalanced %( at $start\n" if $depth;
		substr($text, $start, pos($text) - $start) = '';
		pos($text) = $start;
	}
	return $text;
}

my @samples = sort glob("$ROOT/samples/*.sxx");
for my $flavor (qw(gc64 nogc64)) {
	my $debug = abs_path("$B/luajit-$flavor/bin/luajit");
	my $bin = stripped($debug, $flavor);
	my $entry = "luajit2-2.1-20230119-$flavor";
	my ($rc, $o) = run_cmd('readelf', '-S', $bin);
	unlike($o, qr/\.(?:debug_info|symtab)\b/, "$flavor: the copy has no DWARF and no symtab");

	subtest "$flavor: every sample expands as for the debug build" => sub {
		for my $s (@samples) {
			my $sn = $s =~ s{.*/}{}r;
			my ($drc, $dout, $derr) = run_cmd($STAPXX, '--dump-src', '--exec', $debug, $s);
			my ($src, $sout, $serr) = run_cmd($STAPXX, '--dump-src', '--exec', $bin, $s);
			is($drc, 0, "$sn: the debug build expands") or diag($derr);
			if ($sn eq 'lj-lua-alloc.sxx') {
				# its allocator has no symbol: found in a running
				# process (t/62 runs it), which --exec is not
				is($src, 1, "$sn: refused on the stripped CLI without a running process");
				like($serr, qr/^\S*lj-lua-alloc\.sxx:\d+: error: LuaJIT's allocator has no symbol in '\Q$bin\E': it is found in a running process, and this run names none$/m,
				     "$sn: ... saying why") or diag($serr);
				like($serr, qr/^hint: give -x PID, --master PID, or --sample-pid PID/m, "$sn: ... and what to give") or diag($serr);
				# a running process of it: the allocator is named
				my $app = LjAlloc::running($bin);
				($src, $sout, $serr) = run_cmd($STAPXX, '--dump-src', '-x', $app->{pid}, $s);
				is($src, 0, "$sn: a running process of the stripped CLI: expands") or diag($serr);
				like($sout, qr/^probe process\("\Q$bin\E"\)\.function\("stapxx_lj_allocf"\) if \(__armed\)$/m,
				     "$sn: ... probing the allocator by the symbol stap++ gives stap") or diag($sout);
				like($sout, qr/luajit_G_allocd\(ud, \d{3,4}\)/, "$sn: ... and G's offset from its state") or diag($sout);
				LjAlloc::stop($app);
				next;
			}
			if ($sn =~ /^lj-gc(?:-objs|o-ref)\.sxx$/) {
				# the heap walks run without debug info in nginx only:
				# the CLI's walk point is an internal function
				is($src, 1, "$sn: refused on the stripped CLI");
				like($serr, qr/^\S*tapset\/luajit_gcwalk\.sxx:\d+: error: a walk of the heap of a LuaJIT without debug info needs nginx's event loop .*lj_gc_step, an internal function that a stripped binary has no symbol for$/m,
				     "$sn: ... saying why (its walk point)") or diag($serr);
				unlike($serr, qr/semantic error|warning/, "$sn: ... with no other message") or diag($serr);
				next;
			}
			is($src, 0, "$sn: the stripped copy expands") or diag($serr);
			$dout = without_nodebug($dout) =~ s/\Q$debug\E/BINARY/gr;
			$sout = without_nodebug($sout) =~ s/\Q$bin\E/BINARY/gr;
			ok($sout eq $dout, "$sn: the same text but for the binary's path") or do {
				spit("$out/$flavor-$sn.debug", $dout);
				spit("$out/$flavor-$sn.stripped", $sout);
				diag(`diff '$out/$flavor-$sn.debug' '$out/$flavor-$sn.stripped' | head`);
			};
			my @used = $serr =~ /^stap\+\+: using layout .*$/mg;
			my @want = ("stap++: using layout '$entry' for '$bin' (no debug info)");
			if ($sn =~ /^lj-/) {
				is_deeply(\@used, \@want, "$sn: stderr names the entry, once");
			} else {	# may ask nothing of LuaJIT
				cmp_ok(scalar @used, '<=', 1, "$sn: stderr names the entry once at most");
			}
			unlike($derr, qr/using layout/, "$sn: the debug build uses its DWARF");
		}
	};

	# the tapsets run without debug info (t/49 samples with them), but a
	# script may probe or read LuaJIT's internal symbols: stap++ runs only
	# those whose header says they do not, and says so before running stap
	($rc, $o, my $e) = run_cmd($STAPXX, '-p1', '--exec', $bin, "$ROOT/samples/lj-lua-stacks.sxx");
	unlike($e, qr/cannot run|error: the SystemTap backend/, "$flavor: lj-lua-stacks goes to stap (-p1)") or diag($e);
	# (a script of the user's, which reads a layout and says nothing)
	my $own = "$out/own-$flavor.sxx";
	spit($own, "\@use luajit\nprobe begin { printf(\"%d\\n\", \@offsetof(lua_State, glref)) exit() }\n");
	($rc, $o, $e) = run_cmd($STAPXX, '-p4', '--exec', $bin, $own);
	is($rc, 1, "$flavor: the SystemTap backend (-p4) refuses a script without the header on the stripped copy");
	like($e, qr/^stap\+\+: error: the SystemTap backend cannot run '\Q$own\E' on '\Q$bin\E': it has no debug info .*$/m,
	     "$flavor: ... saying why") or diag($e);
	like($e, qr/^hint: samples\/lj-lua-stacks\.sxx, lj-lua-bt\.sxx, lj-vm-states\.sxx, lj-lua-off-cpu\.sxx, lj-lua-fio\.sxx, ngx-lua-yield\.sxx and ngx-lua-exec-time\.sxx run without them, lj-lua-alloc\.sxx with a running target, and in nginx lj-gc-objs\.sxx and lj-gco-ref\.sxx .*'# stap\+\+ stripped: ok'/m,
	     "$flavor: ... which scripts run, and how a script says so") or diag($e);
	like($e, qr/^hint: --runtime=bpf runs lj-lua-stacks, .* on it, no debug info needed$/m,
	     "$flavor: ... and what the eBPF backend runs on it") or diag($e);
	unlike($e, qr/semantic error/, "$flavor: ... before stap runs") or diag($e);

	my %env = (env => { STAPXX_BPF_LAYOUT_DUMP => 1 });
	my ($drc, $dout, $derr) = run_cmd(\%env, $STAPXX, '--runtime=bpf', '--exec', $debug,
					  "$ROOT/samples/lj-lua-stacks.sxx");
	my ($src, $sout, $serr) = run_cmd(\%env, $STAPXX, '--runtime=bpf', '--exec', $bin,
					  "$ROOT/samples/lj-lua-stacks.sxx");
	is($drc, 0, "$flavor: --runtime=bpf loads the debug build's layouts") or diag($derr);
	is($src, 0, "$flavor: --runtime=bpf loads the stripped copy's layouts") or diag($serr);
	like($dout, qr/^bcmode = (?:\d+ ){90,}\d+$/m, "$flavor: the dump has lj_bc_mode[]");
	cmp_ok(scalar(() = $dout =~ /^layout\[\d+\] = /mg), '>', 50, "$flavor: and the layouts");
	is($sout, $dout, "$flavor: the same struct ljb_layout and lj_bc_mode[]");
	like($serr, qr/^stap\+\+: using layout '\Q$entry\E' for '\Q$bin\E' \(no debug info\)$/m,
	     "$flavor: --runtime=bpf names the entry");
}

# Debian 12's own stripped libluajit2 (libluajit2-5.1-2, installed by
# dev/deps with lua-resty-core): built by Debian from the source of
# build/luajit-gc64, with Debian's compiler and flags.
{
	my $deb = '/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2';
	ok(-e $deb, "$deb is installed (make deps: libluajit2-5.1-2)");
	my $real = abs_path($deb);
	my %env = (env => { STAPXX_BPF_LAYOUT_DUMP => 1 });
	my ($rc, $o, $e) = run_cmd(\%env, $STAPXX, '--runtime=bpf', '--exec', $deb,
				   "$ROOT/samples/lj-lua-stacks.sxx");
	my (undef, $want) = run_cmd(\%env, $STAPXX, '--runtime=bpf', '--exec',
				    "$B/luajit-gc64/bin/luajit", "$ROOT/samples/lj-lua-stacks.sxx");
	is($rc, 0, "Debian's libluajit2: --runtime=bpf loads its layouts") or diag($e);
	is($e, "stap++: using layout 'luajit2-2.1-20230119-gc64' for '$real' (no debug info)\n",
	   "Debian's libluajit2: identified as luajit2 2.1-20230119 GC64");
	is($o, $want, "Debian's libluajit2: the layouts of build/luajit-gc64");
}

# The CLI of build/luajit-gc64's source built another way (make deps:
# build/lj/variant-NAME); a missing build fails, never skips.
sub variant {
	my ($name) = @_;
	my $cli = "$B/lj/variant-$name/luajit";
	ok(-x $cli, "build/lj/variant-$name is there (make deps)");
	return $cli;
}

{
	# the same source and flags at another -O level, without -g
	my $bin = stripped(variant('o1'), 'o1');
	my ($rc, $o, $e) = run_cmd($STAPXX, '--dump-src', '--exec', $bin,
				   "$ROOT/samples/lj-lua-stacks.sxx");
	is($rc, 0, '-O1 build of the same source: expands') or diag($e);
	is($e, "stap++: using layout 'luajit2-2.1-20230119-gc64' for '$bin' (no debug info)\n",
	   '-O1 build of the same source: its entry is the -O2 debug build\'s');
}

{
	# (one more field at the start of global_State, under #ifdef)
	my $bin = stripped(variant('extra'), 'extra');
	my ($rc, $o) = run_cmd('readelf', '-n', $bin);
	my ($id) = $o =~ /Build ID: ([0-9a-f]+)/;
	ok($id, 'the extra-field build has a build-id');
	my $first = "stap++: error: no known layout for the LuaJIT in '$bin' "
		  . "(LuaJIT 2.1.0-beta3, GC64 on, build-id $id)";
	for my $how (['--dump-src'], ['--runtime=bpf']) {
		my %env = (env => { STAPXX_BPF_LAYOUT_DUMP => 1 });
		my ($rc, $so, $se) = run_cmd(\%env, $STAPXX, @$how, '--exec', $bin,
					     "$ROOT/samples/lj-lua-stacks.sxx");
		my @lines = split /\n/, $se;
		isnt($rc, 0, "@$how: refused");
		is($so, '', "@$how: nothing on stdout");
		is($lines[0], $first, "@$how: the error names version, GC64 and build-id");
		is_deeply([grep { !/^hint: / } @lines[1 .. $#lines]], [],
			  "@$how: nothing else but hints") or diag($se);
		like($se, qr/^hint: .*dev\/capture-layout DEBUG-BINARY > layouts\/NAME\.layout/m,
		     "@$how: a hint gives the capture command");
		like($se, qr/^hint: layout 'luajit2-2\.1-20230119-gc64' has its version string but not its interpreter/m,
		     "@$how: a hint names the entry it resembles");
	}
}

done_testing();
