/**
 * @file mercury_thread_spin.h
 * Mercury's spin lock calls (hg_thread_spin_*), over POSIX spin locks
 * (process-private).
 */
#ifndef MERCURY_THREAD_SPIN_H
#define MERCURY_THREAD_SPIN_H

#include "mercury_util_config.h"

#include <pthread.h>

typedef pthread_spinlock_t hg_thread_spin_t; /**< a spin lock */

/** Initialize @p lock, unlocked. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_spin_init(hg_thread_spin_t *lock)
{
    return pthread_spin_init(lock, PTHREAD_PROCESS_PRIVATE) == 0 ? HG_UTIL_SUCCESS
                                                                 : HG_UTIL_FAIL;
}

/** Destroy @p lock (unlocked). @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_spin_destroy(hg_thread_spin_t *lock)
{
    return pthread_spin_destroy(lock) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** Take @p lock, spinning until it is free. */
static HG_UTIL_INLINE void hg_thread_spin_lock(hg_thread_spin_t *lock)
{
    (void)pthread_spin_lock(lock);
}

/**
 * Take @p lock if it is free, without waiting.
 * \return HG_UTIL_SUCCESS if taken, HG_UTIL_FAIL if held elsewhere
 */
static HG_UTIL_INLINE int hg_thread_spin_try_lock(hg_thread_spin_t *lock)
{
    return pthread_spin_trylock(lock) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** Release @p lock. */
static HG_UTIL_INLINE void hg_thread_spin_unlock(hg_thread_spin_t *lock)
{
    (void)pthread_spin_unlock(lock);
}

#endif /* MERCURY_THREAD_SPIN_H */
