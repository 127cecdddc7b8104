/*
 * hgx_lock.h -- a lock for critical sections of a few instructions (private).
 *
 * The completion queues and the handle cache are locked around a handful of
 * pointer moves, several times per RPC. An uncontended pthread mutex costs two
 * atomic read-modify-writes and two calls; this lock costs one exchange to
 * take and a plain store to release, inlined. A waiter spins briefly, then
 * yields: the holder may be descheduled when threads outnumber cores. Never
 * hold it across a call that can block or take another lock for long.
 *
 * A lock made with hgx_lock_init_mode(lock, true) guards state that one
 * thread alone uses (NA_THREAD_MODE_SINGLE): taking and releasing it cost a
 * predictable branch and no atomic instruction.
 */
#ifndef HGX_LOCK_H
#define HGX_LOCK_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

/* Spins on a held lock before each yield. */
#define HGX_LOCK_SPINS 64

typedef struct {
    atomic_bool held;
    bool single; /* one thread alone: lock and unlock do nothing */
} hgx_lock_t;

static inline void hgx_lock_init_mode(hgx_lock_t *lock, bool single)
{
    atomic_init(&lock->held, false);
    lock->single = single;
}

static inline void hgx_lock_init(hgx_lock_t *lock)
{
    hgx_lock_init_mode(lock, false);
}

static inline void hgx_lock(hgx_lock_t *lock)
{
    if (lock->single)
        return;
    while (atomic_exchange_explicit(&lock->held, true, memory_order_acquire)) {
        unsigned int spins = 0;
        while (atomic_load_explicit(&lock->held, memory_order_relaxed))
            if (++spins % HGX_LOCK_SPINS == 0)
                sched_yield();
    }
}

static inline void hgx_unlock(hgx_lock_t *lock)
{
    if (lock->single)
        return;
    atomic_store_explicit(&lock->held, false, memory_order_release);
}

#endif /* HGX_LOCK_H */
