#!/bin/sh
# loopback-addr.sh -- info strings that name loopback in each accepted form
# advertise a usable address with the real port, and an RPC with a bulk pull
# goes through. Traffic stays on lo.
set -u
name=loopback-addr
bin=${top_builddir:-.}/tests/test_load
[ -x "$bin" ] || { echo "$name: SKIP: $bin not built"; exit 77; }
. "${top_srcdir:-.}/tests/addr-lib.sh"
trap stop_server EXIT INT TERM
have() { grep -q "define HGX_HAVE_$1 1" "${top_builddir:-.}/config.h"; }

fail=0
port=$((20000 + $$ % 20000))
if have OFI; then
    for p in tcp sockets; do
        port=$((port + 1))
        addr_case "" "ofi+$p://lo" "" "ofi+$p://127.0.0.1" "ofi+$p://127.0.0.1:*" || fail=1
        addr_case "" "ofi+$p://lo:$port" "" "ofi+$p://lo" "ofi+$p://127.0.0.1:$port" || fail=1
        port=$((port + 1))
        addr_case "" "ofi+$p://127.0.0.1:$port" "" "ofi+$p://127.0.0.1" \
            "ofi+$p://127.0.0.1:$port" || fail=1
    done
    addr_case "" "ofi+tcp://[::1]" "" "ofi+tcp://[::1]" "ofi+tcp://\[::1\]:*" || fail=1
fi
if have UCX; then
    for p in tcp all; do
        port=$((port + 1))
        addr_case "" "ucx+$p://lo" "" "ucx+$p://127.0.0.1" "ucx+$p://127.0.0.1:*" || fail=1
        addr_case "" "ucx+$p://lo:$port" "" "ucx+$p://lo" "ucx+$p://127.0.0.1:$port" || fail=1
    done
fi
exit $fail
