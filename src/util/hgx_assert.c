/*
 * hgx_assert.c -- the failure path of HGX_ASSERT (see hgx_assert.h).
 */
#include "hgx_assert.h"

#include <stdio.h>
#include <stdlib.h>

void hgx_assert_fail(const char *cond, const char *file, int line, const char *func)
{
    /* Straight to stderr, unbuffered: the log function a user installed may
     * itself be what broke, and the line must be out before abort(). */
    fprintf(stderr, "# [hgx:assert] %s:%d %s(): assertion `%s' failed\n", file, line,
            func, cond);
    fflush(stderr);
    abort();
}
