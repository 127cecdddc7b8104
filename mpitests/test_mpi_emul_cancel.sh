#!/bin/sh
# make check entry: remote cancel of emulated put/get, 1 target and 2 origins.
exec "$top_srcdir/mpitests/run-mpi.sh" 3 ./mpitests/test_mpi_emul_cancel
