#!/bin/sh
# make check entry: late expected messages dropped by an mpi+static class.
exec "$top_srcdir/mpitests/run-mpi.sh" 2 ./mpitests/test_na_mpi_late
