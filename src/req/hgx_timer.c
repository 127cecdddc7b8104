/*
 * hgx_timer.c -- request deadlines: a sorted list for timers armed in
 * expiry order, a min-heap for the others.
 */
#include "hgx_timer.h"
#include "hgx_assert.h"

#include <stdlib.h>
#include <time.h>

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

/* The timer at the tail (latest) or head (earliest) of the list, or NULL. */
static struct hgx_timer *list_timer(const struct hgx_timer_heap *h, struct hgx_list *link)
{
    return link == &h->list ? NULL : hgx_list_entry(link, struct hgx_timer, link);
}

void hgx_timer_heap_init(struct hgx_timer_heap *h)
{
    h->entries = NULL;
    h->count = h->capacity = 0;
    hgx_list_init(&h->list);
}

int hgx_timer_set(struct hgx_timer_heap *h, struct hgx_timer *t, uint64_t deadline_ns)
{
    hgx_timer_cancel(h, t);
    t->deadline_ns = deadline_ns;
    struct hgx_timer *tail = list_timer(h, h->list.prev);
    if (!tail || tail->deadline_ns <= deadline_ns) {
        t->slot = HGX_TIMER_LIST;
        hgx_list_push_back(&h->list, &t->link);
        return 0;
    }
    return heap_insert(h, t);
}

void hgx_timer_cancel(struct hgx_timer_heap *h, struct hgx_timer *t)
{
    size_t i = t->slot;
    if (i == HGX_TIMER_NONE)
        return;
    /* A timer's slot names where it is: the list, or its own heap entry. */
    HGX_ASSERT(i == HGX_TIMER_LIST || (i < h->count && h->entries[i].timer == t));
    t->slot = HGX_TIMER_NONE;
    if (i == HGX_TIMER_LIST)
        hgx_list_remove(&t->link);
    else
        heap_remove(h, i);
}

struct hgx_timer *hgx_timer_first(const struct hgx_timer_heap *h)
{
    struct hgx_timer *t = h->count ? h->entries[0].timer : NULL;
    struct hgx_timer *head = list_timer(h, h->list.next);
    if (head && (!t || head->deadline_ns < t->deadline_ns))
        t = head;
    return t;
}

void hgx_timer_heap_fini(struct hgx_timer_heap *h)
{
    free(h->entries);
    hgx_timer_heap_init(h);
}
