#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# The test targets of issue 21 (stock binaries) that make deps provides:
#   - the debug LuaJIT builds (build/luajit-gc64 and -nogc64, build/lj/NAME-gc64
#     and -nogc64): they run, report their source's jit.version and GC64
#     mode, and have DWARF;
#   - their stripped copies (build/stripped/luajit-*, build/lj/*/stripped):
#     they run the same, have neither .symtab nor .debug_info, and share
#     the build-id of the debug file split off under build/debug;
#   - Debian's stock, stripped targets: the luajit CLI extracted into
#     build/debian/luajit (static: runs without libluajit), and the nginx
#     service's binary with libnginx-mod-http-lua, started here on a free port
#     to say its LuaJIT's version; the nginx service does not hold port 80.
# Profiling them is for the tests of issue 21's layouts; here they only run.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Bpf;
use Test::More;
use IO::Socket::INET;
use Cwd ();

my $B = "$ROOT/build";
my $LIB = 'lib/libluajit-5.1.so.2';
my $VER = 'print(jit.version, require("ffi").abi("gc64"))';

# the sources' versions (jit.version), the builds of each
my %version = (luajit2 => 'LuaJIT 2.1.0-beta3', 'deb-luajit' => 'LuaJIT 2.1.0-beta3',
               'or2-20240314' => 'LuaJIT 2.1.1710398010', 'lj-20260819' => 'LuaJIT 2.1.1787165859');
my @builds;
for my $b (qw(gc64 nogc64)) {
	push @builds, { prefix => "luajit-$b", stripped => "stripped/luajit-$b", debug => "debug/luajit-$b",
	                version => $version{luajit2}, gc64 => $b eq 'gc64', files => ['bin/luajit', $LIB] };
	for my $n (qw(deb-luajit or2-20240314 lj-20260819)) {
		# (the CLI alone: dev/deps builds them with BUILDMODE=static)
		push @builds, { prefix => "lj/$n-$b", stripped => "lj/$n-$b/stripped", debug => "debug/lj/$n-$b",
		                version => $version{$n}, gc64 => $b eq 'gc64', files => ['bin/luajit'] };
	}
}

sub sections { return scalar `readelf -S -W '$_[0]' 2>/dev/null` }
sub build_id { return (`readelf -n '$_[0]' 2>/dev/null` =~ /Build ID: ([0-9a-f]+)/)[0] }
# whether FILE is stripped: no .symtab, no .debug_info
sub stripped { my $s = sections($_[0]); return $s =~ /\.dynsym/ && $s !~ /\s\.(?:symtab|debug_info)\s/ }
sub runs {
	my ($bin, $want, $name) = @_;
	my ($st, $o, $e) = run_cmd($bin, '-e', $VER);
	is("$st $o", "0 $want->{version}\t" . ($want->{gc64} ? 'true' : 'false') . "\n",
	   "$name: runs: $want->{version}, GC64 " . ($want->{gc64} ? 'on' : 'off')) or diag($e);
}

for my $t (@builds) {
	my $dbg = "$B/$t->{prefix}/bin/luajit";
	runs($dbg, $t, "build/$t->{prefix}");
	like(sections($dbg), qr/\s\.debug_info\s/, "build/$t->{prefix}: has DWARF");
	for my $f (@{ $t->{files} }) {
		my $s = "$B/$t->{stripped}/$f";
		(my $d = "$B/$t->{debug}/$f.debug") =~ s{/(?:bin|lib)/}{/};
		ok(stripped($s), "build/$t->{stripped}/$f: no .symtab, no .debug_info");
		my $id = build_id("$B/$t->{prefix}/$f");
		ok($id && build_id($s) eq $id && build_id($d) eq $id, "... its build-id, the debug build's and its debug file's");
		like(sections($d), qr/\s\.debug_info\s/, "... whose debug file has the DWARF");
	}
	runs("$B/$t->{stripped}/bin/luajit", $t, "build/$t->{stripped}");
}

# Debian's luajit CLI: stripped, and the VM inside (it needs no libluajit)
my $deb = "$B/debian/luajit/usr";
runs("$deb/bin/luajit", { version => 'LuaJIT 2.1.0-beta3', gc64 => 1 }, 'build/debian/luajit/usr/bin/luajit');
ok(stripped("$deb/bin/luajit"), '... is stripped');
unlike(`readelf -d '$deb/bin/luajit'`, qr/NEEDED.*libluajit/, '... and links no libluajit (static VM)');
ok(stripped("$deb/lib/x86_64-linux-gnu/libluajit-5.1.so.2"), "Debian's libluajit-5.1-2, extracted beside it, is stripped");

# Debian's nginx with its lua module and libluajit2-5.1-2
my $mod = '/usr/lib/nginx/modules/ngx_http_lua_module.so';
my $lj2 = '/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2';
like(`dpkg -S $lj2`, qr/^libluajit2-5\.1-2:amd64: /, "$lj2 is libluajit2-5.1-2's");
like(`ldd $mod`, qr{libluajit-5\.1\.so\.2 => (?:/usr)?/lib/x86_64-linux-gnu/libluajit-5\.1\.so\.2 }, "... which the lua module loads");
ok(stripped($_), "$_ is stripped") for '/usr/sbin/nginx', $mod, $lj2;
ok(!IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => 80, Timeout => 2),
   'nothing listens on port 80 (the nginx service is off)');
my $n = Bpf::nginx(conf => 't/apps/nginx-version.conf', stock => 1);
my $body = `curl -s http://127.0.0.1:$n->{port}/`;
my $maps = join '', map { slurp("/proc/$_/maps") // '' } @{ $n->{workers} };
Bpf::nginx_stop($n);
my $lj2real = Cwd::abs_path($lj2);
like($maps, qr/ \Q$lj2real\E$/m, "Debian's nginx: its worker maps $lj2real");
is($body, "LuaJIT 2.1.0-beta3 gc64=true\n", "Debian's nginx runs Lua: LuaJIT 2.1.0-beta3, GC64 on")
	or diag(slurp("$n->{prefix}/logs/error.log") // '');

done_testing;
