#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# stap++'s SystemTap 4.8 runtime fixes (lib/driver/runtime.c): plain stap fails to
# build a module for the guest kernel, stap++ builds it with a patched copy of
# the runtime in its cache, reuses the copy, makes a new one when the
# installed runtime changes, leaves a runtime that needs no fix alone, and
# reports an unusable cache dir clearly.  (That the fixes work at run time is
# t/32-vm-e2e.t.)  It boots no VM, but runs stap for the VM's kernel
# (dev/vm-run --kernel-release) eight times, twice into pass 4 (gcc, after
# the installed runtime's SystemTap configuration tests): a minute or
# more, so -vm keeps it with the VM tests, out of make check.
# The patched copy that this test makes in a cache of its own is not
# built into a module here (a script that stops in pass 1 makes stap++
# patch it): it must be the very copy that every VM test builds its
# modules with (VM::warm_stapconf makes that one, once a run).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use Test::More;
use File::Path qw(make_path);

my $vm = VM->new;
my $out = $vm->out;
my $krel = $vm->krel;
VM::warm_stapconf($vm->ktree);    # (in the cache the VM tests use)
my $shared = ($ENV{XDG_CACHE_HOME} || "$ENV{HOME}/.cache") . '/stap++';
my $cache = "$out/cache";
my $in_out = { cwd => $out, merge => 1 };    # run_cmd in $out, one output
$ENV{XDG_CACHE_HOME} = $cache;
delete $ENV{SYSTEMTAP_RUNTIME};
my $installed = '/usr/share/systemtap/runtime';

my $script = 'probe timer.profile { if (user_mode()) { printf("%x\n", user_long(uaddr())); exit() } }';
my $broken = 'probe begin {';    # stap stops in pass 1, after the runtime decision

# plain stap: pass 4 fails in stp_task_work.c
my ($st, $log) = run_cmd($in_out, 'stap', '-p4', '-r', $krel, '-m', 'plain', '-e', $script);
isnt $st, 0, 'plain stap -p4 -r KREL fails';
like $log, qr/stp_task_work\.c.*task_work_cancel/s, '... in stp_task_work.c on task_work_cancel';

# stap++ --no-runtime-fix: the same failure
($st, $log) = run_cmd($in_out, "$ROOT/stap++", '--no-runtime-fix', '-p4', '-r', $krel, '-m', 'nofix', '-e', $script);
isnt $st, 0, 'stap++ --no-runtime-fix -p4 fails';
like $log, qr/task_work_cancel/, '... on task_work_cancel';
unlike $log, qr/patched SystemTap runtime/, '... and says nothing about a patched runtime';

# stap++: patches a copy before stap runs, says so with -v, gives it to
# stap (whose pass 1 then stops on the broken script: no module built)
($st, $log) = run_cmd($in_out, "$ROOT/stap++", '-v', '-p4', '-r', $krel, '-m', 'fixed', '-e', $broken);
like $log, qr/^Pass 1: parse failed/m, 'stap++ -p4 -r KREL runs stap, which stops in pass 1 on a broken script'
	or diag $log;
my ($dir) = $log =~ /patching a copy of SystemTap runtime '\Q$installed\E' into '([^']+)' \(fixes for kernel '\Q$krel\E': task_work_cancel_func, user_addr_max, mmap_read_lock\)/;
ok $dir, 'stap++ -v says it patches the runtime, for which kernel and which fixes' or diag $log;
$dir //= '';
like $dir, qr{^\Q$cache\E/stap\+\+/runtime-[0-9a-f]{16}$}, 'the copy is in XDG_CACHE_HOME/stap++/runtime-<hash>';
like $log, qr/ -R \Q$dir\E /, 'stap runs with -R on the copy';
ok -f "$dir/.stap++-runtime-fix", 'the copy has its completion stamp';
my $built = "$shared/" . ($dir =~ s{.*/}{}r);
my @other = grep { !/\.stap\+\+-runtime-fix\b/ } split /\n/, `diff -rq $dir $built 2>&1`;
ok -d $built && !@other, "the copy is the runtime every VM test's module is built with ($built)"
	or diag join("\n", @other);

# the copy differs from the installed runtime in exactly the three fixed files
my @diff = sort grep { !/^Only in .*: \.stap\+\+-runtime-fix$/ } split /\n/, `diff -rq $installed $dir`;
is_deeply \@diff, [ "Files $installed/linux/addr-map.c and $dir/linux/addr-map.c differ",
					"Files $installed/linux/task_finder2.c and $dir/linux/task_finder2.c differ",
					"Files $installed/stp_task_work.c and $dir/stp_task_work.c differ" ],
	'only linux/addr-map.c, linux/task_finder2.c and stp_task_work.c are changed';
