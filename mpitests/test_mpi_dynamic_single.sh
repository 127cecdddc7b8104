#!/bin/sh
# make check entry: mpi+dynamic below MPI_THREAD_MULTIPLE, as Mercury's test
# harness runs its clients (plain MPI_Init; Open MPI gives MPI_THREAD_SINGLE).
#  Open MPI: ompi-server, a server job (MPI_THREAD_MULTIPLE), then a client
#    job at plain MPI_Init that connects inline (HGX_MPI_CONNECT_TIMEOUT_MS=1
#    would fail a connect run in a helper thread), exchanges messages, puts,
#    gets and finalizes; then a listener at plain MPI_Init must be refused
#    with the log line naming the thread level.
#  MPICH: skipped (no MPI_Open_port; test_mpi_dynamic.sh checks that refusal).
# MPIRUN and MPI_FLAVOR come from make check's environment.
prog=${TEST_MPI_DYNAMIC:-./mpitests/test_mpi_dynamic}
case "$MPI_FLAVOR" in
mpich)
    echo "SKIP: MPICH (ch4:ucx) has no MPI_Open_port, so no mpi+dynamic class at any thread level"
    exit 77 ;;
openmpi) ;;
*) echo "test_mpi_dynamic_single.sh: unknown MPI_FLAVOR '$MPI_FLAVOR'" >&2; exit 1 ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
command -v ompi-server >/dev/null 2>&1 || { echo "ompi-server not found: SKIP"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hgx-dyn1.XXXXXX") || exit 1
srv_pid= ns_pid=
cleanup() {
    [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
    [ -n "$ns_pid" ] && kill "$ns_pid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
fail() { echo "test_mpi_dynamic_single.sh: FAIL: $*" >&2; for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done >&2; exit 1; }
# wait_file FILE WHAT: until FILE is non-empty (30 s)
wait_file() {
    i=0
    while [ ! -s "$1" ]; do
        i=$((i + 1)); [ $i -gt 300 ] && fail "$2"
        sleep 0.1
    done
}

ompi-server --no-daemonize -r "$tmp/uri" >"$tmp/ns.log" 2>&1 &
ns_pid=$!
wait_file "$tmp/uri" "ompi-server wrote no URI"
mrun() { t=$1; shift; timeout "$t" "$MPIRUN" --ompi-server "file:$tmp/uri" --oversubscribe -np 1 "$@"; }

mrun 180 "$prog" server "$tmp/addr" 1 >"$tmp/server.log" 2>&1 &
srv_pid=$!
wait_file "$tmp/addr" "server wrote no address"
addr=$(cat "$tmp/addr")
echo "server address: $addr"
HGX_MPI_CONNECT_TIMEOUT_MS=1 mrun 90 "$prog" single-client "$addr" 0 >"$tmp/client.log" 2>&1 ||
    fail "client at plain MPI_Init"
cat "$tmp/client.log"
wait "$srv_pid" || { srv_pid=; fail "server"; }
srv_pid=
cat "$tmp/server.log"

HG_LOG_LEVEL=error mrun 60 "$prog" single-server >"$tmp/refused.log" 2>&1 ||
    fail "listener at plain MPI_Init"
cat "$tmp/refused.log"
grep -q "a listening mpi+dynamic class needs MPI_THREAD_MULTIPLE.*MPI_THREAD_SINGLE" \
    "$tmp/refused.log" || fail "no log line naming the thread level"
echo "PASS: mpi+dynamic client below MPI_THREAD_MULTIPLE under Open MPI"
