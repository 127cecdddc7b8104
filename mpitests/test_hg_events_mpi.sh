#!/bin/sh
# make check entry: the events API over mpi+static (1 server driven by poll(2)
# on its wait fd, 1 client) and an idle mpi+dynamic client class per rank
# (not under MPICH, whose ch4:ucx has no MPI_Open_port: the program says so).
case "$MPI_FLAVOR" in
mpich) exec "$top_srcdir/mpitests/run-mpi.sh" 2 ./mpitests/test_hg_events_mpi static ;;
*) exec "$top_srcdir/mpitests/run-mpi.sh" 2 ./mpitests/test_hg_events_mpi ;;
esac
