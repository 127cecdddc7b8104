/*
 * hgx_wait.c -- the wait and test families over hgx requests.
 */
#include "hgx_request_private.h"

#include <limits.h>

#define HGX_WAIT_SLICE_MS 100 /* longest single block in HG_Progress */

static bool hgx_done(hgx_request_t r)
{
    return r && r->state == HGX_REQ_COMPLETE;
}

/* Progress the context of the first still active request of the set. */
static void hgx_progress_any(int count, hgx_request_t reqs[], unsigned int timeout_ms)
{
    for (int i = 0; i < count; i++)
        if (reqs[i] && reqs[i]->state == HGX_REQ_ACTIVE) {
            hgx_progress(reqs[i]->ctx, timeout_ms);
            return;
        }
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
    uint64_t deadline = hgx_now_ns() + (uint64_t)timeout_ms * 1000000u;
    while (!hgx_done(*req)) {
        uint64_t now = hgx_now_ns();
        if (timeout_ms != UINT_MAX && now >= deadline)
            return HG_TIMEOUT;
        unsigned int slice = HGX_WAIT_SLICE_MS;
        if (timeout_ms != UINT_MAX && (deadline - now) / 1000000u < slice)
            slice = (unsigned int)((deadline - now) / 1000000u);
        hgx_progress((*req)->ctx, slice);
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
        hgx_progress((*req)->ctx, 0);
    *flag = hgx_done(*req);
    if (*flag)
        hgx_request_retire(req, status);
    return HG_SUCCESS;
}

/* Retire request i into statuses[i] (or an empty status if it was idle). */
static void hgx_collect(hgx_request_t reqs[], int i, hgx_status_t statuses[])
{
    hgx_status_t *st = statuses ? &statuses[i] : NULL;
    if (hgx_request_is_idle(reqs[i]))
        hgx_status_empty(st);
    else
        hgx_request_retire(&reqs[i], st);
}

static bool hgx_all_done(int count, hgx_request_t reqs[])
{
    for (int i = 0; i < count; i++)
        if (!hgx_request_is_idle(reqs[i]) && !hgx_done(reqs[i]))
            return false;
    return true;
}

hg_return_t hgx_waitall(int count, hgx_request_t reqs[], hgx_status_t statuses[])
{
    if (!hgx_args_ok(count, reqs))
        return HG_INVALID_ARG;
    while (!hgx_all_done(count, reqs))
        hgx_progress_any(count, reqs, HGX_WAIT_SLICE_MS);
    for (int i = 0; i < count; i++)
        hgx_collect(reqs, i, statuses);
    return HG_SUCCESS;
}

hg_return_t hgx_testall(int count, hgx_request_t reqs[], int *flag,
                        hgx_status_t statuses[])
{
    if (!hgx_args_ok(count, reqs) || !flag)
        return HG_INVALID_ARG;
    if (!hgx_all_done(count, reqs))
        hgx_progress_any(count, reqs, 0);
    *flag = hgx_all_done(count, reqs);
    if (*flag)
        for (int i = 0; i < count; i++)
            hgx_collect(reqs, i, statuses);
    return HG_SUCCESS;
}

/* Index of the first completed request, -1 if none; *active counts live ones. */
static int hgx_find_done(int count, hgx_request_t reqs[], int *active)
{
    *active = 0;
    for (int i = 0; i < count; i++) {
        if (hgx_request_is_idle(reqs[i]))
            continue;
        (*active)++;
        if (hgx_done(reqs[i]))
            return i;
    }
    return -1;
}

hg_return_t hgx_testany(int count, hgx_request_t reqs[], int *index, int *flag,
                        hgx_status_t *status)
{
    int active, i;
    if (!hgx_args_ok(count, reqs) || !index || !flag)
        return HG_INVALID_ARG;
    i = hgx_find_done(count, reqs, &active);
    if (i < 0 && active > 0) {
        hgx_progress_any(count, reqs, 0);
        i = hgx_find_done(count, reqs, &active);
    }
    *index = HGX_UNDEFINED;
    *flag = active == 0 || i >= 0;
    if (i >= 0) {
        *index = i;
        hgx_request_retire(&reqs[i], status);
    } else {
        hgx_status_empty(status);
    }
    return HG_SUCCESS;
}

hg_return_t hgx_waitany(int count, hgx_request_t reqs[], int *index, hgx_status_t *status)
{
    int active, i;
    if (!hgx_args_ok(count, reqs) || !index)
        return HG_INVALID_ARG;
    while ((i = hgx_find_done(count, reqs, &active)) < 0 && active > 0)
        hgx_progress_any(count, reqs, HGX_WAIT_SLICE_MS);
    if (i < 0) {
        *index = HGX_UNDEFINED;
        hgx_status_empty(status);
        return HG_SUCCESS;
    }
    *index = i;
    hgx_request_retire(&reqs[i], status);
    return HG_SUCCESS;
}

hg_return_t hgx_waitsome(int incount, hgx_request_t reqs[], int *outcount, int indices[],
                         hgx_status_t statuses[])
{
    int active;
    if (!hgx_args_ok(incount, reqs) || !outcount || (incount > 0 && !indices))
        return HG_INVALID_ARG;
    while (hgx_find_done(incount, reqs, &active) < 0 && active > 0)
        hgx_progress_any(incount, reqs, HGX_WAIT_SLICE_MS);
    if (active == 0) {
        *outcount = HGX_UNDEFINED;
        return HG_SUCCESS;
    }
    int n = 0;
    for (int i = 0; i < incount; i++)
        if (hgx_done(reqs[i])) {
            indices[n] = i;
            hgx_request_retire(&reqs[i], statuses ? &statuses[n] : NULL);
            n++;
        }
    *outcount = n;
    return HG_SUCCESS;
}