my $tw = slurp("$dir/stp_task_work.c") // '';
like $tw, qr/typedef typeof\(&task_work_cancel_func\) task_work_cancel_fn;/, 'fix 1: the type of task_work_cancel_func';
like $tw, qr/kallsyms_lookup_name\("task_work_cancel_func"\)/, 'fix 1: kallsyms looks up task_work_cancel_func';
unlike $tw, qr/"task_work_cancel"/, 'fix 1: no lookup of task_work_cancel left';
like slurp("$dir/linux/addr-map.c") // '',
	qr/#if !defined\(user_addr_max\)\n#include <asm\/processor.h>\n#define user_addr_max\(\) TASK_SIZE_MAX\n#endif\n\nstatic int\nlookup_bad_addr_user\(/,
	'fix 2: user_addr_max() defined as TASK_SIZE_MAX before lookup_bad_addr_user';
my $tf = slurp("$dir/linux/task_finder2.c") // '';
like $tf, qr/\n\tif \(mmap_read_lock_killable\(mm\)\) \{\n\t\t_stp_kfree\(mmpath_buf\);\n\t\treturn;\n\t\}\n/,
	'fix 3: the memory map of a process attached to is read under a lock it waits for';
my @try = $tf =~ /mmap_read_trylock\(mm\)/g;
is scalar(@try), 1, 'fix 3: ... and only that trylock is replaced (the mmap callback keeps its own)';

# a second run reuses the copy
($st, $log) = run_cmd($in_out, "$ROOT/stap++", '-v', '-p4', '-r', $krel, '-m', 'again', '-e', $broken);
like $log, qr/using the patched SystemTap runtime '\Q$dir\E'/, 'a second run reuses the copy';
opendir my $dh, "$cache/stap++" or die;
is scalar(grep { !/^\./ } readdir $dh), 1, 'one copy in the cache, no temp dirs left';
closedir $dh;

# a changed installed runtime gets a new copy
my $rt2 = "$out/runtime-changed";
system('cp', '-a', $installed, $rt2) == 0 or die;
open my $fh, '>>', "$rt2/runtime.h" or die;
print $fh "/* changed */\n";
close $fh;
{
	local $ENV{SYSTEMTAP_RUNTIME} = $rt2;
	($st, $log) = run_cmd($in_out, "$ROOT/stap++", '-v', '-p4', '-r', $krel, '-m', 'changed', '-e', $broken);
}
my ($dir2) = $log =~ /patching a copy of SystemTap runtime '\Q$rt2\E' into '([^']+)'/;
ok $dir2 && $dir2 ne $dir, 'a changed runtime gets a new patched copy' or diag $log;

# a runtime that already copes is left alone (decided from its source)
{
	local $ENV{SYSTEMTAP_RUNTIME} = $dir;
	($st, $log) = run_cmd($in_out, "$ROOT/stap++", '-v', '-p4', '-r', $krel, '-m', 'patched', '-e', $broken);
}
like $log, qr/SystemTap runtime '\Q$dir\E' needs no fix for kernel '\Q$krel\E'/, 'a runtime with the fixes needs none';
unlike $log, qr/ -R /, '... and stap gets no -R';

# a kernel without headers: nothing to decide, no -R
($st, $log) = run_cmd($in_out, "$ROOT/stap++", '-v', '-p4', '-r', '0.0.0-none', '-m', 'nohdr', '-e', $broken);
like $log, qr/no kernel headers for '0\.0\.0-none', no runtime fix/, 'no headers: no fix, said with -v';

# an unusable cache dir: a clear error, non-zero exit
{
	local $ENV{XDG_CACHE_HOME} = '/proc/stap++-no-such-dir';
	($st, $log) = run_cmd($in_out, "$ROOT/stap++", '-p4', '-r', $krel, '-m', 'nocache', '-e', $script);
}
is $st, 1, 'unusable cache dir: exit 1';
like $log, qr/^stap\+\+: error: cannot create '\/proc\/stap\+\+-no-such-dir[^']*': /m, '... with an error naming the dir';
like $log, qr/^hint: .*--no-runtime-fix/m, '... and a hint';

# a cache dir another user can write is not used (the copy is compiled
# into a kernel module): a warning, then the next choice (~/.cache)
{
	my $bad = "$out/foreign";
	make_path($bad, "$out/home");
	chown(65534, -1, $bad) or die "chown: $!";
	chmod(0777, $bad);
	local $ENV{XDG_CACHE_HOME} = $bad;
	local $ENV{HOME} = "$out/home";
	($st, $log) = run_cmd($in_out, "$ROOT/stap++", '-v', '-p4', '-r', $krel, '-m', 'foreign', '-e', $broken);
	like $log, qr/^stap\+\+: warning: not using '\Q$bad\E\/stap\+\+' for the patched SystemTap runtime: it can be changed by another user$/m,
		'a foreign-writable cache dir: a warning' or diag $log;
	like $log, qr/runtime '[^']+' into '\Q$out\E\/home\/\.cache\/stap\+\+\/runtime-[0-9a-f]{16}'/,
		'... and the copy goes to ~/.cache/stap++ instead' or diag $log;
	ok !-e "$bad/stap++", '... and nothing is written into the foreign dir';
}

done_testing;
