/*
 * test_na_mpi_late.c -- expected messages that reach an mpi+static class
 * after their receive was cancelled (responses to forwards that timed out)
 * are dropped, not held for a receive that never comes
 * (src/na/mpi/na_mpi_late.c). Run as `mpirun -np 2 ./test_na_mpi_late`.
 *
 * Rank 0 posts an expected receive from rank 1 and cancels it, NLATE times
 * with NLATE tags (a burst of timeouts); then rank 1 sends the message of
 * each tag. Rank 0 must hold none of them and count NLATE dropped. A receive posted again
 * with one of the tags then gets the next message of that tag, and a receive cancelled
 * and posted again before its message comes gets it.
 */
#include "hgx_test_hooks.h"
#include "mpitest_na.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NLATE 200
#define TAG_BASE 100
#define TAG_AGAIN 7
#define PAYLOAD 48

static int rank, failures, passes;
static na_class_t *cls;
static na_context_t *ctx;
static na_op_id_t *op;
static na_addr_t *peer;

static void result(const char *name, int ok, const char *why)
{
    mpitest_result(rank, &passes, &failures, name, ok, why);
}

static void fill(unsigned char *p, uint32_t seed)
{
    for (size_t i = 0; i < PAYLOAD; i++)
        p[i] = (unsigned char)(seed * 29u + i);
}

static void progress_for(double s)
{
    double end = mpitest_now() + s;
    while (mpitest_now() < end) {
        NA_Progress(cls, ctx, 10);
        NA_Trigger(ctx, 64, NULL);
    }
}

static int send_one(na_tag_t tag, uint32_t seed)
{
    unsigned char buf[PAYLOAD];
    struct done d = {0};
    fill(buf, seed);
    return NA_Msg_send_expected(cls, ctx, mpitest_cb, &d, buf, PAYLOAD, NULL, peer, 0,
                                tag, op) == NA_SUCCESS &&
           mpitest_wait(cls, ctx, &d, 30) && d.ret == NA_SUCCESS;
}

/* Post a receive of tag; cancel it at once if cancel. */
static int recv_one(unsigned char *buf, na_tag_t tag, struct done *d, int cancel)
{
    if (NA_Msg_recv_expected(cls, ctx, mpitest_cb, d, buf, PAYLOAD, NULL, peer, 0, tag,
                             op) != NA_SUCCESS)
        return 0;
    if (!cancel)
        return 1;
    NA_Cancel(cls, ctx, op);
    return mpitest_wait(cls, ctx, d, 30) && d->ret == NA_CANCELED;
}

static void sender(void)
{
    int sent = 0;
    MPI_Barrier(MPI_COMM_WORLD); /* A: rank 0 cancelled its receives */
    for (uint32_t i = 0; i < NLATE; i++)
        sent += send_one(TAG_BASE + i, i);
    result("sender: every late message sent", sent == NLATE, "");
    MPI_Barrier(MPI_COMM_WORLD); /* B: rank 0 took them */
    result("sender: the next message of a late tag", send_one(TAG_BASE, 1000), "");
    MPI_Barrier(MPI_COMM_WORLD); /* C: rank 0 cancelled and posted again */
    result("sender: a message to a receive posted again", send_one(TAG_AGAIN, 2000), "");
    MPI_Barrier(MPI_COMM_WORLD); /* D */
}

static void receiver(void)
{
    unsigned char buf[PAYLOAD], want[PAYLOAD];
    int cancelled = 0;
    unsigned long before = na_mpi_late_dropped(cls);
    for (uint32_t i = 0; i < NLATE; i++) {
        struct done d = {0};
        cancelled += recv_one(buf, TAG_BASE + i, &d, 1);
    }
    result("receives cancelled", cancelled == NLATE, "");
    MPI_Barrier(MPI_COMM_WORLD); /* A */
    double end = mpitest_now() + 30;
    while (na_mpi_late_dropped(cls) - before < NLATE && mpitest_now() < end)
        progress_for(0.01);
    char why[96];
    snprintf(why, sizeof(why), "%lu dropped, %d held", na_mpi_late_dropped(cls) - before,
             na_mpi_held_count(cls));
    result("late messages dropped, none held",
           na_mpi_late_dropped(cls) - before == NLATE && na_mpi_held_count(cls) == 0,
           why);

    /* The tag is free again: its next message reaches a new receive. */
    struct done d = {0};
    memset(buf, 0, sizeof(buf));
    int posted = recv_one(buf, TAG_BASE, &d, 0);
    MPI_Barrier(MPI_COMM_WORLD); /* B */
    fill(want, 1000);
    result("a late tag's next message reaches its receive",
           posted && mpitest_wait(cls, ctx, &d, 30) && d.ret == NA_SUCCESS &&
               d.size == PAYLOAD && memcmp(buf, want, PAYLOAD) == 0,
           "");

    /* Cancelled, then posted again before the message: it arrives. */
    struct done c = {0}, g = {0};
    memset(buf, 0, sizeof(buf));
    int again = recv_one(buf, TAG_AGAIN, &c, 1) && recv_one(buf, TAG_AGAIN, &g, 0);
    MPI_Barrier(MPI_COMM_WORLD); /* C */
    fill(want, 2000);
    result("a receive posted again gets its message",
           again && mpitest_wait(cls, ctx, &g, 30) && g.ret == NA_SUCCESS &&
               memcmp(buf, want, PAYLOAD) == 0 &&
               na_mpi_late_dropped(cls) - before == NLATE,
           "");
    MPI_Barrier(MPI_COMM_WORLD); /* D */
}

int main(int argc, char **argv)
{
    int nprocs;
    mpitest_init(&argc, &argv, &rank, &nprocs);
    if (nprocs != 2)
        return mpitest_skip(rank, "test_na_mpi_late needs 2 processes");
    cls = NA_Initialize("mpi+static", rank == 0);
    if (!cls) {
        result("NA_Initialize(\"mpi+static\")", 0, "");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    ctx = NA_Context_create(cls);
    op = NA_Op_create(cls, 0);
    char name[32];
    snprintf(name, sizeof(name), "mpi+static://%d", 1 - rank);
    result("lookup of the peer", NA_Addr_lookup(cls, name, &peer) == NA_SUCCESS, "");
    if (rank == 0)
        receiver();
    else
        sender();
    NA_Addr_free(cls, peer);
    NA_Op_destroy(cls, op);
    NA_Context_destroy(cls, ctx);
    result("NA_Finalize", NA_Finalize(cls) == NA_SUCCESS, "");
    return mpitest_finish(passes, failures);
}
