/*
 * hgx_request.c -- creating, starting, cancelling and freeing hgx requests,
 * their HG completion callbacks, their deadlines and per-context progress.
 */
#include "hgx_clock.h"
#include "hgx_request_private.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static hgx_request_t hgx_request_alloc(enum hgx_req_kind kind, hg_context_t *ctx)
{
    struct hgx_ctx_state *cs = hgx_ctx_state_get(ctx);
    hgx_request_t r = cs ? calloc(1, sizeof(*r)) : NULL;
    if (!r) {
        HGX_LOG_ERROR(REQ, "out of memory for a request");
        return NULL;
    }
    r->kind = kind;
    r->ctx = ctx;
    r->cs = cs;
    r->timer.slot = HGX_TIMER_NONE;
    r->peer_rank = -1;
    return r;
}

/* Under timer_mu, after any change to the deadlines of cs. */
static void hgx_deadlines_note(struct hgx_ctx_state *cs)
{
    atomic_store(&cs->any_deadline, hgx_timer_first(&cs->deadlines) != NULL);
}

/* Disarm r's deadline. Most requests never have one: then no lock is taken
 * (see hgx_request_set_timeout for why a racing deadline cannot be missed). */
static void hgx_deadline_clear(hgx_request_t r)
{
    struct hgx_ctx_state *cs = r->cs;
    if (!atomic_load(&cs->any_deadline))
        return;
    pthread_mutex_lock(&cs->timer_mu);
    hgx_timer_cancel(&cs->deadlines, &r->timer);
    hgx_deadlines_note(cs);
    pthread_mutex_unlock(&cs->timer_mu);
}

static void hgx_request_destroy(hgx_request_t r)
{
    hgx_deadline_clear(r);
    if (r->ws) {
        pthread_mutex_lock(&r->cs->mu);
        hgx_waitset_drop(r);
        pthread_mutex_unlock(&r->cs->mu);
    }
    if (r->handle)
        HG_Destroy(r->handle);
    free(r);
}

/* The one place where an active request becomes complete. */
static void hgx_request_finish(hgx_request_t r, hg_return_t ret, hg_size_t count)
{
    pthread_mutex_t *mu = &r->cs->mu; /* held already when run by hgx_progress */
    pthread_mutex_lock(mu);
    r->status.hgx_cancelled_ = ret == HG_CANCELED;
    r->status.error = ret == HG_CANCELED && r->timed_out ? HG_TIMEOUT : ret;
    r->status.count = ret == HG_SUCCESS ? count : 0;
    r->state = HGX_REQ_COMPLETE;
    hgx_deadline_clear(r); /* after the state: pairs with hgx_request_set_timeout */
    if (r->ws)
        hgx_waitset_completed(r);
    if (r->on_complete)
        r->on_complete(r);
    if (r->free_on_complete)
        hgx_request_destroy(r);
    pthread_mutex_unlock(mu);
}

static hg_return_t hgx_rpc_cb(const struct hg_cb_info *info)
{
    hgx_request_finish(info->arg, info->ret, 0);
    return HG_SUCCESS;
}

static hg_return_t hgx_bulk_cb(const struct hg_cb_info *info)
{
    hgx_request_t r = info->arg;
    r->bulk_op = HG_OP_ID_NULL;
    hgx_request_finish(r, info->ret, r->bulk_size);
    return HG_SUCCESS;
}

/* MPI rank of an mpi+ peer ("mpi+static://RANK"), else -1; computed once per
 * request, and only over MPI: formatting the address costs as much as a
 * quarter of a small shared-memory RPC. */
static int hgx_addr_rank(struct hgx_ctx_state *cs, hg_class_t *cls, hg_addr_t addr)
{
    if (!cls || !addr || !cs->over_mpi)
        return -1;
    char buf[256];
    hg_size_t size = sizeof(buf);
    if (HG_Addr_to_string(cls, buf, &size, addr) != HG_SUCCESS)
        return -1;
    buf[sizeof(buf) - 1] = '\0';
    const char *s = strstr(buf, "://");
    if (strncmp(buf, "mpi+", 4) != 0 || !s)
        return -1;
    char *end;
    long rank = strtol(s + 3, &end, 10);
    return end != s + 3 && *end == '\0' && rank >= 0 && rank < 0x7fffffff ? (int)rank
                                                                          : -1;
}

static void hgx_status_prepare(hgx_request_t r, int tag)
{
    hgx_status_empty(&r->status);
    r->status.tag = tag;
    r->status.source = r->peer_rank;
    r->cancel_requested = r->timed_out = false;
}

