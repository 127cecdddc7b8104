/*
 * mh_hosts.c -- check that an MPI job really spans hosts: rank 0 gathers
 * every rank's MPI_Get_processor_name, prints one line per rank, and fails
 * unless the job has at least argv[1] distinct names (default 1).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    char name[MPI_MAX_PROCESSOR_NAME] = "";
    int rank, size, len;
    int want = argc > 1 ? atoi(argv[1]) : 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);
    char *all = rank == 0 ? calloc((size_t)size, MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME,
               MPI_CHAR, 0, MPI_COMM_WORLD);
    int ok = 1;
    if (rank == 0) {
        int distinct = 0;
        for (int i = 0; i < size; i++) {
            const char *n = all + (size_t)i * MPI_MAX_PROCESSOR_NAME;
            int seen = 0;
            for (int k = 0; k < i; k++)
                seen |= !strcmp(n, all + (size_t)k * MPI_MAX_PROCESSOR_NAME);
            distinct += !seen;
            printf("rank %d runs on %s\n", i, n);
        }
        ok = distinct >= want;
        printf("%s: %d ranks on %d distinct hosts (want %d)\n", ok ? "PASS" : "FAIL",
               size, distinct, want);
        free(all);
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return ok ? 0 : 1;
}
