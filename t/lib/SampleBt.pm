# SPDX-License-Identifier: GPL-2.0-or-later
package SampleBt;

=head1 NAME

SampleBt - the output of samples/sample-bt.sxx (either backend) and what
an nginx worker's stacks must show (t/44 in the VM, t/89 on eBPF).

=head1 FUNCTIONS

=over 4

=item C<parse(TEXT)>

The stacks of sample-bt's stdout TEXT: an array ref of { frames (symbol
names, innermost first), mods (each frame's module: C<kernel>, a path, or
'' for an address in none), count }, or undef when a block is not a
stack.  A frame line that is not C<" 0xADDR : SYMBOL+0xOFF/0xLEN [MODULE]">
or C<" 0xADDR : 0xADDR [MODULE]"> has the frame C<BAD:LINE>.

=item C<with(S, RE)>, C<total(S)>

The samples of the stacks S with a frame matching RE; all of them.

=item C<check_nginx(NAME, S)>

An nginx worker's stacks under load (samples/sample-bt.sxx with kernel
and user frames): well-formed frame lines, ngx_http_lua_content_handler
in them, 30% or more reaching the event loop and main, kernel frames by
name above the user ones.

=back

=cut

use strict;
use warnings;
use Test::More ();

sub parse {
	my ($bt) = @_;
	my @s;
	for my $block (split /\n\n/, $bt) {
		next if $block =~ /^#/ && $block !~ /\n/;	# (a header line)
		my @l = grep { !/^#/ } split /\n/, $block;
		my ($n) = (pop(@l) // '') =~ /^\t(\d+)$/ or return undef;
		my (@f, @m);
		for (@l) {
			if (/^ 0x[0-9a-f]+ : (\S+?)(?:\+0x[0-9a-f]+\/0x[0-9a-f]+)?(?: \[(\S+)\])?$/) {
				push @f, $1;
				push @m, $2 // '';
			} else {
				push @f, "BAD:$_";
				push @m, '';
			}
		}
		push @s, { frames => \@f, mods => \@m, count => $n };
	}
	return \@s;
}

sub with {
	my ($s, $re) = @_;
	my $n = 0;
	for (@$s) { $n += $_->{count} if grep { /$re/ } @{ $_->{frames} } }
	return $n;
}

sub total { my $n = 0; $n += $_->{count} for @{ $_[0] }; $n }

sub check_nginx {
	my ($name, $s) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $all = total($s);
	Test::More::is(with($s, qr/^BAD:/), 0, "$name: every frame line is \" 0xADDR : SYM+0xOFF/0xLEN [MODULE]\"")
		or Test::More::diag(join("\n", map { "@{ $_->{frames} }" } grep { grep { /^BAD:/ } @{ $_->{frames} } } @$s));
	Test::More::ok(with($s, qr/^ngx_http_lua_content_handler$/) > 0, "$name: ngx_http_lua_content_handler in stacks");
	Test::More::ok(with($s, qr/^(?:ngx_worker_process_cycle|ngx_process_events_and_timers)$/) >= 0.3 * $all,
		"$name: most stacks reach the event loop (ngx_worker_process_cycle)");
	Test::More::ok(with($s, qr/^main$/) >= 0.3 * $all, "$name: ... and main");
	my $k = with($s, qr/^(?:entry_SYSCALL_64\w*|do_syscall_64|__x64_sys_\w+)$/);
	Test::More::ok($k > 0, "$name: kernel frames by name (syscall entry: $k of $all samples)");
	# the kernel frames come first: a syscall entry is above (before) main
	my $order = grep { my @f = @{ $_->{frames} };
			   my ($ki) = grep { $f[$_] =~ /^(?:entry_SYSCALL_64\w*|do_syscall_64)$/ } 0 .. $#f;
			   my ($mi) = grep { $f[$_] eq 'main' } 0 .. $#f;
			   defined $ki && defined $mi && $ki < $mi } @$s;
	Test::More::ok($order > 0, "$name: kernel frames above the user frames (innermost first)");
}

1;
