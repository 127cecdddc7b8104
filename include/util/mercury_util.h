/**
 * @file mercury_util.h
 * Mercury's utility library: its configuration and its log level call.
 * hgx provides every header Mercury 2.4.1's mercury_util installs
 * (docs/mercury-compat.md): threads, locks, thread pool, time, atomics,
 * lists, queues, poll sets, events, memory, pools, hash tables, atomic
 * queues, dynamic loading, byte order, compiler attributes and lock
 * annotations inline or as macros in their headers, and the log outlets and
 * debug logs (mercury_log.h, mercury_dlog.h) in libhgx.
 */
#ifndef MERCURY_UTIL_H
#define MERCURY_UTIL_H

#include "mercury_util_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Set the level of the log outlets of mercury_log.h (hg_log_set_level by name).
 * \param log_level [IN] "none", "error", "warning", "min_debug" or "debug"
 */
HG_UTIL_PUBLIC void HG_Util_set_log_level(const char *log_level);

#ifdef __cplusplus
}
#endif

#endif /* MERCURY_UTIL_H */
