#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# Legacy stapxx scripts run unchanged (issue 11), in the VM on the debug
# nginx serving a request:
#   @var("r") of a probed function's parameter, which the target's DWARF
#     has no global for, is left to stap and reads the request (GET, /lua),
#     while @var("ngx_pid") of a global still gets its module and CU;
#   a module whose "// module" header names another module loads with a
#     warning (stapxx's own nginx/lua.sxx says 'nginx.config').
# (Return probes and kernel probes: t/36; a parameter that shadows a
# global: golden var-shadow in t/11.)
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Test::More;
use VM;

my $vm = VM->new;
my $out = $vm->out;

# A module with a wrong header, as published stapxx tapsets have.
mkdir "$out/tapset";
mkdir "$out/tapset/legacy";
spit("$out/tapset/legacy/lua.sxx", "// module legacy.config\nfunction legacy_tag() { return \"legacy\" }\n");

my $ko = $vm->build('legacy_var', undef, exec => 'build/nginx/sbin/nginx',
                    args => ['-I', "$out/tapset"], source => <<'SXX');
@use legacy.lua

probe begin { println("ready") }

probe process("$^exec_path").function("ngx_http_lua_content_handler") {
	printf("%s method=%d uri=%s ngx_pid=%d pid=%d\n", legacy_tag(),
	       @var("r")->method,
	       user_string_n(@var("r")->uri->data, @var("r")->uri->len),
	       @var("ngx_pid"), pid())
	exit()
}
SXX
ok($ko, 'the legacy script builds') or BAIL_OUT('module build failed');
my $log = $vm->build_log;
like($log, qr{\Q$out\E/tapset/legacy/lua\.sxx:1: warning: module file declares 'legacy\.config', but was loaded as 'legacy\.lua'},
     'wrong module header: a warning naming the file and line');
{
	my ($st, $dump) = run_cmd({ cwd => $out, merge => 1 }, "$ROOT/stap++", '--exec', "$ROOT/build/nginx/sbin/nginx",
	                          '-I', "$out/tapset", "$out/legacy_var.sxx", '--dump-src');
	is($st, 0, 'stap++ --dump-src: exit 0') or diag($dump);
	like($dump, qr/^\s+\@var\("r"\)->method,$/m, '@var("r") is left to stap unchanged');
	like($dump, qr/\@var\("ngx_pid\@[^"]+", "[^"]+\/nginx"\)/, '@var("ngx_pid") gets its CU and module');
}

$vm->case(nginx => <<"SH", files => [$ko]);
mkdir -p logs
$ROOT/build/nginx/sbin/nginx -p "\$CASE" -c $ROOT/t/fixtures/vm/nginx.conf &
for i in \$(seq 1 100); do [ -s logs/nginx.pid ] && break; sleep 0.1; done
timeout -s INT -k 10 60 staprun "\$VM_JOB"/legacy_var.ko > stap.out 2>&1 &
sp=\$!
for i in \$(seq 1 600); do has 'ready*' stap.out && break; sleep 0.1; done
# "ready" (probe begin) can come before the uprobe is armed in the idle
# worker: once the request came too soon and went by unseen (staprun then
# waited its 60 s).  So a request a second until the probe has fired (it
# exits at its first hit; one worker serves them all)
for i in \$(seq 1 30); do
	@{[ VM::get_sh('http://127.0.0.1:8080/lua', 'body.txt') ]}
	for j in \$(seq 1 10); do has 'legacy *' stap.out && break 2; sleep 0.1; done
done
wait \$sp
st=\$?
cat stap.out body.txt
kill -QUIT \$(cat logs/nginx.pid)
wait
exit \$st
SH

my $r = $vm->run;
is($r->{status}, 0, 'dev/vm-run: the case ran, no kernel errors') or diag($r->{stderr});
my $c = $r->{cases}{nginx};
my $o = $c->{output};
is($c->{status}, 0, 'staprun: exit 0') or diag($o);
my ($worker) = $o =~ /in worker (\d+)/;
ok($worker, 'nginx served the request') or diag($o);
like($o, qr/^legacy method=2 uri=\/lua ngx_pid=(\d+) pid=\1$/m,
     '@var("r"): the GET (NGX_HTTP_GET = 2) of /lua; @var("ngx_pid"): the global')
	or diag($o);
my ($pid) = $o =~ /^legacy .* pid=(\d+)$/m;
ok(defined $pid && defined $worker && $pid == $worker,
   'the probe fired in the worker that answered') or diag($o);

done_testing();
