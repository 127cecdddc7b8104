/**
 * @file mercury_util.h
 * Umbrella of Mercury's utility headers. hgx provides the subset that
 * Mercury programs and Mercury's test harness use, header-only (no
 * libmercury_util to link): configuration, threads, mutexes, conditions,
 * thread pool, time, atomics, lists and queues.
 */
#ifndef MERCURY_UTIL_H
#define MERCURY_UTIL_H

#include "mercury_util_config.h"

#endif /* MERCURY_UTIL_H */
