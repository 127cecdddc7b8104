#!/bin/sh
# quickstart.sh -- the README's quick start, run as a user would: start
# examples/quickstart/server on loopback, run examples/quickstart/client
# against the address it printed, check the client's four steps (a call, a
# deadline, a cancel, a call again) and that the server stops cleanly on
# SIGTERM. Over ofi+tcp, and ucx+tcp when the build has UCX.
set -u
name=quickstart
dir=${top_builddir:-.}/examples/quickstart
if [ ! -x "$dir/server" ] || [ ! -x "$dir/client" ]; then
    echo "$name: SKIP: $dir not built"
    exit 77
fi
have() { grep -q "define HGX_HAVE_$1 1" "${top_builddir:-.}/config.h"; }
srv_out=$(mktemp "${TMPDIR:-/tmp}/qs-srv.XXXXXX") || exit 1
cli_out=$(mktemp "${TMPDIR:-/tmp}/qs-cli.XXXXXX") || exit 1
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -f "$srv_out" "$cli_out"' EXIT INT TERM
fail=0
bad() {
    echo "FAIL $name: $1"
    for f in "$srv_out" "$cli_out"; do sed 's/^/    /' "$f"; done
    fail=1
}

# The client's line for STEP must match the extended regex RE.
expect_step() {
    grep -Eq "^$1\. $2" "$cli_out" || bad "$proto: step $1 is not \"$2\""
}

protos=
have OFI && protos="$protos ofi+tcp"
have UCX && protos="$protos ucx+tcp"
[ -n "$protos" ] || { echo "$name: SKIP: neither ofi+tcp nor ucx+tcp built"; exit 77; }
for proto in $protos; do
    : >"$srv_out"
    "$dir/server" "$proto://127.0.0.1" >"$srv_out" 2>&1 &
    srv=$!
    addr=
    for _ in $(seq 100); do
        addr=$(sed -n 's/^quickstart server listening at //p' "$srv_out")
        [ -n "$addr" ] && break
        kill -0 "$srv" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$addr" ]; then
        bad "$proto: the server printed no address"
        kill "$srv" 2>/dev/null
        wait "$srv"
        srv=
        continue
    fi
    "$dir/client" "$addr" Alice >"$cli_out" 2>&1
    rc=$?
    [ $rc -eq 0 ] || bad "$proto: the client exits $rc"
    expect_step 1 'call: the server says "Hello, Alice!"$'
    expect_step 2 'deadline: ended after [0-9]+ ms with HG_TIMEOUT, cancelled yes$'
    expect_step 3 'cancel: ended after [0-9]+ ms with HG_CANCELED, cancelled yes$'
    expect_step 4 'call: the server says "Hello, Alice!"$'
    # The deadline is 300 ms: the request must not end before it.
    took=$(sed -n 's/^2\. deadline: ended after \([0-9]*\) ms.*/\1/p' "$cli_out")
    [ "${took:-0}" -ge 300 ] || bad "$proto: the deadline fired after ${took:-?} ms, before 300"
    kill -TERM "$srv"
    wait "$srv"
    rc=$?
    srv=
    if [ $rc -ne 0 ] || ! grep -q '^quickstart server: stopped$' "$srv_out"; then
        bad "$proto: the server did not stop cleanly on SIGTERM (exit $rc)"
    fi
    [ $fail -eq 0 ] && echo "PASS $name: $proto: $(tr '\n' ';' <"$cli_out")"
done
exit $fail
