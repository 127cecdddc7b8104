#!/bin/sh
# make check entry: mpi+static across three simulated hosts (tests/multihost/hosts.sh),
# one rank per host, under the build tree's MPI (Open MPI or MPICH): the ranks must
# report three processor names, then the NA test, the hgx request test (RPC, bulk
# pull/push, deadlines, cancel) and the emulated put/get remote-cancel test run across
# the hosts. MPIRUN and MPI_FLAVOR come from make check's environment.
. "$(dirname "$0")/hosts.sh"
mh_setup 3
hosts=node1,node2,node3
fail=0
for prog in "tests/multihost/mh_hosts 3" mpitests/test_na_mpi mpitests/test_hgx_mpi \
    mpitests/test_mpi_emul_cancel; do
    echo "=== $prog on $hosts ($MPI_FLAVOR)"
    if mh_mpirun 120 3 $hosts "./$prog"; then
        echo "PASS: $prog across 3 hosts"
    else
        echo "FAIL: $prog across 3 hosts (exit $?)"
        fail=1
    fi
done
exit $fail
