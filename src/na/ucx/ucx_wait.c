/*
 * ucx_wait.c -- the class's wait fd: UCX's event fd and a timer in one epoll
 * set, so that a thread sleeping on it (NA_Poll_wait, or a program's own
 * poll(2) through the events API) wakes up for UCX's events and for the
 * plugin's own deadlines alike: a wire-up's (UCX_CONNECT_MS) and a cancelled
 * operation's escalation. UCX raises no event when such a deadline passes,
 * and a class that refused to sleep until it did would spin for as long as a
 * connection takes to come up, or 5 s when its peer never answers.
 */
#include "ucx_int.h"
#include "hgx_clock.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

na_return_t ucx_wait_open(struct ucx_class *cls)
{
    cls->wait_fd = epoll_create1(EPOLL_CLOEXEC);
    cls->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN};
    if (cls->wait_fd < 0 || cls->timer_fd < 0 ||
        epoll_ctl(cls->wait_fd, EPOLL_CTL_ADD, cls->timer_fd, &ev) != 0) {
        HGX_LOG_ERROR(UCX, "cannot create the wait fd: %s", strerror(errno));
        return NA_NOMEM;
    }
    return NA_SUCCESS;
}

/* The worker's event fd joins the set. A worker destroyed (a listener
 * retrying another port) closes its fd, which leaves the set by itself. */
na_return_t ucx_wait_add_worker(struct ucx_class *cls)
{
    struct epoll_event ev = {.events = EPOLLIN};
    if (epoll_ctl(cls->wait_fd, EPOLL_CTL_ADD, cls->efd, &ev) != 0) {
        HGX_LOG_ERROR(UCX, "cannot watch the worker's event fd: %s", strerror(errno));
        return NA_PROTOCOL_ERROR;
    }
    return NA_SUCCESS;
}

void ucx_wait_close(struct ucx_class *cls)
{
    if (cls->timer_fd >= 0)
        close(cls->timer_fd);
    if (cls->wait_fd >= 0)
        close(cls->wait_fd);
}

/* Milliseconds to the plugin's next deadline, UINT64_MAX for none. Lock
 * held. */
static uint64_t ucx_next_deadline_ms(struct ucx_class *cls)
{
    uint64_t now = hgx_clock_now_ns();
    uint64_t left = na_cancel_watcher_next_ms(&cls->cancel_watcher, now);
    if (cls->connecting) {
        uint64_t connect = hgx_clock_left_ms(now, ucx_connect_next_ns(cls));
        if (connect < left)
            left = connect;
    }
    return left;
}

/* Whether the worker's fd is readable now. Some transports arm as a no-op:
 * tcp's "arm" succeeds whatever its sockets hold, and its fd then stays
 * readable until progress reads them. Sleeping on such an fd returns at once,
 * and a caller told it may sleep (HG_Event_ready false) sleeps again: a spin
 * that never progresses. */
static bool ucx_worker_fd_ready(const struct ucx_class *cls)
{
    struct pollfd pfd = {.fd = cls->efd, .events = POLLIN};
    return poll(&pfd, 1, 0) > 0;
}

/* Ready the wait fd for a sleep: the timer set to the next deadline (setting
 * it also clears an expiry already read by nobody), then the worker armed.
 * UCS_OK: wait_fd is quiet now and fires on the next event, so sleeping on
 * it misses nothing and does not return for nothing. UCS_ERR_BUSY: events
 * are pending or a deadline has passed; progress first. Lock held. */
ucs_status_t ucx_wait_arm(struct ucx_class *cls)
{
    if (cls->arm_busy)
        return UCS_ERR_BUSY; /* asked again before progress ran */
    uint64_t left = ucx_next_deadline_ms(cls);
    if (left == 0)
        return UCS_ERR_BUSY;
    if (left != UINT64_MAX || cls->timer_set) {
        struct itimerspec its = {0};
        if (left != UINT64_MAX) {
            its.it_value.tv_sec = (time_t)(left / 1000);
            its.it_value.tv_nsec = (long)(left % 1000) * 1000000L;
        }
        if (timerfd_settime(cls->timer_fd, 0, &its, NULL) != 0) {
            HGX_LOG_ERROR(UCX, "cannot set the wait fd's timer: %s", strerror(errno));
            return UCS_ERR_IO_ERROR;
        }
        cls->timer_set = left != UINT64_MAX;
    }
    ucs_status_t st = ucp_worker_arm(cls->worker);
    if (st == UCS_OK && ucx_worker_fd_ready(cls))
        st = UCS_ERR_BUSY;
    cls->arm_busy = st == UCS_ERR_BUSY;
    return st;
}
