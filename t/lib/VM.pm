package VM;

=head1 NAME

VM - end-to-end tests in a real Debian kernel: build SystemTap modules on the
host with stap++, run them next to their targets in one VM boot, get the
output back.

=head1 SYNOPSIS

    use strict; use warnings;
    use Test::More;
    use lib 't/lib';
    use VM;

    my $vm = VM->new;                      # scratch dir t/out/<test name>/
    my $ko = $vm->build('prof', 't/fixtures/vm/prof.sxx',
                        exec => 'build/luajit-gc64/bin/luajit');
    ok $ko, 'module builds' or diag $vm->build_log;

    $vm->case(gc64 => VM::staprun_sh(
        target => "$VM::ROOT/build/luajit-gc64/bin/luajit $VM::ROOT/t/fixtures/vm/busy.lua",
        module => 'prof.ko'), files => [$ko]);
    $vm->case(other => 'echo hello; uname -r');

    my $r = $vm->run;                      # one boot for every case
    is $r->{status}, 0, 'vm-run succeeded' or diag $r->{stderr};
    like $r->{cases}{gc64}{output}, qr/faults=0/;
    is $r->{cases}{other}{status}, 0;
    done_testing;

=head1 DESCRIPTION

Everything here runs real things: C<./stap++ ... -p4 -r KREL -m NAME> on the
host (with stap++'s SystemTap runtime fixes), then C<util/vm-run> boots
Debian's kernel (see C<util/vm-run --kernel-release>) once and runs the
queued cases one after the other.  Inside the guest the host's files are at
the same paths (read-only), so targets are started by their host paths
(C<$VM::ROOT/build/...>); the job dir C<$VM_JOB> is writable; C</tmp> is a
tmpfs; C<lo> is up.

Each case is a shell script run with C<sh> as root, in its own writable
directory C<$CASE> (= C<$VM_JOB/NAME>, also the current directory), with
C<$VM_JOB> holding every file given with C<< files => >>.  Its stdout and
stderr (merged) and its exit status come back per case.  A case that runs
longer than its timeout is killed (status 124).

=head1 FUNCTIONS AND METHODS

=over 4

=item C<$VM::ROOT>

Absolute path of the repository (the guest sees it at the same path).

=item C<< VM->new(%opts) >>

Options: C<name> (default: the test file's name without C<.t>), scratch dir
C<t/out/NAME/> (emptied).  Reads the guest kernel release once.

=item C<< $vm->krel >>, C<< $vm->out >>

The guest kernel release; the absolute scratch dir.

=item C<< $vm->build(NAME, SCRIPT, %opts) >>

Builds C<NAME.ko> in the scratch dir with
C<./stap++ -p4 -r KREL -m NAME [--exec EXEC] [ARGS...] SCRIPT [-- STAP_ARGS...]>.
SCRIPT is a path (relative to the repository or absolute), or C<undef> with
C<< source => TEXT >> (written to C<NAME.sxx> in the scratch dir).  Options:
C<exec> (the target executable, relative to the repository or absolute),
C<args> (array ref of more stap++ options, before SCRIPT, e.g.
C<['--arg', 'x=1']>), C<stap_args> (array ref of options passed to stap
itself, after C<-->, e.g. C<['-g']> for guru mode).  Returns the absolute path of the module, or C<undef>
when the build failed (the output is in C<< $vm->build_log >>, and is shown
with C<diag>).

=item C<< $vm->build_log >>

stap++'s output (stdout and stderr) of the last C<build>.

=item C<< $vm->case(NAME, SHELL, %opts) >>

Queues a case.  NAME: letters, digits, C<_>, C<->.  SHELL: the script text.
Options: C<files> (array ref of host files copied into C<$VM_JOB>; the same
file given twice is copied once; dies if one is undefined or not a file, so
guard cases with the result of C<build>), C<timeout> (seconds, default 120).

=item C<< $vm->run(%opts) >>

Boots the VM once and runs every queued case in order (then forgets them).
Options: C<timeout> (seconds for the whole VM, default: the cases' timeouts
plus 60), C<cpus>, C<mem>.  Returns a hash ref:

    status   util/vm-run's exit status (0: every case ran and the guest
             kernel logged no oops/BUG/WARNING/SystemTap error)
    stdout   util/vm-run's output (every case's output, with headers)
    stderr   util/vm-run's own messages (timeouts, dmesg errors)
    dmesg    the guest kernel log
    job      the job dir copied back (t/out/NAME/vm)
    cases    { NAME => { status => exit status (undef if it never ended),
                         output => stdout+stderr, dir => its dir on the host } }

