#!/bin/sh
# Run an MPI test program under the build tree's MPI launcher.
#   run-mpi.sh NPROCS PROGRAM [ARGS...]
# MPIRUN and MPI_FLAVOR come from make check's environment.
set -e
np=$1
shift
case "$MPI_FLAVOR" in
openmpi)
    # Open MPI refuses root without these; 2 cores need oversubscription.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    exec timeout 300 "$MPIRUN" --oversubscribe -np "$np" "$@" ;;
mpich)
    exec timeout 300 "$MPIRUN" -n "$np" "$@" ;;
*)
    echo "run-mpi.sh: unknown MPI_FLAVOR '$MPI_FLAVOR'" >&2
    exit 1 ;;
esac
