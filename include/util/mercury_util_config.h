/**
 * @file mercury_util_config.h
 * Version, return codes and linkage macros of Mercury's utility headers
 * (mercury_util 4.0, as shipped with Mercury 2.4.1). hgx provides these
 * headers header-only: see docs/mercury-compat.md.
 */
#ifndef MERCURY_UTIL_CONFIG_H
#define MERCURY_UTIL_CONFIG_H

/* The utility calls are POSIX (clock_gettime, nanosleep, condition clocks):
 * make them visible under a strict -std=c11 too. This only takes effect when
 * a Mercury header comes before any system header, as in Mercury programs. */
#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** mercury_util API version of Mercury 2.4.1. */
#define HG_UTIL_VERSION_MAJOR 4
#define HG_UTIL_VERSION_MINOR 0
#define HG_UTIL_VERSION_PATCH 0

/** Return codes of the hg_thread_* and hg_time_* calls. */
#define HG_UTIL_SUCCESS 0
#define HG_UTIL_FAIL -1

#define HG_UTIL_INLINE __inline__
#define HG_UTIL_PUBLIC
#define HG_UTIL_PRIVATE
#define HG_UTIL_EXPORT

#endif /* MERCURY_UTIL_CONFIG_H */
