#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# The real stap (passes 1-2, no kernel module): the expanded script and
# modules are valid SystemTap, stap's errors point at the .sxx file and
# line, and stap's exit status is stap++'s.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Golden;
use VM ();
use File::Copy ();
use File::Path ();
use Test::More;

ok(-x $STAPXX, 'stap++ is built') or BAIL_OUT('run make first');
my $f = fixture();
my $T = $f->{target};
my @I = ('-I', 't/golden/tapset');
my $C = 't/golden/cases';

# stap needs a kernel build tree even for pass 2: the guest kernel's.
my ($krel) = map { m{/lib/modules/([^/]+)/build$} } grep { -e "$_/.config" }
	glob('/lib/modules/*/build');
ok($krel, "a kernel build tree (/lib/modules/$krel/build)")
	or BAIL_OUT('no kernel headers: run make deps');
my @K = ('-r', $krel);

{
	my ($rc, $o, $e) = stapxx(@I, "$C/stap-parse.sxx", '--exec', $T, '-p1', @K);
	is($rc, 1, 'parse error: stap fails, exit 1 passed through');
	like($e, qr{at t/golden/cases/stap-parse\.sxx:9:\d+}, 'parse error: stap points at the .sxx line 9')
		or diag($e);
	unlike($e, qr{stap\+\+-\w{6}}, 'no temp path in stap\'s messages');
}
{
	my ($rc, $o, $e) = stapxx(@I, "$C/stap-module-error.sxx", '--exec', $T, '-p2', @K);
	isnt($rc, 0, 'error in a module: stap fails');
	like($e, qr{at t/golden/tapset/gt/broken\.sxx:4:\d+}, 'module error: stap points at the module .sxx line 4')
		or diag($e);
}
{
	my ($rc, $o, $e) = stapxx(@I, "$C/stap-ok.sxx", '--exec', $T, '-p2', @K);
	is($rc, 0, 'valid script: stap -p2 succeeds') or diag($e);
	like($o, qr/^# probes\n/m, 'stap -p2 listed the probes');
	like($o, qr/process\(".*target"\)\.function\("main/, 'the @pfunc probe resolved against the target');
	like($o, qr/gt_a:string/, 'module functions were pulled in from the -I dir');
}
{
	my ($rc, $o, $e) = stapxx(@I, "$C/stap-ok.sxx", '--exec', $T,
				  '--master', '-', '-p2', @K);
	is($rc, 0, 'master-mode build without a PID: stap -p2 succeeds') or diag($e);
}

# Building the same script twice: the second build comes from stap's cache,
# although every run expands into its own temp dir (stap sees it under one
# stable name, /proc/self/fd/98).
{
	my $dir = scratch('15-stap');
	my %env = (env => { SYSTEMTAP_DIR => "$dir/systemtap" });
	# A new cache, but with the kernel's configuration tests that earlier
	# builds cached (stapconf_*, tracequery_*, typequery_*; about 30 s of
	# CPU time to redo), not their modules (stap_*)
	my $home = $ENV{SYSTEMTAP_DIR} // "$ENV{HOME}/.systemtap";
	# With the VM tests' kernel tree and options (VM.pm), once those are
	# cached (VM::warm_stapconf), when make deps made the tree.
	my $tree = "$ROOT/build/kernel/$krel";
	my @KT = -f "$tree/System.map" ? ('-r', $tree) : @K;
	VM::warm_stapconf($tree) if -f "$tree/System.map";
	for my $f (glob("$home/cache/*/{stapconf,tracequery,typequery}_*")) {
		my ($sub, $base) = $f =~ m{/cache/([^/]+)/([^/]+)$} or next;
		File::Path::make_path("$dir/systemtap/cache/$sub");
		File::Copy::copy($f, "$dir/systemtap/cache/$sub/$base") or die "copy $f: $!\n";
	}
	my @args = (@I, "$C/stap-ok.sxx", '--exec', $T, '-p4', '-v', @KT, VM::no_guard(), '--', VM::quick_build());
	my ($rc, $o, $e) = stapxx(\%env, @args);
	is($rc, 0, 'first -p4 build') or diag($e);
	like($e, qr/^Pass 4: compiled C/m, 'first build compiles');
	like($e, qr/^stap\+\+: running: stap .* -R \S+ /m,
	     'by default the runtime fix is applied (stap gets -R)');
	($rc, $o, $e) = stapxx(\%env, @args);
	is($rc, 0, 'second -p4 build') or diag($e);
	like($e, qr/^Pass 4: using cached /m, 'second build comes from the cache');
	like($o, qr{^\Q$dir\E/systemtap/cache/\S+\.ko$}m, 'stap prints the cached module path');
}

done_testing();
