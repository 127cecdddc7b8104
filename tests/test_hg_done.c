/*
 * test_hg_done.c -- the completion record of one HG operation.
 */
#include "test_hg_done.h"

hg_return_t test_hg_done_cb(const struct hg_cb_info *info)
{
    struct test_hg_done *d = info->arg;
    d->ret = info->ret;
    d->calls++;
    return HG_SUCCESS;
}
