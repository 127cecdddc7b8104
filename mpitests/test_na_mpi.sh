#!/bin/sh
# make check entry: the NA MPI test with 1 server and 2 clients.
exec "$top_srcdir/mpitests/run-mpi.sh" 3 ./mpitests/test_na_mpi
