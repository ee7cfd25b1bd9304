#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# The eBPF backend on nginx in a container (t/lib/Container.pm: its own
# mount, PID and UTS namespaces and root, nginx at /srv/edge.N/sbin/nginx,
# a path the host does not have, in a cgroup docker/ID), by the host's
# PIDs (issue 24):
# - lj-lua-stacks -x WORKER: the seed app's foo/bar split as t/71, while
#   the host has a file at the container's nginx path, another build
#   (Debian's stripped nginx): it is not read (no "no debug info"
#   warning, no layout from the database);
# - --master: nginx is PID 1 in its namespace; both workers sampled;
# - Debian's stock, stripped nginx and libluajit2 in the container;
# - a luajit in a chroot jail (the host's namespaces, another root): the
#   seed split of t/70;
# - lj-lua-off-cpu on wait.conf's /offcpu: a(), b(), c() 1:2:3 as the app
#   measures them.
# Each names the processes by host PID with their PID in the container
# beside it, the cgroup and the container ID (stderr), and gives util/pprof
# the cgroup and container as labels (stdout's header).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use LjStacks;
use LjWait;
use Bpf;
use Container;
use Stats;
use Cwd ();
use POSIX qw(ceil);
use Test::More;

my $CLAIM = 2;
my $CLAIM_MASTER = 4;
my $app = "$ROOT/t/apps/test.lua";

