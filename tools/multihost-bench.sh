#!/bin/sh
# multihost-bench.sh -- hgx-perf between two simulated hosts (the multi-host
# harness: network namespaces node1 and node2 on one bridge, 203.0.113.0/24),
# hgx and the raw transport over the same veth link in the same run.
#
#   tools/multihost-bench.sh [TRANSPORT...]      (default: ofi+tcp ucx+tcp)
#
# Run as root from a build directory (it needs ./hgx-perf). The client runs on
# node2 and starts its server on node1 through the harness's ssh replacement
# (hgx-perf --server-cmd); both use plain info strings, so eth0. For each
# transport: --mode lat --sizes 0-4K, then --mode bw --sizes 1M-16M.
# HGX_BENCH_REPEAT (default 5) sets --repeat.
top=$(cd "$(dirname "$0")/.." && pwd)
MH_AGENT=$top/tests/multihost/netns-agent.sh
. "$top/tests/multihost/hosts.sh"
[ -x ./hgx-perf ] || mh_skip "run from a build directory with ./hgx-perf"
mh_setup 2
rc=0
for tr in ${*:-ofi+tcp ucx+tcp}; do
    for m in "lat --sizes 0-4K" "bw --sizes 1M-16M"; do
        echo "=== $tr, --mode $m: client on node2, server on node1"
        rx=$(mh_on node1 cat /sys/class/net/eth0/statistics/rx_bytes)
        mh_on node2 "cd $PWD && timeout -k 5 600 ./hgx-perf --transport $tr --mode $m \
--repeat ${HGX_BENCH_REPEAT:-5} --quiet --server-cmd '$MH_AGENT node1'" || rc=1
        echo "# node1 eth0 received $(($(mh_on node1 cat /sys/class/net/eth0/statistics/rx_bytes) - rx)) bytes"
    done
done
exit $rc
