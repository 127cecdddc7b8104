#!/bin/sh
# make check entry: the hgx request test over mpi+static with 1 server and 2 clients.
exec "$top_srcdir/mpitests/run-mpi.sh" 3 ./mpitests/test_hgx_mpi
