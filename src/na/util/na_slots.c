/*
 * na_slots.c -- pointers named by (index, generation); see na_slots.h.
 */
#include "na_slots.h"

#include <stdlib.h>
#include <sys/random.h>

struct na_slot {
    void *ptr;     /* NULL when free */
    uint32_t gen;  /* never 0: a zeroed name matches nothing */
    uint32_t next; /* free list */
};

#define NA_SLOTS_FIRST 16

static bool na_slots_grow(struct na_slots *t)
{
    uint32_t cap = t->cap ? t->cap * 2 : NA_SLOTS_FIRST;
    if (cap <= t->cap)
        return false; /* 2^32 entries */
    struct na_slot *s = realloc(t->slot, (size_t)cap * sizeof(*s));
    if (!s)
        return false;
    /* Random first generations: a guessed name, or one a slot gave out in
     * an earlier run, is unlikely to match. */
    uint32_t seed;
    if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
        seed = 0x9e3779b9u;
    /* New slots join the free list in index order; slot 0 stays out of it. */
    for (uint32_t i = cap; i-- > (t->cap ? t->cap : 1);) {
        uint32_t gen = seed ^ (i * 2654435761u);
        s[i] = (struct na_slot){.ptr = NULL, .gen = gen ? gen : 1, .next = t->free_head};
        t->free_head = i;
    }
    if (!t->cap)
        s[0] = (struct na_slot){.ptr = NULL, .gen = 0, .next = 0};
    t->slot = s;
    t->cap = cap;
    return true;
}

bool na_slots_add(struct na_slots *t, void *ptr, uint32_t *index, uint32_t *gen)
{
    if (!t->free_head && !na_slots_grow(t))
        return false;
    uint32_t i = t->free_head;
    struct na_slot *s = &t->slot[i];
    t->free_head = s->next;
    s->ptr = ptr;
    t->used++;
    *index = i;
    *gen = s->gen;
    return true;
}

void *na_slots_get(const struct na_slots *t, uint32_t index, uint32_t gen)
{
    if (index == 0 || index >= t->cap || t->slot[index].gen != gen)
        return NULL;
    return t->slot[index].ptr;
}

void *na_slots_at(const struct na_slots *t, uint32_t index)
{
    return index && index < t->cap ? t->slot[index].ptr : NULL;
}

void na_slots_remove(struct na_slots *t, uint32_t index)
{
    struct na_slot *s = &t->slot[index];
    s->ptr = NULL;
    if (++s->gen == 0)
        s->gen = 1;
    s->next = t->free_head;
    t->free_head = index;
    t->used--;
}

void na_slots_fini(struct na_slots *t)
{
    free(t->slot);
    *t = (struct na_slots){0};
}
