/*
 * hgx_timer.c -- request deadlines: a sorted list for timers armed in
 * expiry order, a min-heap for the others.
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

static void heap_place(struct hgx_timer_heap *h, size_t i, struct hgx_timer_entry e)
{
    h->entries[i] = e;
    e.timer->slot = i;
}

static void heap_up(struct hgx_timer_heap *h, size_t i)
{
    struct hgx_timer_entry e = h->entries[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h->entries[parent].deadline_ns <= e.deadline_ns)
            break;
        heap_place(h, i, h->entries[parent]);
        i = parent;
    }
    heap_place(h, i, e);
}

static void heap_down(struct hgx_timer_heap *h, size_t i)
{
    struct hgx_timer_entry e = h->entries[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->count)
            break;
        if (child + 1 < h->count &&
            h->entries[child + 1].deadline_ns < h->entries[child].deadline_ns)
            child++;
        if (h->entries[child].deadline_ns >= e.deadline_ns)
            break;
        heap_place(h, i, h->entries[child]);
        i = child;
    }
    heap_place(h, i, e);
}

static int heap_insert(struct hgx_timer_heap *h, struct hgx_timer *t)
{
    if (h->count == h->capacity) {
        size_t cap = h->capacity ? 2 * h->capacity : 64;
        struct hgx_timer_entry *e = realloc(h->entries, cap * sizeof(*e));
        if (!e)
            return -1;
        h->entries = e;
        h->capacity = cap;
    }
    heap_place(h, h->count++, (struct hgx_timer_entry){t->deadline_ns, t});
    heap_up(h, t->slot);
    return 0;
}

static void heap_remove(struct hgx_timer_heap *h, size_t i)
{
    struct hgx_timer_entry last = h->entries[--h->count];
    if (i == h->count)
        return;
    heap_place(h, i, last);
    if (i > 0 && h->entries[(i - 1) / 2].deadline_ns > last.deadline_ns)
        heap_up(h, i);
    else
        heap_down(h, i);
}

static void list_append(struct hgx_timer_heap *h, struct hgx_timer *t)
{
    t->slot = HGX_TIMER_LIST;
    t->next = NULL;
    t->prev = h->tail;
    if (h->tail)
        h->tail->next = t;
    else
        h->head = t;
    h->tail = t;
}

static void list_remove(struct hgx_timer_heap *h, struct hgx_timer *t)
{
    if (t->prev)
        t->prev->next = t->next;
    else
        h->head = t->next;
    if (t->next)
        t->next->prev = t->prev;
    else
        h->tail = t->prev;
    t->prev = t->next = NULL;
}

int hgx_timer_set(struct hgx_timer_heap *h, struct hgx_timer *t, uint64_t deadline_ns)
{
    hgx_timer_cancel(h, t);
    t->deadline_ns = deadline_ns;
    if (!h->tail || h->tail->deadline_ns <= deadline_ns) {
        list_append(h, t);
        return 0;
    }
    return heap_insert(h, t);
}

void hgx_timer_cancel(struct hgx_timer_heap *h, struct hgx_timer *t)
{
    size_t i = t->slot;
    if (i == HGX_TIMER_NONE)
        return;
    t->slot = HGX_TIMER_NONE;
    if (i == HGX_TIMER_LIST)
        list_remove(h, t);
    else
        heap_remove(h, i);
}

struct hgx_timer *hgx_timer_first(const struct hgx_timer_heap *h)
{
    struct hgx_timer *t = h->count ? h->entries[0].timer : NULL;
    if (h->head && (!t || h->head->deadline_ns < t->deadline_ns))
        t = h->head;
    return t;
}

void hgx_timer_heap_fini(struct hgx_timer_heap *h)
{
    free(h->entries);
    h->entries = NULL;
    h->count = h->capacity = 0;
    h->head = h->tail = NULL;
}
