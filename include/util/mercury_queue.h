/**
 * @file mercury_queue.h
 * Mercury's queue header: it makes the BSD list and queue macros of
 * <sys/queue.h> available (SLIST_*, LIST_*, STAILQ_*, TAILQ_*, SIMPLEQ_*,
 * CIRCLEQ_*, as the C library defines them). Mercury installs its own copy
 * (mercury_sys_queue.h) for systems without <sys/queue.h>; Linux has it, so
 * this header includes the system's.
 */
#ifndef MERCURY_QUEUE_H
#define MERCURY_QUEUE_H

#include "mercury_util_config.h"

#include <sys/queue.h>

#endif /* MERCURY_QUEUE_H */
