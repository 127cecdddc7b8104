#!/bin/sh
# ompi-dynamic-run.sh -- start an mpi+dynamic server job under Open MPI.
#
#   tools/ompi-dynamic-run.sh [-d DIR] SERVER-PROGRAM [ARGS...]
#
# Open MPI (4.x) joins separately launched jobs (MPI_Comm_connect/accept,
# MPI_Publish_name/MPI_Lookup_name) only through a common ompi-server. This
# script starts one (URI in DIR/ompi-server.uri, DIR default ./hgx-dynamic),
# starts the server job with mpirun --ompi-server, and prints the server's
# first output line (the program should print its mpi+dynamic:// address
# first, as examples/mpi_dynamic_service does), plus how to run a client:
#
#   mpirun --ompi-server file:DIR/ompi-server.uri -np 1 CLIENT mpi+dynamic://...
#
# It then waits for the server job; on exit (or Ctrl-C) it stops ompi-server.
# Set MPIRUN (default mpirun.openmpi, else mpirun). As root, the
# OMPI_ALLOW_RUN_AS_ROOT variables are set for you. MPICH: not supported
# (Debian's ch4:ucx has no MPI_Open_port; use mpi+static).
set -u
dir=./hgx-dynamic
if [ "${1:-}" = "-d" ]; then dir=$2; shift 2; fi
[ $# -ge 1 ] || { sed -n '2,20p' "$0"; exit 2; }
if [ -z "${MPIRUN:-}" ]; then
    if command -v mpirun.openmpi >/dev/null 2>&1; then MPIRUN=mpirun.openmpi; else MPIRUN=mpirun; fi
fi
command -v ompi-server >/dev/null 2>&1 || { echo "ompi-server not found (Open MPI needed)" >&2; exit 1; }
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$dir" || exit 1
uri=$dir/ompi-server.uri out=$dir/server.out
rm -f "$uri" "$out"
ns_pid= srv_pid=
stop() {
    [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
    [ -n "$ns_pid" ] && kill "$ns_pid" 2>/dev/null
    wait 2>/dev/null
}
trap 'stop; exit 130' INT TERM
trap stop EXIT
ompi-server --no-daemonize -r "$uri" &
ns_pid=$!
i=0
while [ ! -s "$uri" ]; do
    i=$((i + 1))
    [ $i -gt 100 ] && { echo "ompi-server did not start" >&2; exit 1; }
    sleep 0.1
done
"$MPIRUN" --ompi-server "file:$uri" --oversubscribe -np 1 "$@" >"$out" &
srv_pid=$!
i=0
while ! grep -q . "$out" 2>/dev/null; do
    i=$((i + 1))
    kill -0 "$srv_pid" 2>/dev/null || { echo "server job exited" >&2; exit 1; }
    [ $i -gt 600 ] && { echo "server printed no address in 60 s" >&2; exit 1; }
    sleep 0.1
done
addr=$(head -n 1 "$out")
echo "server address: $addr"
echo "name server:    file:$uri"
echo "client:         $MPIRUN --ompi-server file:$uri -np 1 CLIENT $addr"
wait "$srv_pid"
rc=$?
srv_pid=
tail -n +2 "$out"
exit $rc