=item C<VM::staprun_sh(%opts)>

Returns shell text for the common case "start a target, run a module on it,
stop the target": starts C<target> (a shell command line) in the background
with its output in C<$CASE/target.log>, runs C<ready> (shell, default
C<sleep 0.5>; C<$pid> is the target's pid), then
C<staprun [OPTS] -x $pid MODULE> in the foreground, then kills the target.
Options: C<target>, C<module> (file name in C<$VM_JOB>), C<ready>,
C<staprun_opts> (string), C<timeout> (seconds staprun may run before it is
stopped with SIGINT, which makes the module's C<end> probes run; default 30).
The case's status is staprun's (124 when it had to be stopped).

=item C<VM::capture(DIR, ARGV...)>

Runs ARGV (no shell) in DIR with standard input from /dev/null; returns
(wait status, stdout and stderr merged).

=item C<VM::slurp(FILE)>

The contents of FILE, or C<undef> if it cannot be read.

=item C<VM::sh_quote(STRING)>

Quotes a string for sh.

=back

=cut

use strict;
use warnings;
use Cwd qw(abs_path);
use File::Basename qw(basename dirname);
use File::Path qw(make_path remove_tree);
use Test::More ();

our $ROOT = abs_path(dirname(__FILE__) . '/../..');
my $krel_cache;

sub sh_quote {
    my ($s) = @_;
    $s =~ s/'/'\\''/g;
    return "'$s'";
}

sub new {
    my ($class, %o) = @_;
    my $name = $o{name} // basename($0, '.t');
    die "VM->new: bad name '$name'\n" unless $name =~ /^[\w.-]+$/;
    my $out = "$ROOT/t/out/$name";
    remove_tree($out);
    make_path($out);
    unless (defined $krel_cache) {
        $krel_cache = `$ROOT/util/vm-run --kernel-release`;
        die "VM: util/vm-run --kernel-release failed\n" if $? != 0;
        chomp $krel_cache;
    }
    return bless { name => $name, out => $out, krel => $krel_cache, cases => [],
                   build_log => '' }, $class;
}

sub krel      { $_[0]{krel} }
sub out       { $_[0]{out} }
sub build_log { $_[0]{build_log} }

sub _abs {
    my ($p) = @_;
    return $p =~ m{^/} ? $p : "$ROOT/$p";
}

# Run ARGV (no shell) in DIR; returns (status, merged output).
sub capture {
    my ($dir, @argv) = @_;
    pipe(my $r, my $w) or die "pipe: $!";
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        close $r;
        open STDIN, '<', '/dev/null';
        open STDOUT, '>&', $w;
        open STDERR, '>&', $w;
        chdir $dir or die "chdir $dir: $!";
        exec { $argv[0] } @argv or die "exec $argv[0]: $!";
    }
    close $w;
    local $/;
    my $output = <$r> // '';
    close $r;
    waitpid $pid, 0;
    return ($?, $output);
}

sub build {
    my ($self, $name, $script, %o) = @_;
    die "build: bad module name '$name'\n" unless $name =~ /^\w+$/;
    if (!defined $script) {
        die "build: no script and no source\n" unless defined $o{source};
        $script = "$self->{out}/$name.sxx";
        open my $fh, '>', $script or die "$script: $!";
        print $fh $o{source};
        close $fh;
    }
    my @argv = ("$ROOT/stap++", '-p4', '-r', $self->{krel}, '-m', $name);
    push @argv, '--exec', _abs($o{exec}) if defined $o{exec};
    push @argv, @{ $o{args} || [] };
    push @argv, _abs($script);
    push @argv, '--', @{ $o{stap_args} } if $o{stap_args} && @{ $o{stap_args} };
    unlink "$self->{out}/$name.ko";
    my ($st, $log) = capture($self->{out}, @argv);
    $self->{build_log} = "\$ @argv\n$log";
    my $ko = "$self->{out}/$name.ko";
    if ($st != 0 || !-f $ko) {
        Test::More::diag("module '$name' failed to build (status " . ($st >> 8) . "):\n"
                         . $self->{build_log});
        return undef;
    }
    return $ko;
}

sub case {
    my ($self, $name, $shell, %o) = @_;
    die "case: bad name '$name'\n" unless $name =~ /^[\w-]+$/;
    die "case: duplicate name '$name'\n" if grep { $_->{name} eq $name } @{ $self->{cases} };
    for my $f (@{ $o{files} || [] }) {
        die "case $name: a file is undefined (a failed build?)\n" unless defined $f;
        die "case $name: '$f' is not a file\n" unless -f _abs($f);
    }
    push @{ $self->{cases} }, { name => $name, shell => $shell,
                                files => $o{files} || [], timeout => $o{timeout} // 120 };
    return;
}

sub staprun_sh {
    my (%o) = @_;
    die "staprun_sh: need target and module\n" unless defined $o{target} && defined $o{module};
    my $ready = $o{ready} // 'sleep 0.5';
    my $opts  = $o{staprun_opts} // '';
    my $t     = $o{timeout} // 30;
    my $mod   = sh_quote($o{module});
    return <<"SH";
$o{target} > "\$CASE/target.log" 2>&1 &
pid=\$!
$ready
timeout -s INT -k 10 $t staprun $opts -x \$pid "\$VM_JOB"/$mod
rc=\$?
kill \$pid 2>/dev/null
wait \$pid 2>/dev/null
exit \$rc
SH
}

sub run {
    my ($self, %o) = @_;
    my @cases = @{ $self->{cases} };
    $self->{cases} = [];
    my $vmdir  = "$self->{out}/vm";
    my $script = "$self->{out}/job.sh";
    my (%seen, @files);
    my $total = 0;
    open my $fh, '>', $script or die "$script: $!";
    print $fh "# generated by t/lib/VM.pm for $self->{name}\n";
    for my $c (@cases) {
        for my $f (@{ $c->{files} }) {
            my $a = _abs($f);
            next if $seen{$a}++;
            push @files, $a;
        }
        my $n = $c->{name};
        $total += $c->{timeout};
        open my $cf, '>', "$self->{out}/case-$n.sh" or die "case-$n.sh: $!";
        print $cf $c->{shell};
        close $cf;
        push @files, "$self->{out}/case-$n.sh";
        print $fh <<"SH";
mkdir -p "\$VM_JOB/$n"
echo "== case $n"
(cd "\$VM_JOB/$n" && CASE="\$VM_JOB/$n" exec timeout -k 5 $c->{timeout} sh "\$VM_JOB/case-$n.sh") > "\$VM_JOB/$n/output" 2>&1
echo \$? > "\$VM_JOB/$n/status"
cat "\$VM_JOB/$n/output"
echo "== case $n: status \$(cat "\$VM_JOB/$n/status")"
SH
    }
    print $fh "exit 0\n";
    close $fh;

    remove_tree($vmdir);
    my @argv = ("$ROOT/util/vm-run", '--timeout', $o{timeout} // $total + 60, '--out', $vmdir);
    push @argv, '--cpus', $o{cpus} if $o{cpus};
    push @argv, '--mem', $o{mem} if $o{mem};
    push @argv, $script, @files;

    my ($out, $err) = ("$self->{out}/vm.stdout", "$self->{out}/vm.stderr");
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', $out;
        open STDERR, '>', $err;
        exec { $argv[0] } @argv or die "exec $argv[0]: $!";
    }
    waitpid $pid, 0;
    my %r = (status => $? >> 8, stdout => slurp($out), stderr => slurp($err),
             dmesg => slurp("$vmdir/.vm/dmesg"), job => $vmdir, cases => {});
    for my $c (@cases) {
        my $d = "$vmdir/$c->{name}";
        my $st = slurp("$d/status");
        chomp $st if defined $st;
        $r{cases}{ $c->{name} } = {
            status => (defined $st && $st =~ /^\d+$/) ? $st + 0 : undef,
            output => slurp("$d/output") // '',
            dir    => $d,
        };
    }
    Test::More::note("util/vm-run: " . ($r{stderr} =~ s/\s+$//r));
    return \%r;
}

sub slurp {
    my ($f) = @_;
    open my $fh, '<', $f or return undef;
    local $/;
    my $s = <$fh>;
    close $fh;
    return $s;
}

1;
