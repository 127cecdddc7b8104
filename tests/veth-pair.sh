# veth-pair.sh -- sourced by netns-addr.sh and netns-cut.sh: two network
# namespaces joined by a veth pair, addresses from a documentation range that
# exist only inside them.
#
# veth_pair NAME NS_A NS_B IF_A IF_B IP_A IP_B: make both namespaces (the
# caller's cleanup deletes them), put IF_A/IP_A (/24) in NS_A and IF_B/IP_B in
# NS_B, bring lo and the pair up. Exits 77 (SKIP, with the reason) when this
# machine does not allow it (not root, no netns support) or HGX_NO_NETNS_TESTS
# is set (make distcheck in CI: its full tree runs these tests).
veth_pair() {
    if [ -n "${HGX_NO_NETNS_TESTS:-}" ]; then
        echo "$1: SKIP: HGX_NO_NETNS_TESTS is set (the namespace tests run in another tree)"
        exit 77
    fi
    if ! _err=$(ip netns add "$2" 2>&1); then
        echo "$1: SKIP: cannot create a network namespace: $_err"
        exit 77
    fi
    ip netns add "$3" &&
        ip link add "$4" netns "$2" type veth peer name "$5" netns "$3" &&
        ip -n "$2" addr add "$6/24" dev "$4" &&
        ip -n "$3" addr add "$7/24" dev "$5" &&
        ip -n "$2" link set lo up && ip -n "$3" link set lo up &&
        ip -n "$2" link set "$4" up && ip -n "$3" link set "$5" up ||
        {
            echo "$1: SKIP: cannot set up the veth pair"
            exit 77
        }
}
