/*
 * mpitest_na.h -- the completion record and clock the NA mpitests share.
 */
#ifndef MPITEST_NA_H
#define MPITEST_NA_H

#include "na.h"

#include <time.h>

/* Filled by mpitest_cb when an NA operation completes. */
struct done {
    volatile int flag;
    na_return_t ret;
    size_t size;
    na_addr_t *src;
    na_tag_t tag;
};

static inline void mpitest_cb(const struct na_cb_info *info)
{
    struct done *d = info->arg;
    d->ret = info->ret;
    if (info->type == NA_CB_RECV_UNEXPECTED) {
        d->size = info->info.recv_unexpected.actual_buf_size;
        d->src = info->info.recv_unexpected.source;
        d->tag = info->info.recv_unexpected.tag;
    } else if (info->type == NA_CB_RECV_EXPECTED) {
        d->size = info->info.recv_expected.actual_buf_size;
    }
    d->flag = 1;
}

static inline double mpitest_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif /* MPITEST_NA_H */
