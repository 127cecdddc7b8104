/*
 * na_cancel_watch.h -- deadlines for cancels a transport does not confirm
 * (private).
 *
 * NA_Cancel must complete locally and never depend on the peer, yet some
 * transports leave a canceled send or RMA pending until the peer answers.
 * Every plugin applies the same rule: a cancel the transport has not
 * confirmed within a deadline is escalated by the plugin (it drops the
 * operation's resources, or closes the path to the peer) and the operation
 * completes with NA_CANCELED. The deadline is HGX_NA_CANCEL_TIMEOUT_MS, or
 * a plugin's own parameter when its escalation costs more than the one op
 * (UCX's drops the whole connection). The plugin embeds a struct
 * na_cancel_watch in its op and keeps one watcher per class; every watch of
 * a watcher has the same timeout, so the list stays in deadline order by
 * appending.
 */
#ifndef NA_CANCEL_WATCH_H
#define NA_CANCEL_WATCH_H

#include "hgx_list.h"

#include <stdbool.h>
#include <stdint.h>

struct hgx_param;

struct na_cancel_watch {
    struct hgx_list link;
    uint64_t deadline_ns;
};

struct na_cancel_watcher {
    struct hgx_list pending; /* watches, earliest deadline first */
    uint64_t timeout_ns;
};

/* Empty watcher with the configured timeout (HGX_NA_CANCEL_TIMEOUT_MS). */
void na_cancel_watcher_init(struct na_cancel_watcher *w);

/* Empty watcher whose timeout is timeout_ms, an HGX_PARAM_INT parameter in
 * milliseconds (a plugin's own). */
void na_cancel_watcher_init_param(struct na_cancel_watcher *w,
                                  const struct hgx_param *timeout_ms);

/* Make an op's watch ready (unwatched). Inline: plugins start every op
 * with it. */
static inline void na_cancel_watch_init(struct na_cancel_watch *watch)
{
    hgx_list_init(&watch->link);
    watch->deadline_ns = 0;
}

/* Start the clock on a cancel at now_ns; a watch already running keeps its
 * first deadline (cancelling twice does not postpone the escalation). */
void na_cancel_watch_start(struct na_cancel_watcher *w, struct na_cancel_watch *watch,
                           uint64_t now_ns);

/* The transport confirmed the cancel, or the op completed: stop watching.
 * Inline: plugins call it at every completion. */
static inline void na_cancel_watch_stop(struct na_cancel_watch *watch)
{
    hgx_list_remove(&watch->link);
}

/* True while watch is running. */
bool na_cancel_watch_running(const struct na_cancel_watch *watch);

/* Take off and return one watch whose deadline has passed at now_ns, or NULL. */
struct na_cancel_watch *na_cancel_watcher_expired(struct na_cancel_watcher *w,
                                                  uint64_t now_ns);

/* Milliseconds until the earliest deadline (rounded up), or UINT64_MAX when
 * nothing is watched: how long progress may sleep before escalating. */
uint64_t na_cancel_watcher_next_ms(const struct na_cancel_watcher *w, uint64_t now_ns);

#endif /* NA_CANCEL_WATCH_H */
