/*
 * na_wait_set.c -- a plugin's wait fd: epoll set of the transport's fd and a
 * timerfd (na_wait_set.h).
 */
#include "na_wait_set.h"

#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

int na_wait_set_open(struct na_wait_set *ws)
{
    ws->timer_set = false;
    ws->fd = epoll_create1(EPOLL_CLOEXEC);
    ws->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (ws->fd < 0 || ws->timer_fd < 0)
        return errno;
    return na_wait_set_add(ws, ws->timer_fd);
}

int na_wait_set_add(struct na_wait_set *ws, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN};
    return epoll_ctl(ws->fd, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : errno;
}

int na_wait_set_remove(struct na_wait_set *ws, int fd)
{
    return epoll_ctl(ws->fd, EPOLL_CTL_DEL, fd, NULL) == 0 ? 0 : errno;
}

int na_wait_set_arm_ns(struct na_wait_set *ws, uint64_t left_ns)
{
    if (left_ns == UINT64_MAX && !ws->timer_set)
        return 0; /* disarmed already, no expiry left to clear */
    struct itimerspec its = {0};
    if (left_ns != UINT64_MAX) {
        its.it_value.tv_sec = (time_t)(left_ns / 1000000000u);
        its.it_value.tv_nsec = (long)(left_ns % 1000000000u);
        if (left_ns == 0)
            its.it_value.tv_nsec = 1; /* a zero value would disarm */
    }
    if (timerfd_settime(ws->timer_fd, 0, &its, NULL) != 0)
        return errno;
    ws->timer_set = left_ns != UINT64_MAX;
    return 0;
}

int na_wait_set_arm_ms(struct na_wait_set *ws, uint64_t left_ms)
{
    if (left_ms == UINT64_MAX || left_ms > UINT64_MAX / 1000000u)
        return na_wait_set_arm_ns(ws, UINT64_MAX);
    return na_wait_set_arm_ns(ws, left_ms * 1000000u);
}

bool na_wait_set_ready(const struct na_wait_set *ws)
{
    struct pollfd pfd = {.fd = ws->fd, .events = POLLIN};
    return poll(&pfd, 1, 0) > 0;
}

void na_wait_set_close(struct na_wait_set *ws)
{
    if (ws->timer_fd >= 0)
        close(ws->timer_fd);
    if (ws->fd >= 0)
        close(ws->fd);
    ws->fd = ws->timer_fd = -1;
}
