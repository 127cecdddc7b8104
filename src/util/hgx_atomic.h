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

/* name(v, x, single): the read-modify-write rmw(v, x), or in single mode a
 * plain load of old and a store of next (an expression of old and x);
 * returns old. */
#define HGX_SINGLE_RMW_FN(name, atomic_type, type, rmw, next)                            \
    static inline type name(atomic_type *v, type x, bool single)                         \
    {                                                                                    \
        if (!single)                                                                     \
            return rmw(v, x);                                                            \
        type old = atomic_load_explicit(v, memory_order_relaxed);                        \
        atomic_store_explicit(v, next, memory_order_relaxed);                            \
        return old;                                                                      \
    }

/* name(v, d, single): *v += d, returning the value before. */
#define HGX_ATOMIC_ADD_FN(name, atomic_type, type)                                       \
    HGX_SINGLE_RMW_FN(name, atomic_type, type, atomic_fetch_add, old + x)

/* name(v, x, single): *v = x, returning the value before. For pointer
 * slots: each user instantiates it for its own type. */
#define HGX_ATOMIC_SWAP_FN(name, atomic_type, type)                                      \
    HGX_SINGLE_RMW_FN(name, atomic_type, type, atomic_exchange, x)

HGX_ATOMIC_ADD_FN(hgx_int_add, atomic_int, int)
HGX_ATOMIC_ADD_FN(hgx_uint_add, atomic_uint, unsigned int)
HGX_ATOMIC_ADD_FN(hgx_long_add, atomic_long, long)
HGX_ATOMIC_ADD_FN(hgx_ulong_add, atomic_ulong, unsigned long)

#endif /* HGX_ATOMIC_H */
