#!/bin/sh
# make check entry: hgx across simulated hosts on ofi+tcp, ofi+sockets, ucx+tcp and
# ucx+all (or the transports given as arguments; those not built are left out): a
# server on node1, then a client on node2 and one on node3, each looking the server
# up by the string it printed:
# RPCs without bulk, pulls and pushes of 1 B .. 64 MiB with the data checked,
# a deadline and hgx_cancel (tests/multihost/mh_rpc.c).
. "$(dirname "$0")/hosts.sh"
[ -x ./tests/test_load ] && [ -x ./tests/multihost/mh_rpc ] ||
    mh_skip "tests/test_load or tests/multihost/mh_rpc not built"
transports=$(mh_built ${*:-ofi+tcp ofi+sockets ucx+tcp ucx+all})
[ -n "$transports" ] || mh_skip "none of the transports is built here"
mh_setup 3
fail=0
port=4700
for tr in $transports; do
    port=$((port + 1))
    echo "=== $tr: server on node1, clients on node2 and node3"
    if ! mh_serve "$tr" node1 $port "$MH_DIR/server.log"; then
        echo "FAIL: $tr: the server did not start: $(cat "$MH_DIR/server.log")"
        fail=1
        continue
    fi
    echo "server printed $MH_SERVER_ADDR"
    for h in node2 node3; do
        echo "--- client on $h"
        mh_client $h 120 "$tr" check "${h#node}" || { echo "FAIL: $tr: client on $h"; fail=1; }
    done
    mh_client node2 30 "$tr" quit >/dev/null
    if wait "$MH_SERVER_PID"; then
        echo "PASS: $tr across hosts"
    else
        echo "FAIL: $tr: server exit $?: $(cat "$MH_DIR/server.log")"
        fail=1
    fi
done
exit $fail
