#!/bin/sh
# make check entry: Mercury's na_mpi.h calls with 1 server and 2 clients.
# Under MPICH (no MPI_Open_port) the refused mpi+dynamic init must say why.
log=$(mktemp "${TMPDIR:-/tmp}/hgx-namc.XXXXXX") || exit 1
trap 'rm -f "$log"' EXIT
"$top_srcdir/mpitests/run-mpi.sh" 3 ./mpitests/test_na_mpi_compat >"$log" 2>&1
rc=$?
cat "$log"
[ $rc -eq 0 ] || exit $rc
if [ "$MPI_FLAVOR" = mpich ] && ! grep -q "MPI_Open_port is not supported by this MPI" "$log"; then
    echo "test_na_mpi_compat.sh: FAIL: no log line naming MPI_Open_port under MPICH" >&2
    exit 1
fi
exit 0
