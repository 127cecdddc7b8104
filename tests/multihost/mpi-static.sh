#!/bin/sh
# make check entry: mpi+static across three simulated hosts (tests/multihost/hosts.sh),
# one rank per host, under the build tree's MPI (Open MPI or MPICH): the ranks must
# report three processor names, then the NA test, the hgx request test (RPC, bulk
# pull/push, deadlines, cancel) and the emulated put/get remote-cancel test run across
# the hosts. MPIRUN and MPI_FLAVOR come from make check's environment.
#
# MPICH 4.0.2 (ch4:ucx) with UCX 1.13 over TCP hangs now and then in MPI_Finalize
# (one rank spins in ucp_worker_progress closing its endpoints while the others
# wait in the PMI barrier; also with a plain MPI program: UCX's TCP cleanup,
# openucx/ucx#8738). A job that printed its full pass summary and then hung there
# is said so and counted as passed; any other timeout fails.
. "$(dirname "$0")/hosts.sh"
mh_setup 3
hosts=node1,node2,node3
out=$MH_DIR/job.log
fail=0
# The remote-cancel race runs 2000 trials here, not its default 10000: a round
# trip over the hosts' bridge costs milliseconds on a loaded 2-core machine.
for prog in "tests/multihost/mh_hosts 3" mpitests/test_na_mpi mpitests/test_hgx_mpi \
    "mpitests/test_mpi_emul_cancel 2000"; do
    echo "=== $prog on $hosts ($MPI_FLAVOR)"
    start=$(date +%s)
    mh_mpirun 150 3 $hosts "./$prog" >"$out" 2>&1
    rc=$?
    cat "$out"
    took=$(($(date +%s) - start))
    if [ $rc = 0 ]; then
        echo "PASS: $prog across 3 hosts (${took}s)"
    elif [ $rc = 124 ] && [ "$MPI_FLAVOR" = mpich ] &&
        grep -Eq '^(\[  PASSED  \]|PASS: )' "$out" && ! grep -Eq '^(\[  FAILED  \]|FAIL)' "$out"; then
        echo "PASS: $prog across 3 hosts (${took}s; all checks passed, then MPI_Finalize hung: openucx/ucx#8738)"
    else
        echo "FAIL: $prog across 3 hosts (exit $rc after ${took}s)"
        fail=1
    fi
done
exit $fail
