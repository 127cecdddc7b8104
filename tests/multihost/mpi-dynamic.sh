#!/bin/sh
# make check entry: mpi+dynamic across two simulated hosts (tests/multihost/hosts.sh)
# under Open MPI. ompi-server runs on node1; every job is its own mpirun, the
# services on node1 and the clients on node2, joined through ompi-server:
#  1. mpitests/test_mpi_dynamic: a server job on node1, one client job on node2
#     connecting by the port name the server printed and one by the published
#     service name (NA messages, put and get across the intercommunicator);
#  2. tests/test_load --serve mpi+dynamic on node1, tests/multihost/mh_rpc on node2
#     by the printed address: HG RPCs, bulk pull and push of 1 B .. 64 MiB with
#     the data checked, a deadline and hgx_cancel.
# MPICH 4.0.2 (ch4:ucx) has no MPI_Open_port: SKIP. MPIRUN and MPI_FLAVOR come
# from make check's environment.
case "$MPI_FLAVOR" in
mpich)
    echo "SKIP: MPICH 4.0.2 ch4:ucx has no MPI_Open_port"
    exit 77 ;;
openmpi) ;;
*)
    echo "mpi-dynamic.sh: unknown MPI_FLAVOR '$MPI_FLAVOR'" >&2
    exit 1 ;;
esac
. "$(dirname "$0")/hosts.sh"
command -v ompi-server >/dev/null 2>&1 || mh_skip "ompi-server not found"
[ -x ./mpitests/test_mpi_dynamic ] && [ -x ./tests/test_load ] &&
    [ -x ./tests/multihost/mh_rpc ] || mh_skip "test programs not built"
mh_setup 2
uri=$MH_DIR/ompi-server.uri
fail=0
bad() {
    echo "FAIL: $*"
    fail=1
}

# An Open MPI command on HOST, its TCP traffic (runtime and MPI) kept on the
# simulated network; the agent starts it with a clean environment.
ompi_on() {
    _h=$1 _t=$2
    shift 2
    mh_on "$_h" "cd $PWD && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
OMPI_MCA_oob_tcp_if_include=$MH_NET OMPI_MCA_btl_tcp_if_include=$MH_NET \
OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self HG_LOG_LEVEL=${HG_LOG_LEVEL:-error} \
timeout -k 5 $_t $*"
}
# mrun HOST SECONDS PROGRAM [ARGS...]: a one-process job using node1's ompi-server.
mrun() {
    _h=$1 _t=$2
    shift 2
    ompi_on "$_h" "$_t" "$MPIRUN --ompi-server file:$uri --oversubscribe -np 1 $*"
}
# wait_line FILE PID PATTERN: until FILE has a line matching PATTERN (30 s).
wait_line() {
    _n=0
    until grep -q "$3" "$1" 2>/dev/null; do
        _n=$((_n + 1))
        [ $_n -gt 300 ] && return 1
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.1
    done
}

ompi_on node1 100 "ompi-server --no-daemonize -r $uri" >"$MH_DIR/ns.log" 2>&1 &
ns=$!
wait_line "$uri" $ns . || mh_skip "ompi-server did not start: $(cat "$MH_DIR/ns.log")"
echo "ompi-server on node1: $(cat "$uri")"

echo "=== NA: test_mpi_dynamic server on node1, two client jobs on node2"
mrun node1 90 ./mpitests/test_mpi_dynamic server "$MH_DIR/addr" 2 >"$MH_DIR/srv.log" 2>&1 &
srv=$!
if wait_line "$MH_DIR/addr" $srv .; then
    addr=$(cat "$MH_DIR/addr")
    echo "server printed $addr"
    mrun node2 60 ./mpitests/test_mpi_dynamic client "$addr" 0 || bad "client by port name"
    mrun node2 60 ./mpitests/test_mpi_dynamic client "mpi+dynamic://hgx" 1 ||
        bad "client by the published service name"
else
    bad "test_mpi_dynamic server printed no address"
fi
wait $srv || bad "test_mpi_dynamic server (exit $?)"
cat "$MH_DIR/srv.log"

echo "=== HG: test_load --serve mpi+dynamic on node1, mh_rpc check on node2"
mrun node1 90 ./tests/test_load --serve mpi+dynamic >"$MH_DIR/load.log" 2>&1 &
srv=$!
if wait_line "$MH_DIR/load.log" $srv '^mpi+dynamic://'; then
    addr=$(grep -m1 '^mpi+dynamic://' "$MH_DIR/load.log")
    echo "server printed $addr"
    mrun node2 60 ./tests/multihost/mh_rpc check mpi+dynamic "$addr" 2 || bad "mh_rpc check"
    mrun node2 30 ./tests/multihost/mh_rpc quit mpi+dynamic "$addr" >/dev/null ||
        bad "mh_rpc quit"
else
    bad "test_load printed no address: $(cat "$MH_DIR/load.log")"
fi
wait $srv || bad "test_load server (exit $?): $(cat "$MH_DIR/load.log")"
[ $fail = 0 ] && echo "PASS: mpi+dynamic across 2 hosts (Open MPI, ompi-server on node1)"
exit $fail
