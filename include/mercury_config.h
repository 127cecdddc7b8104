/*
 * mercury_config.h -- version, basic types and compiler macros shared by the public
 * HG headers (the counterpart of na_config.h for the RPC layer).
 *
 * Names and values follow Mercury 2.4 so that Mercury programs build against hgx.
 */
#ifndef MERCURY_CONFIG_H
#define MERCURY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Mercury release whose public API hgx implements. */
#define HG_VERSION_MAJOR 2
#define HG_VERSION_MINOR 4
#define HG_VERSION_PATCH 1

/* Fixed-width aliases kept by Mercury for older programs. */
typedef int8_t hg_int8_t;
typedef uint8_t hg_uint8_t;
typedef int16_t hg_int16_t;
typedef uint16_t hg_uint16_t;
typedef int32_t hg_int32_t;
typedef uint32_t hg_uint32_t;
typedef int64_t hg_int64_t;
typedef uint64_t hg_uint64_t;
typedef uint64_t hg_ptr_t; /**< pointer value carried as an integer */
typedef uint8_t hg_bool_t; /**< one byte, HG_TRUE or HG_FALSE */

#define HG_TRUE 1
#define HG_FALSE 0

#if defined(__GNUC__)
#define HG_ABI_IMPORT __attribute__((visibility("default")))
#define HG_ABI_EXPORT __attribute__((visibility("default")))
#define HG_ABI_HIDDEN __attribute__((visibility("hidden")))
#define HG_WARN_UNUSED_RESULT __attribute__((warn_unused_result))
#define HG_UNUSED __attribute__((unused))
#define HG_ALIGNED(x, a) x __attribute__((aligned(a)))
#define HG_PACKED(x) x __attribute__((packed))
#define HG_FALLTHROUGH __attribute__((fallthrough))
#else
#define HG_ABI_IMPORT
#define HG_ABI_EXPORT
#define HG_ABI_HIDDEN
#define HG_WARN_UNUSED_RESULT
#define HG_UNUSED
#define HG_ALIGNED(x, a) x
#define HG_PACKED(x) x
#define HG_FALLTHROUGH
#endif
#define HG_PUBLIC HG_ABI_EXPORT
#define HG_PRIVATE HG_ABI_HIDDEN
#define HG_INLINE inline

/* hgx always computes RPC checksums (CRC64); Mercury programs test this macro. */
#define HG_HAS_CHECKSUMS

/* mercury_macros.h is built on the system's Boost.Preprocessor, as Mercury's. */
#define HG_HAS_BOOST

#endif /* MERCURY_CONFIG_H */
