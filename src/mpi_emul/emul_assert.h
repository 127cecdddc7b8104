/*
 * emul_assert.h -- the emulation's invariant check: on in debug and sanitizer
 * builds (NDEBUG unset), compiled out with NDEBUG. One macro, so the whole
 * emulation moves to a project-wide assertion by editing this file alone.
 */
#ifndef HGX_EMUL_ASSERT_H
#define HGX_EMUL_ASSERT_H

#include <assert.h>

#define HGX_EMUL_ASSERT(cond) assert(cond)

#endif
