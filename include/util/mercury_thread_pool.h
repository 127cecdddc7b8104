/**
 * @file mercury_thread_pool.h
 * Mercury's thread pool (hg_thread_pool_*): a fixed set of threads running
 * posted work items in order. Header-only; the pool's layout is private.
 */
#ifndef MERCURY_THREAD_POOL_H
#define MERCURY_THREAD_POOL_H

#include "mercury_queue.h"
#include "mercury_thread.h"
#include "mercury_thread_condition.h"

#include <stdlib.h>

/** A work item: the caller owns it until its function has run. */
struct hg_thread_work {
    hg_thread_func_t func;              /**< run as func(args) */
    void *args;                         /**< argument of func */
    STAILQ_ENTRY(hg_thread_work) entry; /**< internal */
};

typedef struct hg_thread_pool hg_thread_pool_t; /**< a thread pool */

struct hg_thread_pool {
    hg_thread_mutex_t mutex;
    hg_thread_cond_t cond;
    STAILQ_HEAD(, hg_thread_work) queue;
    int shutdown;
    unsigned int sleeping, count;
    hg_thread_t threads[];
};

/* Worker: runs queued work until shutdown with an empty queue. */
static HG_UTIL_INLINE hg_thread_ret_t hg_thread_pool_worker_(void *arg)
{
    hg_thread_pool_t *pool = (hg_thread_pool_t *)arg;
    hg_thread_mutex_lock(&pool->mutex);
    for (;;) {
        while (STAILQ_EMPTY(&pool->queue) && !pool->shutdown) {
            pool->sleeping++;
            hg_thread_cond_wait(&pool->cond, &pool->mutex);
            pool->sleeping--;
        }
        if (STAILQ_EMPTY(&pool->queue))
            break;
        struct hg_thread_work *w = STAILQ_FIRST(&pool->queue);
        STAILQ_REMOVE_HEAD(&pool->queue, entry);
        hg_thread_mutex_unlock(&pool->mutex);
        w->func(w->args);
        hg_thread_mutex_lock(&pool->mutex);
    }
    hg_thread_mutex_unlock(&pool->mutex);
    return NULL;
}

/**
 * Destroy @p pool: work already posted runs first, then the threads are
 * joined. @return HG_UTIL_SUCCESS (NULL is accepted).
 */
static HG_UTIL_INLINE int hg_thread_pool_destroy(hg_thread_pool_t *pool)
{
    if (!pool)
        return HG_UTIL_SUCCESS;
    hg_thread_mutex_lock(&pool->mutex);
    pool->shutdown = 1;
    hg_thread_cond_broadcast(&pool->cond);
    hg_thread_mutex_unlock(&pool->mutex);
    for (unsigned int i = 0; i < pool->count; i++)
        hg_thread_join(pool->threads[i]);
    hg_thread_cond_destroy(&pool->cond);
    hg_thread_mutex_destroy(&pool->mutex);
    free(pool);
    return HG_UTIL_SUCCESS;
}

/**
 * Create a pool of @p thread_count threads (at least 1) in @p pool.
 * @return HG_UTIL_SUCCESS or HG_UTIL_FAIL (nothing is left behind).
 */
static HG_UTIL_INLINE int hg_thread_pool_init(unsigned int thread_count,
                                              hg_thread_pool_t **pool)
{
    hg_thread_pool_t *p;
    if (!pool || thread_count == 0 ||
        !(p = (hg_thread_pool_t *)calloc(1, sizeof(*p) +
                                                thread_count * sizeof(hg_thread_t))))
        return HG_UTIL_FAIL;
    STAILQ_INIT(&p->queue);
    if (hg_thread_mutex_init(&p->mutex) != HG_UTIL_SUCCESS) {
        free(p);
        return HG_UTIL_FAIL;
    }
    if (hg_thread_cond_init(&p->cond) != HG_UTIL_SUCCESS) {
        hg_thread_mutex_destroy(&p->mutex);
        free(p);
        return HG_UTIL_FAIL;
    }
    for (; p->count < thread_count; p->count++)
        if (hg_thread_create(&p->threads[p->count], hg_thread_pool_worker_, p) !=
            HG_UTIL_SUCCESS) {
            hg_thread_pool_destroy(p);
            return HG_UTIL_FAIL;
        }
    *pool = p;
    return HG_UTIL_SUCCESS;
}

/**
 * Queue @p work; an idle thread runs work->func(work->args).
 * @return HG_UTIL_SUCCESS, or HG_UTIL_FAIL for a NULL pool, work or
 *         function, or a pool being destroyed.
 */
static HG_UTIL_INLINE int hg_thread_pool_post(hg_thread_pool_t *pool,
                                              struct hg_thread_work *work)
{
    if (!pool || !work || !work->func)
        return HG_UTIL_FAIL;
    hg_thread_mutex_lock(&pool->mutex);
    int ret = pool->shutdown ? HG_UTIL_FAIL : HG_UTIL_SUCCESS;
    if (ret == HG_UTIL_SUCCESS) {
        STAILQ_INSERT_TAIL(&pool->queue, work, entry);
        if (pool->sleeping)
            hg_thread_cond_signal(&pool->cond);
    }
    hg_thread_mutex_unlock(&pool->mutex);
    return ret;
}

#endif /* MERCURY_THREAD_POOL_H */
