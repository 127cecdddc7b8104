/**
 * @file mercury_atomic.h
 * Mercury's atomic calls (hg_atomic_*), over C11 atomics (sequentially
 * consistent). incr/decr return the new value; or/xor/and return the old one.
 */
#ifndef MERCURY_ATOMIC_H
#define MERCURY_ATOMIC_H

#include "mercury_util_config.h"

#include <stdatomic.h>

typedef _Atomic int32_t hg_atomic_int32_t; /**< atomic 32-bit integer */
typedef _Atomic int64_t hg_atomic_int64_t; /**< atomic 64-bit integer */
#define HG_ATOMIC_VAR_INIT(x) (x)

/* One definition per width: hg_atomic_<op><bits>. */
#define HG_UTIL_ATOMIC_OPS(bits)                                                         \
    static HG_UTIL_INLINE void hg_atomic_init##bits(hg_atomic_int##bits##_t *p,          \
                                                    int##bits##_t v)                     \
    {                                                                                    \
        atomic_init(p, v);                                                               \
    }                                                                                    \
    static HG_UTIL_INLINE void hg_atomic_set##bits(hg_atomic_int##bits##_t *p,           \
                                                   int##bits##_t v)                      \
    {                                                                                    \
        atomic_store(p, v);                                                              \
    }                                                                                    \
    static HG_UTIL_INLINE int##bits##_t hg_atomic_get##bits(hg_atomic_int##bits##_t *p)  \
    {                                                                                    \
        return atomic_load(p);                                                           \
    }                                                                                    \
    static HG_UTIL_INLINE int##bits##_t hg_atomic_incr##bits(hg_atomic_int##bits##_t *p) \
    {                                                                                    \
        return atomic_fetch_add(p, 1) + 1;                                               \
    }                                                                                    \
    static HG_UTIL_INLINE int##bits##_t hg_atomic_decr##bits(hg_atomic_int##bits##_t *p) \
    {                                                                                    \
        return atomic_fetch_sub(p, 1) - 1;                                               \
    }                                                                                    \
    static HG_UTIL_INLINE int##bits##_t hg_atomic_or##bits(hg_atomic_int##bits##_t *p,   \
                                                           int##bits##_t v)              \
    {                                                                                    \
        return atomic_fetch_or(p, v);                                                    \
    }                                                                                    \
    static HG_UTIL_INLINE int##bits##_t hg_atomic_xor##bits(hg_atomic_int##bits##_t *p,  \
                                                            int##bits##_t v)             \
    {                                                                                    \
        return atomic_fetch_xor(p, v);                                                   \
    }                                                                                    \
    static HG_UTIL_INLINE int##bits##_t hg_atomic_and##bits(hg_atomic_int##bits##_t *p,  \
                                                            int##bits##_t v)             \
    {                                                                                    \
        return atomic_fetch_and(p, v);                                                   \
    }                                                                                    \
    static HG_UTIL_INLINE bool hg_atomic_cas##bits(                                      \
        hg_atomic_int##bits##_t *p, int##bits##_t expected, int##bits##_t desired)       \
    {                                                                                    \
        return atomic_compare_exchange_strong(p, &expected, desired);                    \
    }

/** hg_atomic_{init,set,get,incr,decr,or,xor,and,cas}32 on hg_atomic_int32_t. */
HG_UTIL_ATOMIC_OPS(32)
/** hg_atomic_{init,set,get,incr,decr,or,xor,and,cas}64 on hg_atomic_int64_t. */
HG_UTIL_ATOMIC_OPS(64)
#undef HG_UTIL_ATOMIC_OPS

/** Full memory fence. */
static HG_UTIL_INLINE void hg_atomic_fence(void)
{
    atomic_thread_fence(memory_order_seq_cst);
}

#endif /* MERCURY_ATOMIC_H */
