/*
 * test_hg_done.c -- the completion record of one HG operation, and a request
 * class over a context.
 */
#include "test_hg_done.h"

hg_return_t test_hg_done_cb(const struct hg_cb_info *info)
{
    struct test_hg_done *d = info->arg;
    d->ret = info->ret;
    d->calls++;
    return HG_SUCCESS;
}

static int request_progress(unsigned int timeout, void *arg)
{
    return HG_Progress(arg, timeout) == HG_SUCCESS ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

static int request_trigger(unsigned int timeout, unsigned int *flag, void *arg)
{
    unsigned int n = 0;
    hg_return_t ret = HG_Trigger(arg, timeout, 1, &n);
    *flag = n > 0;
    return ret == HG_SUCCESS ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

hg_request_class_t *test_hg_request_class(hg_context_t *context)
{
    return hg_request_init(request_progress, request_trigger, context);
}
