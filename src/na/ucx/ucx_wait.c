/*
 * ucx_wait.c -- the class's wait fd: UCX's event fd and a timer in one wait
 * set (na_wait_set.h), so that a thread sleeping on it (NA_Poll_wait, or a
 * program's own poll(2) through the events API) wakes up for UCX's events
 * and for the plugin's own deadlines alike: a wire-up's (UCX_CONNECT_MS) and
 * a cancelled operation's escalation. UCX raises no event when such a
 * deadline passes, and a class that refused to sleep until it did would spin
 * for as long as a connection takes to come up, or 5 s when its peer never
 * answers.
 */
#include "ucx_int.h"
#include "hgx_clock.h"

#include <errno.h>
#include <poll.h>
#include <string.h>

na_return_t ucx_wait_open(struct ucx_class *cls)
{
    int err = na_wait_set_open(&cls->wait);
    if (err) {
        HGX_LOG_ERROR(UCX, "cannot create the wait fd: %s", strerror(err));
        return NA_NOMEM;
    }
    return NA_SUCCESS;
}

/* The worker's event fd joins the set. A worker destroyed (a listener
 * retrying another port) closes its fd, which leaves the set by itself. */
na_return_t ucx_wait_add_worker(struct ucx_class *cls)
{
    int err = na_wait_set_add(&cls->wait, cls->efd);
    if (err) {
        HGX_LOG_ERROR(UCX, "cannot watch the worker's event fd: %s", strerror(err));
        return NA_PROTOCOL_ERROR;
    }
    cls->efd_muted = false;
    return NA_SUCCESS;
}

void ucx_wait_close(struct ucx_class *cls)
{
    na_wait_set_close(&cls->wait);
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

/* Set the timer to left_ms (at most cap_ms). UCS_ERR_BUSY when a deadline
 * has passed: progress first. */
static ucs_status_t ucx_wait_timer(struct ucx_class *cls, uint64_t cap_ms)
{
    uint64_t left = ucx_next_deadline_ms(cls);
    if (left == 0)
        return UCS_ERR_BUSY;
    int err = na_wait_set_arm_ms(&cls->wait, left < cap_ms ? left : cap_ms);
    if (err) {
        HGX_LOG_ERROR(UCX, "cannot set the wait fd's timer: %s", strerror(err));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
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

/* Ready the wait fd for a sleep: the worker's fd back in the set, the timer
 * set to the next deadline (setting it also clears an expiry already read by
 * nobody), then the worker armed. UCS_OK: the wait fd is quiet now and fires
 * on the next event, so sleeping on it misses nothing and does not return
 * for nothing. UCS_ERR_BUSY: events are pending or a deadline has passed;
 * progress first. Lock held. */
ucs_status_t ucx_wait_arm(struct ucx_class *cls)
{
    if (cls->arm_busy)
        return UCS_ERR_BUSY; /* asked again before progress ran */
    if (cls->efd_muted) {
        if (ucx_wait_add_worker(cls) != NA_SUCCESS)
            return UCS_ERR_IO_ERROR;
        cls->arm_busy = true; /* events may have come while it was out */
        return UCS_ERR_BUSY;
    }
    ucs_status_t st = ucx_wait_timer(cls, UINT64_MAX);
    if (st != UCS_OK)
        return st;
    st = ucp_worker_arm(cls->worker);
    if (st == UCS_OK && ucx_worker_fd_ready(cls))
        st = UCS_ERR_BUSY;
    cls->arm_busy = st == UCS_ERR_BUSY;
    return st;
}

/* Ready the wait fd for a sleep while progress is stalled on the backlog
 * (ucx_progress.c): UCX's events then wait for a receive, so the worker's fd
 * leaves the set, or it would fire for events progress leaves alone. The
 * timer fires at the next deadline, and at the latest after
 * UCX_TIMER_POLL_MS, for work that unstalls the class without a receive (a
 * send from another thread). A posted receive wakes the sleeper at once
 * (ucx_wait_unstalled). Whether a sleep may begin. Lock held. */
bool ucx_wait_stalled(struct ucx_class *cls)
{
    if (!cls->efd_muted) {
        int err = na_wait_set_remove(&cls->wait, cls->efd);
        if (err) {
            HGX_LOG_ERROR(UCX, "cannot unwatch the worker's event fd: %s", strerror(err));
            return false;
        }
        cls->efd_muted = true;
    }
    return ucx_wait_timer(cls, UCX_TIMER_POLL_MS) == UCS_OK &&
           !na_wait_set_ready(&cls->wait);
}

/* A receive was posted: a thread sleeping on the stalled class's wait fd
 * wakes now to take UCX's events again. Lock held. */
void ucx_wait_unstalled(struct ucx_class *cls)
{
    if (cls->efd_muted && na_wait_set_arm_ms(&cls->wait, 0) != 0)
        HGX_LOG_ERROR(UCX, "cannot wake the wait fd: %s", strerror(errno));
}
