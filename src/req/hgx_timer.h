/*
 * hgx_timer.h -- deadlines of hgx requests (private).
 *
 * Timers armed in expiry order (the usual case: one timeout for all
 * requests) go to the tail of a sorted list: O(1) to arm, cancel and find
 * the first. Any other goes to a binary min-heap whose entries know their
 * slot: O(log n) to arm and cancel. The earliest is the smaller of the two
 * heads.
 */
#ifndef HGX_TIMER_H
#define HGX_TIMER_H

#include "hgx_list.h"

#include <stddef.h>
#include <stdint.h>

struct hgx_timer {
    uint64_t deadline_ns; /* CLOCK_MONOTONIC */
    size_t slot;          /* heap index, HGX_TIMER_LIST or HGX_TIMER_NONE */
    struct hgx_list link; /* on the sorted list */
};

#define HGX_TIMER_NONE ((size_t)-1)
#define HGX_TIMER_LIST ((size_t)-2)

/* Heap entries carry their key, so sifting reads one contiguous array and
 * only writes the slot of each timer it moves. */
struct hgx_timer_entry {
    uint64_t deadline_ns;
    struct hgx_timer *timer;
};

struct hgx_timer_heap {
    struct hgx_timer_entry *entries;
    size_t count, capacity;
    struct hgx_list list; /* sorted list, earliest first */
};

/* An empty heap and list. */
void hgx_timer_heap_init(struct hgx_timer_heap *heap);
/* Arm or re-arm a timer; 0 on success, -1 when out of memory (t unarmed). */
int hgx_timer_set(struct hgx_timer_heap *heap, struct hgx_timer *t, uint64_t deadline_ns);
void hgx_timer_cancel(struct hgx_timer_heap *heap, struct hgx_timer *t);
/* Earliest timer, or NULL. */
struct hgx_timer *hgx_timer_first(const struct hgx_timer_heap *heap);
void hgx_timer_heap_fini(struct hgx_timer_heap *heap);

#endif /* HGX_TIMER_H */
