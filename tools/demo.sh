#!/bin/sh
# Install dependencies, build hgx with Open MPI, and run the demo job: an MPI
# application (rank 0 serves, ranks 1-2 are clients) issuing RPCs and bulk
# pulls as hgx requests, one timed out, one cancelled, and a mix of hgx and MPI
# requests completed by one MPI_Waitall. Each step prints what it did.
set -e
cd "$(dirname "$0")/.."
sh tools/install-deps.sh
[ -x configure ] || autoreconf -fi
mkdir -p build && cd build
[ -f Makefile ] || ../configure MPICC=mpicc.openmpi
make -j"$(nproc)"
MPIRUN=mpirun.openmpi MPI_FLAVOR=openmpi sh ../mpitests/run-mpi.sh 3 ./examples/hgx_mpi_job
