/*
 * hgx_wait.c -- the wait and test families over hgx requests.
 *
 * A call over a set scans the set once to register its requests in a
 * waitset; HG callbacks then move completed requests to the waitset's done
 * list, so each wake-up checks two list heads instead of the n requests.
 */
#include "hgx_clock.h"
#include "hgx_request_private.h"

#include <limits.h>
#include <stdlib.h>

#define HGX_WAIT_SLICE_MS 100 /* longest single block in HG_Progress */

static bool hgx_done(hgx_request_t r)
{
    return r && r->state == HGX_REQ_COMPLETE;
}

static bool hgx_args_ok(int count, hgx_request_t reqs[])
{
    if (count < 0 || (count > 0 && !reqs)) {
        HGX_LOG_ERROR(REQ, "invalid request array (count %d)", count);
        return false;
    }
    return true;
}

hg_return_t hgx_wait_timeout(hgx_request_t *req, unsigned int timeout_ms,
                             hgx_status_t *status)
{
    if (!req)
        return HG_INVALID_ARG;
    if (hgx_request_is_idle(*req)) {
        hgx_status_empty(status);
        return HG_SUCCESS;
    }
    uint64_t deadline = hgx_clock_after_ms(hgx_clock_now_ns(), timeout_ms);
    while (!hgx_done(*req)) {
        uint64_t now = hgx_clock_now_ns();
        if (timeout_ms != UINT_MAX && now >= deadline)
            return HG_TIMEOUT;
        unsigned int slice = HGX_WAIT_SLICE_MS;
        if (timeout_ms != UINT_MAX && (deadline - now) / 1000000u < slice)
            slice = (unsigned int)((deadline - now) / 1000000u);
        hgx_progress_cs((*req)->cs, slice);
    }
    hgx_request_retire(req, status);
    return HG_SUCCESS;
}

hg_return_t hgx_wait(hgx_request_t *req, hgx_status_t *status)
{
    return hgx_wait_timeout(req, UINT_MAX, status);
}

hg_return_t hgx_test(hgx_request_t *req, int *flag, hgx_status_t *status)
{
    if (!req || !flag)
        return HG_INVALID_ARG;
    if (hgx_request_is_idle(*req)) {
        *flag = 1;
        hgx_status_empty(status);
        return HG_SUCCESS;
    }
    if (!hgx_done(*req))
        hgx_progress_cs((*req)->cs, 0);
    *flag = hgx_done(*req);
    if (*flag)
        hgx_request_retire(req, status);
    return HG_SUCCESS;
}

/* ------------------------------------------------------------ waitsets */

static void wl_init(struct hgx_wlink *head)
{
    head->prev = head->next = head;
}

static bool wl_empty(const struct hgx_wlink *head)
{
    return head->next == head;
}

static void wl_unlink(struct hgx_wlink *l)
{
    l->prev->next = l->next;
    l->next->prev = l->prev;
    l->prev = l->next = l;
}

static void wl_push(struct hgx_wlink *head, struct hgx_wlink *l)
{
    l->prev = head->prev;
    l->next = head;
    head->prev->next = l;
    head->prev = l;
}

static hgx_request_t wl_req(struct hgx_wlink *l)
{
    return (hgx_request_t)((char *)l - offsetof(struct hgx_request, wlink));
}

void hgx_waitset_completed(hgx_request_t r)
{
    struct hgx_waitset *ws = r->ws;
    pthread_mutex_lock(&ws->mu);
    wl_unlink(&r->wlink);
    wl_push(&ws->done, &r->wlink);
    pthread_mutex_unlock(&ws->mu);
}

void hgx_waitset_drop(hgx_request_t r)
{
    struct hgx_waitset *ws = r->ws;
    if (!ws)
        return;
    pthread_mutex_lock(&ws->mu);
    wl_unlink(&r->wlink);
    r->ws = NULL;
    pthread_mutex_unlock(&ws->mu);
}

/* Hold the locks of context cs and of ws instead of those of *held (order:
 * context, then waitset); cs NULL releases both. */
static void hgx_ws_hold(struct hgx_waitset *ws, struct hgx_ctx_state **held,
                        struct hgx_ctx_state *cs)
{
    if (*held == cs)
        return;
    if (*held) {
        pthread_mutex_unlock(&ws->mu);
        pthread_mutex_unlock(&(*held)->mu);
    }
    *held = cs;
    if (cs) {
        pthread_mutex_lock(&cs->mu);
        pthread_mutex_lock(&ws->mu);
    }
}

/* Unregister every request still in ws and destroy ws; after it no
 * callback touches ws. O(requests left in ws). */
