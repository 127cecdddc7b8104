/*
 * hgx_timer.h -- deadlines of hgx requests: a binary min-heap keyed by expiry
 * time, each entry knowing its heap slot so removal is O(log n) (private).
 */
#ifndef HGX_TIMER_H
#define HGX_TIMER_H

#include <stddef.h>
#include <stdint.h>

struct hgx_timer {
    uint64_t deadline_ns; /* CLOCK_MONOTONIC */
    size_t slot;          /* index in the heap, or HGX_TIMER_NONE */
};

#define HGX_TIMER_NONE ((size_t)-1)

struct hgx_timer_heap {
    struct hgx_timer **entries;
    size_t count, capacity;
};

uint64_t hgx_now_ns(void);
/* Insert or move a timer; 0 on success, -1 when out of memory. */
int hgx_timer_set(struct hgx_timer_heap *heap, struct hgx_timer *t, uint64_t deadline_ns);
void hgx_timer_cancel(struct hgx_timer_heap *heap, struct hgx_timer *t);
/* Earliest timer, or NULL. */
struct hgx_timer *hgx_timer_first(const struct hgx_timer_heap *heap);
void hgx_timer_heap_fini(struct hgx_timer_heap *heap);

#endif /* HGX_TIMER_H */
