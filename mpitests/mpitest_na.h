/*
 * mpitest_na.h -- the completion record and clock the NA mpitests share.
 */
#ifndef MPITEST_NA_H
#define MPITEST_NA_H

#include "mpitest_report.h"
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

/* Progress cls/ctx until d completes or timeout_s passes; 0 on timeout. */
static inline int mpitest_wait(na_class_t *cls, na_context_t *ctx, struct done *d,
                               double timeout_s)
{
    double end = mpitest_now() + timeout_s;
    while (!d->flag) {
        NA_Progress(cls, ctx, 10);
        NA_Trigger(ctx, 64, NULL);
        if (mpitest_now() > end)
            return 0;
    }
    return 1;
}

#endif /* MPITEST_NA_H */
