#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# resty-memory: the breakdown of a process's resident memory, against
# processes whose memory is known by construction (no VM: stap++ reads
# /proc itself).
# - The luajit CLI (the debug GC64 build, and Debian's stripped luajit:
#   t/apps/memory/cli.lua): 30 MB of strings, a table whose array is one
#   32 MiB block of LuaJIT's allocator, 24 MB of glibc malloc.  LuaJIT's
#   parts within 10% of collectgarbage("count"); its blocks mapped one by
#   one within 10% of the table; glibc's large blocks within 10% of the
#   malloc; the parts sum to the kernel's count (smaps_rollup) within 1%.
#   With the first half of the strings dropped: the allocator's free
#   chunks, and its free part (the resident pages wholly inside them),
#   within 10% of what the drop took off collectgarbage("count"), and
#   its part in use with the blocks within 10% of the count.
# - nginx (the debug build, and Debian's stock one: t/apps/memory): a
#   filled lua_shared_dict of 64m (its zone, by name, within 10% of 64
#   MB), 40 MB of Lua strings, 24 MB of FFI malloc, 8 MB allocated from
#   nginx's cycle pool (its part within 10% of the pool as the app counts
#   it through the FFI, and the note's blocks and large allocations are
#   the app's count; by nginx's debug info, and by nginx's module ABI for
#   the stock one); then 20 MB more strings, and --arg diff of the first
#   run's output names LuaJIT's parts as what grew, by the app's own count
#   within 10%.
# - A thread waiting in pause() and one that left a block in a new arena:
#   the stack and the arena are parts of their own.  stap++ reads only
#   pages the target has (pagemap's count of present pages is the same
#   before and after).
# - --master: one table per worker; --arg stacks=1: stacks that util/fold
#   sums to the same total, and util/flamegraph and util/pprof read.
# - Bad input: no process, a dead one, -p, a missing diff file.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Bpf;
use Test::More;

my $out = scratch('84-resty-memory');

