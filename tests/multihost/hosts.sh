# hosts.sh -- simulated hosts for the multi-host tests (sourced, POSIX sh).
#
# mh_setup N makes hosts node1..nodeN: each a network namespace with its own
# hostname (a UTS namespace held by a sleeping process), lo up, and eth0 at
# 203.0.113.I/24 (TEST-NET-3) plugged into one bridge that lives in a
# namespace of its own, so the root namespace gains no address and no route.
# Names resolve through /etc/netns/NS/hosts, which `ip netns exec` mounts
# over /etc/hosts. Everything is removed on EXIT/INT/TERM. Without root or
# iproute2 the calling test says SKIP and exits 77.
# Helpers keep their own variables in _names so that a test's are safe.
#
#   mh_on HOST CMD...     run CMD on HOST (its netns and hostname)
#   mh_ip HOST            its address
#   mh_link HOST up|down  plug or unplug HOST's cable (the bridge-side veth)
#   mh_rate HOST RATE     shape what HOST sends (tc tbf)
#   MH_AGENT              the ssh replacement (netns-agent.sh) for mpirun/mpiexec
#   MH_HOSTS              "node1 node2 ..."; MH_NET 203.0.113.0/24; MH_IFACE eth0

MH_NET=203.0.113.0/24
MH_IFACE=eth0
MH_ID=hgxmh$$
MH_AGENT=${MH_AGENT:-$(cd "$(dirname "$0")" && pwd)/netns-agent.sh}
MH_HOSTS=
MH_DIR=
MH_HOLDERS=

mh_skip() {
    echo "SKIP: $*"
    exit 77
}

mh_ns() { echo "${MH_ID}_$1"; }

# mh_built TRANSPORT...: print those whose plugin this build tree has (its
# config.h); say on stderr which are left out.
mh_built() {
    for _t in "$@"; do
        case $_t in
        ofi+*) _p=OFI ;;
        ucx+*) _p=UCX ;;
        mpi+*) _p=MPI ;;
        *) _p=none ;;
        esac
        if grep -q "define HGX_HAVE_$_p 1" "${top_builddir:-.}/config.h" 2>/dev/null; then
            echo "$_t"
        else
            echo "$_t: not built here, left out" >&2
        fi
    done
}

mh_cleanup() {
    # What a dropped ssh session would end: every process left on a host.
    for _h in $MH_HOSTS; do
        _pids=$(ip netns pids "$(mh_ns "$_h")" 2>/dev/null)
        [ -n "$_pids" ] && kill -9 $_pids 2>/dev/null
    done
    for _h in $MH_HOSTS; do
        ip netns del "$(mh_ns "$_h")" 2>/dev/null
        rm -rf "/etc/netns/$(mh_ns "$_h")"
    done
    ip netns del "$(mh_ns br)" 2>/dev/null
    for p in $MH_HOLDERS; do kill "$p" 2>/dev/null; done
    rmdir /etc/netns 2>/dev/null
    [ -n "$MH_DIR" ] && rm -rf "$MH_DIR"
    MH_HOSTS= MH_HOLDERS= MH_DIR=
}

mh_fail_setup() {
    mh_cleanup
    mh_skip "$*"
}

