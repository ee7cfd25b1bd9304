#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# Kernel probes and return probes in the VM, built against the kernel build
# tree build/kernel/KREL (dev/deps step 7: the real System.map and vmlinux
# of the guest kernel), with stap++ -r DIR.  One module, one boot:
#  - process(nginx).function(...).return with @entry on the debug nginx
#    while curl makes requests (return probes need System.map);
#  - kernel.function("vfs_read") reading struct file members (vmlinux
#    DWARF) and kprobe.function("vfs_read") (System.map), while a copy of
#    cat named kpcat reads a known file.
# First, on the host: what stap++ does with -r DIR.
use strict;
use warnings;
use Test::More;
use File::Spec;
use Cwd qw(realpath);
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjWait;

my $R = $ROOT;
my $vm = VM->new;
my $out = $vm->out;
my $nginx = 'build/nginx/sbin/nginx';

# --- host: -r DIR ---------------------------------------------------------
# a -r argument with a '/' is a tree (stap's rule), without one a release
mkdir "$out/notree" or die "$out/notree: $!";
my ($st, $log) = run_cmd({ cwd => $out, merge => 1 }, "$R/stap++", '-p4', '-r', 'notree/', '-e', 'probe begin { exit() }');
is $st, 1, '-r DIR without include/config/kernel.release: exit 1';
like $log, qr/^stap\+\+: error: '-r notree\/': no include\/config\/kernel\.release in it$/m,
	'... says the tree has no kernel.release';
like $log, qr/^hint: .*build\/kernel\/KREL/m, '... and hints at make deps';
($st, $log) = run_cmd({ cwd => $out, merge => 1 }, "$R/stap++", '-p4', '-r', "$out/none/", '-e', 'probe begin { exit() }');
is $st, 1, '-r DIR that does not exist: exit 1';
like $log, qr/^stap\+\+: error: '-r \Q$out\E\/none\/': /m, '... names the argument';

my $tree = $vm->ktree or do { done_testing(); exit };


# --- the module -------------------------------------------------------------
my $script = <<'STP';
probe begin { printf("ready\n") }
probe process("@NGINX@").function("ngx_http_lua_content_handler").return {
    printf("ret method=%d urilen=%d return=%d\n", @entry($r->method),
           @entry($r->uri->len), $return)
}
probe kernel.function("vfs_read") {
    if (execname() == "kpcat")
        printf("kfunc %s pos=%d count=%d\n",
               kernel_string($file->f_path->dentry->d_name->name),
               $file->f_pos, $count)
}
probe kprobe.function("vfs_read") {
    if (execname() == "kpcat")
        printf("kprobe count=%d\n", ulong_arg(3))
}
STP
$script =~ s/\@NGINX\@/$R\/$nginx/;
open my $fh, '>', "$out/kprobes.sxx" or die "$out/kprobes.sxx: $!";
print $fh $script;
close $fh;

# VM.pm's build() always passes -r KREL: build with -r DIR here, a relative
# DIR, which stap++ must make absolute for stap.
my $rel = File::Spec->abs2rel($tree, $out);
# (the other test modules' options: their configuration tests are cached)
my @argv = ("$R/stap++", '-v', '-p4', '-r', $rel, '-m', 'kprobes', '--exec', "$R/$nginx", VM::no_guard(),
			"$out/kprobes.sxx", '--', VM::quick_build());
my $ko = "$out/kprobes.ko";
unlink $ko;
my $t0 = time;
($st, $log) = run_cmd({ cwd => $out, merge => 1 }, @argv);
ok $st == 0 && -f $ko, 'module builds with -r build/kernel/KREL (' . (time - $t0) . ' s)'
	or diag "\$ @argv\n$log";
like $log, qr/^stap\+\+: running: \S*stap .* -r \Q${\ realpath($tree) }\E /m, 'stap gets the tree as an absolute path';
like $log, qr/fixes for kernel '\Q${\ $vm->krel }\E'/, 'the runtime fix reads the release from the tree';

# --- the VM -----------------------------------------------------------------
$vm->case(probes => VM::nginx_up(env => 'export HEAVY_N=1000') . <<"SH"
staprun -x \$worker "\$VM_JOB"/kprobes.ko > stap.out 2>&1 &
sp=\$!
for i in \$(seq 1 300); do has '*ready*' stap.out && break; sleep 0.2; done
@{[ LjWait::uprobes_placed('$worker') ]}curl -s -o /dev/null http://127.0.0.1:8080/
curl -s -o /dev/null http://127.0.0.1:8080/ffi
curl -s -o /dev/null -I http://127.0.0.1:8080/
printf 'hello\\n' > hello36.txt
cp /bin/cat kpcat
./kpcat hello36.txt > /dev/null
sleep 1
kill -INT \$sp
wait \$sp
rc=\$?
SH
	. VM::nginx_down() . "cat stap.out\nexit \$rc\n", files => [$ko], timeout => 120) if -f $ko;

my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: the case ran, no kernel errors' or diag $r->{stderr};
my $c = $r->{cases}{probes};
CASE: {
	do { fail('no VM case (the module did not build)'); last CASE } unless $c;
	my $o = $c->{output};
	is $c->{status}, 0, 'staprun status 0' or diag $o;
	# the begin probe prints "ready" before SystemTap places the uprobes
	# in the running worker (t/45, t/22): the requests wait for them
	like $o, qr/^# uprobes placed in \d+$/m, 'the requests came once the uprobes were in the worker' or diag $o;
	# .return with @entry: GET / and /ffi, then HEAD / (NGX_HTTP_GET 2,
	# NGX_HTTP_HEAD 4); content_by_lua code that runs to its end: NGX_OK (0)
	my @ret = $o =~ /^ret (.*)$/mg;
	is_deeply \@ret, ['method=2 urilen=1 return=0', 'method=2 urilen=4 return=0',
					  'method=4 urilen=1 return=0'],
		'nginx .return probe: @entry($r->method), @entry($r->uri->len), $return per request'
		or diag $o;
	# kernel.function: kpcat reads hello36.txt from 0, then hits EOF at 6
	my @kf = $o =~ /^kfunc hello36\.txt pos=(\d+) count=(\d+)$/mg;
	ok @kf >= 4, 'kernel.function("vfs_read"): kpcat reads hello36.txt' or diag $o;
	is "@kf[0, 2]", '0 6', '... $file->f_pos: 0, then 6 (EOF after "hello\n")' or diag $o;
	my @kcount = $o =~ /^kfunc \S+ pos=\d+ count=(\d+)$/mg;
	my @pcount = $o =~ /^kprobe count=(\d+)$/mg;
	ok @pcount > 0, 'kprobe.function("vfs_read") fires for kpcat' or diag $o;
	is "@pcount", "@kcount", '... with the same counts as the DWARF probe (ulong_arg(3) = $count)'
		or diag $o;
	unlike $o, qr/^(ERROR|WARNING):/m, 'no SystemTap errors or warnings' or diag $o;
}

done_testing;
