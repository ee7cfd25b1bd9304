#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# make deps (dev/deps): the deb-src detection on sample apt configurations,
# a second run that skips everything, and what the first run built (the
# targets of issue 21 are checked in t/24-targets.t).
# Its --help and usage errors are in t/35-scripts.t with the other scripts'.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Test::More;
use Cwd qw(abs_path);

my $deps = "$ROOT/dev/deps";

my %want = (oneline => 1, 'oneline-list' => 1, deb822 => 1, commented => 0,
            'other-suite' => 0, 'deb822-binary' => 0, 'deb822-disabled' => 0, empty => 0);
for my $case (sort keys %want) {
	local $ENV{APT_DIR} = "$ROOT/t/fixtures/vm/apt/$case";
	my ($st, $log) = run_cmd({ cwd => $ROOT, merge => 1 }, $deps, '--check-debsrc');
	is($st, $want{$case} ? 0 : 1, "deb-src detection: $case");
	like($log, $want{$case} ? qr/: found$/m : qr/: missing$/m, "... says so");
}

# everything is there already (make deps ran before the tests): all skipped
my ($st, $log) = run_cmd({ cwd => $ROOT, merge => 1 }, $deps);
is($st, 0, 'dev/deps again: status 0') or diag($log);
for my $what ('deb-src for bookworm main already configured', 'packages already installed',
              'build/node/node_modules/playwright-core exists',
              (map { "build/src/$_ exists" } qw(luajit2 luajit nginx libnginx-mod-http-lua libnginx-mod-http-ndk
                                               luajit2-v2.1-20240314 luajit-v2.1-20260819)),
              'build/luajit-gc64 is built', 'build/luajit-nogc64 is built', 'build/nginx is built',
              (map { ("build/lj/$_ is built", "build/lj/$_/stripped is built") }
                   map { ("$_-gc64", "$_-nogc64") } qw(deb-luajit or2-20240314 lj-20260819)),
              'build/stripped/luajit-gc64 is built', 'build/stripped/luajit-nogc64 is built',
              'build/lj/variant-o1 is built', 'build/lj/variant-extra is built',
              'the nginx service is off', 'build/debian/luajit is extracted') {
	like($log, qr/^deps: skip: \Q$what\E$/m, "skips: $what");
}
unlike($log, qr/^deps: (?!skip|done)/m, 'and does nothing else');
like($log, qr/^deps: done$/m, 'deps: done');

# what it built
for my $b (qw(gc64 nogc64)) {
	my $lj = "$ROOT/build/luajit-$b/bin/luajit";
	like(`$lj -e 'print(jit.version)'`, qr/^LuaJIT 2\.1/, "build/luajit-$b runs");
	like(`readelf -S $lj`, qr/\.debug_info/, "build/luajit-$b has DWARF");
	ok(-e "$ROOT/build/luajit-$b/lib/libluajit-5.1.so" && -d "$ROOT/build/luajit-$b/include/luajit-2.1",
		"build/luajit-$b has lib/ and include/");
}
my $info = `readelf --debug-dump=info $ROOT/build/luajit-gc64/bin/luajit` // '';
like($info, qr/gcptr64/, 'build/luajit-gc64 uses 64-bit GC refs');
$info = `readelf --debug-dump=info $ROOT/build/luajit-nogc64/bin/luajit` // '';
like($info, qr/gcptr32/, 'build/luajit-nogc64 uses 32-bit GC refs');
undef $info;

my $ngx = "$ROOT/build/nginx/sbin/nginx";
my $v = `$ngx -V 2>&1`;
like($v, qr/--with-debug/, 'build/nginx: --with-debug');
like($v, qr/--add-module=\S*libnginx-mod-http-ndk/, 'build/nginx: with the ndk module');
like($v, qr/--add-module=\S*libnginx-mod-http-lua/, 'build/nginx: with the lua module');
# build/ may be a link to another checkout's build/ (git worktrees share one)
my $B = abs_path("$ROOT/build");
like(`readelf -d $ngx`, qr/R(UN)?PATH.*\Q$B\E\/luajit-gc64\/lib/, 'build/nginx: rpath to build/luajit-gc64');
like(`ldd $ngx`, qr/libluajit-5\.1\.so\.2 => \Q$B\E\/luajit-gc64\/lib\//, 'build/nginx: loads the debug LuaJIT');
like(`readelf -S $ngx`, qr/\.debug_info/, 'build/nginx has DWARF');

done_testing();
