/*
 * na_config.h -- compiler and visibility macros shared by the public NA headers.
 */
#ifndef NA_CONFIG_H
#define NA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define NA_PUBLIC __attribute__((visibility("default")))
#define NA_WARN_UNUSED_RESULT __attribute__((warn_unused_result))
#else
#define NA_PUBLIC
#define NA_WARN_UNUSED_RESULT
#endif
#define NA_INLINE inline

#endif /* NA_CONFIG_H */