mh_setup() {
    [ -z "${HGX_NO_NETNS_TESTS:-}" ] ||
        mh_skip "HGX_NO_NETNS_TESTS is set (the namespace tests run in another tree)"
    [ "$(id -u)" = 0 ] || mh_skip "simulated hosts need root (network and UTS namespaces)"
    for _t in ip unshare nsenter; do
        command -v $_t >/dev/null 2>&1 || mh_skip "no $_t (install iproute2 / util-linux)"
    done
    trap 'mh_cleanup' EXIT
    trap 'mh_cleanup; exit 130' INT TERM
    MH_DIR=$(mktemp -d "${TMPDIR:-/tmp}/hgx-mh.XXXXXX") || mh_skip "no temporary directory"
    export HGX_MH_DIR=$MH_DIR
    _br=$(mh_ns br)
    _err=$(ip netns add "$_br" 2>&1) || mh_fail_setup "cannot create a network namespace: $_err"
    ip -n "$_br" link add br0 type bridge && ip -n "$_br" link set br0 up ||
        mh_fail_setup "cannot create a bridge"
    printf '127.0.0.1 localhost\n' >"$MH_DIR/hosts"
    _i=1
    while [ "$_i" -le "$1" ]; do
        _h=node$_i _ns=$(mh_ns node$_i)
        MH_HOSTS="$MH_HOSTS $_h"
        ip netns add "$_ns" &&
            ip -n "$_br" link add "vh$_i" type veth peer name "$MH_IFACE" netns "$_ns" &&
            ip -n "$_br" link set "vh$_i" master br0 up &&
            ip -n "$_ns" addr add "203.0.113.$_i/24" dev "$MH_IFACE" &&
            ip -n "$_ns" link set lo up && ip -n "$_ns" link set "$MH_IFACE" up ||
            mh_fail_setup "cannot set up host $_h"
        # The hostname lives in a UTS namespace held open by a sleeping process,
        # started detached so that a test's plain `wait` does not wait for it.
        (unshare --uts sh -c "hostname $_h && echo \$\$ >'$MH_DIR/$_h.pid' && exec sleep 100000" \
            </dev/null >/dev/null 2>&1 &)
        _n=0
        until [ -s "$MH_DIR/$_h.pid" ]; do
            _n=$((_n + 1))
            [ $_n -gt 50 ] && mh_fail_setup "host $_h has no hostname of its own"
            sleep 0.1
        done
        _pid=$(cat "$MH_DIR/$_h.pid")
        MH_HOLDERS="$MH_HOLDERS $_pid"
        echo "$_ns $_pid $_i" >"$MH_DIR/$_h"
        printf '203.0.113.%s %s\n' "$_i" "$_h" >>"$MH_DIR/hosts"
        _i=$((_i + 1))
    done
    for _h in $MH_HOSTS; do
        mkdir -p "/etc/netns/$(mh_ns "$_h")" &&
            cp "$MH_DIR/hosts" "/etc/netns/$(mh_ns "$_h")/hosts" ||
            mh_fail_setup "cannot write /etc/netns/$(mh_ns "$_h")/hosts"
    done
    for _h in $MH_HOSTS; do
        [ "$(mh_on "$_h" hostname 2>/dev/null)" = "$_h" ] ||
            mh_fail_setup "host $_h does not answer with its own hostname"
    done
}

mh_on() {
    _h=$1
    shift
    "$MH_AGENT" "$_h" "$@"
}

mh_ip() { echo "203.0.113.$(cut -d' ' -f3 "$MH_DIR/$1")"; }

mh_link() {
    _port=vh$(cut -d' ' -f3 "$MH_DIR/$1")
    ip -n "$(mh_ns br)" link set "$_port" "$2" || return 1
    [ "$2" = up ] || return 0
    # Back in service: the bridge port forwarding, and no host remembering the
    # addresses it could not resolve while the cable was out.
    _n=0
    until bridge -n "$(mh_ns br)" link show dev "$_port" | grep -q "state forwarding"; do
        _n=$((_n + 1))
        [ $_n -gt 50 ] && return 1
        sleep 0.1
    done
    for _h in $MH_HOSTS; do ip -n "$(mh_ns "$_h")" neigh flush dev "$MH_IFACE"; done
}

# mh_rate HOST RATE: HOST sends at most RATE (tc's units, e.g. 80mbit) on its
# cable, so that a transfer from it lasts long enough to be cut in the middle.
mh_rate() {
    ip netns exec "$(mh_ns "$1")" tc qdisc replace dev "$MH_IFACE" root tbf rate "$2" \
        burst 64kb latency 1s
}

