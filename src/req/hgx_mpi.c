/*
 * hgx_mpi.c -- hgx for MPI applications: hgx_init_mpi on the application's
 * MPI, and hgx requests as MPI generalized requests (hgx_request_to_mpi).
 *
 * A converted request is tracked by a struct hgx_greq. It is released when
 * both (a) the hgx operation completed (on_complete hook, which calls
 * MPI_Grequest_complete) and (b) MPI called free_fn. MPI's callbacks
 * (query/free/cancel) may run inside MPI with MPI-internal locks held, so
 * they never block on hgx locks nor call back into MPI: free_fn only queues
 * the greq, and the per-context progress thread destroys the hgx request
 * under the context's progress lock; cancel_fn queues the cancel, and the
 * thread calls hgx_cancel (which may call MPI_Cancel through NA).
 */
#include "hgx_mpi.h"
#include "hgx_request_private.h"
#include "na_mpi_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define HGX_MPI_SLICE_MS 10u

struct hgx_pctx;

struct hgx_greq {
    hgx_request_t req;
    struct hgx_pctx *p;
    MPI_Request mreq;
    int source;            /* peer rank, MPI_UNDEFINED if unknown */
    bool completed;        /* hgx operation completed (under p->mu) */
    bool freed;            /* MPI free_fn called (under p->mu) */
    bool cancel_queued;    /* cancel waiting for the thread (under p->mu) */
    struct hgx_greq *next; /* on p->ready or p->cancels */
    struct hgx_greq *next_cancel;
};

/* One per HG context that has converted requests. */
struct hgx_pctx {
    hg_context_t *ctx;
    pthread_mutex_t mu;
    pthread_t thread;
    bool running;  /* thread loop active */
    bool joinable; /* thread created and not yet joined */
    bool stop;
    long outstanding;         /* greqs not yet released */
    struct hgx_greq *ready;   /* completed and freed: release */
    struct hgx_greq *cancels; /* cancel requested by MPI_Cancel */
    struct hgx_pctx *next;
};

static struct hgx_pctx *hgx_pctxs;
static pthread_mutex_t hgx_pctxs_lock = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------ init */

hg_class_t *hgx_init_mpi(MPI_Comm comm, const char *info, hg_bool_t listen)
{
    int inited = 0, finalized = 0, provided = MPI_THREAD_SINGLE;

    if (!info || (strcmp(info, "mpi+static") != 0 && strcmp(info, "mpi+dynamic") != 0)) {
        HGX_LOG_ERROR(MPI,
                      "hgx_init_mpi: info string \"%s\" refused: only \"mpi+static\" or "
                      "\"mpi+dynamic\" (use HG_Init for other plugins)",
                      info ? info : "(null)");
        return NULL;
    }
    if (comm == MPI_COMM_NULL) {
        HGX_LOG_ERROR(MPI, "hgx_init_mpi: MPI_COMM_NULL is not a communicator to run on");
        return NULL;
    }
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized) {
        HGX_LOG_ERROR(
            MPI,
            "hgx_init_mpi: the application owns MPI and must have initialized it "
            "(MPI_Init_thread) and not finalized it (initialized=%d finalized=%d)",
            inited, finalized);
        return NULL;
    }
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_SERIALIZED) {
        HGX_LOG_ERROR(
            MPI,
            "hgx_init_mpi: MPI thread level is %d, hgx needs at least "
            "MPI_THREAD_SERIALIZED (MPI_THREAD_MULTIPLE for hgx_request_to_mpi)",
            provided);
        return NULL;
    }
    na_mpi_set_comm(comm);
    hg_class_t *cls = HG_Init(info, listen);
    na_mpi_set_comm(MPI_COMM_NULL); /* later NA_Initialize calls get the default again */
    if (!cls)
        HGX_LOG_ERROR(MPI, "hgx_init_mpi: HG_Init(\"%s\") failed", info);
    return cls;
}

/* ------------------------------------------------------------ progress thread */

static void hgx_greq_release(struct hgx_greq *g)
{
    hgx_ctx_lock(g->p->ctx);
    hgx_request_free(&g->req); /* complete: destroys it */
    hgx_ctx_unlock(g->p->ctx);
    free(g);
}

