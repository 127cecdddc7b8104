/**
 * @file mercury_thread.h
 * Mercury's thread calls (hg_thread_*), over POSIX threads, and CPU affinity
 * (hg_cpu_set_t, hg_thread_getaffinity, hg_thread_setaffinity) over glibc's
 * cpu_set_t and pthread_{get,set}affinity_np. As Mercury's, this header
 * defines _GNU_SOURCE when nothing did, so a program that includes it before
 * any system header also gets the CPU_* macros of <sched.h>.
 */
#ifndef MERCURY_THREAD_H
#define MERCURY_THREAD_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "mercury_util_config.h"

#include <pthread.h>
#include <sched.h>

/* A system header read before this one without _GNU_SOURCE hides glibc's
 * affinity calls (cpu_set_t itself is always there): declare them, as glibc
 * does. C++ compilers always define _GNU_SOURCE on glibc. */
#if !defined(__USE_GNU) && !defined(__cplusplus)
extern int pthread_getaffinity_np(pthread_t thread, size_t cpusetsize, cpu_set_t *cpuset);
extern int pthread_setaffinity_np(pthread_t thread, size_t cpusetsize,
                                  const cpu_set_t *cpuset);
#endif

typedef pthread_t hg_thread_t;         /**< a thread */
typedef pthread_key_t hg_thread_key_t; /**< a thread-specific data key */
typedef void *hg_thread_ret_t;         /**< what a thread function returns */
#define HG_THREAD_RETURN_TYPE hg_thread_ret_t
typedef hg_thread_ret_t (*hg_thread_func_t)(void *); /**< a thread function */
typedef cpu_set_t hg_cpu_set_t; /**< a set of CPUs (use the CPU_* macros on it) */

/** Set @p thread to a value no thread has (nothing else to initialize). */
static HG_UTIL_INLINE void hg_thread_init(hg_thread_t *thread)
{
    *thread = (hg_thread_t)0;
}

/**
 * Start a thread running @p f(@p data).
 * @return HG_UTIL_SUCCESS or HG_UTIL_FAIL.
 */
static HG_UTIL_INLINE int hg_thread_create(hg_thread_t *thread, hg_thread_func_t f,
                                           void *data)
{
    return pthread_create(thread, NULL, f, data) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** End the calling thread with return value @p ret. */
static HG_UTIL_INLINE void hg_thread_exit(hg_thread_ret_t ret)
{
    pthread_exit(ret);
}

/** Wait for @p thread to end. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_join(hg_thread_t thread)
{
    return pthread_join(thread, NULL) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** Request cancellation of @p thread. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_cancel(hg_thread_t thread)
{
    return pthread_cancel(thread) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** Give up the processor. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_yield(void)
{
    return sched_yield() == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** The calling thread. */
static HG_UTIL_INLINE hg_thread_t hg_thread_self(void)
{
    return pthread_self();
}

/** Non-zero when @p t1 and @p t2 are the same thread. */
static HG_UTIL_INLINE int hg_thread_equal(hg_thread_t t1, hg_thread_t t2)
{
    return pthread_equal(t1, t2);
}

/** Create a thread-specific data key. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_key_create(hg_thread_key_t *key)
{
    return pthread_key_create(key, NULL) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** Delete @p key. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_key_delete(hg_thread_key_t key)
{
    return pthread_key_delete(key) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** The calling thread's value for @p key (NULL if unset). */
static HG_UTIL_INLINE void *hg_thread_getspecific(hg_thread_key_t key)
{
    return pthread_getspecific(key);
}

/** Set the calling thread's value for @p key. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_thread_setspecific(hg_thread_key_t key, const void *value)
{
    return pthread_setspecific(key, value) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/**
 * Get the CPUs @p thread may run on.
 * @return HG_UTIL_SUCCESS or HG_UTIL_FAIL.
 */
static HG_UTIL_INLINE int hg_thread_getaffinity(hg_thread_t thread,
                                                hg_cpu_set_t *cpu_mask)
{
    return pthread_getaffinity_np(thread, sizeof(hg_cpu_set_t), cpu_mask) == 0
               ? HG_UTIL_SUCCESS
               : HG_UTIL_FAIL;
}

/**
 * Let @p thread run only on the CPUs of @p cpu_mask.
 * @return HG_UTIL_SUCCESS or HG_UTIL_FAIL (e.g. no CPU of the set is usable).
 */
static HG_UTIL_INLINE int hg_thread_setaffinity(hg_thread_t thread,
                                                const hg_cpu_set_t *cpu_mask)
{
    return pthread_setaffinity_np(thread, sizeof(hg_cpu_set_t), cpu_mask) == 0
               ? HG_UTIL_SUCCESS
               : HG_UTIL_FAIL;
}

#endif /* MERCURY_THREAD_H */
