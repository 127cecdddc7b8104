/*
 * hgx_lock.h -- a lock for critical sections of a few instructions (private).
 *
 * The completion queues and the handle cache are locked around a handful of
 * pointer moves, several times per RPC. An uncontended pthread mutex costs two
 * atomic read-modify-writes and two calls; this lock costs one exchange to
 * take and a plain store to release, inlined. A waiter spins briefly, then
 * yields: the holder may be descheduled when threads outnumber cores. Never
 * hold it across a call that can block or take another lock for long.
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
} hgx_lock_t;

static inline void hgx_lock_init(hgx_lock_t *lock)
{
    atomic_init(&lock->held, false);
}

static inline void hgx_lock(hgx_lock_t *lock)
{
    while (atomic_exchange_explicit(&lock->held, true, memory_order_acquire)) {
        unsigned int spins = 0;
        while (atomic_load_explicit(&lock->held, memory_order_relaxed))
            if (++spins % HGX_LOCK_SPINS == 0)
                sched_yield();
    }
}

static inline void hgx_unlock(hgx_lock_t *lock)
{
    atomic_store_explicit(&lock->held, false, memory_order_release);
}

#endif /* HGX_LOCK_H */
