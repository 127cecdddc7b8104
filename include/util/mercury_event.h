/**
 * @file mercury_event.h
 * Mercury's event objects (hg_event_*): a file descriptor that one side sets
 * and the other polls (mercury_poll.h) and reads. Inline over a non-blocking
 * Linux eventfd in semaphore mode: each hg_event_set adds one to a counter,
 * each hg_event_get that finds it non-zero takes one off.
 */
#ifndef MERCURY_EVENT_H
#define MERCURY_EVENT_H

#include "mercury_util_config.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

/**
 * Create an event object, not set.
 * \return its file descriptor (readable while set), or a negative value
 */
static HG_UTIL_INLINE int hg_event_create(void)
{
    return eventfd(0, EFD_NONBLOCK | EFD_SEMAPHORE | EFD_CLOEXEC);
}

/**
 * Destroy an event object.
 * \param fd [IN] its file descriptor
 * \return HG_UTIL_SUCCESS or HG_UTIL_FAIL
 */
static HG_UTIL_INLINE int hg_event_destroy(int fd)
{
    return close(fd) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/**
 * Set the event once more (the descriptor becomes readable).
 * \param fd [IN] its file descriptor
 * \return HG_UTIL_SUCCESS or HG_UTIL_FAIL
 */
static HG_UTIL_INLINE int hg_event_set(int fd)
{
    uint64_t one = 1;
    return write(fd, &one, sizeof(one)) == (ssize_t)sizeof(one) ? HG_UTIL_SUCCESS
                                                                : HG_UTIL_FAIL;
}

/**
 * Take one setting of the event, if there is one; never blocks.
 * \param fd [IN] its file descriptor
 * \param signaled [OUT] true if the event was set (one setting taken), false if not
 * \return HG_UTIL_SUCCESS, or HG_UTIL_FAIL on an error other than "not set"
 */
static HG_UTIL_INLINE int hg_event_get(int fd, bool *signaled)
{
    uint64_t count = 0;
    if (read(fd, &count, sizeof(count)) == (ssize_t)sizeof(count) && count > 0) {
        *signaled = true;
        return HG_UTIL_SUCCESS;
    }
    if (errno == EAGAIN) {
        *signaled = false;
        return HG_UTIL_SUCCESS;
    }
    return HG_UTIL_FAIL;
}

#endif /* MERCURY_EVENT_H */
