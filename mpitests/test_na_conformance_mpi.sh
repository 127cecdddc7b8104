#!/bin/sh
# make check entry: the NA conformance cases over mpi+static, in one process
# started by the MPI launcher (the plugin needs an MPI job to run in).
exec "$top_srcdir/mpitests/run-mpi.sh" 1 ./tests/test_na_conformance mpi+static