static void hgx_ws_release(struct hgx_waitset *ws)
{
    struct hgx_ctx_state *held = NULL;
    pthread_mutex_lock(&ws->mu);
    for (;;) {
        struct hgx_wlink *head = !wl_empty(&ws->pending) ? &ws->pending
                                 : !wl_empty(&ws->done)  ? &ws->done
                                                         : NULL;
        if (!head)
            break;
        hgx_request_t r = wl_req(head->next);
        if (r->cs != held) {
            /* lock order is context first: re-take both, then look again */
            struct hgx_ctx_state *cs = r->cs;
            pthread_mutex_unlock(&ws->mu);
            if (held)
                pthread_mutex_unlock(&held->mu);
            held = cs;
            pthread_mutex_lock(&cs->mu);
            pthread_mutex_lock(&ws->mu);
            continue;
        }
        wl_unlink(&r->wlink);
        r->ws = NULL;
    }
    pthread_mutex_unlock(&ws->mu);
    if (held)
        pthread_mutex_unlock(&held->mu);
    pthread_mutex_destroy(&ws->mu);
}

/*
 * Register the non-idle requests of reqs in ws: completed ones on its done
 * list, active ones on its pending list. With stop_at_done, stops after the
 * first completed one. Returns the number of non-idle requests seen, or -1
 * (ws released) when a request is already in a waitset.
 */
static int hgx_ws_register(struct hgx_waitset *ws, int count, hgx_request_t reqs[],
                           bool stop_at_done)
{
    struct hgx_ctx_state *held = NULL;
    int active = 0;
    pthread_mutex_init(&ws->mu, NULL);
    wl_init(&ws->pending);
    wl_init(&ws->done);
    for (int i = 0; i < count; i++) {
        hgx_request_t r = reqs[i];
        if (hgx_request_is_idle(r))
            continue;
        hgx_ws_hold(ws, &held, r->cs);
        if (r->ws) {
            hgx_ws_hold(ws, &held, NULL);
            HGX_LOG_ERROR(REQ, "request %p is twice in the set or in another call's",
                          (void *)r);
            hgx_ws_release(ws);
            return -1;
        }
        active++;
        r->ws = ws;
        r->ws_index = i;
        bool done = r->state == HGX_REQ_COMPLETE;
        wl_push(done ? &ws->done : &ws->pending, &r->wlink);
        if (done && stop_at_done)
            break;
    }
    hgx_ws_hold(ws, &held, NULL);
    return active;
}

/* Context to progress for ws, or NULL when nothing is pending. */
static struct hgx_ctx_state *hgx_ws_progress_target(struct hgx_waitset *ws,
                                                    bool need_done)
{
    struct hgx_ctx_state *cs = NULL;
    pthread_mutex_lock(&ws->mu);
    if (!wl_empty(&ws->pending) && (!need_done || wl_empty(&ws->done)))
        cs = wl_req(ws->pending.next)->cs;
    pthread_mutex_unlock(&ws->mu);
    return cs;
}

/* Progress until nothing is pending (or, with need_done, something is done). */
static void hgx_ws_wait(struct hgx_waitset *ws, bool need_done)
{
    struct hgx_ctx_state *cs;
    while ((cs = hgx_ws_progress_target(ws, need_done)) != NULL)
        hgx_progress_cs(cs, HGX_WAIT_SLICE_MS);
}

/* One progress pass unless something is done already or nothing is pending. */
static void hgx_ws_poll(struct hgx_waitset *ws, bool need_done)
{
    struct hgx_ctx_state *cs = hgx_ws_progress_target(ws, need_done);
    if (cs)
        hgx_progress_cs(cs, 0);
}

/* Take the earliest completed request off ws; its index, or -1 if none. */
static int hgx_ws_take_done(struct hgx_waitset *ws)
{
    int index = -1;
    pthread_mutex_lock(&ws->mu);
    if (!wl_empty(&ws->done)) {
        hgx_request_t r = wl_req(ws->done.next);
        wl_unlink(&r->wlink);
        r->ws = NULL;
        index = r->ws_index;
    }
    pthread_mutex_unlock(&ws->mu);
    return index;
}

/* ------------------------------------------------------------ families */

/* Retire request i into statuses[i] (or an empty status if it was idle). */
static void hgx_collect(hgx_request_t reqs[], int i, hgx_status_t statuses[])
{
    hgx_status_t *st = statuses ? &statuses[i] : NULL;
    if (hgx_request_is_idle(reqs[i]))
        hgx_status_empty(st);
    else
        hgx_request_retire(&reqs[i], st);
}

static void hgx_collect_all(int count, hgx_request_t reqs[], hgx_status_t statuses[])
{
    for (int i = 0; i < count; i++)
        hgx_collect(reqs, i, statuses);
}

