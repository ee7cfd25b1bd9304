# SPDX-License-Identifier: GPL-2.0-or-later
# TestUtil.pm - what every test in t/ shares: where the repository and the
# stap++ under test are, scratch dirs, reading and writing files, running
# commands.  Golden.pm, DwarfTest.pm and VM.pm build on it.
#
#   use FindBin;
#   use lib "$FindBin::Bin/lib";
#   use TestUtil;
#   my $out = scratch('50-fold');                  # fresh t/out/50-fold/
#   my ($rc, $o, $e) = run_cmd("$ROOT/util/fold", "$out/in.txt");
package TestUtil;

use strict;
use warnings;
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Path qw(make_path remove_tree);
use POSIX ();
use Exporter 'import';

our @EXPORT = qw($ROOT $STAPXX scratch slurp spit run_cmd);
our @EXPORT_OK = qw(free_port);

# The repository (absolute).  Tests use it for every path, so they run from
# any directory.
our $ROOT = abs_path(dirname(__FILE__) . '/../..');

# The stap++ under test ($STAPXX_BIN: test another build).
our $STAPXX = $ENV{STAPXX_BIN} // "$ROOT/stap++";

# Failures and diag() go to stderr and, for make test's digest of a failed
# run (dev/test-digest), to t/out/.diag/NAME.log (NAME: the test file's).
# In a parallel prove run the stderr of all tests is interleaved; this log
# is one test's alone.
{
	package TestUtil::Tee;
	sub TIEHANDLE { my ($class, @fh) = @_; return bless [@fh], $class }
	sub PRINT { my $self = shift; print {$_} @_ for @$self; return 1 }
	sub PRINTF { my $self = shift; my $f = shift; return $self->PRINT(sprintf($f, @_)) }
	sub BINMODE { return 1 }
	sub FILENO { return fileno(STDERR) }
}
if ($0 =~ m{(?:^|/)([\w.-]+)\.t$}) {
	my $dir = "$ROOT/t/out/.diag";
	make_path($dir);
	if (open(my $log, '>', "$dir/$1.log")) {
		$log->autoflush(1);
		open(my $err, '>&', \*STDERR) or die "stderr: $!";
		$err->autoflush(1);
		require Symbol;
		my $tee = Symbol::gensym();
		tie *$tee, 'TestUtil::Tee', $err, $log;
		require Test::Builder;
		Test::Builder->new->failure_output($tee);
	}
}

# make test runs the host tests beside the chains of VM tests, whose module
# builds the one VM waits for.  With $STAPXX_HOST_NICE (make test sets it)
# a host test and all it starts run at that nice level: the builds get the
# CPU first, and the host tests take what the VM tests leave, most of it
# at the end of the run, while the last VM tests wait for the VM.  None of
# their assertions is timed, and they pass beside a build loop; a busier
# host spreads some shares more (t/71, session 29 in docs/development.md).
if (my $nice = delete $ENV{STAPXX_HOST_NICE}) {
	POSIX::nice($nice) if $0 =~ /\.t$/ && $0 !~ /-vm[\w.-]*\.t$/;
}

# A fresh, empty t/out/NAME/ (absolute path).
sub scratch {
	my ($name) = @_;
	my $dir = "$ROOT/t/out/$name";
	remove_tree($dir);
	make_path($dir);
	return $dir;
}

# The contents of PATH, or undef if it cannot be read.
sub slurp {
	my ($path) = @_;
	open(my $fh, '<', $path) or return undef;
	local $/;
	my $s = <$fh>;
	close($fh);
	return $s;
}

# Write DATA to PATH (replacing it); dies on error.
sub spit {
	my ($path, $data) = @_;
	open(my $fh, '>', $path) or die "$path: $!";
	print $fh $data;
	close($fh) or die "$path: $!";
}

# Run argv (no shell); returns (exit code, stdout, stderr).  The exit code
# is 128 + N when the command was killed by signal N, 255 (and a line
# saying so in its output) when it could not be waited for.
# Options (an optional first argument, a hash ref):
#   cwd    => DIR        run there (default: $ROOT)
#   env    => {NAME => value, or undef to unset}
#   stdin  => PATH       standard input (default: /dev/null)
#   merge  => 1          stderr goes to stdout (returned stderr is '')
#   stdout => PATH, stderr => PATH
#                        keep the output in these files (default: temporary
#                        files, removed)
sub run_cmd {
	my ($opt, @cmd) = ref $_[0] eq 'HASH' ? @_ : ({}, @_);
	my $tmp = "$ROOT/t/out/.run.$$";
	make_path("$ROOT/t/out");
	my $out = $opt->{stdout} // "$tmp.out";
	my $err = $opt->{stderr} // "$tmp.err";
	my $pid = fork() // die "fork: $!";
	if (!$pid) {
		eval {
			chdir($opt->{cwd} // $ROOT) or die "chdir $opt->{cwd}: $!\n";
			while (my ($k, $v) = each %{ $opt->{env} // {} }) {
				if (defined $v) { $ENV{$k} = $v } else { delete $ENV{$k} }
			}
			my $in = $opt->{stdin} // '/dev/null';
			open(STDIN, '<', $in) or die "$in: $!\n";
			open(STDOUT, '>', $out) or die "$out: $!\n";
			if ($opt->{merge}) {
				open(STDERR, '>&', \*STDOUT) or die "stderr: $!\n";
			} else {
				open(STDERR, '>', $err) or die "$err: $!\n";
			}
			exec { $cmd[0] } @cmd;
			die "exec $cmd[0]: $!\n";
		};
		print STDERR "run_cmd: $@";
		POSIX::_exit(127);
	}
	my $rc;
	if (waitpid($pid, 0) == $pid) {
		$rc = $? & 127 ? 128 + ($? & 127) : $? >> 8;
	} else {
		$rc = 255;
		my $why = "run_cmd: waitpid($pid) of $cmd[0]: $!\n";
		if (open(my $fh, '>>', $opt->{merge} ? $out : $err)) { print $fh $why; close $fh; }
	}
	my $o = slurp($out) // '';
	my $e = $opt->{merge} ? '' : slurp($err) // '';
	unlink(grep { /^\Q$tmp\E/ } $out, $err);
	return ($rc, $o, $e);
}

# A TCP port on 127.0.0.1 that no socket is bound to now, for a server a
# test starts (nginx: Bpf::nginx, Container::nginx).  It lies below the
# kernel's ephemeral range (net.ipv4.ip_local_port_range), from which
# connect() takes the local port of every client socket: tests run side by
# side, and one test's wrk holds dozens of such ports in its connections;
# a server port in that range can be one of them by the time nginx binds
# it (EADDRINUSE: the client socket has no SO_REUSEADDR), which a port
# below it cannot.  (bind(0) takes its port from that range too: only
# when the range leaves fewer than 1,000 ports above 20000 below it.)
sub free_port {
	require IO::Socket::INET;
	my ($lo) = split ' ', slurp('/proc/sys/net/ipv4/ip_local_port_range') // '';
	$lo = 32768 unless defined $lo && $lo =~ /^\d+$/;
	my %try = (LocalAddr => '127.0.0.1', Proto => 'tcp', Listen => 1);
	if ($lo > 21000) {
		for (1 .. 100) {
			my $port = 20000 + int(rand($lo - 20000));
			my $s = IO::Socket::INET->new(%try, LocalPort => $port) or next;
			close $s;
			return $port;
		}
	}
	my $s = IO::Socket::INET->new(%try, LocalPort => 0) or die "no free port on 127.0.0.1: $!\n";
	my $port = $s->sockport;
	close $s;
	return $port;
}

1;