# mh_mpirun SECONDS NP HOSTS PROGRAM [ARGS...]: an MPI job started on node1 by the
# build tree's launcher (MPIRUN, MPI_FLAVOR from make check), its other ranks
# reached through the agent, MPI's traffic kept on the simulated network.
mh_mpirun() {
    _t=$1 _np=$2 _hl=$3
    shift 3
    case "$MPI_FLAVOR" in
    openmpi)
        mh_on node1 "cd $PWD && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
HG_LOG_LEVEL=${HG_LOG_LEVEL:-error} timeout -k 5 $_t $MPIRUN --oversubscribe -np $_np --host $_hl \
--mca plm_rsh_agent $MH_AGENT --mca pml ob1 --mca btl tcp,self \
--mca btl_tcp_if_include $MH_NET --mca oob_tcp_if_include $MH_NET -x HG_LOG_LEVEL $*" ;;
    mpich)
        # ch4:ucx: UCX must be told to use TCP over the hosts' interface.
        mh_on node1 "cd $PWD && HG_LOG_LEVEL=${HG_LOG_LEVEL:-error} timeout -k 5 $_t $MPIRUN \
-launcher ssh -launcher-exec $MH_AGENT -hosts $_hl -n $_np \
-genv UCX_TLS ${MH_UCX_TLS:-tcp,self} -genv UCX_NET_DEVICES $MH_IFACE $*" ;;
    *)
        echo "mh_mpirun: unknown MPI_FLAVOR '$MPI_FLAVOR'" >&2
        return 1 ;;
    esac
}

# Info strings for a server on HOST (on PORT) and a client on HOST: the plain
# protocol, as a user writes it; hgx picks the host's routable interface
# (eth0) and the server advertises its address with the port it got.
# MH_SERVER_FORM=port, iface or ip gives ":PORT", "eth0:PORT" or "IP:PORT".
mh_server_info() {
    case ${MH_SERVER_FORM:-plain} in
    iface) echo "$1://eth0:$3" ;;
    ip) echo "$1://$(mh_ip "$2"):$3" ;;
    port) echo "$1://:$3" ;;
    *) echo "$1" ;;
    esac
}
mh_client_info() { echo "$1"; }

# mh_serve TRANSPORT HOST PORT OUTFILE: start the fault/load server on HOST in the
# background (MH_SERVER_PID); MH_SERVER_ADDR is the address it printed.
mh_serve() {
    rm -f "$4"
    mh_on "$2" "cd $PWD && HG_LOG_LEVEL=${HG_LOG_LEVEL:-error} timeout -k 5 150 \
./tests/test_load --serve $(mh_server_info "$1" "$2" "$3")" >"$4" 2>&1 &
    MH_SERVER_PID=$!
    MH_SERVER_ADDR=
    _n=0
    until [ -s "$4" ]; do
        _n=$((_n + 1))
        [ $_n -gt 100 ] && return 1
        sleep 0.1
    done
    MH_SERVER_ADDR=$(head -n1 "$4")
    case $MH_SERVER_ADDR in *://*) return 0 ;; esac
    return 1
}

# mh_client HOST SECONDS TRANSPORT MODE [ARGS...]: tests/multihost/mh_rpc on HOST.
mh_client() {
    _h=$1 _t=$2 _tr=$3
    shift 3
    mh_on "$_h" "cd $PWD && HG_LOG_LEVEL=${HG_LOG_LEVEL:-error} timeout -k 5 $_t \
./tests/multihost/mh_rpc $1 $(mh_client_info "$_tr" "$_h") $MH_SERVER_ADDR $2 $3"
}

# mh_crash HOST: kill -9 every process on HOST (its hostname holder stays).
mh_crash() {
    _pids=$(ip netns pids "$(mh_ns "$1")" 2>/dev/null)
    [ -n "$_pids" ] && kill -9 $_pids 2>/dev/null
    return 0
}
