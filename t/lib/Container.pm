# SPDX-License-Identifier: GPL-2.0-or-later
package Container;

=head1 NAME

Container - nginx in a container that the test makes, on this host: its
own mount, PID and UTS namespaces (unshare), its own root (pivot_root)
where nginx and libluajit sit at paths the host does not have, and its
own cgroup, named as Docker names one (docker/ID).  The network is the
host's (as docker --network host).

=head1 FUNCTIONS

=over 4

=item C<nginx(%o)>

Makes the root in t/out (/usr, /etc and /dev bound from the host, as an
image that has the host's Debian packages) with nginx at
C</srv/edge.PID/sbin/nginx> and starts it there, with o{workers}
(default 1), o{heavy} (HEAVY_N), o{conf} (default t/apps/nginx.conf, on a
free port; in /app under its own name, which names the chunks, with the
Lua files of its directory: TEST_APP_DIR and LEAK_APP_DIR are /app).  The nginx is build/nginx
with its libluajit copied to C</srv/edge.PID/lib> (LD_LIBRARY_PATH), or
with o{stock} a copy of Debian's stripped /usr/sbin/nginx with its lua
module (from /usr).  nginx's master is PID 1 in its namespace.  Returns
{ master, workers (array ref; host PIDs), nspids (host PID => PID in the
namespace), port, root (on the host), exe (the path in the container),
cgroup (its path, as /proc/PID/cgroup shows it), id (the container ID) }
once it answers; dies if it does not.  o{luajit}: another libluajit to
copy (a stripped one); o{debug}: { PATH => FILE }, files the image has
under its /usr/lib/debug (PATH relative to it, e.g.
C<.build-id/ab/cdef.debug>), which the host does not.  C<stop(C)> stops it and removes
its cgroup.

=item C<guest_sh(C, %o)>

Shell lines that make the same container in the VM's guest (t/82): C's
root copied to the guest's /tmp, nginx started there with o{workers}
(default 1) and o{heavy}; they set C<$master> and C<$worker> (the
guest's PIDs) and print them (C<# master: M workers: W...>) and each
one's C<NSpid> line (C<# pid P: NSpid: P N>).  No cgroup of its own.

=item C<jail(LUAJIT, ARGS...)>

A chroot jail (chroot(8): the host's namespaces, another root): the
executable LUAJIT copied into a directory of t/out (removed at exit) as
C</srv/jail.PID/bin/luajit>, a path the host does not have, and the
libraries ldd names for it at their paths, with t/apps/*.lua in its
/app; runs C<chroot DIR /srv/jail.PID/bin/luajit ARGS...> (ARGS name
the apps as /app/NAME).  Returns { pid, root (the directory on the
host), exe (the path in the jail) }; kill the PID when done.

=item C<decoy(C, FILE)>

Puts FILE on the host at the path of C's nginx in the container (the
directories made, removed at exit): a file of the same name that is not
the container's.

=back

=cut

use strict;
use warnings;
use POSIX ();
use Digest::SHA ();
use File::Path qw(make_path remove_tree);
use File::Copy ();
use Time::HiRes qw(sleep);
use TestUtil;
use Bpf;
use VM ();

my ($count, @cleanup) = (0);
END { remove_tree($_) for @cleanup }

# The cgroup hierarchy a process is moved into: cgroup v2 (alone, or the
# unified one of a hybrid host), else v1's memory controller.
sub _cgroup_fs {
	for my $d ('/sys/fs/cgroup/unified', '/sys/fs/cgroup', '/sys/fs/cgroup/memory') {
		return $d if -e "$d/cgroup.procs" && -w $d;
	}
	die "no writable cgroup hierarchy under /sys/fs/cgroup\n";
}

sub nginx {
	my (%o) = @_;
	my $tag = "edge.$$." . ++$count;
	my $srv = "/srv/$tag";
	my $dir = "$ROOT/t/out/container.$tag";
	my $root = "$dir/root";
	remove_tree($dir);
	push @cleanup, $dir;
	make_path(map { "$root/$_" } qw(usr etc dev proc tmp oldroot app/logs));
	make_path("$root$srv/sbin", "$root$srv/lib");
	symlink("usr/$_", "$root/$_") or die "symlink $root/$_: $!\n" for qw(bin sbin lib lib64);
	my $nginx = $o{stock} ? '/usr/sbin/nginx' : "$ROOT/build/nginx/sbin/nginx";
	File::Copy::copy($nginx, "$root$srv/sbin/nginx") or die "copy $nginx: $!\n";
	chmod 0755, "$root$srv/sbin/nginx";
	my $lj = $o{luajit} // "$ROOT/build/luajit-gc64/lib/libluajit-5.1.so.2";
	File::Copy::copy($lj, "$root$srv/lib/libluajit-5.1.so.2") or die "copy $lj: $!\n" unless $o{stock};
	# the image's own debug files (its /usr/lib/debug: a tmpfs over the
	# host's there, in the container's mount namespace only)
	my $stage;
	if ($o{debug}) {
		$stage = "$dir/debug";
		for my $rel (sort keys %{ $o{debug} }) {
			(my $d = "$stage/$rel") =~ s{/[^/]+$}{};
			make_path($d);
			File::Copy::copy($o{debug}{$rel}, "$stage/$rel") or die "copy $o{debug}{$rel}: $!\n";
		}
	}
	my $file = $o{conf} // 't/apps/nginx.conf';
	(my $appdir = "$ROOT/$file") =~ s{/[^/]+$}{};
	File::Copy::copy($_, "$root/app/") or die "copy $_: $!\n" for glob("$appdir/*.lua");
	my $port = TestUtil::free_port();
	my $conf = slurp("$ROOT/$file");
	$conf =~ s/127\.0\.0\.1:8080/127.0.0.1:$port/ or die "$file: no listen line\n";
	$conf = Bpf::stock_conf($conf, $file) if $o{stock};
	(my $base = $file) =~ s{.*/}{};	# (its name names the chunks)
	spit("$root/app/$base", $conf);

	# the cgroup, named as Docker's cgroupfs driver names a container's
	my $id = Digest::SHA::sha256_hex($tag);
	my $cg = _cgroup_fs() . "/docker/$id";
	make_path($cg);
	my $w = $o{workers} // 1;
	my $sh = "set -e\necho \$\$ > $cg/cgroup.procs\n" . _init_sh($root, $srv, $base, $w, $o{heavy}, $stage);
	my $pid = Bpf::spawn('unshare', '--mount', '--pid', '--uts', '--fork', 'sh', '-c', $sh);
	my $c = { unshare => $pid, root => $root, exe => "$srv/sbin/nginx", srv => $srv, port => $port,
		cgdir => $cg, id => $id, conf => $base };
	my @workers;
	for (1 .. 100) {
		sleep 0.1;
		($c->{master}) = split ' ', `pgrep -P $pid` or next;
		# (children of the master that are nginx's workers: a child that
		# was none, gone a moment later, was once taken for the worker,
		# t/80 in the REPEAT run of 2026-11-28; PID 1 runs the init
		# script's commands before it is nginx)
		@workers = grep { (slurp("/proc/$_/cmdline") // '') =~ /^nginx: worker process/ }
			split ' ', `pgrep -P $c->{master}`;
		last if @workers >= $w && system("curl -s -o /dev/null http://127.0.0.1:$port/") == 0;
	}
	$c->{workers} = \@workers;
	die "the container's nginx did not start: " . (slurp("$root/app/logs/error.log") // '') . "\n"
		unless @workers >= $w;
	for my $p ($c->{master}, @workers) {
		my ($ns) = (slurp("/proc/$p/status") // '') =~ /^NSpid:.*\s(\d+)$/m;
		$c->{nspids}{$p} = $ns;
	}
	($c->{cgroup}) = (slurp("/proc/$c->{master}/cgroup") // '') =~ m{^\d+:[^:\n]*:(\S*/docker/$id)$}m;
	return $c;
}

# The container's init, in its new namespaces (sh -c): its root ROOT
# made its own (with the files of DEBUG in its /usr/lib/debug), then
# nginx (SRV/sbin/nginx, its config /app/CONF) run as its PID 1 with W
# workers.
sub _init_sh {
	my ($root, $srv, $conf, $w, $heavy, $debug) = @_;
	$heavy //= 2000000;
	my $dbg = $debug ? "mount -t tmpfs debug $root/usr/lib/debug\ncp -R $debug/. $root/usr/lib/debug/\n" : '';
	return <<"SH";
mount --make-rprivate /
mount --bind $root $root
for d in usr etc dev; do mount --rbind /\$d $root/\$d; done
${dbg}mount -t proc proc $root/proc
cd $root
pivot_root . oldroot
umount -l /oldroot
hostname edge
export LD_LIBRARY_PATH=$srv/lib TEST_APP_DIR=/app LEAK_APP_DIR=/app HEAVY_N=$heavy
exec $srv/sbin/nginx -p /app -e logs/error.log -c /app/$conf -g 'worker_processes $w;'
SH
}

sub guest_sh {
	my ($c, %o) = @_;
	my $w = $o{workers} // 1;
	my $r = '/tmp/container';
	my $init = _init_sh($r, $c->{srv}, $c->{conf}, $w, $o{heavy});
	$init =~ s/(["\$`\\])/\\$1/g;
	return <<"SH";
rm -rf $r
mkdir -p $r/usr $r/etc $r/dev $r/proc $r/tmp $r/oldroot $r/app/logs $r$c->{srv}
for l in bin sbin lib lib64; do ln -s usr/\$l $r/\$l; done
cp -R $c->{root}$c->{srv}/. $r$c->{srv}/
cp $c->{root}/app/*.lua $c->{root}/app/$c->{conf} $r/app/
unshare --mount --pid --uts --fork sh -c "$init" > container.out 2>&1 &
ct=\$!
for i in \$(seq 1 150); do @{[ VM::get_sh("http://127.0.0.1:$c->{port}/", '/dev/null') ]} && break; sleep 0.2; done
kids \$ct; master=\$kids
for i in \$(seq 1 50); do kids \$master; [ \$nkids -ge $w ] && break; sleep 0.1; done
worker=\${kids%% *}
echo "# master: \$master workers: \$kids"
for p in \$master \$kids; do echo "# pid \$p: \$(grep NSpid /proc/\$p/status | tr '\\t' ' ')"; done
SH
}

sub stop {
	my ($c) = @_;
	kill 'QUIT', $c->{master} if $c->{master};
	waitpid($c->{unshare}, 0);
	for (1 .. 50) {
		last if rmdir $c->{cgdir};
		sleep 0.1;
	}
}

sub jail {
	my ($lj, @args) = @_;
	my $root = "$ROOT/t/out/jail.$$." . ++$count;
	remove_tree($root);
	push @cleanup, $root;
	make_path("$root/app");
	my $exe = "/srv/jail.$$.$count/bin/luajit";
	my @libs = `ldd $lj` =~ m{(?:=> |^\s)(/\S+) \(0x}mg;
	die "jail: ldd $lj: $?\n" if $? || !@libs;
	for my $f ([$lj, $exe], map { [$_, $_] } @libs) {
		(my $d = "$root$f->[1]") =~ s{/[^/]+$}{};
		make_path($d);
		File::Copy::copy($f->[0], "$root$f->[1]") or die "copy $f->[0]: $!\n";
		chmod 0755, "$root$f->[1]";
	}
	File::Copy::copy($_, "$root/app/") or die "copy $_: $!\n" for glob("$ROOT/t/apps/*.lua");
	return { pid => Bpf::spawn('chroot', $root, $exe, @args), root => $root, exe => $exe };
}

sub decoy {
	my ($c, $file) = @_;
	make_path("$c->{srv}/sbin");
	push @cleanup, $c->{srv};
	File::Copy::copy($file, "$c->{srv}/sbin/nginx") or die "copy $file: $!\n";
	chmod 0755, "$c->{srv}/sbin/nginx";
	return "$c->{srv}/sbin/nginx";
}

1;
