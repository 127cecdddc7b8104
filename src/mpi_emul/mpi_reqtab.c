/*
 * mpi_reqtab.c -- outstanding MPI requests, tested with MPI_Testsome.
 */
#include "mpi_reqtab.h"

#include <stdlib.h>
#include <time.h>

void hgx_mreqtab_init(struct hgx_mreqtab *t)
{
    t->reqs = NULL;
    t->ents = NULL;
    t->statuses = NULL;
    t->indices = NULL;
    t->n = t->cap = 0;
}

int hgx_mreqtab_add(struct hgx_mreqtab *t, MPI_Request req, hgx_mreq_fn fn, void *obj,
                    uintptr_t aux)
{
    if (t->n == t->cap) {
        int cap = t->cap ? t->cap * 2 : 64;
        MPI_Request *r = realloc(t->reqs, sizeof(*r) * (size_t)cap);
        if (!r)
            return -1;
        t->reqs = r;
        struct hgx_mreq_ent *e = realloc(t->ents, sizeof(*e) * (size_t)cap);
        if (!e)
            return -1;
        t->ents = e;
        MPI_Status *s = realloc(t->statuses, sizeof(*s) * (size_t)cap);
        if (!s)
            return -1;
        t->statuses = s;
        int *ix = realloc(t->indices, sizeof(*ix) * (size_t)cap);
        if (!ix)
            return -1;
        t->indices = ix;
        t->cap = cap;
    }
    t->reqs[t->n] = req;
    t->ents[t->n] = (struct hgx_mreq_ent){fn, obj, aux};
    t->n++;
    return 0;
}

struct done_ent {
    struct hgx_mreq_ent ent;
    int err;
    MPI_Status status;
};

static int cmp_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

int hgx_mreqtab_poll(struct hgx_mreqtab *t, int *ndone)
{
    int outcount = 0;
    *ndone = 0;
    if (t->n == 0)
        return MPI_SUCCESS;
    /* MPI_Test per request rather than one MPI_Testsome: an error of a
     * multiple-completion call (e.g. MPI_ERR_TRUNCATE of one receive) is raised
     * on MPI_COMM_WORLD by MPICH, aborting the job, while MPI_Test raises it on
     * the request's own communicator (ours has MPI_ERRORS_RETURN). */
    int ncap = t->n;
    struct done_ent stackbuf[32];
    struct done_ent *done = NULL;
    for (int i = 0; i < t->n; i++) {
        int flag = 0;
        MPI_Status st;
        st.MPI_ERROR = MPI_SUCCESS;
        int rc = MPI_Test(&t->reqs[i], &flag, &st);
        if (rc == MPI_SUCCESS && !flag)
            continue;
        if (!done) {
            done = ncap <= 32 ? stackbuf : malloc(sizeof(*done) * (size_t)ncap);
            if (!done)
                return MPI_ERR_NO_MEM; /* completed request i is lost; out of memory
                                          anyway */
        }
        t->indices[outcount] = i;
        done[outcount].ent = t->ents[i];
        done[outcount].status = st;
        done[outcount].err = rc;
        outcount++;
    }
    if (outcount == 0)
        return MPI_SUCCESS;
    /* Remove completed slots (highest index first, so swap-remove stays valid). */
    qsort(t->indices, (size_t)outcount, sizeof(int), cmp_desc);
    for (int i = 0; i < outcount; i++) {
        int ix = t->indices[i];
        t->n--;
        t->reqs[ix] = t->reqs[t->n];
        t->ents[ix] = t->ents[t->n];
    }
    for (int i = 0; i < outcount; i++)
        done[i].ent.fn(done[i].ent.obj, done[i].ent.aux, done[i].err, &done[i].status);
    if (done != stackbuf)
        free(done);
    *ndone = outcount;
    return MPI_SUCCESS;
}

void hgx_mreqtab_destroy(struct hgx_mreqtab *t, unsigned int timeout_ms)
{
    /* Owners must be in "closing" mode: handlers free their object and post nothing. */
    for (int i = 0; i < t->n; i++)
        if (t->reqs[i] != MPI_REQUEST_NULL)
            MPI_Cancel(&t->reqs[i]);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (t->n > 0) {
        int ndone = 0;
        if (hgx_mreqtab_poll(t, &ndone) != MPI_SUCCESS)
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (ms >= (long)timeout_ms)
            break;
        if (ndone == 0) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
    }
    while (t->n > 0) {
        /* A send to a peer that never receives: let MPI drop it. */
        t->n--;
        if (t->reqs[t->n] != MPI_REQUEST_NULL)
            MPI_Request_free(&t->reqs[t->n]);
        MPI_Status st;
        st.MPI_ERROR = MPI_ERR_REQUEST;
        t->ents[t->n].fn(t->ents[t->n].obj, t->ents[t->n].aux, MPI_ERR_REQUEST, &st);
    }
    free(t->reqs);
    free(t->ents);
    free(t->statuses);
    free(t->indices);
    hgx_mreqtab_init(t);
}
