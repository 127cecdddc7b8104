/*
 * test_na_mpi_held.c -- the bound on messages an mpi+static class holds for
 * NA receives not posted yet, run as `mpirun -np 2 ./test_na_mpi_held HELD`.
 *
 * Rank 1 sends NMSG unexpected messages to rank 0, which progresses without
 * a receive posted: the plugin takes messages from MPI and holds them until
 * HGX_NA_UNEXPECTED_MAX are held, then leaves the rest in MPI. HELD is the
 * count rank 0 must then hold (the bound, or NMSG when the bound is above
 * it). Rank 0 then posts its receives one at a time: each gets the next
 * message in send order, every message exactly once, and a receive posted
 * after the last one gets nothing.
 */
#include "hgx_test_hooks.h"
#include "mpitest_na.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NMSG 64
#define PAYLOAD 32 /* bytes per message: seq, then a fill derived from it */

static int rank, failures, passes;
static na_class_t *cls;
static na_context_t *ctx;

static void result(const char *name, int ok, const char *why)
{
    mpitest_result(rank, &passes, &failures, name, ok, why);
}

static void fill(unsigned char *p, uint32_t seq)
{
    memcpy(p, &seq, sizeof(seq));
    for (size_t i = sizeof(seq); i < PAYLOAD; i++)
        p[i] = (unsigned char)(seq * 31u + i);
}

/* Progress for about s seconds, whatever completes. */
static void progress_for(double s)
{
    double end = mpitest_now() + s;
    while (mpitest_now() < end) {
        NA_Progress(cls, ctx, 10);
        NA_Trigger(ctx, 64, NULL);
    }
}

static void sender(void)
{
    na_addr_t *dst = NULL;
    na_return_t r = NA_Addr_lookup(cls, "mpi+static://0", &dst);
    result("sender: lookup of rank 0", r == NA_SUCCESS, NA_Error_to_string(r));
    int sent = 0;
    for (uint32_t i = 0; i < NMSG && dst; i++) {
        unsigned char buf[PAYLOAD];
        na_op_id_t *op = NA_Op_create(cls, 0);
        struct done d = {0};
        fill(buf, i);
        r = NA_Msg_send_unexpected(cls, ctx, mpitest_cb, &d, buf, PAYLOAD, NULL, dst, 0,
                                   (na_tag_t)i, op);
        if (r == NA_SUCCESS && mpitest_wait(cls, ctx, &d, 30) && d.ret == NA_SUCCESS)
            sent++;
        NA_Op_destroy(cls, op);
    }
    char why[64];
    snprintf(why, sizeof(why), "%d of %d sent", sent, NMSG);
    result("sender: every unexpected message sent", sent == NMSG, why);
    MPI_Barrier(MPI_COMM_WORLD); /* A: all sent */
    MPI_Barrier(MPI_COMM_WORLD); /* B: rank 0 received them */
    if (dst)
        NA_Addr_free(cls, dst);
}

static void receiver(int want_held)
{
    MPI_Barrier(MPI_COMM_WORLD); /* A */
    progress_for(0.5);           /* no receive posted: the plugin holds what it may */
    int held = na_mpi_held_count(cls);
    char why[96];
    snprintf(why, sizeof(why), "%d held, expected %d", held, want_held);
    result("messages held with no receive posted stop at the bound", held == want_held,
           why);

    size_t max = NA_Msg_get_max_unexpected_size(cls);
    unsigned char *buf = malloc(max);
    na_op_id_t *op = NA_Op_create(cls, 0);
    int in_order = 0, bad = 0;
    for (uint32_t i = 0; i < NMSG; i++) {
        struct done d = {0};
        na_return_t r =
            NA_Msg_recv_unexpected(cls, ctx, mpitest_cb, &d, buf, max, NULL, op);
        if (r != NA_SUCCESS || !mpitest_wait(cls, ctx, &d, 30) || d.ret != NA_SUCCESS) {
            snprintf(why, sizeof(why), "receive %u: %s", i,
                     NA_Error_to_string(r != NA_SUCCESS ? r : d.ret));
            bad = 1;
            break;
        }
        unsigned char want[PAYLOAD];
        fill(want, i);
        if (d.size == PAYLOAD && d.tag == i && memcmp(buf, want, PAYLOAD) == 0)
            in_order++;
        else if (!bad)
            bad = 1, snprintf(why, sizeof(why), "receive %u: tag %u, %zu bytes", i,
                              (unsigned)d.tag, d.size);
        if (d.src)
            NA_Addr_free(cls, d.src);
    }
    if (!bad)
        snprintf(why, sizeof(why), "%d of %d", in_order, NMSG);
    result("receives get every message once, in send order", in_order == NMSG, why);

    /* Nothing beyond them: a further receive gets no message. */
    struct done d = {0};
    NA_Msg_recv_unexpected(cls, ctx, mpitest_cb, &d, buf, max, NULL, op);
    progress_for(0.3);
    int extra = d.flag;
    if (!extra)
        NA_Cancel(cls, ctx, op);
    mpitest_wait(cls, ctx, &d, 10);
    result("no message delivered twice", !extra && d.ret == NA_CANCELED,
           extra ? "a receive past the last message completed" : "");
    result("nothing left held", na_mpi_held_count(cls) == 0, "");
    NA_Op_destroy(cls, op);
    free(buf);
    MPI_Barrier(MPI_COMM_WORLD); /* B */
}

int main(int argc, char **argv)
{
    int nprocs;
    mpitest_init(&argc, &argv, &rank, &nprocs);
    if (nprocs != 2 || argc != 2)
        return mpitest_skip(rank, "test_na_mpi_held needs 2 processes and the count to "
                                  "hold (mpirun -np 2 ./test_na_mpi_held 16)");
    int want_held = atoi(argv[1]);
    cls = NA_Initialize("mpi+static", rank == 0);
    if (!cls) {
        result("NA_Initialize(\"mpi+static\")", 0, "");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    ctx = NA_Context_create(cls);
    if (rank == 0)
        receiver(want_held);
    else
        sender();
    NA_Context_destroy(cls, ctx);
    result("NA_Finalize", NA_Finalize(cls) == NA_SUCCESS, "");
    return mpitest_finish(passes, failures);
}
