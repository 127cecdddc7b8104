/**
 * @file mercury_poll.h
 * Mercury's poll sets (hg_poll_*): wait for events on several file
 * descriptors, such as the one NA_Poll_get_fd() returns. Inline over Linux
 * epoll; an event's data comes back as it was given to hg_poll_add().
 */
#ifndef MERCURY_POLL_H
#define MERCURY_POLL_H

#include "mercury_util_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/** What the caller attaches to a file descriptor. */
typedef union hg_poll_data {
    void *ptr;
    int fd;
    uint32_t u32;
    uint64_t u64;
} hg_poll_data_t;

/** Events asked for (hg_poll_add) or that occurred (hg_poll_wait). */
struct hg_poll_event {
    uint32_t events;     /**< HG_POLLIN, HG_POLLOUT, ... */
    hg_poll_data_t data; /**< the caller's data */
};

#define HG_POLLIN EPOLLIN   /**< ready to read */
#define HG_POLLOUT EPOLLOUT /**< ready to write */
#define HG_POLLERR EPOLLERR /**< error (reported whether asked or not) */
#define HG_POLLHUP EPOLLHUP /**< hang-up (reported whether asked or not) */

/** A poll set (an epoll instance). */
typedef struct hg_poll_set {
    int fd;
} hg_poll_set_t;

/** \return a new, empty poll set, or NULL on failure */
static HG_UTIL_INLINE hg_poll_set_t *hg_poll_create(void)
{
    hg_poll_set_t *set = (hg_poll_set_t *)malloc(sizeof(*set));
    if (!set)
        return NULL;
    set->fd = epoll_create1(EPOLL_CLOEXEC);
    if (set->fd < 0) {
        free(set);
        return NULL;
    }
    return set;
}

/**
 * Destroy @p poll_set (the file descriptors in it stay open).
 * \param poll_set [IN] poll set
 * \return HG_UTIL_SUCCESS or HG_UTIL_FAIL
 */
static HG_UTIL_INLINE int hg_poll_destroy(hg_poll_set_t *poll_set)
{
    if (!poll_set)
        return HG_UTIL_FAIL;
    int rc = close(poll_set->fd);
    free(poll_set);
    return rc == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/**
 * \param poll_set [IN] poll set
 * \return a file descriptor readable when an event is pending, or -1
 */
static HG_UTIL_INLINE int hg_poll_get_fd(hg_poll_set_t *poll_set)
{
    return poll_set ? poll_set->fd : -1;
}

static HG_UTIL_INLINE int hg_poll_ctl_(hg_poll_set_t *poll_set, int op, int fd,
                                       const struct hg_poll_event *event)
{
    struct epoll_event ev;
    memset(&ev, 0, sizeof(ev)); /* zeroed in full: C++ warns on {0} */
    if (!poll_set || fd < 0 || (op != EPOLL_CTL_DEL && !event))
        return HG_UTIL_FAIL;
    if (event) {
        ev.events = event->events;
        ev.data.u64 = event->data.u64;
    }
    return epoll_ctl(poll_set->fd, op, fd, &ev) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/**
 * Watch @p fd for event->events; hg_poll_wait() returns event->data with them.
 * \param poll_set [IN] poll set
 * \param fd [IN] file descriptor
 * \param event [IN] events and data
 * \return HG_UTIL_SUCCESS or HG_UTIL_FAIL
 */
static HG_UTIL_INLINE int hg_poll_add(hg_poll_set_t *poll_set, int fd,
                                      struct hg_poll_event *event)
{
    return hg_poll_ctl_(poll_set, EPOLL_CTL_ADD, fd, event);
}

/**
 * Change what is watched on @p fd.
 * \param poll_set [IN] poll set
 * \param fd [IN] file descriptor already added
 * \param event [IN] events and data
 * \return HG_UTIL_SUCCESS or HG_UTIL_FAIL
 */
static HG_UTIL_INLINE int hg_poll_mod(hg_poll_set_t *poll_set, int fd,
                                      struct hg_poll_event *event)
{
    return hg_poll_ctl_(poll_set, EPOLL_CTL_MOD, fd, event);
}

/**
 * Stop watching @p fd.
 * \param poll_set [IN] poll set
 * \param fd [IN] file descriptor
 * \return HG_UTIL_SUCCESS or HG_UTIL_FAIL
 */
static HG_UTIL_INLINE int hg_poll_remove(hg_poll_set_t *poll_set, int fd)
{
    return hg_poll_ctl_(poll_set, EPOLL_CTL_DEL, fd, NULL);
}

/**
 * Wait up to @p timeout ms for events; an interrupted wait returns no event.
 * \param poll_set [IN] poll set
 * \param timeout [IN] milliseconds (0: do not wait)
 * \param max_events [IN] room in @p events
 * \param events [OUT] the events that occurred, with their data
 * \param actual_events [OUT] how many were stored
 * \return HG_UTIL_SUCCESS (also on timeout) or HG_UTIL_FAIL
 */
static HG_UTIL_INLINE int hg_poll_wait(hg_poll_set_t *poll_set, unsigned int timeout,
                                       unsigned int max_events,
                                       struct hg_poll_event events[],
                                       unsigned int *actual_events)
{
    struct epoll_event evs[64];
    if (!poll_set || !events || !actual_events || max_events == 0)
        return HG_UTIL_FAIL;
    int n = epoll_wait(poll_set->fd, evs, (int)(max_events < 64 ? max_events : 64),
                       timeout > (unsigned int)0x7fffffff ? -1 : (int)timeout);
    *actual_events = 0;
    if (n < 0)
        return errno == EINTR ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
    for (int i = 0; i < n; i++) {
        events[i].events = evs[i].events;
        events[i].data.u64 = evs[i].data.u64;
    }
    *actual_events = (unsigned int)n;
    return HG_UTIL_SUCCESS;
}

#endif /* MERCURY_POLL_H */
