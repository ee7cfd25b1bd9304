# SPDX-License-Identifier: GPL-2.0-or-later
package Pprof;

=head1 NAME

Pprof - write profiles with util/pprof and read them back with Go's own
C<go tool pprof> (Debian golang-go), in t/57 and in the VM tests that
check a real sample's output (t/62 bytes, t/63 microseconds).

=head1 FUNCTIONS

=over

=item C<init(DIR)>

Use DIR (made empty) for profiles and go's home, build cache and temp
dir; go never goes to the network.  Call once before the others.

=item C<run(CMD)>

Runs the shell command CMD: (stdout, stderr, exit status).

=item C<profile(NAME, ARGS)>

C<util/pprof ARGS E<gt> DIR/NAME.pb.gz>, asserting it exits 0 with no
stderr; returns the file.

=item C<gopprof(FLAGS, FILE)>

C<go tool pprof FLAGS FILE>, asserting exit 0; returns its stdout.

=item C<top(TEXT)>

The lines of C<-top>: {name =E<gt> [flat%, cum%]}.

=item C<raw(TEXT)>

C<-raw> output: C<time>, C<duration>, C<period>, C<types> (the sample
types line), C<stacks> ({folded stack, root first =E<gt> [values]}),
C<loc> ([{name, file, line}]).

=item C<folded(FILE)>

util/fold's output of FILE: {stack =E<gt> count}.

=item C<blocks(FILE)>

The stacks of an lj-lua-stacks format FILE: ([count, [frames innermost
first]]...).

=item C<round_trip(WHAT, RAW, FILE)>

Asserts that the stacks and first values of RAW are util/fold's of FILE.

=item C<traces_ok(WHAT, PROFILE, FILE)>

Asserts that C<-traces> of PROFILE lists the stacks of FILE (in
lj-lua-stacks format), innermost frame first; returns its output.

=item C<check_real(NAME, TEXT, types =E<gt> T, frames =E<gt> [F...])>

The checks of a real sample's stdout TEXT (its C<# stap++ type=> header
first; C<WARNING:> and C<ERROR:> lines are left out): util/pprof with no C<--type> gives sample types T; the round
trip; each frame F's cumulative share in C<-top -cum> is util/fold's
within 0.1 points; C<-traces> lists the sample's stacks, innermost frame
first.  Returns the profile's file.

=back

=cut

use strict;
use warnings;
use Exporter 'import';
use Test::More;
use Cwd qw(abs_path);
use File::Path qw(make_path remove_tree);
use TestUtil;

our @EXPORT = qw(run profile gopprof top raw folded blocks round_trip traces_ok);

my $OUT;
my $PPROF = "$ROOT/util/pprof";
my $FOLD = "$ROOT/util/fold";

sub init {
	my ($dir) = @_;
	remove_tree($dir);
	make_path("$dir/home");
	$OUT = abs_path($dir);
	my $home = "$OUT/home";
	@ENV{qw(HOME GOCACHE PPROF_TMPDIR GOPROXY GOTOOLCHAIN GOFLAGS)} =
		($home, "$home/gocache", "$home/tmp", 'off', 'local', '');
	return $OUT;
}

sub run {
	my ($cmd) = @_;
	my $o = `$cmd 2>$OUT/stderr`;
	return ($o, slurp("$OUT/stderr"), $? >> 8);
}

sub profile {
	my ($name, $args) = @_;
	my ($o, $e, $rc) = run("$PPROF $args > $OUT/$name.pb.gz");
	is($rc, 0, "pprof $args") or diag($e);
	is($e, '', "pprof $args: no stderr");
	return "$OUT/$name.pb.gz";
}

sub gopprof {
	my ($flags, $file) = @_;
	my ($o, $e, $rc) = run("go tool pprof $flags $file");
	is($rc, 0, "go tool pprof $flags " . ($file =~ s{.*/}{}r)) or diag($e);
	return $o;
}

sub top {
	my ($text) = @_;
	my %t;
	$t{$3} = [$1, $2] while $text =~ /^\s*\S+\s+([\d.]+)%\s+[\d.]+%\s+\S+\s+([\d.]+)%\s+(.+?)\s*$/mg;
	return \%t;
}

