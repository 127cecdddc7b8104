/**
 * @file mercury_thread_rwlock.h
 * Mercury's reader-writer locks (hg_thread_rwlock_*), inline over POSIX
 * rwlocks. init, destroy and the try calls return HG_UTIL_SUCCESS or
 * HG_UTIL_FAIL; the blocking calls return nothing, as in Mercury.
 */
#ifndef MERCURY_THREAD_RWLOCK_H
#define MERCURY_THREAD_RWLOCK_H

#include "mercury_util_config.h"

#include <pthread.h>

typedef pthread_rwlock_t hg_thread_rwlock_t; /**< a reader-writer lock */

/**
 * Initialize @p rwlock.
 * \param rwlock [IN/OUT] the lock
 * \return HG_UTIL_SUCCESS or HG_UTIL_FAIL
 */
static HG_UTIL_INLINE int hg_thread_rwlock_init(hg_thread_rwlock_t *rwlock)
{
    return pthread_rwlock_init(rwlock, NULL) ? HG_UTIL_FAIL : HG_UTIL_SUCCESS;
}

/**
 * Destroy @p rwlock, which no thread holds.
 * \param rwlock [IN/OUT] the lock
 * \return HG_UTIL_SUCCESS or HG_UTIL_FAIL
 */
static HG_UTIL_INLINE int hg_thread_rwlock_destroy(hg_thread_rwlock_t *rwlock)
{
    return pthread_rwlock_destroy(rwlock) ? HG_UTIL_FAIL : HG_UTIL_SUCCESS;
}

/** Take @p rwlock for reading, waiting for writers. */
static HG_UTIL_INLINE void hg_thread_rwlock_rdlock(hg_thread_rwlock_t *rwlock)
{
    (void)pthread_rwlock_rdlock(rwlock);
}

/**
 * Take @p rwlock for reading if no writer holds it.
 * \return HG_UTIL_SUCCESS if taken, else HG_UTIL_FAIL
 */
static HG_UTIL_INLINE int hg_thread_rwlock_try_rdlock(hg_thread_rwlock_t *rwlock)
{
    return pthread_rwlock_tryrdlock(rwlock) ? HG_UTIL_FAIL : HG_UTIL_SUCCESS;
}

/** Release a read hold of @p rwlock. */
static HG_UTIL_INLINE void hg_thread_rwlock_release_rdlock(hg_thread_rwlock_t *rwlock)
{
    (void)pthread_rwlock_unlock(rwlock);
}

/** Take @p rwlock for writing, waiting for every holder. */
static HG_UTIL_INLINE void hg_thread_rwlock_wrlock(hg_thread_rwlock_t *rwlock)
{
    (void)pthread_rwlock_wrlock(rwlock);
}

/**
 * Take @p rwlock for writing if no thread holds it.
 * \return HG_UTIL_SUCCESS if taken, else HG_UTIL_FAIL
 */
static HG_UTIL_INLINE int hg_thread_rwlock_try_wrlock(hg_thread_rwlock_t *rwlock)
{
    return pthread_rwlock_trywrlock(rwlock) ? HG_UTIL_FAIL : HG_UTIL_SUCCESS;
}

/** Release the write hold of @p rwlock. */
static HG_UTIL_INLINE void hg_thread_rwlock_release_wrlock(hg_thread_rwlock_t *rwlock)
{
    (void)pthread_rwlock_unlock(rwlock);
}

#endif /* MERCURY_THREAD_RWLOCK_H */
