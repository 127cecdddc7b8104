/*
 * mpitest_report.h -- the per-rank result lines the mpitests print.
 */
#ifndef MPITEST_REPORT_H
#define MPITEST_REPORT_H

#include <stdio.h>

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

#endif /* MPITEST_REPORT_H */
