/**
 * @file mercury_thread_mutex.h
 * Mercury's mutex calls (hg_thread_mutex_*), over POSIX mutexes.
 */
#ifndef MERCURY_THREAD_MUTEX_H
#define MERCURY_THREAD_MUTEX_H

#include "mercury_util_config.h"

#include <pthread.h>

typedef pthread_mutex_t hg_thread_mutex_t; /**< a mutex */
#define HG_THREAD_MUTEX_INITIALIZER PTHREAD_MUTEX_INITIALIZER

/** Initialize @p mutex. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_mutex_init(hg_thread_mutex_t *mutex)
{
    return pthread_mutex_init(mutex, NULL) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** Initialize @p mutex for short critical sections (same as hg_thread_mutex_init here).
 */
static HG_UTIL_INLINE int hg_thread_mutex_init_fast(hg_thread_mutex_t *mutex)
{
    return hg_thread_mutex_init(mutex);
}

/** Destroy @p mutex. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_mutex_destroy(hg_thread_mutex_t *mutex)
{
    return pthread_mutex_destroy(mutex) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** Lock @p mutex, waiting as needed. */
static HG_UTIL_INLINE void hg_thread_mutex_lock(hg_thread_mutex_t *mutex)
{
    (void)pthread_mutex_lock(mutex);
}

/** Lock @p mutex if free. @return HG_UTIL_SUCCESS if locked, else HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_mutex_try_lock(hg_thread_mutex_t *mutex)
{
    return pthread_mutex_trylock(mutex) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** Unlock @p mutex. */
static HG_UTIL_INLINE void hg_thread_mutex_unlock(hg_thread_mutex_t *mutex)
{
    (void)pthread_mutex_unlock(mutex);
}

#endif /* MERCURY_THREAD_MUTEX_H */
