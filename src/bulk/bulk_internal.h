/*
 * bulk_internal.h -- the bulk handle structure (private to the bulk layer and
 * the RPC layer that exposes large payloads with it).
 */
#ifndef BULK_INTERNAL_H
#define BULK_INTERNAL_H

#include "hg_internal.h"

struct hg_bulk {
    hg_class_t *hg_class;
    atomic_int refcount;
    hg_size_t len; /* total bytes */
    uint32_t segment_count;
    uint8_t flags;               /* HG_BULK_READ_ONLY / WRITE_ONLY / READWRITE */
    bool remote;                 /* deserialized: no local memory */
    bool owns_memory;            /* some segments were allocated here */
    bool *owned;                 /* per segment: allocated here */
    struct na_segment *segments; /* local segments */
    na_mem_handle_t *mem;        /* NA handle (NULL when len is 0) */
    uint64_t local_id;           /* id in the owning process */
    unsigned char *desc;         /* remote: the descriptor it was made from */
    /* remote: a private copy of the len bytes an eager descriptor carried
     * (HG_BULK_EAGER), from which pulls are served; NULL otherwise */
    unsigned char *eager;
    hg_size_t desc_size;
    struct hg_bulk *next_local; /* class list of live local handles */
    hg_addr_t addr;             /* HG_Bulk_bind: the owner's address (a reference) */
    uint8_t context_id;         /* and its context id */
};

/* Live local handle with this id, with a new reference, or NULL. */
struct hg_bulk *hg_bulk_find_local(hg_class_t *hg_class, uint64_t local_id);

#endif /* BULK_INTERNAL_H */