# The table of stap++'s output: { part => resident KB }, the total, the
# kernel's count, the notes.
sub table {
	my ($o) = @_;
	my %t = (parts => {});
	for (split /\n/, $o) {
		if (/^total\t(\d+)\t100\.0%\t\d+$/) {
			$t{total} = $1;
		} elsif (/^# the kernel's count \(smaps_rollup\): (\d+) KB resident$/) {
			$t{kernel} = $1;
		} elsif (/^([^#\t][^\t]*)\t(\d+)\t[\d.]+%\t\d+$/ && $1 ne 'part') {
			$t{parts}{$1} = $2;
		} elsif (/^# LuaJIT: (\d+) KB GC-managed/) {
			$t{gc} = $1;
		}
	}
	return \%t;
}

sub sum_of {
	my ($t, $re) = @_;
	my $s = 0;
	$s += $t->{parts}{$_} for grep { $_ =~ $re } keys %{ $t->{parts} };
	return $s;
}

# GOT within PCT percent of WANT (KB).
sub near {
	my ($name, $got, $want, $pct) = @_;
	my $ok = $want > 0 && abs($got - $want) <= $want * $pct / 100;
	ok($ok, sprintf('%s: %d KB, the truth %d KB (within %d%%)', $name, $got, $want, $pct));
	return $ok;
}

sub common {
	my ($name, $o, $t) = @_;
	ok($t->{total} && $t->{kernel}, "$name: a total and the kernel's count") or diag($o);
	ok(abs(($t->{total} // 0) - ($t->{kernel} // 0)) <= 0.01 * ($t->{kernel} // 0),
	   "$name: the parts ($t->{total} KB) add up to the kernel's count ($t->{kernel} KB) within 1%") or diag($o);
	my $sum = 0;
	$sum += $_ for values %{ $t->{parts} };
	is($sum, $t->{total}, "$name: the total is the sum of the parts");
}

# The pages present in process PID's page tables (pagemap bit 63), over
# all its mappings but the kernel's.
sub present_pages {
	my ($pid) = @_;
	no warnings 'portable';    # (64-bit addresses)
	open(my $m, '<', "/proc/$pid/maps") or return -1;
	open(my $pm, '<:raw', "/proc/$pid/pagemap") or return -1;
	my $n = 0;
	while (<$m>) {
		my ($lo, $hi, $name) = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/ or next;
		next if $name =~ /^\[(?:vsyscall|vvar|vdso)/;
		for (my $a = hex($lo); $a < hex($hi); $a += 4096 * 512) {
			my $k = (hex($hi) - $a) / 4096;
			$k = 512 if $k > 512;
			sysseek($pm, $a / 4096 * 8, 0) or return -1;
			sysread($pm, my $b, 8 * $k) == 8 * $k or return -1;
			$n += $_ >> 63 for unpack('Q<*', $b);
		}
	}
	return $n;
}

# The luajit CLI
my $deb = "$ROOT/build/debian/luajit/usr/bin/luajit";
for my $c (['gc64', "$ROOT/build/luajit-gc64/bin/luajit", 30, 32, 24], ["debian's luajit", $deb, 30, 32, 24],
	   ['threads', "$ROOT/build/luajit-gc64/bin/luajit", 30, 32, 24, 'threads'],
	   ['free', "$ROOT/build/luajit-gc64/bin/luajit", 30, 0, 0, '-', 'free'], ["debian's luajit, free", $deb, 30, 0, 0, '-', 'free']) {
	my ($name, $lj, $smb, $tmb, $mmb, @more) = @$c;
	my $pid = open(my $fh, '-|', $lj, "$ROOT/t/apps/memory/cli.lua", $smb, $tmb, $mmb, @more) // die "$lj: $!";
	my ($gc, $freed) = (<$fh> // '') =~ /^ready gc (\d+)(?: freed (\d+))?$/;
	ok($gc, "$name: the app is ready (" . ($gc // '?') . ' bytes GC-managed)');
	# (its main thread waits in pause(), system call 34: nothing changes)
	for (1 .. 100) {
		last if (slurp("/proc/$pid/syscall") // '') =~ /^34 /;
		select(undef, undef, undef, 0.05);
	}
	like(slurp("/proc/$pid/syscall") // '', qr/^34 /, "$name: the app waits in pause()");
	my $before = present_pages($pid);
	my ($rc, $o, $e) = run_cmd($STAPXX, "$ROOT/samples/resty-memory.sxx", '-x', $pid);
	my $after = present_pages($pid);
	kill 'TERM', $pid;
	close $fh;
	# (a read of a page the target never touched would map one in)
	ok($before > 0 && $after == $before, "$name: the target's present pages are as before ($before, $after)");
	is($rc, 0, "$name: status 0") or diag($e);
	unlike($o, qr/^(?:# )?nginx/m, "$name: no nginx part or note in a process without nginx");
	my $t = table($o);
	common($name, $o, $t);
	near("$name: g->gc.total", $t->{gc} // 0, ($gc // 0) / 1024, 1) or diag($o);
	ok(($t->{parts}{'other anonymous'} // 0) < 0.02 * $t->{total}, "$name: other anonymous is small") or diag($o);
	# LuaJIT's allocator: its chunks in use and free, told apart
	my ($segs, $nused, $used, $nfree, $free) =
		$o =~ /^# LuaJIT's allocator: (\d+) KB in its segments: (\d+) chunks in use \((\d+) KB\), (\d+) free \((\d+) KB, /m;
	# (each rounded down to KB)
	ok($segs && abs($segs - $used - $free) <= 1, "$name: the allocator's segments are its chunks in use and free ("
	   . join(' + ', map { $_ // '?' } $used, $free) . ' = ' . ($segs // '?') . ' KB)') or diag($o);
	if ($freed) {
		# the dropped strings: free chunks, and free pages within them
		near("$name: the allocator's free chunks (the dropped strings)", $free // 0, $freed / 1024, 10) or diag($o);
		near("$name: the allocator's free part (resident pages in free chunks)",
		     $t->{parts}{'LuaJIT: allocator segments, free'} // 0, $freed / 1024, 10) or diag($o);
		near("$name: LuaJIT's parts in use", sum_of($t, qr/^LuaJIT: (?:allocator segments, in use|large blocks)/),
		     $gc / 1024, 10) or diag($o);
		next;
	}
	near("$name: LuaJIT's parts", sum_of($t, qr/^LuaJIT: (?:allocator segments|large blocks)/), ($gc // 0) / 1024, 10) or diag($o);
	ok(($t->{parts}{'LuaJIT: allocator segments, free'} // 0) < 0.05 * ($gc // 0) / 1024,
	   "$name: little of the allocator is free when nothing was dropped") or diag($o);
	near("$name: LuaJIT's blocks mapped one by one (the table's array)", $t->{parts}{'LuaJIT: large blocks (mapped one by one)'} // 0,
	     32 * 1024, 10) or diag($o);
	near("$name: glibc's large blocks (the FFI malloc)", $t->{parts}{'glibc malloc: large blocks (mmap)'} // 0, 24e6 / 1024, 10)
		or diag($o);
	if (($more[0] // '') eq 'threads') {
		# a thread waiting in pause() (glibc's default stack: 8 MB), one
		# that made a block of 100,000 bytes in a new arena
		my ($sk, $sv) = $o =~ /^stack: other threads\t(\d+)\t[\d.]+%\t(\d+)$/m;
		ok($sv && $sv >= 8 * 1024 && $sk < $sv, "$name: the waiting thread's stack (" . ($sk // '?') . ' KB resident of '
		   . ($sv // '?') . ')') or diag($o);
		my ($ak, $av) = $o =~ /^glibc malloc: other arenas\t(\d+)\t[\d.]+%\t(\d+)$/m;
		ok($av && $av >= 100000 / 1024, "$name: the other arena (" . ($ak // '?') . ' KB resident of ' . ($av // '?') . ')')
			or diag($o);
	}
}

# nginx: the debug build, then Debian's stock one
for my $stock (0, 1) {
	my $name = $stock ? 'stock nginx' : 'nginx';
	my $n = Bpf::nginx(conf => 't/apps/memory/nginx.conf', workers => 1, url => '/count', stock => $stock);
	my $w = $n->{workers}[0];
	my $url = "http://127.0.0.1:$n->{port}";
	my (undef, $keys) = run_cmd('curl', '-s', "$url/fill");
	ok($keys && $keys > 30000, "$name: the shared dict is filled (" . ($keys // '?') =~ s/\s+//r . ' keys)');
	my (undef, $gc1) = run_cmd('curl', '-s', "$url/strings?mb=40");
	my (undef, $mal) = run_cmd('curl', '-s', "$url/malloc?mb=24");
	my (undef, $pool) = run_cmd('curl', '-s', "$url/pool?mb=8");
	my ($pbytes, $pblocks, $plarge) = split ' ', $pool // '';
	ok($pbytes && $pbytes > 8e6, "$name: the app counts its cycle pool (" . ($pool // '?') =~ s/\s+$//r . ')');
	my ($rc, $o, $e) = run_cmd($STAPXX, "$ROOT/samples/resty-memory.sxx", '-x', $w);
	is($rc, 0, "$name: status 0") or diag($e);
	spit("$out/$name.txt", $o);
	my $t = table($o);
	common($name, $o, $t);
	near("$name: the zone of lua_shared_dict dogs", $t->{parts}{'nginx shm: lua_shared_dict zone "dogs"'} // 0, 64 * 1024, 10)
		or diag($o);
	near("$name: LuaJIT's parts", sum_of($t, qr/^LuaJIT: (?:allocator segments|large blocks)/), $gc1 / 1024, 10) or diag($o);
	near("$name: glibc's large blocks (the FFI malloc)", $t->{parts}{'glibc malloc: large blocks (mmap)'} // 0, $mal / 1024, 10)
		or diag($o);
	near("$name: nginx's cycle pool", $t->{parts}{'nginx: cycle pool'} // 0, ($pbytes // 0) / 1024, 10) or diag($o);
	my ($how, $nb, $nl) = $o =~ /^# nginx: its cycle pool \(ngx_cycle->pool, ([^)]*)\): (\d+) blocks of 16 KB, \d+ KB used in them, and (\d+) large allocations, \d+ KB; /m;
	is(($nb // '?') . ' blocks, ' . ($nl // '?') . ' large', ($pblocks // '') . ' blocks, ' . ($plarge // '') . ' large',
	   "$name: the note's blocks and large allocations of the cycle pool are the app's") or diag($o);
	like($how // '', $stock ? qr/^nginx has no debug info: read by nginx's module ABI, which the pool's own fields confirm$/
			      : qr/^by nginx's debug info$/, "$name: ... read " . ($stock ? 'by the module ABI' : 'by its debug info'));
	my (undef, $gc2) = run_cmd('curl', '-s', "$url/strings?mb=20");
	($rc, $o, $e) = run_cmd($STAPXX, "$ROOT/samples/resty-memory.sxx", '-x', $w, '--arg', "diff=$out/$name.txt");
	is($rc, 0, "$name: diff: status 0") or diag($e);
	my $t2 = table($o);
	my ($first) = $o =~ /^# since \Q$out\E\/\Q$name\E\.txt: growth\tbefore_kb\tnow_kb\n([^\t\n]+)\t\+\d+/m;
	like($first // '', qr/^LuaJIT: /, "$name: diff: what grew most is LuaJIT's (" . ($first // 'none') . ')') or diag($o);
	my $grew = 0;
	$grew += $1 while $o =~ /^LuaJIT: (?:allocator segments[^\t]*|large blocks \(mapped one by one\))\t\+(\d+)\t/mg;
	near("$name: diff: LuaJIT's growth", $grew, ($gc2 - $gc1) / 1024, 10) or diag($o);
	if (!$stock) {
		# --master: each worker's table; stacks for the flame graph tools
		($rc, $o, $e) = run_cmd($STAPXX, "$ROOT/samples/resty-memory.sxx", '--master', $n->{master});
		is($rc, 0, 'master: status 0') or diag($e);
		my @procs = $o =~ /^# stap\+\+ resty-memory: process (\d+) /mg;
		is_deeply(\@procs, [$w], 'master: the worker\'s table (one worker), not the master\'s') or diag($o);
		($rc, my $s, $e) = run_cmd($STAPXX, "$ROOT/samples/resty-memory.sxx", '-x', $w, '--arg', 'stacks=1');
		is($rc, 0, 'stacks=1: status 0') or diag($e);
		like($s, qr/\A# stap\+\+ type=bytes\n/, 'stacks=1: the header gives the unit');
		spit("$out/stacks.txt", $s);
		my ($frc, $folded) = run_cmd("$ROOT/util/fold", "$out/stacks.txt");
		is($frc, 0, 'stacks=1: util/fold reads it');
		my $bytes = 0;
		$bytes += $1 while $folded =~ / (\d+)$/mg;
		ok(abs($bytes / 1024 - $t2->{total}) <= 0.02 * $t2->{total},
		   sprintf('stacks=1: the folded bytes (%d KB) are the total of the table before (%d KB) within 2%%', $bytes / 1024,
			   $t2->{total}));
		like($folded, qr/^nginx shm;lua_shared_dict zone "dogs" \d+$/m, 'stacks=1: a part is its detail over its group') or diag($folded);
		my ($grc, $svg) = run_cmd("$ROOT/util/flamegraph", '--countname', 'bytes', "$out/stacks.txt");
		is($grc, 0, 'stacks=1: util/flamegraph draws it');
		like($svg, qr/<title>lua_shared_dict zone "dogs" \(/, 'stacks=1: ... with the zone\'s name');
		my ($prc, undef, $perr) = run_cmd("$ROOT/util/pprof", '-o', "$out/mem.pb.gz", "$out/stacks.txt");
		is($prc, 0, 'stacks=1: util/pprof converts it') or diag($perr);
	}
	Bpf::nginx_stop($n);
}

# bad input
{
	my ($rc, $o, $e) = run_cmd($STAPXX, "$ROOT/samples/resty-memory.sxx");
	is($rc, 2, 'no process: usage error');
	like($e, qr/^stap\+\+: error: resty-memory reads a running process: give -x PID or --master PID$/m, '... saying what to give');
	my $gone = fork() // die;
	exit 0 unless $gone;
	waitpid($gone, 0);
	($rc, $o, $e) = run_cmd($STAPXX, "$ROOT/samples/resty-memory.sxx", '-x', $gone);
	is($rc, 1, 'a process that exited: failure');
	like($e, qr/^stap\+\+: error: no process with PID $gone$/m, '... saying so') or diag($e);
	($rc, $o, $e) = run_cmd($STAPXX, '-p4', "$ROOT/samples/resty-memory.sxx", '-x', $$);
	is($rc, 2, '-p4: usage error');
	like($e, qr/runs in stap\+\+ itself, with no kernel module: -p is not for it/, '... saying why') or diag($e);
	($rc, $o, $e) = run_cmd($STAPXX, "$ROOT/samples/resty-memory.sxx", '-x', $$, '--arg', "diff=$out/none.txt");
	is($rc, 1, 'a missing diff file: failure');
	like($e, qr/^stap\+\+: error: cannot read '\Q$out\E\/none\.txt' \(--arg diff\): No such file or directory$/m, '... saying so')
		or diag($e);
	($rc, $o, $e) = run_cmd($STAPXX, "$ROOT/samples/resty-memory.sxx", '-x', $$, '--arg', 'stacks=2');
	is($rc, 2, 'stacks=2: usage error');
}

done_testing;
