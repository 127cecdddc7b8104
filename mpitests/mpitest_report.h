/*
 * mpitest_report.h -- the start of an mpitest, the per-rank result lines it
 * prints, and the summary that ends the run.
 */
#ifndef MPITEST_REPORT_H
#define MPITEST_REPORT_H

#include <mpi.h>
#include <stdio.h>

/* Initialize MPI with MPI_THREAD_MULTIPLE requested (the NA and HG calls may
 * run on several threads); set this process's rank and the number of
 * processes. Returns the thread level MPI provides. */
static inline int mpitest_init(int *argc, char ***argv, int *rank, int *nprocs)
{
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, nprocs);
    return provided;
}

/* A run that cannot take place as launched: rank 0 says why, MPI is
 * finalized; returns the exit code of a skipped test (77). */
static inline int mpitest_skip(int rank, const char *why)
{
    if (rank == 0)
        printf("[  SKIPPED ] %s\n", why);
    fflush(stdout);
    MPI_Finalize();
    return 77;
}

/* Print a cmocka-style result line for rank and count it. */
static inline void mpitest_result(int rank, int *passes, int *failures, const char *name,
                                  int ok, const char *why)
{
    if (ok) {
        ++*passes;
        printf("[       OK ] rank %d: %s\n", rank, name);
    } else {
        ++*failures;
        printf("[  FAILED  ] rank %d: %s (%s)\n", rank, name, why ? why : "");
    }
    fflush(stdout);
}

/* End the run (collective): every rank's counts summed, rank 0 prints the
 * cmocka-style summary (tools/test-all.sh adds these up), then MPI_Finalize.
 * Returns the exit code, the same on every rank: 1 if a check failed on any. */
static inline int mpitest_finish(int passes, int failures)
{
    int mine[2] = {passes, failures}, sum[2] = {0, 0}, rank = 0, nprocs = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Allreduce(mine, sum, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("[==========] %d test(s) run over %d ranks.\n", sum[0] + sum[1], nprocs);
        printf("[  PASSED  ] %d test(s).\n", sum[0]);
        if (sum[1])
            printf("[  FAILED  ] %d test(s).\n", sum[1]);
        fflush(stdout);
    }
    MPI_Finalize();
    return sum[1] ? 1 : 0;
}

#endif /* MPITEST_REPORT_H */
