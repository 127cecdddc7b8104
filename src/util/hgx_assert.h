/*
 * hgx_assert.h -- internal invariants, checked in debug builds (private).
 *
 * HGX_ASSERT(cond) states something the code relies on and no input can
 * break: a failure is a bug in the library, never a peer's fault (bad input
 * from the network is an error code, not an assertion). Unless NDEBUG is
 * defined it logs the file, line and condition and aborts, so CI's debug and
 * sanitizer builds stop at the first broken invariant with a core dump; with
 * NDEBUG the condition is not evaluated at all.
 */
#ifndef HGX_ASSERT_H
#define HGX_ASSERT_H

/* Log "file:line: func: assertion `cond' failed" and abort. */
void hgx_assert_fail(const char *cond, const char *file, int line, const char *func)
    __attribute__((noreturn, cold));

#ifdef NDEBUG
#define HGX_ASSERT(cond) ((void)0)
#else
#define HGX_ASSERT(cond)                                                                 \
    (__builtin_expect(!!(cond), 1)                                                       \
         ? (void)0                                                                       \
         : hgx_assert_fail(#cond, __FILE__, __LINE__, __func__))
#endif

#endif /* HGX_ASSERT_H */
