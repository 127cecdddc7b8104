/*
 * compat_check.h -- the check macro of the programs built against an
 * installed hgx (util_prog.c, util_more.c): a failed check is printed and
 * counted, and the program goes on, so one run lists every failure.
 */
#ifndef COMPAT_CHECK_H
#define COMPAT_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            printf("FAILED: %s (line %d)\n", #cond, __LINE__);                           \
            failures++;                                                                  \
        }                                                                                \
    } while (0)

#endif /* COMPAT_CHECK_H */
