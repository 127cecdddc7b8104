#!/bin/sh
# make check entry: mpi+dynamic across separate mpirun jobs.
#  Open MPI: start ompi-server, one server job and four client jobs one after
#    the other (the server's address passed through a file): by port, by
#    service name, one whose first lookup gives up at 1 ms while its connect
#    goes on (the late connection must be closed, or the server's finalize
#    hangs on it), and one at plain MPI_Init (MPI_THREAD_SINGLE, as Mercury's
#    test harness runs its clients) that connects inline
#    (HGX_MPI_CONNECT_TIMEOUT_MS=1 would fail a connect run in a helper
#    thread); then a listener at plain MPI_Init must be refused with a log
#    line naming the thread level, and a bounded failing lookup; every step
#    under a timeout; everything cleaned up.
#  MPICH (ch4:ucx has no MPI_Open_port): init and lookup must fail with the
#    log line naming MPI_Open_port.
# MPIRUN and MPI_FLAVOR come from make check's environment.
prog=${TEST_MPI_DYNAMIC:-./mpitests/test_mpi_dynamic}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hgx-dyn.XXXXXX") || exit 1
srv_pid= ns_pid=
cleanup() {
    [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
    [ -n "$ns_pid" ] && kill "$ns_pid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
fail() { echo "test_mpi_dynamic.sh: FAIL: $*" >&2; for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done >&2; exit 1; }

case "$MPI_FLAVOR" in
mpich)
    HG_LOG_LEVEL=error timeout 60 "$MPIRUN" -n 1 "$prog" unsupported >"$tmp/u.log" 2>&1 ||
        fail "unsupported-mode run failed"
    cat "$tmp/u.log"
    grep -q "MPI_Open_port is not supported by this MPI" "$tmp/u.log" ||
        fail "no log line naming MPI_Open_port"
    echo "PASS: mpi+dynamic refused clearly under MPICH"
    exit 0 ;;
openmpi) ;;
*) echo "test_mpi_dynamic.sh: unknown MPI_FLAVOR '$MPI_FLAVOR'" >&2; exit 1 ;;
esac

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
command -v ompi-server >/dev/null 2>&1 || { echo "ompi-server not found: SKIP"; exit 77; }
ompi-server --no-daemonize -r "$tmp/uri" >"$tmp/ns.log" 2>&1 &
ns_pid=$!
i=0
while [ ! -s "$tmp/uri" ]; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "ompi-server wrote no URI"
    sleep 0.1
done
mrun() { t=$1; shift; timeout "$t" "$MPIRUN" --ompi-server "file:$tmp/uri" --oversubscribe -np 1 "$@"; }

mrun 180 "$prog" server "$tmp/addr" 4 >"$tmp/server.log" 2>&1 &
srv_pid=$!
i=0
while [ ! -s "$tmp/addr" ]; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "server wrote no address"
    kill -0 "$srv_pid" 2>/dev/null || fail "server exited early"
    sleep 0.1
done
addr=$(cat "$tmp/addr")
echo "server address: $addr"
mrun 90 "$prog" client "$addr" 0 >"$tmp/client0.log" 2>&1 || fail "client 0 (by port)"
cat "$tmp/client0.log"
# second client: by the published service name ("hgx" unless HGX_MPI_SERVICE)
mrun 90 "$prog" client "mpi+dynamic://${HGX_MPI_SERVICE:-hgx}" 1 >"$tmp/client1.log" 2>&1 ||
    fail "client 1 (by service name)"
cat "$tmp/client1.log"
mrun 90 "$prog" retry-client "$addr" 3 >"$tmp/client3.log" 2>&1 ||
    fail "client 3 (a lookup that gives up, then a retry)"
cat "$tmp/client3.log"
HGX_MPI_CONNECT_TIMEOUT_MS=1 mrun 90 "$prog" single-client "$addr" 2 >"$tmp/client2.log" 2>&1 ||
    fail "client 2 (plain MPI_Init)"
cat "$tmp/client2.log"
wait "$srv_pid" || { srv_pid=; fail "server"; }
srv_pid=
cat "$tmp/server.log"
HG_LOG_LEVEL=error mrun 60 "$prog" single-server >"$tmp/refused.log" 2>&1 ||
    fail "listener at plain MPI_Init"
cat "$tmp/refused.log"
grep -q "a listening mpi+dynamic class needs MPI_THREAD_MULTIPLE.*MPI_THREAD_SINGLE" \
    "$tmp/refused.log" || fail "no log line naming the thread level"
HGX_MPI_CONNECT_TIMEOUT_MS=3000 mrun 60 "$prog" bogus >"$tmp/bogus.log" 2>&1 || fail "bounded failing lookup"
cat "$tmp/bogus.log"
echo "PASS: mpi+dynamic under Open MPI"
