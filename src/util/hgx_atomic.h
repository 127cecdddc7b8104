/*
 * hgx_atomic.h -- counter updates without a locked instruction when one
 * thread alone uses the object (private).
 *
 * Reference and pending counts of handles, addresses and posted receives
 * change several times per RPC. Across threads that takes an atomic
 * read-modify-write, a locked instruction that drains the store buffer: in
 * cpu-clock samples of a 0-byte ucx+shm round trip, functions holding one
 * cost about twice the time per instruction of their neighbours. Under
 * NA_THREAD_MODE_SINGLE one thread uses the class (the same promise that
 * turns hgx_lock off), so a relaxed load and store do the same job there.
 * The objects stay atomic: either mode reads them the same way.
 */
#ifndef HGX_ATOMIC_H
#define HGX_ATOMIC_H

#include <stdatomic.h>
#include <stdbool.h>

/* *v += d; returns the value before. */
static inline int hgx_int_add(atomic_int *v, int d, bool single)
{
    if (!single)
        return atomic_fetch_add(v, d);
    int old = atomic_load_explicit(v, memory_order_relaxed);
    atomic_store_explicit(v, old + d, memory_order_relaxed);
    return old;
}

/* *v += d; returns the value before. */
static inline long hgx_long_add(atomic_long *v, long d, bool single)
{
    if (!single)
        return atomic_fetch_add(v, d);
    long old = atomic_load_explicit(v, memory_order_relaxed);
    atomic_store_explicit(v, old + d, memory_order_relaxed);
    return old;
}

/* *v += d; returns the value before. */
static inline unsigned int hgx_uint_add(atomic_uint *v, unsigned int d, bool single)
{
    if (!single)
        return atomic_fetch_add(v, d);
    unsigned int old = atomic_load_explicit(v, memory_order_relaxed);
    atomic_store_explicit(v, old + d, memory_order_relaxed);
    return old;
}

/* *v += d; returns the value before. */
static inline unsigned long hgx_ulong_add(atomic_ulong *v, unsigned long d, bool single)
{
    if (!single)
        return atomic_fetch_add(v, d);
    unsigned long old = atomic_load_explicit(v, memory_order_relaxed);
    atomic_store_explicit(v, old + d, memory_order_relaxed);
    return old;
}

#endif /* HGX_ATOMIC_H */
