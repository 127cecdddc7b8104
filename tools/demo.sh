#!/bin/sh
# Install dependencies, build hgx with Open MPI, and run the demo job: an MPI
# application (rank 0 serves, ranks 1-2 are clients) issuing RPCs and bulk
# pulls as hgx requests, one timed out, one cancelled, and a mix of hgx and MPI
# requests completed by one MPI_Waitall. Each step prints what it did.
# HGX_DEMO_HOSTS=node1,node2,node3 runs the job with one rank per host instead
# (Open MPI's mpirun --host; ssh must reach the hosts and the checkout must be
# at the same path on each); HGX_DEMO_MPIRUN_ARGS adds mpirun options, such as
# "--mca btl_tcp_if_include eth0" (docs/multi-node.md).
set -e
cd "$(dirname "$0")/.."
sh tools/install-deps.sh
[ -x configure ] || autoreconf -fi
mkdir -p build && cd build
[ -f Makefile ] || ../configure MPICC=mpicc.openmpi
make -j"$(nproc)"
if [ -n "${HGX_DEMO_HOSTS:-}" ]; then
    [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    np=$(echo "$HGX_DEMO_HOSTS" | tr ',' '\n' | grep -c .)
    [ "$np" -ge 2 ] || { echo "HGX_DEMO_HOSTS: give two hosts or more" >&2; exit 2; }
    exec mpirun.openmpi --host "$HGX_DEMO_HOSTS" -np "$np" ${HGX_DEMO_MPIRUN_ARGS:-} \
        "$PWD/examples/hgx_mpi_job"
fi
MPIRUN=mpirun.openmpi MPI_FLAVOR=openmpi sh ../mpitests/run-mpi.sh 3 ./examples/hgx_mpi_job
