#!/bin/sh
# make check entry: the NA MPI test on classes of NA_THREAD_MODE_SINGLE (no
# class lock), 1 server and 2 clients.
exec "$top_srcdir/mpitests/run-mpi.sh" 3 ./mpitests/test_na_mpi single
