#!/bin/sh
# make check entry: forged bulk descriptors over mpi+static, 1 server and 1 attacker.
exec "$top_srcdir/mpitests/run-mpi.sh" 2 ./mpitests/test_bulk_forge_mpi
