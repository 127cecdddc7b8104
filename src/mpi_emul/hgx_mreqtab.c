/*
 * hgx_mreqtab.c -- outstanding MPI requests, tested with MPI_Testsome.
 */
#include "hgx_mreqtab.h"
#include "hgx_clock.h"

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

static int mreqtab_cmp_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

/* Remove the completed slots t->indices[0..outcount) and run their handlers. */
static void mreqtab_finish(struct hgx_mreqtab *t, struct done_ent *done, int outcount)
{
    /* highest index first, so swap-remove stays valid */
    qsort(t->indices, (size_t)outcount, sizeof(int), mreqtab_cmp_desc);
    for (int i = 0; i < outcount; i++) {
        int ix = t->indices[i];
        t->n--;
        t->reqs[ix] = t->reqs[t->n];
        t->ents[ix] = t->ents[t->n];
    }
    for (int i = 0; i < outcount; i++)
        done[i].ent.fn(done[i].ent.obj, done[i].ent.aux, done[i].err, &done[i].status);
}

#ifdef OPEN_MPI
/* Open MPI raises a request's error (e.g. MPI_ERR_TRUNCATE) on the request's
 * own communicator (ours: MPI_ERRORS_RETURN) also from MPI_Testsome, and
 * every MPI call runs its whole progress engine (~90 ns): one call for all. */
static int mreqtab_poll_some(struct hgx_mreqtab *t, struct done_ent *done, int *outcount)
{
    int rc = MPI_Testsome(t->n, t->reqs, outcount, t->indices, t->statuses);
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS)
        return rc;
    if (*outcount == MPI_UNDEFINED)
        *outcount = 0;
    for (int i = 0; i < *outcount; i++) {
        int ix = t->indices[i];
        done[i].ent = t->ents[ix];
        done[i].status = t->statuses[i];
        done[i].err = rc == MPI_ERR_IN_STATUS ? t->statuses[i].MPI_ERROR : MPI_SUCCESS;
    }
    return MPI_SUCCESS;
}
#else
/* MPI_Test per request: MPICH raises an error of MPI_Testsome (e.g.
 * MPI_ERR_TRUNCATE of one receive) on MPI_COMM_WORLD, aborting the job; its
 * calls are cheap (~30 ns). */
static int mreqtab_poll_some(struct hgx_mreqtab *t, struct done_ent *done, int *outcount)
{
    *outcount = 0;
    for (int i = 0; i < t->n; i++) {
        int flag = 0;
        MPI_Status st;
        st.MPI_ERROR = MPI_SUCCESS;
        int rc = MPI_Test(&t->reqs[i], &flag, &st);
        if (rc == MPI_SUCCESS && !flag)
            continue;
        t->indices[*outcount] = i;
        done[*outcount].ent = t->ents[i];
        done[*outcount].status = st;
        done[*outcount].err = rc;
        (*outcount)++;
    }
    return MPI_SUCCESS;
}
#endif

int hgx_mreqtab_poll(struct hgx_mreqtab *t, int *ndone)
{
    int outcount = 0;
    *ndone = 0;
    if (t->n == 0)
        return MPI_SUCCESS;
    struct done_ent stackbuf[32];
    struct done_ent *done = t->n <= 32 ? stackbuf : malloc(sizeof(*done) * (size_t)t->n);
    if (!done)
        return MPI_ERR_NO_MEM;
    int rc = mreqtab_poll_some(t, done, &outcount);
    if (rc == MPI_SUCCESS && outcount > 0)
        mreqtab_finish(t, done, outcount);
    if (done != stackbuf)
        free(done);
    *ndone = outcount;
    return rc;
}