static void *hgx_mpi_progress_main(void *arg)
{
    struct hgx_pctx *p = arg;

    pthread_mutex_lock(&p->mu);
    for (;;) {
        struct hgx_greq *ready = p->ready, *cancels = p->cancels;
        p->ready = p->cancels = NULL;
        for (struct hgx_greq *g = cancels; g; g = g->next_cancel)
            g->cancel_queued = false;
        pthread_mutex_unlock(&p->mu);

        /* Cancels first: a queued cancel is never on the ready list (a
         * released greq is not cancelled; see cancel_fn). */
        for (struct hgx_greq *g = cancels; g; g = g->next_cancel) {
            hgx_ctx_lock(p->ctx);
            hgx_cancel(&g->req);
            hgx_ctx_unlock(p->ctx);
        }
        long released = 0;
        while (ready) {
            struct hgx_greq *g = ready;
            ready = g->next;
            hgx_greq_release(g);
            released++;
        }

        pthread_mutex_lock(&p->mu);
        p->outstanding -= released;
        if (p->stop || (p->outstanding <= 0 && !p->ready && !p->cancels))
            break;
        pthread_mutex_unlock(&p->mu);
        hgx_progress(p->ctx, HGX_MPI_SLICE_MS);
        pthread_mutex_lock(&p->mu);
    }
    p->running = false;
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Find or create the record of ctx. */
static struct hgx_pctx *hgx_pctx_get(hg_context_t *ctx)
{
    pthread_mutex_lock(&hgx_pctxs_lock);
    struct hgx_pctx *p = hgx_pctxs;
    while (p && p->ctx != ctx)
        p = p->next;
    if (!p && (p = calloc(1, sizeof(*p))) != NULL) {
        p->ctx = ctx;
        pthread_mutex_init(&p->mu, NULL);
        p->next = hgx_pctxs;
        hgx_pctxs = p;
    }
    pthread_mutex_unlock(&hgx_pctxs_lock);
    return p;
}

/* Count one more outstanding greq, starting the thread if needed. */
static hg_return_t hgx_pctx_enter(struct hgx_pctx *p)
{
    hg_return_t ret = HG_SUCCESS;
    pthread_mutex_lock(&p->mu);
    p->outstanding++;
    if (!p->running) {
        if (p->joinable) { /* it is past its loop: reap it */
            pthread_join(p->thread, NULL);
            p->joinable = false;
        }
        p->stop = false;
        p->running = true;
        int rc = pthread_create(&p->thread, NULL, hgx_mpi_progress_main, p);
        if (rc != 0) {
            HGX_LOG_ERROR(MPI,
                          "hgx_request_to_mpi: cannot start the progress thread (%s)",
                          strerror(rc));
            p->running = false;
            p->outstanding--;
            ret = HG_NOMEM;
        } else {
            p->joinable = true;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return ret;
}

static void hgx_pctx_leave(struct hgx_pctx *p)
{
    pthread_mutex_lock(&p->mu);
    p->outstanding--;
    pthread_mutex_unlock(&p->mu);
}

static void hgx_pctx_stop(struct hgx_pctx *p)
{
    pthread_mutex_lock(&p->mu);
    if (p->outstanding > 0)
        HGX_LOG_WARNING(
            MPI,
            "hgx_mpi_progress_stop: %ld generalized request(s) still outstanding; "
            "they will not progress any more",
            p->outstanding);
    p->stop = true;
    bool join = p->joinable;
    p->joinable = false;
    pthread_mutex_unlock(&p->mu);
    if (join)
        pthread_join(p->thread, NULL);
}

hg_return_t hgx_mpi_progress_stop(hg_context_t *ctx)
{
    pthread_mutex_lock(&hgx_pctxs_lock);
    for (struct hgx_pctx *p = hgx_pctxs; p; p = p->next)
        if (!ctx || p->ctx == ctx)
            hgx_pctx_stop(p);
    pthread_mutex_unlock(&hgx_pctxs_lock);
    return HG_SUCCESS;
}

/* ------------------------------------------------------------ generalized request */

/* Mark g completed and tell MPI. Runs once, from the hgx completion. */
static void hgx_greq_complete(struct hgx_greq *g)
{
    struct hgx_pctx *p = g->p;
    MPI_Request mreq = g->mreq;
    pthread_mutex_lock(&p->mu);
    g->completed = true;
    if (g->freed) { /* MPI_Request_free came first */
        g->next = p->ready;
        p->ready = g;
    }
    pthread_mutex_unlock(&p->mu);
    MPI_Grequest_complete(mreq); /* may call free_fn */
}

static void hgx_greq_on_complete(struct hgx_request *r)
{
    hgx_greq_complete(r->on_complete_arg);
}

static int hgx_greq_query(void *extra_state, MPI_Status *status)
{
    struct hgx_greq *g = extra_state;
    /* MPI calls this after MPI_Grequest_complete; the lock (taken by
     * hgx_greq_complete after the status was written) makes that order
     * visible to this thread without relying on MPI's internals. */
    pthread_mutex_lock(&g->p->mu);
    hgx_status_t copy = g->req->status;
    pthread_mutex_unlock(&g->p->mu);
    const hgx_status_t *st = &copy;
    MPI_Status_set_elements_x(status, MPI_BYTE, (MPI_Count)st->count);
    MPI_Status_set_cancelled(status, st->hgx_cancelled_ ? 1 : 0);
    status->MPI_SOURCE = st->source >= 0 ? st->source : g->source;
    status->MPI_TAG = st->tag;
    status->MPI_ERROR =
        st->error == HG_SUCCESS || st->hgx_cancelled_ ? MPI_SUCCESS : MPI_ERR_OTHER;
    return MPI_SUCCESS;
}

static int hgx_greq_free(void *extra_state)
{
    struct hgx_greq *g = extra_state;
    struct hgx_pctx *p = g->p;
    pthread_mutex_lock(&p->mu);
    g->freed = true;
    if (g->completed) {
        g->next = p->ready;
        p->ready = g;
    }
    pthread_mutex_unlock(&p->mu);
    return MPI_SUCCESS;
}

/* Never calls hgx_cancel here: MPI may hold its own locks around this
 * callback (MPICH does), and hgx_cancel reaches MPI through NA (MPI_Cancel of
 * the posted receive), which would re-enter MPI. The progress thread calls
 * hgx_cancel at its next turn (within one slice). */
static int hgx_greq_cancel(void *extra_state, int complete)
{
    struct hgx_greq *g = extra_state;
    struct hgx_pctx *p = g->p;
    if (complete)
        return MPI_SUCCESS; /* too late: the operation won */
    pthread_mutex_lock(&p->mu);
    if (!g->cancel_queued && !g->completed) {
        g->cancel_queued = true;
        g->next_cancel = p->cancels;
        p->cancels = g;
    }
    pthread_mutex_unlock(&p->mu);
    return MPI_SUCCESS;
}

/* Rank of the peer of a forward/respond, from its "mpi+...://RANK" address. */
hg_return_t hgx_request_to_mpi(hgx_request_t req, MPI_Request *mpi_req)
{
    int inited = 0, finalized = 0, provided = MPI_THREAD_SINGLE;

    if (!mpi_req) {
        HGX_LOG_ERROR(MPI, "hgx_request_to_mpi: NULL MPI_Request pointer");
        return HG_INVALID_ARG;
    }
    if (!req) {
        *mpi_req = MPI_REQUEST_NULL;
        return HG_SUCCESS;
    }
    if (req->persistent || req->state == HGX_REQ_INACTIVE || req->on_complete) {
        HGX_LOG_ERROR(
            MPI,
            "hgx_request_to_mpi: request %p is persistent, inactive or already converted",
            (void *)req);
        return HG_INVALID_ARG;
    }
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized) {
        HGX_LOG_ERROR(
            MPI, "hgx_request_to_mpi: MPI is not initialized (or already finalized)");
        return HG_OPNOTSUPPORTED;
    }
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        HGX_LOG_ERROR(
            MPI,
            "hgx_request_to_mpi: needs MPI_THREAD_MULTIPLE (MPI provides level %d): a "
            "progress thread drives hgx while the application waits in MPI",
            provided);
        return HG_OPNOTSUPPORTED;
    }

    struct hgx_pctx *p = hgx_pctx_get(req->ctx);
    struct hgx_greq *g = calloc(1, sizeof(*g));
    if (!p || !g) {
        free(g);
        HGX_LOG_ERROR(MPI, "hgx_request_to_mpi: out of memory");
        return HG_NOMEM;
    }
    g->req = req;
    g->p = p;
    g->source = req->peer_rank >= 0 ? req->peer_rank : MPI_UNDEFINED;

    hg_return_t ret = hgx_pctx_enter(p);
    if (ret != HG_SUCCESS) {
        free(g);
        return ret;
    }
    int rc =
        MPI_Grequest_start(hgx_greq_query, hgx_greq_free, hgx_greq_cancel, g, &g->mreq);
    if (rc != MPI_SUCCESS) {
        HGX_LOG_ERROR(MPI, "hgx_request_to_mpi: MPI_Grequest_start failed (%d)", rc);
        hgx_pctx_leave(p);
        free(g);
        return HG_PROTOCOL_ERROR;
    }
    *mpi_req = g->mreq;

    /* Install the hook where no completion of this context can run. */
    hgx_ctx_lock(req->ctx);
    bool done = req->state == HGX_REQ_COMPLETE;
    if (!done) {
        req->on_complete_arg = g;
        req->on_complete = hgx_greq_on_complete;
    }
    hgx_ctx_unlock(req->ctx);
    if (done)
        hgx_greq_complete(g);
    return HG_SUCCESS;
}
