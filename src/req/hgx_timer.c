/*
 * hgx_timer.c -- min-heap of request deadlines.
 */
#include "hgx_timer.h"

#include <stdlib.h>
#include <time.h>

uint64_t hgx_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void heap_place(struct hgx_timer_heap *h, size_t i, struct hgx_timer *t)
{
    h->entries[i] = t;
    t->slot = i;
}

static void heap_up(struct hgx_timer_heap *h, size_t i)
{
    struct hgx_timer *t = h->entries[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h->entries[parent]->deadline_ns <= t->deadline_ns)
            break;
        heap_place(h, i, h->entries[parent]);
        i = parent;
    }
    heap_place(h, i, t);
}

static void heap_down(struct hgx_timer_heap *h, size_t i)
{
    struct hgx_timer *t = h->entries[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->count)
            break;
        if (child + 1 < h->count &&
            h->entries[child + 1]->deadline_ns < h->entries[child]->deadline_ns)
            child++;
        if (h->entries[child]->deadline_ns >= t->deadline_ns)
            break;
        heap_place(h, i, h->entries[child]);
        i = child;
    }
    heap_place(h, i, t);
}

int hgx_timer_set(struct hgx_timer_heap *h, struct hgx_timer *t, uint64_t deadline_ns)
{
    if (t->slot != HGX_TIMER_NONE) {
        uint64_t old = t->deadline_ns;
        t->deadline_ns = deadline_ns;
        if (deadline_ns < old)
            heap_up(h, t->slot);
        else
            heap_down(h, t->slot);
        return 0;
    }
    if (h->count == h->capacity) {
        size_t cap = h->capacity ? 2 * h->capacity : 64;
        struct hgx_timer **e = realloc(h->entries, cap * sizeof(*e));
        if (!e)
            return -1;
        h->entries = e;
        h->capacity = cap;
    }
    t->deadline_ns = deadline_ns;
    h->entries[h->count] = t;
    t->slot = h->count++;
    heap_up(h, t->slot);
    return 0;
}

void hgx_timer_cancel(struct hgx_timer_heap *h, struct hgx_timer *t)
{
    size_t i = t->slot;
    if (i == HGX_TIMER_NONE)
        return;
    t->slot = HGX_TIMER_NONE;
    struct hgx_timer *last = h->entries[--h->count];
    if (i == h->count)
        return;
    heap_place(h, i, last);
    if (i > 0 && h->entries[(i - 1) / 2]->deadline_ns > last->deadline_ns)
        heap_up(h, i);
    else
        heap_down(h, i);
}

struct hgx_timer *hgx_timer_first(const struct hgx_timer_heap *h)
{
    return h->count ? h->entries[0] : NULL;
}

void hgx_timer_heap_fini(struct hgx_timer_heap *h)
{
    free(h->entries);
    h->entries = NULL;
    h->count = h->capacity = 0;
}