# "ID: 0xADDR M=N NAME FILE:LINE s=N": names and files may hold spaces;
# a frame's file is always part of its name.
sub raw {
	my ($text) = @_;
	my (%r, %loc, @samples);
	($r{time}) = $text =~ /^Time: (.*)$/m;
	($r{duration}) = $text =~ /^Duration: (.*)$/m;
	($r{period}) = $text =~ /^Period: (\d+)$/m;
	($r{types}) = $text =~ /^Samples:\n(.*)$/m;
	my ($s) = $text =~ /^Samples:\n[^\n]*\n(.*?)^Locations\n/ms;
	push @samples, [[split ' ', $1], [split ' ', $2]] while $s =~ /^ *([-\d ]+):((?: \d+)+) ?$/mg;
	while ($text =~ /^ *(\d+): 0x[0-9a-f]+ M=\d+ (.*):(-?\d+) s=\d+$/mg) {
		my ($id, $nf, $line, $at) = ($1, $2, $3, -1);
		while (($at = index($nf, ' ', $at + 1)) >= 0) {
			my ($name, $file) = (substr($nf, 0, $at), substr($nf, $at + 1));
			next unless index($name, $file) >= 0;
			$loc{$id} = { name => $name, file => $file, line => $line };
			last;
		}
	}
	for (@samples) {
		my ($vals, $ids) = @$_;
		my $key = join ';', map { $loc{$_}{name} =~ s/([\\;])/\\$1/gr } reverse @$ids;
		$r{stacks}{$key} = $vals;
	}
	$r{loc} = [values %loc];
	return \%r;
}

sub folded {
	my ($file) = @_;
	my ($o, $e, $rc) = run("$FOLD $file");
	is($rc, 0, "fold $file") or diag($e);
	return { map { /^(.*) (\d+)$/ ? ($1, $2) : () } split /\n/, $o };
}

sub blocks {
	my @b;
	for (split /\n\n+/, slurp($_[0])) {
		my @l = grep { !/^# / } split /\n/;
		my $c = pop @l;
		push @b, [$c =~ s/\s//gr, \@l] if @l;
	}
	return @b;
}

# (on the input without its "# stap++" header lines, which util/fold
# passes over only in lj-lua-stacks' periodic form)
sub round_trip {
	my ($what, $raw, $file) = @_;
	my %got = map { ($_, $raw->{stacks}{$_}[0]) } keys %{ $raw->{stacks} };
	(my $plain = slurp($file)) =~ s/^# stap\+\+.*\n//mg;
	spit("$OUT/plain.txt", $plain);
	is_deeply(\%got, folded("$OUT/plain.txt"), "$what: pprof stacks and counts = util/fold's");
}

sub traces_ok {
	my ($what, $pb, $file) = @_;
	my $tr = gopprof('-traces', $pb);
	my (undef, @chunks) = split /^-+\+-+$/m, $tr;
	my %got = map { (join("\n", map { s/^\s*(?:\S+\s{2,})?//r } grep { /\S/ } split /\n/), 1) }
	          grep { /\S/ } @chunks;
	my %want = map { (join("\n", @{ $_->[1] }), 1) } blocks($file);
	is_deeply(\%got, \%want, "$what: -traces: every stack, innermost frame first") or diag($tr);
	return $tr;
}

sub check_real {
	my ($name, $text, %o) = @_;
	my $file = "$OUT/$name.txt";
	# (stderr's lines, merged into a case's output, are no stacks)
	spit($file, join '', grep { !/^(?:WARNING|ERROR): / } split /^/m, $text);
	my $pb = profile($name, $file);
	my $r = raw(gopprof('-raw', $pb));
	is($r->{types}, $o{types}, "$name: pprof reads the type from the sample's header: $o{types}");
	round_trip($name, $r, $file);
	my $f = folded($file);
	my $total = 0;
	$total += $_ for values %$f;
	my $t = top(gopprof('-top -cum -nodefraction=0', $pb));
	for my $fn (@{ $o{frames} }) {
		my $in = 0;
		for my $k (keys %$f) {
			$in += $f->{$k} if grep { $_ eq $fn } split /(?<!\\);/, $k;
		}
		my $want = $total ? 100 * $in / $total : 0;
		my $got = $t->{$fn} ? $t->{$fn}[1] : -1;
		ok(abs($got - $want) <= 0.1, sprintf('%s: %s cum share %s%% in go tool pprof = folded %.2f%%',
			$name, $fn, $got, $want));
	}
	traces_ok($name, $pb, $file);
	return $pb;
}

1;
