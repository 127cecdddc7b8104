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
#define HG_VERSION_PATCH 0

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
#define HG_PUBLIC __attribute__((visibility("default")))
#define HG_PRIVATE __attribute__((visibility("hidden")))
#define HG_WARN_UNUSED_RESULT __attribute__((warn_unused_result))
#else
#define HG_PUBLIC
#define HG_PRIVATE
#define HG_WARN_UNUSED_RESULT
#endif
#define HG_INLINE inline

/* hgx always computes RPC checksums (CRC64); Mercury programs test this macro. */
#define HG_HAS_CHECKSUMS

/* mercury_macros.h is built on the system's Boost.Preprocessor, as Mercury's. */
#define HG_HAS_BOOST

#endif /* MERCURY_CONFIG_H */
