#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# stap names an address by the closest symbol before it, so in a file
# without a symbol table a static function would get the name of an
# exported one.  For a script that takes Lua stacks, stap++ gives stap
# (--sysroot) a copy of each such file whose symbol table names every
# function (lib/driver/symbols.h), kept in stap++'s cache dir so that the
# path, and stap's own module cache, stay the same from run to run:
# - a stripped luajit: pmain (a local symbol that strip removed) named
#   "FILE+0xADDR" at the address the debug build's symbol table gives
#   it, as the eBPF backend names it; lua_pcall by its exported name;
#   no name of that kind where an exported function starts;
# - the host's /usr/lib/debug linked in (stap looks for debug files there);
# - the next run uses the same entry; -p2, and a script without Lua
#   stacks, make none; a debug target makes one only for its libraries
#   without symbols.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Bpf;
use File::Basename ();
use Test::More;

my $KTREE = "$ROOT/build/kernel/" . `$ROOT/dev/vm-run --kernel-release`;
chomp $KTREE;
ok -d $KTREE, "the VM kernel's build tree ($KTREE)";
my $cache = scratch('87-stap-symbols');
my $env = { XDG_CACHE_HOME => $cache };
my $bare = Bpf::stripped("$ROOT/build/luajit-gc64/bin/luajit");
my $base = File::Basename::basename($bare);

sub entries { my @e = glob("$cache/stap++/sysroot-*"); return @e }
sub stap3 {
	my (@args) = @_;
	return run_cmd({ env => $env }, "$ROOT/stap++", '-v', '-p3', '-r', $KTREE, @args);
}

my ($rc, $out, $err) = stap3('samples/lj-lua-stacks.sxx', '--exec', $bare);
is $rc, 0, 'stripped luajit: stap++ -p3 runs' or diag $err;
my @e = entries();
is scalar(@e), 1, 'one sysroot in the cache dir' or diag $err;
like $err, qr/^stap\+\+: running: stap .* --sysroot=\Q$e[0]\E /m, 'stap gets it as --sysroot' or diag $err;
my $copy = ($e[0] // '?') . $bare;
ok -f $copy, 'it holds a copy of the luajit at its path';
my $nm = `nm $copy 2>&1`;
my ($pmain) = `nm $ROOT/build/luajit-gc64/bin/luajit` =~ /^0*([0-9a-f]+) t pmain$/m;
ok $pmain, "pmain's address in the debug build: 0x" . ($pmain // '?');
like $nm, qr/^0*\Q$pmain\E t \Q$base\E\+0x\Q$pmain\E$/m, "pmain named $base+0x$pmain";
like $nm, qr/^[0-9a-f]+ T lua_pcall$/m, 'lua_pcall by its exported name';
my %exported = map { hex($1) => 1 } $nm =~ /^([0-9a-f]+) [TW] \S+$/mg;
my @clash = grep { $exported{ hex($_) } } $nm =~ /^[0-9a-f]+ t \Q$base\E\+0x([0-9a-f]+)$/mg;
is_deeply \@clash, [], 'no FILE+0xADDR name where an exported function starts';
my $n = () = $nm =~ /^[0-9a-f]+ t \Q$base\E\+0x/mg;
like $err, qr/^stap\+\+: '\S+': a symbol table for stap, \Q$n\E functions without a symbol named \Q$base\E\+0xADDR$/m,
	"stderr (-v) counts the $n functions named so";
is readlink("$e[0]/usr/lib/debug"), '/usr/lib/debug', "the host's /usr/lib/debug linked in" if -d '/usr/lib/debug';

($rc, $out, $err) = stap3('samples/lj-lua-stacks.sxx', '--exec', $bare);
is $rc, 0, 'the same again' or diag $err;
is_deeply [entries()], \@e, 'the next run uses the same sysroot';
like $err, qr/--sysroot=\Q$e[0]\E /, '... given to stap as before';

($rc, $out, $err) = run_cmd({ env => $env }, "$ROOT/stap++", '-v', '-p2', '-r', $KTREE,
	'samples/lj-lua-stacks.sxx', '--exec', $bare);
is $rc, 0, '-p2 runs' or diag $err;
unlike $err, qr/--sysroot/, '-p2: no sysroot (no symbol tables in that pass)';
($rc, $out, $err) = stap3('-e', 'probe process.begin { println(pid()) }', '--exec', $bare);
is $rc, 0, 'a script without Lua stacks runs' or diag $err;
unlike $err, qr/--sysroot/, 'a script without Lua stacks: stap sees the files as they are';

# a debug luajit has its symbols: only its libraries without any are copied with names
($rc, $out, $err) = stap3('samples/lj-lua-stacks.sxx', '--exec', "$ROOT/build/luajit-gc64/bin/luajit");
is $rc, 0, 'debug luajit: stap++ -p3 runs' or diag $err;
unlike $err, qr/^stap\+\+: '\S+luajit\S*': a symbol table for stap/m, 'debug luajit: its own symbols kept';
for my $lib (grep { !/ld-linux|libc\.so|libm\.so/ } $err =~ /-d (\S+\.so[.\d]*)/g) {
	my $has = `readelf -S -W $lib` =~ /\.symtab/;
	next if $has;
	like $err, qr/^stap\+\+: '\S+\Q$lib\E': a symbol table for stap/m, "debug luajit: $lib (no .symtab) named";
}

done_testing;
