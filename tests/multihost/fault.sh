#!/bin/sh
# make check entry: a host taken away mid-bulk. A server on node1; node2 runs
# 1 MiB RPCs back to back for 8 s meanwhile; node3 starts a slow 128 MiB pull (1 MiB chunks
# 20 ms apart, 5 s deadline) and, once the server is pulling, loses its cable (link down on the
# bridge) or has all its processes killed. Then: node3's client ends with an
# error within its deadline (link case), node2's RPCs all succeed, the server
# counts the failed pull (it gave up on its own 3 s chunk deadline), and it still
# quits cleanly. Every wait is bounded. Transports: arguments, default
# ofi+tcp ucx+tcp; those not built are left out.
. "$(dirname "$0")/hosts.sh"
[ -x ./tests/test_load ] && [ -x ./tests/multihost/mh_rpc ] ||
    mh_skip "tests/test_load or tests/multihost/mh_rpc not built"
transports=$(mh_built ${*:-ofi+tcp ucx+tcp})
[ -n "$transports" ] || mh_skip "none of the transports is built here"
mh_setup 3
# node3 sends at 80 Mbit/s: each 1 MiB chunk the server pulls from it takes
# about 0.1 s, so the cable is pulled while a chunk's data is on its way.
# Without tc's tbf the test still runs; the cut may then fall between chunks.
mh_rate node3 80mbit ||
    echo "note: tc could not shape node3's traffic; the cut may fall between chunks"
fail=0
port=4800
bad() {
    echo "FAIL: $*"
    fail=1
}
for tr in $transports; do
    for how in link kill; do
        port=$((port + 1))
        echo "=== $tr: node3 taken away mid-bulk ($how)"
        mh_serve "$tr" node1 $port "$MH_DIR/server.log" ||
            { bad "$tr: the server did not start: $(cat "$MH_DIR/server.log")"; continue; }
        start=$(date +%s.%N)
        mh_on node3 "cd $PWD && HG_LOG_LEVEL=error timeout -k 5 30 ./tests/test_load --call \
$MH_SERVER_ADDR 134217728 5000 $(mh_client_info "$tr" node3)" >"$MH_DIR/c.log" 2>&1 &
        c=$!
        # node3's pull is under way once the server has seen an RPC.
        n=0
        until mh_client node2 30 "$tr" stats 2>&1 | grep -q "^server: [1-9]"; do
            n=$((n + 1))
            [ $n -gt 20 ] && break
            sleep 0.2
        done
        mh_client node2 60 "$tr" loop 2 8 >"$MH_DIR/b.log" 2>&1 &
        b=$!
        sleep 0.3
        if [ $how = link ]; then mh_link node3 down; else mh_crash node3; fi
        wait $c
        rc=$?
        took=$(echo "$(date +%s.%N) - $start" | bc)
        echo "node3 client: exit $rc after ${took}s: $(cat "$MH_DIR/c.log")"
        # The call must end by its 5 s deadline (the client reports when it did);
        # the process then finalizes, which over UCX waits up to 2 s for the
        # close of the endpoint to the unreachable server.
        waited=$(sed -n 's/.*HG_[A-Z_]* after \([0-9]*\) ms.*/\1/p' "$MH_DIR/c.log" | head -n1)
        if [ $how = link ] && { [ $rc != 2 ] || [ -z "$waited" ] || [ "$waited" -gt 5500 ] ||
            [ "$(echo "$took > 10" | bc)" = 1 ]; }; then
            bad "$tr: node3's client did not fail within its deadline"
        fi
        wait $b || bad "$tr: node2's RPCs did not all succeed while node3 went away"
        cat "$MH_DIR/b.log"
        # The server gives up on node3's chunk by its deadline: asked for up to 20 s.
        # Over ofi+tcp a chunk cut after its 4 KiB head arrived reads into the
        # server's memory, and its cancel waits for libfabric to report the broken
        # connection, which hgx bounds with a 10 s keepalive timeout on the
        # connections to node3 (docs/na-cancel.md).
        limit=20
        [ "$tr" = ofi+tcp ] && [ $how = link ] && limit=35
        n=0
        until mh_client node2 30 "$tr" stats >"$MH_DIR/s.log" 2>&1 &&
            grep -Eq "pulls ok, [1-9][0-9]* failed" "$MH_DIR/s.log"; do
            n=$((n + 1))
            [ $n -gt $limit ] && break
            sleep 1
        done
        took=$(echo "$(date +%s.%N) - $start" | bc)
        grep "^server:" "$MH_DIR/s.log"
        echo "server counted node3's pull as failed ${took}s after node3's call began"
        grep -Eq "pulls ok, [1-9][0-9]* failed" "$MH_DIR/s.log" ||
            bad "$tr: the server did not count node3's pull as failed"
        mh_client node2 30 "$tr" quit >/dev/null
        wait "$MH_SERVER_PID" || bad "$tr: server exit $?: $(cat "$MH_DIR/server.log")"
        mh_link node3 up || bad "node3 did not come back"
        [ $fail = 0 ] && echo "PASS: $tr, node3 taken away ($how)"
    done
done
exit $fail