static hg_return_t hgx_forward_start(hgx_request_t r)
{
    const struct hg_info *info = HG_Get_info(r->handle);
    hgx_status_prepare(r, info ? (int)(info->id & 0x7fffffff) : 0);
    r->state = HGX_REQ_ACTIVE;
    hg_return_t ret = HG_Forward(r->handle, hgx_rpc_cb, r, r->in_struct);
    if (ret != HG_SUCCESS) {
        HGX_LOG_ERROR(REQ, "HG_Forward failed: %s", HG_Error_to_string(ret));
        r->state = HGX_REQ_INACTIVE;
    }
    return ret;
}

static hg_return_t hgx_handle_request(hg_handle_t h, void *in, bool persistent,
                                      enum hgx_req_kind kind, hgx_request_t *req)
{
    if (!h || !req) {
        HGX_LOG_ERROR(REQ, "NULL handle or request pointer");
        return HG_INVALID_ARG;
    }
    const struct hg_info *info = HG_Get_info(h);
    if (!info) {
        HGX_LOG_ERROR(REQ, "invalid handle");
        return HG_INVALID_ARG;
    }
    hgx_request_t r = hgx_request_alloc(kind, info->context);
    if (!r)
        return HG_NOMEM;
    hg_return_t ret = HG_Ref_incr(h);
    if (ret != HG_SUCCESS) {
        free(r);
        return ret;
    }
    r->handle = h;
    r->peer_rank = hgx_addr_rank(r->cs, info->hg_class, info->addr);
    r->in_struct = in;
    r->persistent = persistent;
    *req = r;
    return HG_SUCCESS;
}

hg_return_t hgx_iforward(hg_handle_t h, void *in_struct, hgx_request_t *req)
{
    hg_return_t ret = hgx_handle_request(h, in_struct, false, HGX_REQ_FORWARD, req);
    if (ret != HG_SUCCESS)
        return ret;
    ret = hgx_forward_start(*req);
    if (ret != HG_SUCCESS) {
        hgx_request_destroy(*req);
        *req = HGX_REQUEST_NULL;
    }
    return ret;
}

hg_return_t hgx_forward_init(hg_handle_t h, void *in_struct, hgx_request_t *req)
{
    hg_return_t ret = hgx_handle_request(h, in_struct, true, HGX_REQ_FORWARD, req);
    if (ret == HG_SUCCESS)
        hgx_status_empty(&(*req)->status);
    return ret;
}

hg_return_t hgx_irespond(hg_handle_t h, void *out_struct, hgx_request_t *req)
{
    hg_return_t ret = hgx_handle_request(h, NULL, false, HGX_REQ_RESPOND, req);
    if (ret != HG_SUCCESS)
        return ret;
    hgx_request_t r = *req;
    const struct hg_info *info = HG_Get_info(h);
    hgx_status_prepare(r, (int)(info->id & 0x7fffffff));
    r->state = HGX_REQ_ACTIVE;
    ret = HG_Respond(h, hgx_rpc_cb, r, out_struct);
    if (ret != HG_SUCCESS) {
        HGX_LOG_ERROR(REQ, "HG_Respond failed: %s", HG_Error_to_string(ret));
        hgx_request_destroy(r);
        *req = HGX_REQUEST_NULL;
    }
    return ret;
}

hg_return_t hgx_ibulk_transfer(hg_context_t *ctx, hg_bulk_op_t op, hg_addr_t origin_addr,
                               hg_bulk_t origin, hg_size_t origin_offset, hg_bulk_t local,
                               hg_size_t local_offset, hg_size_t size, hgx_request_t *req)
{
    if (!ctx || !req) {
        HGX_LOG_ERROR(REQ, "NULL context or request pointer");
        return HG_INVALID_ARG;
    }
    hgx_request_t r = hgx_request_alloc(HGX_REQ_BULK, ctx);
    if (!r)
        return HG_NOMEM;
    r->bulk_size = size;
    r->bulk_dir = op;
    r->peer_rank = hgx_addr_rank(r->cs, HG_Context_get_class(ctx), origin_addr);
    hgx_status_prepare(r, (int)op);
    r->state = HGX_REQ_ACTIVE;
    hg_return_t ret =
        HG_Bulk_transfer(ctx, hgx_bulk_cb, r, op, origin_addr, origin, origin_offset,
                         local, local_offset, size, &r->bulk_op);
    if (ret != HG_SUCCESS) {
        HGX_LOG_ERROR(REQ, "HG_Bulk_transfer failed: %s", HG_Error_to_string(ret));
        free(r);
        *req = HGX_REQUEST_NULL;
        return ret;
    }
    *req = r;
    return HG_SUCCESS;
}

