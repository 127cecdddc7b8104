/**
 * @file mercury_atomic_queue.h
 * Mercury's bounded lock-free queue of pointers (hg_atomic_queue_*): any
 * number of threads push, any number pop (pop_mc), or a single thread pops
 * (pop_sc). Inline over C11 atomics: a ring of slots, each with a sequence
 * number that tells pushers and poppers whose turn the slot is.
 */
#ifndef MERCURY_ATOMIC_QUEUE_H
#define MERCURY_ATOMIC_QUEUE_H

#include "mercury_util_config.h"

#include "mercury_atomic.h"
#include "mercury_mem.h"

#include <stdlib.h>

/** One slot of the ring. */
struct hg_atomic_queue_slot {
    /** position this slot waits for (push: pos, pop: pos + 1) */
    HG_UTIL_ATOMIC(size_t) turn;
    void *entry; /**< the pointer stored */
};

/** A queue; allocate with hg_atomic_queue_alloc(). */
struct hg_atomic_queue {
    HG_UTIL_ATOMIC(size_t) push_pos; /**< next position to push to */
    char pad1[HG_MEM_CACHE_LINE_SIZE - sizeof(size_t)];
    HG_UTIL_ATOMIC(size_t) pop_pos; /**< next position to pop from */
    char pad2[HG_MEM_CACHE_LINE_SIZE - sizeof(size_t)];
    size_t mask;                         /**< slot count - 1 */
    struct hg_atomic_queue_slot slots[]; /**< the ring */
};

/**
 * Allocate an empty queue that holds @p count entries.
 * \param count [IN] capacity, rounded up to a power of two (at least 2)
 * \return the queue (free with hg_atomic_queue_free()), or NULL
 */
static HG_UTIL_INLINE struct hg_atomic_queue *hg_atomic_queue_alloc(unsigned int count)
{
    size_t n = 2;
    while (n < count)
        n <<= 1;
    struct hg_atomic_queue *q = (struct hg_atomic_queue *)hg_mem_aligned_alloc(
        HG_MEM_CACHE_LINE_SIZE, sizeof(*q) + n * sizeof(q->slots[0]));
    if (!q)
        return NULL;
    atomic_init(&q->push_pos, 0);
    atomic_init(&q->pop_pos, 0);
    q->mask = n - 1;
    for (size_t i = 0; i < n; i++) {
        atomic_init(&q->slots[i].turn, i);
        q->slots[i].entry = NULL;
    }
    return q;
}

/** Free a queue (its entries are the caller's). */
static HG_UTIL_INLINE void hg_atomic_queue_free(struct hg_atomic_queue *hg_atomic_queue)
{
    hg_mem_aligned_free(hg_atomic_queue);
}

/**
 * Append @p entry (any number of threads may push at once).
 * \return HG_UTIL_SUCCESS, or HG_UTIL_FAIL if the queue is full
 */
static HG_UTIL_INLINE int hg_atomic_queue_push(struct hg_atomic_queue *hg_atomic_queue,
                                               void *entry)
{
    struct hg_atomic_queue *q = hg_atomic_queue;
    size_t pos = atomic_load_explicit(&q->push_pos, memory_order_relaxed);
    for (;;) {
        struct hg_atomic_queue_slot *s = &q->slots[pos & q->mask];
        size_t turn = atomic_load_explicit(&s->turn, memory_order_acquire);
        if (turn == pos) {
            /* The slot is free for this position: claim the position. */
            if (atomic_compare_exchange_weak_explicit(&q->push_pos, &pos, pos + 1,
                                                      memory_order_relaxed,
                                                      memory_order_relaxed)) {
                s->entry = entry;
                atomic_store_explicit(&s->turn, pos + 1, memory_order_release);
                return HG_UTIL_SUCCESS;
            }
        } else if ((ptrdiff_t)(turn - pos) < 0) {
            return HG_UTIL_FAIL; /* still holds the entry of the previous lap */
        } else {
            pos = atomic_load_explicit(&q->push_pos, memory_order_relaxed);
        }
    }
}

/**
 * Remove the oldest entry (any number of threads may pop at once).
 * \return the entry, or NULL if the queue is empty
 */
static HG_UTIL_INLINE void *
hg_atomic_queue_pop_mc(struct hg_atomic_queue *hg_atomic_queue)
{
    struct hg_atomic_queue *q = hg_atomic_queue;
    size_t pos = atomic_load_explicit(&q->pop_pos, memory_order_relaxed);
    for (;;) {
        struct hg_atomic_queue_slot *s = &q->slots[pos & q->mask];
        size_t turn = atomic_load_explicit(&s->turn, memory_order_acquire);
        if (turn == pos + 1) {
            if (atomic_compare_exchange_weak_explicit(&q->pop_pos, &pos, pos + 1,
                                                      memory_order_relaxed,
                                                      memory_order_relaxed)) {
                void *entry = s->entry;
                /* Free the slot for the push one lap later. */
                atomic_store_explicit(&s->turn, pos + q->mask + 1, memory_order_release);
                return entry;
            }
        } else if ((ptrdiff_t)(turn - (pos + 1)) < 0) {
            return NULL; /* not pushed yet */
        } else {
            pos = atomic_load_explicit(&q->pop_pos, memory_order_relaxed);
        }
    }
}

/**
 * Remove the oldest entry, when this thread is the only one popping.
 * \return the entry, or NULL if the queue is empty
 */
static HG_UTIL_INLINE void *
hg_atomic_queue_pop_sc(struct hg_atomic_queue *hg_atomic_queue)
{
    struct hg_atomic_queue *q = hg_atomic_queue;
    size_t pos = atomic_load_explicit(&q->pop_pos, memory_order_relaxed);
    struct hg_atomic_queue_slot *s = &q->slots[pos & q->mask];
    if (atomic_load_explicit(&s->turn, memory_order_acquire) != pos + 1)
        return NULL;
    void *entry = s->entry;
    atomic_store_explicit(&q->pop_pos, pos + 1, memory_order_relaxed);
    atomic_store_explicit(&s->turn, pos + q->mask + 1, memory_order_release);
    return entry;
}

/** \return true if no entry is queued (a snapshot under concurrent use) */
static HG_UTIL_INLINE bool
hg_atomic_queue_is_empty(struct hg_atomic_queue *hg_atomic_queue)
{
    return atomic_load(&hg_atomic_queue->pop_pos) ==
           atomic_load(&hg_atomic_queue->push_pos);
}

/** \return the number of entries queued (a snapshot under concurrent use) */
static HG_UTIL_INLINE unsigned int
hg_atomic_queue_count(struct hg_atomic_queue *hg_atomic_queue)
{
    size_t pop = atomic_load(&hg_atomic_queue->pop_pos);
    size_t push = atomic_load(&hg_atomic_queue->push_pos);
    return push > pop ? (unsigned int)(push - pop) : 0;
}

#endif /* MERCURY_ATOMIC_QUEUE_H */
