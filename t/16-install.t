#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# make install puts stap++ and its tapsets where the installed binary finds
# them: run from another directory, @use luajit must load the installed
# tapset/luajit.sxx (DESTDIR staging works too: the binary also looks
# under its own prefix, BIN/../share/stap++/tapset).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Golden;
use Test::More;

my $dir = scratch('16-install');
my $root = "$dir/root";
my ($rc, $o, $e) = run_cmd('make', '-s', 'install', "DESTDIR=$root", 'PREFIX=/usr/local');
is($rc, 0, 'make install DESTDIR=... PREFIX=/usr/local') or diag("$o$e");
my $bin = "$root/usr/local/bin/stap++";
ok(-x $bin, 'stap++ installed in PREFIX/bin');
ok(-e "$root/usr/local/share/stap++/tapset/luajit.sxx", 'tapset installed in PREFIX/share/stap++/tapset');

mkdir("$dir/elsewhere");
my $script = "$dir/elsewhere/use.sxx";
spit($script, "\@use luajit\nprobe begin { exit() }\n");
($rc, $o, $e) = run_cmd({ cwd => "$dir/elsewhere" }, $bin, 'use.sxx', '--args');
is($rc, 0, 'installed stap++ finds the installed luajit module from another directory') or diag($e);
($rc, $o, $e) = run_cmd({ cwd => "$dir/elsewhere" }, $bin, '-e', "\@use no.such", '--args');
like($e, qr{looked in: .*\Q$root\E/usr/local/share/stap\+\+/tapset}, 'the installed tapset dir is in the search path');
done_testing();
