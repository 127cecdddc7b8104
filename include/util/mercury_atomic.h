/**
 * @file mercury_atomic.h
 * Mercury's atomic calls (hg_atomic_*), over C11 atomics (sequentially
 * consistent). incr/decr return the new value; or/xor/and return the old one.
 * In C++ the types are std::atomic, as in Mercury's header, and the C11 calls
 * these headers use are taken from std (as C++23's <stdatomic.h> does); a
 * variable has the same layout in both languages.
 */
#ifndef MERCURY_ATOMIC_H
#define MERCURY_ATOMIC_H

#include "mercury_util_config.h"

#ifdef __cplusplus
#include <atomic>
/** The atomic type of T, in either language. */
#define HG_UTIL_ATOMIC(T) std::atomic<T>
using std::atomic_compare_exchange_strong;
using std::atomic_compare_exchange_weak_explicit;
using std::atomic_fetch_add;
using std::atomic_fetch_and;
using std::atomic_fetch_or;
using std::atomic_fetch_sub;
using std::atomic_fetch_xor;
using std::atomic_init;
using std::atomic_load;
using std::atomic_load_explicit;
using std::atomic_store;
using std::atomic_store_explicit;
using std::atomic_thread_fence;
using std::memory_order_acquire;
using std::memory_order_relaxed;
using std::memory_order_release;
using std::memory_order_seq_cst;
#else
#include <stdatomic.h>
#define HG_UTIL_ATOMIC(T) _Atomic T
#endif

typedef HG_UTIL_ATOMIC(int32_t) hg_atomic_int32_t; /**< atomic 32-bit integer */
typedef HG_UTIL_ATOMIC(int64_t) hg_atomic_int64_t; /**< atomic 64-bit integer */
#ifdef __cplusplus
/* List-initialization: before C++17, std::atomic cannot be copy-initialized. */
/* clang-format off */
#define HG_ATOMIC_VAR_INIT(x) {x}
/* clang-format on */
#else
#define HG_ATOMIC_VAR_INIT(x) (x)
#endif

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
