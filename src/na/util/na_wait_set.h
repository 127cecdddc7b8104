/*
 * na_wait_set.h -- a plugin's wait fd: the transport's own fd and a timer in
 * one epoll set (private).
 *
 * A thread sleeping on a plugin's wait fd (NA_Poll_wait, or a program's own
 * poll(2) through the events API) must wake up for the transport's events and
 * for the plugin's own timed duties alike: retrying posts the provider
 * refused, escalating stuck cancels, wire-up and peer-check deadlines. The
 * transport raises no event when such a deadline passes, and a plugin that
 * refused to let its caller sleep until it did would make the caller spin.
 * So the plugin arms the timer to its next duty before saying a sleep may
 * begin; the set's fd then fires at whichever comes first.
 */
#ifndef NA_WAIT_SET_H
#define NA_WAIT_SET_H

#include <stdbool.h>
#include <stdint.h>

struct na_wait_set {
    int fd;       /* the epoll set a thread sleeps on; -1 when not open */
    int timer_fd; /* fires at the plugin's next timed duty */
    bool timer_set;
};

/* Create the set with its timer; 0, or an errno value. On failure the set
 * holds nothing that na_wait_set_close would not release. */
int na_wait_set_open(struct na_wait_set *ws);

/* Watch fd (readable) too; 0, or an errno value. A watched fd that is
 * closed leaves the set by itself. */
int na_wait_set_add(struct na_wait_set *ws, int fd);

/* Stop watching fd; 0, or an errno value. */
int na_wait_set_remove(struct na_wait_set *ws, int fd);

/* Set the timer to fire left_ns from now (UINT64_MAX: never). Setting it also
 * clears an expiry nobody read, so the set is quiet afterwards unless a
 * watched fd is readable. 0, or an errno value. */
int na_wait_set_arm_ns(struct na_wait_set *ws, uint64_t left_ns);

/* na_wait_set_arm_ns in milliseconds (UINT64_MAX: never). */
int na_wait_set_arm_ms(struct na_wait_set *ws, uint64_t left_ms);

/* Whether the set's fd is readable now. */
bool na_wait_set_ready(const struct na_wait_set *ws);

/* Release the set's fds (not the watched ones). */
void na_wait_set_close(struct na_wait_set *ws);

#endif