# Samples the container C's seed app under wrk on / (CONNS connections),
# TARGET until SAMPLES samples; stops C; returns the parsed output and
# the raw stdout.
sub sample {
	my ($name, $c, $conns, $target, $samples) = @_;
	my $wrk = Bpf::load($c->{port}, '/', $conns);
	my ($st, $out, $err, $p, $used, $wall) = Bpf::stacks_samples($target, $c->{workers}, $samples, 'hz=4000');
	Bpf::load_stop($wrk);
	Container::stop($c);
	is $st, 0, "$name: status 0" or diag $err;
	note sprintf('%s: %d samples in %.1f s of CPU time (%.1f s wall)', $name, ($p->{stats} // {})->{samples} // 0, $used, $wall);
	return ($p, $out);
}

# Where the processes PIDS of container C run, as the session's output
# P says it: a line per process (host PID, its PID in the container, the
# cgroup, the container ID), and the header util/pprof takes as labels.
sub check_origin {
	my ($name, $p, $c, $text, @pids) = @_;
	my @w = @{ $p->{warnings} // [] };
	for my $pid (@pids) {
		my $ns = $c->{nspids}{$pid} // '?';
		ok scalar(grep { /^WARNING: [\w-]+: process $pid \(PID $ns in its PID namespace\): cgroup \Q$c->{cgroup}\E, container $c->{id}$/ } @w),
			"$name: stderr names process $pid, PID $ns in the container, its cgroup and container"
			or diag join("\n", grep { /process \d+/ } @w);
	}
	like $text, qr/^# stap\+\+ cgroup=\Q$c->{cgroup}\E container=$c->{id}$/m,
		"$name: stdout's header gives the cgroup and container ID (util/pprof's labels)";
}

# -x, with a decoy on the host at the container's nginx path
{
	my $c = Container::nginx(workers => 1, heavy => 5000000);
	my $decoy = Container::decoy($c, '/usr/sbin/nginx');
	ok system('cmp', '-s', $decoy, "$c->{root}$c->{exe}") != 0, '-x: the host has another file at the container nginx\'s path';
	my $w = $c->{workers}[0];
	my ($p, $out) = sample('-x', $c, 4, ['-x', $w], LjStacks::seed_samples($CLAIM));
	my $line = LjStacks::chunk_line("$c->{root}/app/nginx.conf");
	LjStacks::check_seed('-x', $p, app => $app, root => ["content_by_lua(nginx.conf:$line)"],
		mode => 'jit', lines => 0, claim => $CLAIM);
	Bpf::check_accounted('-x', $p);
	check_origin('-x', $p, $c, $out, $w);
	my @host = grep { /no debug info|using layout|\Q'$decoy'\E/ } @{ $p->{warnings} // [] };
	is_deeply \@host, [], "-x: the host's file at that path is not read" or diag join("\n", @host);
	isnt $c->{nspids}{$w}, $w, "-x: the worker's PID in the container is not the host's ($c->{nspids}{$w})";
}

# A chrooted luajit (chroot(8), in the host's namespaces): the kernel
# gives its paths with the jail's directory in front; stap++ reads its
# files under /proc/PID/root by the paths the process knows
{
	my $j = Container::jail("$ROOT/build/luajit-gc64/bin/luajit-2.1.0-beta3", '/app/run.lua', 3600, 'jit', 'plain', 5000000);
	ok Bpf::ready($j->{pid}), 'chroot: the target runs';
	like readlink("/proc/$j->{pid}/exe") // '', qr{^\Q$j->{root}$j->{exe}\E$}, 'chroot: the kernel names its executable with the jail in front';
	my ($st, $out, $err, $p) = Bpf::stacks_samples(['-x', $j->{pid}], [$j->{pid}], LjStacks::seed_samples($CLAIM), 'hz=4000');
	# the SystemTap driver (t/golden/fake-stap, as below): stap gets the
	# jail's luajit by the path the process knows, in its --sysroot
	my $log = "$ROOT/t/out/80-fake-stap.$$.jail.log";
	my ($sst, undef, $serr) = run_cmd({ env => { STAPXX_STAP => "$ROOT/t/golden/fake-stap", FAKE_STAP_LOG => $log } },
		"$ROOT/stap++", '--no-runtime-fix', "$ROOT/samples/lj-lua-stacks.sxx", '-x', $j->{pid});
	my $l = slurp($log) // '';
	unlink $log;
	is $sst, 0, 'chroot: SystemTap: stap++ ran stap' or diag $serr;
	like $l, qr{^argv: -d\nargv: \Q$j->{exe}\E$}m, 'chroot: SystemTap: -d names luajit as the jail does' or diag $l;
	like $l, qr{^sysroot: \.\Q$j->{exe}\E$}m, 'chroot: SystemTap: the jail\'s luajit is in the sysroot' or diag $l;
	kill 'TERM', $j->{pid};
	waitpid($j->{pid}, 0);
	is $st, 0, 'chroot: status 0' or diag $err;
	LjStacks::check_seed('chroot', $p, app => $app, root => ['run.lua', 'C:pmain'], mode => 'jit', lines => 0, claim => $CLAIM);
	Bpf::check_accounted('chroot', $p);
}

# --master: nginx is the container's PID 1
{
	my $c = Container::nginx(workers => 2, heavy => 5000000);
	is $c->{nspids}{ $c->{master} }, 1, '--master: the master is PID 1 in the container';
	# (32 connections: t/71 says why)
	my ($p, $out) = sample('--master', $c, 32, ['--master', $c->{master}], LjStacks::seed_samples($CLAIM_MASTER));
	my $line = LjStacks::chunk_line("$c->{root}/app/nginx.conf");
	LjStacks::check_seed('--master', $p, app => $app, root => ["content_by_lua(nginx.conf:$line)"],
		mode => 'jit', lines => 0, claim => $CLAIM_MASTER);
	my @w = grep { ($p->{pids}{$_} // 0) > 100 } @{ $c->{workers} };
	is scalar(@w), 2, '--master: both workers sampled, by host PID ('
		. join(' ', map { "$_:" . ($p->{pids}{$_} // 0) } @{ $c->{workers} }) . ')';
	check_origin('--master', $p, $c, $out, @{ $c->{workers} });
}

# Debian's stripped nginx and libluajit2 in the container
{
	my $c = Container::nginx(workers => 1, stock => 1);
	my $w = $c->{workers}[0];
	my ($p, $out) = sample('stock', $c, 4, ['-x', $w], LjStacks::seed_samples($CLAIM));
	my $line = LjStacks::chunk_line("$c->{root}/app/nginx.conf");
	LjStacks::check_seed('stock', $p, app => $app, root => ["content_by_lua(nginx.conf:$line)"],
		mode => 'jit', lines => 0, claim => $CLAIM);
	my $lj2 = "/proc/$w/root" . Cwd::abs_path('/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2');
	is_deeply $p->{layout}, { $lj2 => 'luajit2-2.1-20230119-gc64' },
		'stock: the layout database\'s entry for the container\'s libluajit2, read through /proc/PID/root';
	check_origin('stock', $p, $c, $out, $w);
}

# The image's own debug files: libluajit stripped, its debug file only in
# the container's /usr/lib/debug, by build-id: its DWARF, not the layout
# database (whose line stderr would print)
{
	my $lj = "$ROOT/build/luajit-gc64/lib/libluajit-5.1.so.2";
	my $bare = Bpf::stripped($lj, 'libluajit-5.1.so.2');
	my ($id) = `readelf -n $bare` =~ /Build ID: ([0-9a-f]+)/;
	my $dbg = "$ROOT/t/out/80-libluajit.$$.debug";
	system('objcopy', '--only-keep-debug', $lj, $dbg) == 0 or die "objcopy: $?\n";
	ok $id && !-e "/usr/lib/debug/.build-id/" . substr($id, 0, 2) . '/' . substr($id, 2) . '.debug',
		'debug file: the host has none for that build-id';
	my $c = Container::nginx(workers => 1, heavy => 5000000, luajit => $bare,
		debug => { '.build-id/' . substr($id, 0, 2) . '/' . substr($id, 2) . '.debug' => $dbg });
	my $w = $c->{workers}[0];
	my ($p) = sample('debug file', $c, 4, ['-x', $w], LjStacks::seed_samples($CLAIM));
	unlink $dbg;
	is_deeply $p->{layout} // {}, {}, 'debug file: libluajit\'s layouts from its debug file in the container, not the database';
	my $line = LjStacks::chunk_line("$c->{root}/app/nginx.conf");
	LjStacks::check_seed('debug file', $p, app => $app, root => ["content_by_lua(nginx.conf:$line)"],
		mode => 'jit', lines => 0, claim => $CLAIM);
}

# The SystemTap driver on the same target (stap is t/golden/fake-stap,
# which logs what it gets; t/82 runs the real one in the VM): stap gets
# the container's binaries by the paths the container names them, copied
# into a --sysroot, and the script probes them by those paths; stderr
# says where the process runs, stdout has util/pprof's header.
{
	my $c = Container::nginx(workers => 1);
	my $w = $c->{workers}[0];
	my $log = "$ROOT/t/out/80-fake-stap.$$.log";
	my %fake = (env => { STAPXX_STAP => "$ROOT/t/golden/fake-stap", FAKE_STAP_LOG => $log });
	my (undef, undef, $merr) = run_cmd({ %fake }, "$ROOT/stap++", '--no-runtime-fix', "$ROOT/samples/lj-lua-stacks.sxx",
		'--master', $c->{master});
	my ($st, $out, $err) = run_cmd({ %fake }, "$ROOT/stap++", '--no-runtime-fix', "$ROOT/samples/lj-lua-stacks.sxx", '-x', $w);
	Container::stop($c);
	like $merr, qr/^stap\+\+: master process $c->{master} \(PID 1 in its PID namespace\): cgroup \Q$c->{cgroup}\E, container $c->{id}\nstap\+\+: worker process $w \(PID $c->{nspids}{$w} in its PID namespace\): cgroup /m,
		'SystemTap: --master: stderr says where the master and its worker run' or diag $merr;
	my $l = slurp($log) // '';
	unlink $log;
	is $st, 0, 'SystemTap: stap++ ran stap' or diag $err;
	my ($sysroot) = $l =~ /^argv: --sysroot=(\S+)$/m;
	ok $sysroot, 'SystemTap: stap gets a --sysroot' or diag $l;
	my %d = map { $_ => 1 } $l =~ /^argv: -d\nargv: (\S+)$/mg;
	ok $d{"$c->{srv}/sbin/nginx"} && $d{"$c->{srv}/lib/libluajit-5.1.so.2"},
		'SystemTap: -d names nginx and libluajit as the container does' or diag $l;
	my %in = map { $_ => 1 } $l =~ /^sysroot: \.(\S+)$/mg;
	is_deeply [grep { !$in{$_} } sort keys %d], [], 'SystemTap: every -d binary is in the sysroot';
	unlike $l, qr{/proc/$w/root}, 'SystemTap: neither stap\'s argv nor the script names /proc/PID/root';
	like $l, qr{\@var\("[^"]+", "\Q$sysroot$c->{srv}\E/lib/libluajit-5\.1\.so\.2"\)},
		'SystemTap: @var names libluajit by its copy in the sysroot' or diag $l;
	my $ns = $c->{nspids}{$w};
	like $err, qr/^stap\+\+: process $w \(PID $ns in its PID namespace\): cgroup \Q$c->{cgroup}\E, container $c->{id}$/m,
		'SystemTap: stderr says where the process runs';
	like $out, qr/\A# stap\+\+ cgroup=\Q$c->{cgroup}\E container=$c->{id}\n/, 'SystemTap: stdout starts with util/pprof\'s header';
}

# lj-lua-off-cpu: a(), b(), c() block 1:2:3 (wait.lua), as t/74
{
	my $claim = 3;
	# (a request is a round: 30 waits; c()'s share, 1/2, needs the most)
	my $reqs = ceil(1.1 * Stats::floor(1 / 2, $claim) / 30);
	my $c = Container::nginx(workers => 1, conf => 't/apps/wait.conf');
	my ($st, $o) = LjWait::bpf_ngx_session_of('lj-lua-off-cpu', $c, '/offcpu', $reqs, 1);
	Container::stop($c);
	is $st, 0, 'off-CPU: status 0' or diag $o;
	my $p = LjWait::parse($o, 'lj-lua-off-cpu');
	my $acct = LjWait::acct($o);
	is_deeply LjStacks::bad($p, 'off-CPU'), [], 'off-CPU: well-formed output';
	LjWait::check_abc('off-CPU', $p, $acct, $p->{wait}{waits}, $claim, 70, $o);
	my $root = LjStacks::count_with($p, sub { $_[-1] =~ /^content_by_lua\(wait\.conf:\d+\)$/ });
	is $root, $p->{total}, 'off-CPU: every stack rooted at the content_by_lua chunk' or diag LjStacks::dump_stacks($p, 8);
	check_origin('off-CPU', $p, $c, $o, $c->{workers}[0]);
}

done_testing;
