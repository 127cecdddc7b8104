/**
 * @file mercury_thread_condition.h
 * Mercury's condition variable calls (hg_thread_cond_*), over POSIX
 * condition variables on the monotonic clock.
 */
#ifndef MERCURY_THREAD_CONDITION_H
#define MERCURY_THREAD_CONDITION_H

#include "mercury_thread_mutex.h"

#include <time.h>

typedef pthread_cond_t hg_thread_cond_t; /**< a condition variable */

/** Initialize @p cond. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_cond_init(hg_thread_cond_t *cond)
{
    pthread_condattr_t a;
    int rc = pthread_condattr_init(&a);
    if (rc == 0) {
        rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
        if (rc == 0)
            rc = pthread_cond_init(cond, &a);
        pthread_condattr_destroy(&a);
    }
    return rc == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** Destroy @p cond. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_cond_destroy(hg_thread_cond_t *cond)
{
    return pthread_cond_destroy(cond) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** Wake one waiter. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_cond_signal(hg_thread_cond_t *cond)
{
    return pthread_cond_signal(cond) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** Wake every waiter. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_cond_broadcast(hg_thread_cond_t *cond)
{
    return pthread_cond_broadcast(cond) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** Wait on @p cond with @p mutex locked. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_cond_wait(hg_thread_cond_t *cond,
                                              hg_thread_mutex_t *mutex)
{
    return pthread_cond_wait(cond, mutex) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/**
 * Wait on @p cond with @p mutex locked, at most @p timeout_ms milliseconds.
 * @return HG_UTIL_SUCCESS when woken, HG_UTIL_FAIL on timeout or error.
 */
static HG_UTIL_INLINE int hg_thread_cond_timedwait(hg_thread_cond_t *cond,
                                                   hg_thread_mutex_t *mutex,
                                                   unsigned int timeout_ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += (time_t)(timeout_ms / 1000);
    t.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return pthread_cond_timedwait(cond, mutex, &t) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

#endif /* MERCURY_THREAD_CONDITION_H */