hg_return_t hgx_start(hgx_request_t *req)
{
    if (!req || !*req || !(*req)->persistent) {
        HGX_LOG_ERROR(REQ, "hgx_start needs a persistent request (hgx_forward_init)");
        return HG_INVALID_ARG;
    }
    if ((*req)->state != HGX_REQ_INACTIVE) {
        HGX_LOG_ERROR(REQ, "request %p is already active", (void *)*req);
        return HG_BUSY;
    }
    return hgx_forward_start(*req);
}

hg_return_t hgx_startall(int count, hgx_request_t reqs[])
{
    if (count < 0 || (count > 0 && !reqs))
        return HG_INVALID_ARG;
    for (int i = 0; i < count; i++) {
        hg_return_t ret = hgx_start(&reqs[i]);
        if (ret != HG_SUCCESS)
            return ret;
    }
    return HG_SUCCESS;
}

/* Ask HG to cancel; the callback reports the outcome. */
static void hgx_request_cancel_op(hgx_request_t r)
{
    if (r->state != HGX_REQ_ACTIVE || r->cancel_requested)
        return;
    r->cancel_requested = true;
    hg_return_t ret =
        r->kind == HGX_REQ_BULK ? HG_Bulk_cancel(r->bulk_op) : HG_Cancel(r->handle);
    if (ret != HG_SUCCESS)
        HGX_LOG_ERROR(REQ, "cancel of request %p failed: %s", (void *)r,
                      HG_Error_to_string(ret));
}

hg_return_t hgx_cancel(hgx_request_t *req)
{
    if (!req)
        return HG_INVALID_ARG;
    if (*req)
        hgx_request_cancel_op(*req);
    return HG_SUCCESS;
}

hg_return_t hgx_request_set_timeout(hgx_request_t req, unsigned int timeout_ms)
{
    if (!req)
        return HG_INVALID_ARG;
    int rc = 0;
    struct hgx_ctx_state *cs = req->cs;
    pthread_mutex_lock(&cs->timer_mu);
    /* Flag first, state second; the completing side stores the state first
     * and reads the flag second (both sequentially consistent): either it
     * sees the flag and disarms under timer_mu after us, or we see it
     * complete and arm nothing. */
    atomic_store(&cs->any_deadline, true);
    if (req->state != HGX_REQ_ACTIVE)
        rc = -2;
    else if (timeout_ms == 0)
        hgx_timer_cancel(&cs->deadlines, &req->timer);
    else
        rc = hgx_timer_set(&cs->deadlines, &req->timer,
                           hgx_clock_after_ms(hgx_clock_now_ns(), timeout_ms));
    hgx_deadlines_note(cs);
    pthread_mutex_unlock(&cs->timer_mu);
    if (rc == -2)
        HGX_LOG_ERROR(REQ, "a deadline needs an active request");
    return rc == 0 ? HG_SUCCESS : rc == -2 ? HG_INVALID_ARG : HG_NOMEM;
}

/* Cancel every request of cs whose deadline passed (cs->mu held, so none of
 * them can complete meanwhile); returns ms to the next deadline, at most cap_ms. */
static unsigned int hgx_deadlines_fire(struct hgx_ctx_state *cs, unsigned int cap_ms)
{
    if (!atomic_load(&cs->any_deadline))
        return cap_ms;
    uint64_t now = hgx_clock_now_ns();
    for (;;) {
        pthread_mutex_lock(&cs->timer_mu);
        struct hgx_timer *t = hgx_timer_first(&cs->deadlines);
        if (!t || t->deadline_ns > now) {
            uint64_t next = t ? (t->deadline_ns - now + 999999u) / 1000000u : cap_ms;
            pthread_mutex_unlock(&cs->timer_mu);
            return next < cap_ms ? (unsigned int)next : cap_ms;
        }
        hgx_timer_cancel(&cs->deadlines, t);
        hgx_deadlines_note(cs);
        pthread_mutex_unlock(&cs->timer_mu);
        hgx_request_t r =
            (hgx_request_t)((char *)t - offsetof(struct hgx_request, timer));
        r->timed_out = true;
        hgx_request_cancel_op(r);
    }
}

static struct hgx_ctx_state *hgx_ctx_states;
static pthread_mutex_t hgx_ctx_states_lock = PTHREAD_MUTEX_INITIALIZER;

