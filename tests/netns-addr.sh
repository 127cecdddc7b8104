#!/bin/sh
# netns-addr.sh -- address selection across two hosts: two network namespaces
# joined by a veth pair (198.51.100.1/24 <-> 198.51.100.2/24, TEST-NET-2,
# assigned only inside them). A server started with the plain info string,
# with its interface name and with IP:PORT advertises an address the other
# host reaches; a client there with the plain string makes an RPC whose
# handler pulls 1 MiB. The pair also has IPv6 addresses (2001:db8::1/64 <->
# 2001:db8::2/64): a server on [2001:db8::1] (a port given or any) and a
# client that names [2001:db8::2] make the same RPC (ofi+sockets is run over
# IPv4 only). Also: a plain client reaches a server pinned to loopback on its
# own host, and ucx+shm refuses a peer on the other host.
# Needs root and iproute2; otherwise exit 77.
# Usage: netns-addr.sh [TRANSPORT...]   (default: ofi+tcp ofi+sockets ucx+tcp ucx+all)
set -u
name=netns-addr
bin=${top_builddir:-.}/tests/test_load
[ -x "$bin" ] || { echo "$name: SKIP: $bin not built"; exit 77; }
command -v ip >/dev/null 2>&1 || { echo "$name: SKIP: no ip(8) (install iproute2)"; exit 77; }
. "${top_srcdir:-.}/tests/addr-lib.sh"
. "${top_srcdir:-.}/tests/veth-pair.sh"
# make check keeps the transports on lo; these hosts choose for themselves.
unset FI_TCP_IFACE FI_SOCKETS_IFACE UCX_NET_DEVICES
ns_a=hgxaddr_a_$$
ns_b=hgxaddr_b_$$
cleanup() {
    stop_server
    ip netns del "$ns_a" 2>/dev/null
    ip netns del "$ns_b" 2>/dev/null
}
trap cleanup EXIT INT TERM
veth_pair "$name" "$ns_a" "$ns_b" veth_a veth_b 198.51.100.1 198.51.100.2
in_a="ip netns exec $ns_a"
in_b="ip netns exec $ns_b"

fail=0
# The pair is dual-stack: IPv6 classes must keep to IPv6 where IPv4 is
# there too (UCX's tcp transport prefers IPv4 unless told).
if ! ip -n "$ns_a" addr add 2001:db8::1/64 dev veth_a nodad ||
    ! ip -n "$ns_b" addr add 2001:db8::2/64 dev veth_b nodad; then
    echo "$name: cannot add the IPv6 addresses to the veth pair"
    fail=1
fi
port=4567
for tr in ${*:-ofi+tcp ofi+sockets ucx+tcp ucx+all}; do
    port=$((port + 1))
    want="$tr://198.51.100.1:*"
    addr_case "$in_a" "$tr" "$in_b" "$tr" "$want" || fail=1
    addr_case "$in_a" "$tr://veth_a" "$in_b" "$tr" "$want" || fail=1
    addr_case "$in_a" "$tr://198.51.100.1:$port" "$in_b" "$tr" "$tr://198.51.100.1:$port" ||
        fail=1
    # A plain client on the server's own host, the server pinned to loopback.
    addr_case "$in_a" "$tr://127.0.0.1" "$in_a" "$tr" "$tr://127.0.0.1:*" || fail=1
    # IPv6 (2001:db8::/32, documentation range): a server on an IPv6 address,
    # with its port and with any, and a client that names its own.
    case $tr in ofi+sockets) continue ;; esac
    port=$((port + 1))
    v6="$tr://\[2001:db8::1\]"
    addr_case "$in_a" "$tr://[2001:db8::1]:$port" "$in_b" "$tr://[2001:db8::2]" \
        "$v6:$port" || fail=1
    addr_case "$in_a" "$tr://[2001:db8::1]" "$in_b" "$tr://[2001:db8::2]" "$v6:*" || fail=1
done

# ucx+shm: a peer on another host is refused at lookup, at once.
if grep -q "define HGX_HAVE_UCX 1" "${top_builddir:-.}/config.h"; then
    out=$(HG_LOG_LEVEL=error $in_b timeout 20 "$bin" --call "ucx+shm://198.51.100.1:$port" \
        4096 5000 ucx+shm 2>&1)
    rc=$?
    case "$rc:$out" in
    3:*"not on this host"*) echo "$name: ucx+shm to another host: refused: $(echo "$out" | head -n1)" ;;
    *) echo "$name: ucx+shm to another host: exit $rc (want 3 and a clear error): $out"; fail=1 ;;
    esac
fi
exit $fail
