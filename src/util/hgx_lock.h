/*
 * hgx_lock.h -- the one lock type of the library, in three modes (private).
 *
 * HGX_LOCK_SPIN guards critical sections of a few instructions: the
 * completion queues and the handle cache are locked around a handful of
 * pointer moves, several times per RPC. An uncontended pthread mutex costs two
 * atomic read-modify-writes and two calls; the spin mode costs one exchange to
 * take and a plain store to release, inlined. A waiter spins briefly, then
 * yields: the holder may be descheduled when threads outnumber cores. Never
 * hold a spin lock across a call that can block or take another lock for long
 * (a transport's progress call, a blocking MPI call): use HGX_LOCK_MUTEX there,
 * whose waiters sleep in the kernel instead of burning the holder's CPU.
 *
 * HGX_LOCK_NONE guards state that one thread alone uses
 * (NA_THREAD_MODE_SINGLE): taking and releasing it cost a predictable branch
 * and no atomic instruction.
 */
#ifndef HGX_LOCK_H
#define HGX_LOCK_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

/* Spins on a held lock before each yield. */
#define HGX_LOCK_SPINS 64

enum hgx_lock_mode {
    HGX_LOCK_SPIN,  /* short sections, never across a blocking call */
    HGX_LOCK_MUTEX, /* sections that may block or run long */
    HGX_LOCK_NONE,  /* one thread alone: lock and unlock do nothing */
};

typedef struct {
    atomic_bool held; /* HGX_LOCK_SPIN */
    unsigned char mode;
    pthread_mutex_t mutex; /* HGX_LOCK_MUTEX */
} hgx_lock_t;

/* A static lock of HGX_LOCK_MUTEX mode, usable before any code runs (a
 * process-wide lock); it is never finalized. */
#define HGX_LOCK_MUTEX_INITIALIZER                                                       \
    {                                                                                    \
        .held = false, .mode = HGX_LOCK_MUTEX, .mutex = PTHREAD_MUTEX_INITIALIZER        \
    }

static inline void hgx_lock_init_as(hgx_lock_t *lock, enum hgx_lock_mode mode)
{
    atomic_init(&lock->held, false);
    lock->mode = (unsigned char)mode;
    if (mode == HGX_LOCK_MUTEX)
        pthread_mutex_init(&lock->mutex, NULL);
}

/* A spin lock, or no lock at all when single (NA_THREAD_MODE_SINGLE). */
static inline void hgx_lock_init_mode(hgx_lock_t *lock, bool single)
{
    hgx_lock_init_as(lock, single ? HGX_LOCK_NONE : HGX_LOCK_SPIN);
}

static inline void hgx_lock_init(hgx_lock_t *lock)
{
    hgx_lock_init_as(lock, HGX_LOCK_SPIN);
}

/* Release what init took (the mutex of HGX_LOCK_MUTEX); the lock must be free. */
static inline void hgx_lock_fini(hgx_lock_t *lock)
{
    if (lock->mode == HGX_LOCK_MUTEX)
        pthread_mutex_destroy(&lock->mutex);
}

static inline void hgx_lock(hgx_lock_t *lock)
{
    if (lock->mode == HGX_LOCK_NONE)
        return;
    if (__builtin_expect(lock->mode == HGX_LOCK_MUTEX, 0)) {
        pthread_mutex_lock(&lock->mutex);
        return;
    }
    while (atomic_exchange_explicit(&lock->held, true, memory_order_acquire)) {
        unsigned int spins = 0;
        while (atomic_load_explicit(&lock->held, memory_order_relaxed))
            if (++spins % HGX_LOCK_SPINS == 0)
                sched_yield();
    }
}

/* Take the lock if it is free; true when taken (always for HGX_LOCK_NONE). */
static inline bool hgx_trylock(hgx_lock_t *lock)
{
    if (lock->mode == HGX_LOCK_NONE)
        return true;
    if (lock->mode == HGX_LOCK_MUTEX)
        return pthread_mutex_trylock(&lock->mutex) == 0;
    return !atomic_load_explicit(&lock->held, memory_order_relaxed) &&
           !atomic_exchange_explicit(&lock->held, true, memory_order_acquire);
}

static inline void hgx_unlock(hgx_lock_t *lock)
{
    if (lock->mode == HGX_LOCK_NONE)
        return;
    if (__builtin_expect(lock->mode == HGX_LOCK_MUTEX, 0)) {
        pthread_mutex_unlock(&lock->mutex);
        return;
    }
    atomic_store_explicit(&lock->held, false, memory_order_release);
}

#endif /* HGX_LOCK_H */