void hgx_mreqtab_destroy(struct hgx_mreqtab *t, unsigned int timeout_ms)
{
    /* Owners must be in "closing" mode: handlers free their object and post nothing. */
    for (int i = 0; i < t->n; i++)
        if (t->reqs[i] != MPI_REQUEST_NULL)
            MPI_Cancel(&t->reqs[i]);
    uint64_t deadline = hgx_clock_after_ms(hgx_clock_now_ns(), timeout_ms);
    while (t->n > 0) {
        int ndone = 0;
        if (hgx_mreqtab_poll(t, &ndone) != MPI_SUCCESS)
            break;
        if (hgx_clock_passed(hgx_clock_now_ns(), deadline))
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

#define DROP_BLOCK (1 << 16)
#define DROP_FANOUT (1 << 15) /* blocks per level: 2 GiB of a message per inner type */

/* Receive msg of bytes bytes into one DROP_BLOCK of scratch: hindexed types
 * whose blocks all start at the scratch, nested once above 2 GiB (so no array
 * grows past DROP_FANOUT entries up to 2^46 bytes). */
static int mreqtab_mrecv_drop_bytes(MPI_Message *msg, MPI_Count bytes)
{
    MPI_Count nblocks = bytes > DROP_BLOCK ? (bytes - 1) / DROP_BLOCK + 1 : 1;
    int inner = nblocks > DROP_FANOUT ? DROP_FANOUT : (int)nblocks;
    MPI_Count nouter = (nblocks - 1) / inner + 1;
    if (nouter > DROP_FANOUT)
        return MPI_ERR_COUNT; /* over 64 TiB: left unreceived */
    void *scratch = malloc(bytes > DROP_BLOCK ? DROP_BLOCK
                           : bytes > 0        ? (size_t)bytes
                                              : 1);
    if (!scratch)
        return MPI_ERR_NO_MEM;
    if (nblocks == 1) {
        int rc = MPI_Mrecv(scratch, (int)bytes, MPI_BYTE, msg, MPI_STATUS_IGNORE);
        free(scratch);
        return rc;
    }
    int *bl = malloc(sizeof(*bl) * (size_t)inner);
    MPI_Aint *disp = calloc((size_t)inner, sizeof(*disp));
    MPI_Datatype dt = MPI_DATATYPE_NULL, outer = MPI_DATATYPE_NULL;
    int rc = MPI_ERR_NO_MEM;
    if (bl && disp) {
        for (int i = 0; i < inner; i++)
            bl[i] = DROP_BLOCK;
        rc = MPI_Type_create_hindexed(inner, bl, disp, MPI_BYTE, &dt);
        if (rc == MPI_SUCCESS && nouter > 1) {
            for (int i = 0; i < (int)nouter; i++)
                bl[i] = 1;
            rc = MPI_Type_create_hindexed((int)nouter, bl, disp, dt, &outer);
        }
        MPI_Datatype rt = nouter > 1 ? outer : dt;
        if (rc == MPI_SUCCESS && (rc = MPI_Type_commit(&rt)) == MPI_SUCCESS)
            rc = MPI_Mrecv(scratch, 1, rt, msg, MPI_STATUS_IGNORE);
        if (outer != MPI_DATATYPE_NULL)
            MPI_Type_free(&outer);
        if (dt != MPI_DATATYPE_NULL)
            MPI_Type_free(&dt);
    }
    free(bl);
    free(disp);
    free(scratch);
    return rc;
}

int hgx_mpi_mrecv_drop(MPI_Message *msg, const MPI_Status *st)
{
    MPI_Count bytes = 0;
    int rc = MPI_Get_elements_x(st, MPI_BYTE, &bytes);
    if (rc != MPI_SUCCESS)
        return rc;
    return mreqtab_mrecv_drop_bytes(msg, bytes > 0 ? bytes : 0);
}

na_return_t hgx_mpi_err_to_na(int rc)
{
    int cls = rc;
    if (rc == MPI_SUCCESS)
        return NA_SUCCESS;
    MPI_Error_class(rc, &cls);
    switch (cls) {
    case MPI_ERR_TRUNCATE:
        return NA_MSGSIZE;
    case MPI_ERR_NO_MEM:
        return NA_NOMEM;
    case MPI_ERR_RANK:
    case MPI_ERR_TAG:
    case MPI_ERR_COUNT:
        return NA_INVALID_ARG;
    default:
        return NA_PROTOCOL_ERROR;
    }
}
