/*
 * na_cancel_watch.c -- cancel deadlines (na_cancel_watch.h).
 */
#include "na_cancel_watch.h"
#include "hgx_clock.h"
#include "hgx_param.h"

void na_cancel_watcher_init_param(struct na_cancel_watcher *w,
                                  const struct hgx_param *timeout_ms)
{
    hgx_list_init(&w->pending);
    w->timeout_ns = (uint64_t)hgx_param_get_int(timeout_ms) * HGX_NS_PER_MS;
}

void na_cancel_watcher_init(struct na_cancel_watcher *w)
{
    na_cancel_watcher_init_param(w, &hgx_param_na_cancel_timeout_ms);
}

void na_cancel_watch_start(struct na_cancel_watcher *w, struct na_cancel_watch *watch,
                           uint64_t now_ns)
{
    if (hgx_list_linked(&watch->link))
        return;
    watch->deadline_ns = now_ns + w->timeout_ns;
    hgx_list_push_back(&w->pending, &watch->link);
}

bool na_cancel_watch_running(const struct na_cancel_watch *watch)
{
    return hgx_list_linked(&watch->link);
}

struct na_cancel_watch *na_cancel_watcher_expired(struct na_cancel_watcher *w,
                                                  uint64_t now_ns)
{
    struct hgx_list *first = hgx_list_first(&w->pending);
    if (!first)
        return NULL;
    struct na_cancel_watch *watch = hgx_list_entry(first, struct na_cancel_watch, link);
    if (!hgx_clock_passed(now_ns, watch->deadline_ns))
        return NULL;
    hgx_list_remove(first);
    return watch;
}

uint64_t na_cancel_watcher_next_ms(const struct na_cancel_watcher *w, uint64_t now_ns)
{
    struct hgx_list *first = hgx_list_first(&w->pending);
    if (!first)
        return UINT64_MAX;
    return hgx_clock_left_ms(
        now_ns, hgx_list_entry(first, struct na_cancel_watch, link)->deadline_ns);
}