static struct hgx_ctx_state *hgx_ctx_state_new(hg_context_t *ctx)
{
    struct hgx_ctx_state *cs = calloc(1, sizeof(*cs));
    if (!cs)
        return NULL;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    /* recursive: a handler run by HG_Trigger may itself wait on a request */
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&cs->mu, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_mutex_init(&cs->timer_mu, NULL);
    hgx_timer_heap_init(&cs->deadlines);
    cs->ctx = ctx;
    const char *name = HG_Class_get_name(HG_Context_get_class(ctx));
    cs->over_mpi = name && strcmp(name, "mpi") == 0;
    return cs;
}

struct hgx_ctx_state *hgx_ctx_state_get(hg_context_t *ctx)
{
    /* Every request creation looks its context up: remember the last one per
     * thread (entries are never freed, so the pointer stays valid). */
    static _Thread_local struct hgx_ctx_state *last;
    if (last && last->ctx == ctx)
        return last;
    pthread_mutex_lock(&hgx_ctx_states_lock);
    struct hgx_ctx_state *cs = hgx_ctx_states;
    while (cs && cs->ctx != ctx)
        cs = cs->next;
    if (!cs && (cs = hgx_ctx_state_new(ctx)) != NULL) {
        cs->next = hgx_ctx_states;
        hgx_ctx_states = cs;
    }
    pthread_mutex_unlock(&hgx_ctx_states_lock);
    if (!cs)
        HGX_LOG_ERROR(REQ, "out of memory for the state of context %p", (void *)ctx);
    last = cs;
    return cs;
}

void hgx_ctx_lock(hg_context_t *ctx)
{
    struct hgx_ctx_state *cs = hgx_ctx_state_get(ctx);
    if (cs)
        pthread_mutex_lock(&cs->mu);
}

void hgx_ctx_unlock(hg_context_t *ctx)
{
    struct hgx_ctx_state *cs = hgx_ctx_state_get(ctx);
    if (cs)
        pthread_mutex_unlock(&cs->mu);
}

void hgx_progress_cs(struct hgx_ctx_state *cs, unsigned int timeout_ms)
{
    unsigned int count = 0;
    pthread_mutex_lock(&cs->mu);
    timeout_ms = hgx_deadlines_fire(cs, timeout_ms);
    HG_Trigger(cs->ctx, 0, UINT32_MAX, &count);
    if (count == 0) {
        HG_Progress(cs->ctx, timeout_ms);
        HG_Trigger(cs->ctx, 0, UINT32_MAX, &count);
        hgx_deadlines_fire(cs, 0);
    }
    pthread_mutex_unlock(&cs->mu);
}

void hgx_progress(hg_context_t *ctx, unsigned int timeout_ms)
{
    struct hgx_ctx_state *cs = hgx_ctx_state_get(ctx);
    if (cs)
        hgx_progress_cs(cs, timeout_ms);
}

void hgx_status_empty(hgx_status_t *status)
{
    if (!status)
        return;
    status->error = HG_SUCCESS;
    status->count = 0;
    status->source = -1;
    status->tag = -1;
    status->hgx_cancelled_ = 0;
}

bool hgx_request_is_idle(hgx_request_t req)
{
    return !req || req->state == HGX_REQ_INACTIVE;
}

void hgx_request_retire(hgx_request_t *req, hgx_status_t *status)
{
    hgx_request_t r = *req;
    if (status)
        *status = r->status;
    if (r->persistent) {
        r->state = HGX_REQ_INACTIVE;
        return;
    }
    hgx_request_destroy(r);
    *req = HGX_REQUEST_NULL;
}

hg_return_t hgx_request_free(hgx_request_t *req)
{
    if (!req)
        return HG_INVALID_ARG;
    hgx_request_t r = *req;
    if (!r)
        return HG_SUCCESS;
    *req = HGX_REQUEST_NULL;
    if (r->state == HGX_REQ_ACTIVE) {
        r->persistent = false;
        r->free_on_complete = true;
        return HG_SUCCESS;
    }
    hgx_request_destroy(r);
    return HG_SUCCESS;
}

hg_return_t hgx_test_cancelled(const hgx_status_t *status, int *flag)
{
    if (!status || !flag)
        return HG_INVALID_ARG;
    *flag = status->hgx_cancelled_;
    return HG_SUCCESS;
}

hg_return_t hgx_get_count(const hgx_status_t *status, hg_size_t *count)
{
    if (!status || !count)
        return HG_INVALID_ARG;
    *count = status->count;
    return HG_SUCCESS;
}
