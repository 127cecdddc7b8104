/*
 * na_config.h -- version, compiler and visibility macros shared by the public NA
 * headers. Names and values follow Mercury 2.4.1's (NA 6.0).
 */
#ifndef NA_CONFIG_H
#define NA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* NA release whose public API hgx implements (that of Mercury 2.4.1). */
#define NA_VERSION_MAJOR 6
#define NA_VERSION_MINOR 0
#define NA_VERSION_PATCH 0

#if defined(__GNUC__)
#define NA_ABI_IMPORT __attribute__((visibility("default")))
#define NA_ABI_EXPORT __attribute__((visibility("default")))
#define NA_ABI_HIDDEN __attribute__((visibility("hidden")))
#define NA_WARN_UNUSED_RESULT __attribute__((warn_unused_result))
#define NA_UNUSED __attribute__((unused))
#define NA_ALIGNED(x, a) x __attribute__((aligned(a)))
#define NA_PACKED(x) x __attribute__((packed))
#define NA_FALLTHROUGH __attribute__((fallthrough))
#else
#define NA_ABI_IMPORT
#define NA_ABI_EXPORT
#define NA_ABI_HIDDEN
#define NA_WARN_UNUSED_RESULT
#define NA_UNUSED
#define NA_ALIGNED(x, a) x
#define NA_PACKED(x) x
#define NA_FALLTHROUGH
#endif
#define NA_PUBLIC NA_ABI_EXPORT
#define NA_PRIVATE NA_ABI_HIDDEN
#define NA_INLINE inline

#endif /* NA_CONFIG_H */
