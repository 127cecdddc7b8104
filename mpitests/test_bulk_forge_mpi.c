/*
 * test_bulk_forge_mpi.c -- forged bulk descriptors over mpi+static,
 * run as `mpirun -np 2 ./test_bulk_forge_mpi`: rank 0 is the server of
 * tests/bulk_forge.h, rank 1 the attacker. The attacker requires zero
 * violations, hangs and crashes and that the legitimate transfers work; a
 * crashed server takes the job down, which mpirun reports as a failure.
 * Prints cmocka-style result lines and a summary on rank 0.
 */
#include "bulk_forge.h"
#include "mercury.h"

#include <mpi.h>
#include <stdio.h>

#define SERVER_INFO "mpi+static"
#define SERVER_ADDR "mpi+static://0"

static int rank, failures, passes;

static void result(const char *name, int ok)
{
    if (ok)
        passes++;
    else
        failures++;
    printf("%s rank %d: %s\n", ok ? "[       OK ]" : "[  FAILED  ]", rank, name);
    fflush(stdout);
}

static void progress(hg_context_t *ctx, unsigned int timeout_ms)
{
    unsigned int n = 0;
    HG_Progress(ctx, timeout_ms);
    HG_Trigger(ctx, 0, 64, &n);
}

static void serve(hg_class_t *cls, hg_context_t *ctx)
{
    struct forge_server *srv = forge_server_create(cls);

    result("server: regions exposed", srv != NULL);
    if (!srv)
        MPI_Abort(MPI_COMM_WORLD, 1);
    while (!forge_server_stopped(srv))
        progress(ctx, 100);
    for (int i = 0; i < 20; i++) /* let the last response go out */
        progress(ctx, 10);
    result("server: buffer as it started", forge_server_audit(srv) == 0);
    forge_server_free(srv);
}

static void attack(hg_class_t *cls, hg_context_t *ctx)
{
    struct forge_client c = {.server = HG_ADDR_NULL};
    hg_addr_t server = HG_ADDR_NULL;

    if (HG_Addr_lookup2(cls, SERVER_ADDR, &server) != HG_SUCCESS ||
        forge_client_init(&c, cls, ctx, server) != HG_SUCCESS) {
        result("client: descriptors fetched from " SERVER_ADDR, 0);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    forge_attack_all(&c);
    forge_client_stop(&c);
    forge_print_summary(SERVER_INFO, &c.st);
    forge_client_fini(&c);
    HG_Addr_free(cls, c.server);

    result("client: every attack tried", c.st.tries > 0 && !c.dead);
    result("client: legitimate transfers work", c.st.controls_failed == 0);
    result("client: zero violations", c.st.violations == 0);
    result("client: zero hangs", c.st.hangs == 0);
    result("client: zero crashes", c.st.crashes == 0);
}

int main(int argc, char **argv)
{
    int provided = 0, nprocs = 0;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs != 2) {
        if (rank == 0)
            printf("[  FAILED  ] test_bulk_forge_mpi needs 2 ranks (got %d)\n", nprocs);
        MPI_Finalize();
        return 1;
    }
    hg_class_t *cls = HG_Init(SERVER_INFO, rank == 0 ? HG_TRUE : HG_FALSE);
    hg_context_t *ctx = cls ? HG_Context_create(cls) : NULL;
    result("init: HG_Init(" SERVER_INFO ") and a context", ctx != NULL);
    if (!ctx)
        MPI_Abort(MPI_COMM_WORLD, 1);

    if (rank == 0)
        serve(cls, ctx);
    else
        attack(cls, ctx);

    MPI_Barrier(MPI_COMM_WORLD);
    result("finalize: context and class",
           HG_Context_destroy(ctx) == HG_SUCCESS && HG_Finalize(cls) == HG_SUCCESS);

    /* Both ranks exit with the job's verdict, so mpirun's status is it. */
    int tally[2] = {passes, failures};
    MPI_Allreduce(MPI_IN_PLACE, tally, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("[  PASSED  ] %d test(s).\n%s", tally[0],
               tally[1] ? "[  FAILED  ] some test(s), see above.\n" : "");
    fflush(stdout);
    MPI_Finalize();
    return tally[1] ? 1 : 0;
}
