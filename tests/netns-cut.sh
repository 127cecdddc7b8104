#!/bin/sh
# netns-cut.sh -- a cut link: server and client in their own network
# namespaces joined by a veth pair (192.0.2.1/24 <-> 192.0.2.2/24, TEST-NET-1,
# assigned only inside these namespaces). The link is taken down while the
# server pulls 128 MiB from the client (1 MiB chunks, 20 ms apart): the
# client's 3 s deadline must fire within 5 s; the link comes back and a later
# RPC (64 KiB pull) succeeds. Needs root and iproute2; otherwise exit 77.
# Clients use the plain info string: they bind their routable interface.
# Usage: netns-cut.sh [TRANSPORT...]   (default: ofi+tcp ucx+tcp)
set -u
bin=${top_builddir:-.}/tests/test_load
[ -x "$bin" ] || { echo "netns-cut: $bin not built"; exit 77; }
command -v ip >/dev/null 2>&1 || { echo "netns-cut: SKIP: no ip(8) (install iproute2)"; exit 77; }
ns_s=hgxcut_s_$$
ns_c=hgxcut_c_$$
srv_pid=
cleanup() {
    [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
    ip netns del "$ns_s" 2>/dev/null
    ip netns del "$ns_c" 2>/dev/null
}
trap cleanup EXIT INT TERM
# make check keeps the transports on lo; these hosts choose for themselves.
unset FI_TCP_IFACE FI_SOCKETS_IFACE UCX_NET_DEVICES
. "${top_srcdir:-.}/tests/veth-pair.sh"
veth_pair netns-cut "$ns_s" "$ns_c" veth_s veth_c 192.0.2.1 192.0.2.2

fail=0
port=5000
for tr in ${*:-ofi+tcp ucx+tcp}; do
    port=$((port + 1))
    out=$(mktemp)
    ip netns exec "$ns_s" "$bin" --serve "$tr://192.0.2.1:$port" >"$out" 2>&1 &
    srv_pid=$!
    for _ in $(seq 50); do [ -s "$out" ] && break; sleep 0.1; done
    addr=$(head -n1 "$out")
    case $addr in *://*) ;; *) echo "netns-cut: $tr: server did not start: $(cat "$out")"; fail=1; continue;; esac
    ip netns exec "$ns_c" "$bin" --call "$addr" 65536 5000 "$tr" || { echo "netns-cut: $tr: warm-up RPC failed"; fail=1; }
    # Cut the link 1.2 s into a 128 MiB slow pull with a 3 s deadline.
    start=$(date +%s.%N)
    ip netns exec "$ns_c" timeout 30 "$bin" --call "$addr" 134217728 3000 "$tr" &
    cpid=$!
    sleep 1.2   # past lookup and connection set-up: the pull is under way
    ip -n "$ns_c" link set veth_c down
    wait $cpid; rc=$?
    took=$(echo "$(date +%s.%N) - $start" | bc)
    echo "netns-cut: $tr: link cut mid-transfer: client exit $rc after ${took}s (2 = deadline/error, 124 = hung)"
    if [ $rc -ne 2 ] || [ "$(echo "$took > 6.5" | bc)" = 1 ]; then fail=1; fi
    ip -n "$ns_c" link set veth_c up
    sleep 0.5
    ok=0
    for try in 1 2 3 4 5; do
        if ip netns exec "$ns_c" timeout 30 "$bin" --call "$addr" 65536 5000 "$tr"; then ok=1; break; fi
        sleep 1
    done
    echo "netns-cut: $tr: link back: later RPC $( [ $ok = 1 ] && echo "succeeded (try $try)" || echo FAILED)"
    [ $ok = 1 ] || fail=1
    kill "$srv_pid"; wait "$srv_pid" 2>/dev/null; srv_pid=
    rm -f "$out"
done
exit $fail
