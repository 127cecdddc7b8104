/*
 * na_slots.h -- a table of pointers named by (index, generation), for names
 * that travel over the network (private). A name read from the wire finds
 * its entry only while that entry lives: removing an entry bumps its slot's
 * generation, so a stale or forged name finds nothing, and no pointer ever
 * comes from the wire. Not locked: the owner serializes access.
 */
#ifndef NA_SLOTS_H
#define NA_SLOTS_H

#include <stdbool.h>
#include <stdint.h>

struct na_slot;

struct na_slots {
    struct na_slot *slot; /* slot 0 is never used: index 0 names nothing */
    uint32_t cap;         /* slots allocated */
    uint32_t free_head;   /* first free slot, 0 when none */
    uint32_t used;        /* live entries */
};

/* Store ptr (not NULL); its name in *index and *gen. False when out of memory. */
bool na_slots_add(struct na_slots *t, void *ptr, uint32_t *index, uint32_t *gen);

/* The entry named (index, gen), or NULL: any values are safe to ask about. */
void *na_slots_get(const struct na_slots *t, uint32_t index, uint32_t gen);

/* Remove the live entry at index; its name never matches again. */
void na_slots_remove(struct na_slots *t, uint32_t index);

/* The live entry at index (for walking the table), or NULL. */
void *na_slots_at(const struct na_slots *t, uint32_t index);

void na_slots_fini(struct na_slots *t);

/* A 64-bit name: generation above index. */
static inline uint64_t na_slots_cookie(uint32_t index, uint32_t gen)
{
    return (uint64_t)gen << 32 | index;
}

/* The entry a cookie names, or NULL: any value is safe to ask about. */
static inline void *na_slots_get_cookie(const struct na_slots *t, uint64_t cookie)
{
    return na_slots_get(t, (uint32_t)cookie, (uint32_t)(cookie >> 32));
}

#endif /* NA_SLOTS_H */