hg_return_t hgx_waitall(int count, hgx_request_t reqs[], hgx_status_t statuses[])
{
    struct hgx_waitset ws;
    if (!hgx_args_ok(count, reqs))
        return HG_INVALID_ARG;
    if (hgx_ws_register(&ws, count, reqs, false) < 0)
        return HG_INVALID_ARG;
    hgx_ws_wait(&ws, false);
    hgx_ws_release(&ws);
    hgx_collect_all(count, reqs, statuses);
    return HG_SUCCESS;
}

hg_return_t hgx_testall(int count, hgx_request_t reqs[], int *flag,
                        hgx_status_t statuses[])
{
    struct hgx_waitset ws;
    if (!hgx_args_ok(count, reqs) || !flag)
        return HG_INVALID_ARG;
    if (hgx_ws_register(&ws, count, reqs, false) < 0)
        return HG_INVALID_ARG;
    hgx_ws_poll(&ws, false);
    pthread_mutex_lock(&ws.mu);
    *flag = wl_empty(&ws.pending);
    pthread_mutex_unlock(&ws.mu);
    hgx_ws_release(&ws);
    if (*flag)
        hgx_collect_all(count, reqs, statuses);
    return HG_SUCCESS;
}

/* The lowest index of a request complete already and in no other call's
 * waitset, or -1. Taking it needs no waitset: a refill loop (waitany, start
 * one, waitany, ...) mostly finds one, and registering every request of the
 * array at each call cost it a lock round per request. */
static int hgx_first_done(int count, hgx_request_t reqs[])
{
    for (int i = 0; i < count; i++) {
        hgx_request_t r = reqs[i];
        if (!hgx_done(r))
            continue;
        pthread_mutex_lock(&r->cs->mu); /* its completion callback has returned */
        bool free_to_take = r->ws == NULL;
        pthread_mutex_unlock(&r->cs->mu);
        return free_to_take ? i : -1;
    }
    return -1;
}

/* Shared by waitany (block) and testany (one progress pass). */
static hg_return_t hgx_any(int count, hgx_request_t reqs[], int *index, int *flag,
                           hgx_status_t *status, bool block)
{
    struct hgx_waitset ws;
    if (!hgx_args_ok(count, reqs) || !index)
        return HG_INVALID_ARG;
    int first = hgx_first_done(count, reqs);
    if (first >= 0) {
        *index = first;
        if (flag)
            *flag = 1;
        hgx_request_retire(&reqs[first], status);
        return HG_SUCCESS;
    }
    int active = hgx_ws_register(&ws, count, reqs, true);
    if (active < 0)
        return HG_INVALID_ARG;
    if (block)
        hgx_ws_wait(&ws, true);
    else
        hgx_ws_poll(&ws, true);
    int i = hgx_ws_take_done(&ws);
    hgx_ws_release(&ws);
    *index = i >= 0 ? i : HGX_UNDEFINED;
    if (flag)
        *flag = active == 0 || i >= 0;
    if (i >= 0)
        hgx_request_retire(&reqs[i], status);
    else
        hgx_status_empty(status);
    return HG_SUCCESS;
}

hg_return_t hgx_testany(int count, hgx_request_t reqs[], int *index, int *flag,
                        hgx_status_t *status)
{
    if (!flag)
        return HG_INVALID_ARG;
    return hgx_any(count, reqs, index, flag, status, false);
}

hg_return_t hgx_waitany(int count, hgx_request_t reqs[], int *index, hgx_status_t *status)
{
    /* One active request: hgx_wait's loop, without a waitset. */
    if (count == 1 && reqs && index && !hgx_request_is_idle(reqs[0])) {
        *index = 0;
        return hgx_wait(&reqs[0], status);
    }
    return hgx_any(count, reqs, index, NULL, status, true);
}

static int hgx_int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

hg_return_t hgx_waitsome(int incount, hgx_request_t reqs[], int *outcount, int indices[],
                         hgx_status_t statuses[])
{
    struct hgx_waitset ws;
    if (!hgx_args_ok(incount, reqs) || !outcount || (incount > 0 && !indices))
        return HG_INVALID_ARG;
    int active = hgx_ws_register(&ws, incount, reqs, false);
    if (active < 0)
        return HG_INVALID_ARG;
    hgx_ws_wait(&ws, true);
    int n = 0, i;
    while ((i = hgx_ws_take_done(&ws)) >= 0)
        indices[n++] = i;
    hgx_ws_release(&ws);
    if (active == 0) {
        *outcount = HGX_UNDEFINED;
        return HG_SUCCESS;
    }
    qsort(indices, (size_t)n, sizeof(*indices), hgx_int_cmp); /* index order */
    for (int k = 0; k < n; k++)
        hgx_request_retire(&reqs[indices[k]], statuses ? &statuses[k] : NULL);
    *outcount = n;
    return HG_SUCCESS;
}
