/*
 * hg_proc_private.h -- processor internals shared by the proc sources and the HG layer.
 */
#ifndef HG_PROC_PRIVATE_H
#define HG_PROC_PRIVATE_H

#include "mercury_proc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

/** Largest checksum hg_proc_checksum_get() writes (HG_CRC64). */
#define HG_PROC_CHECKSUM_MAX_SIZE 8

/** A buffer and the position of the cursor in it. */
struct hg_proc_buf {
    unsigned char *buf;
    size_t size;
    size_t pos;
    bool is_mine; /* free it on reset / free (extra buffer only) */
};

/* hg_proc_setup() sets every field: keep it in step. */
struct hg_proc {
    struct hg_proc_buf proc_buf;  /* the caller's buffer */
    struct hg_proc_buf extra_buf; /* grown copy once an encode overflows proc_buf */
    struct hg_proc_buf *current_buf;
    hg_class_t *hg_class;
    hg_handle_t handle;
    hg_proc_op_t op;
    uint8_t flags;
    hg_proc_hash_t hash;
    /* The CRC covers current_buf bytes [0, crc_pos) plus explicit updates; the
     * rest is added lazily, so a whole payload is checksummed in one pass. */
    uint64_t crc;
    size_t crc_pos;
    uint64_t crc_final; /* value at the last hg_proc_flush() */
};

/**
 * Create a processor without an HG class (what hg_proc_create() does).
 *
 * \param hash [IN]    checksum method, HG_NOHASH for none
 * \param proc [OUT]   new processor
 *
 * \return HG_SUCCESS, HG_INVALID_ARG or HG_NOMEM
 */
hg_return_t hg_proc_create_internal(hg_proc_hash_t hash, hg_proc_t *proc);

/**
 * Set up a processor the caller provides (e.g. on its stack, so that encoding
 * and decoding an RPC allocate nothing); hg_proc_fini() releases what it
 * acquired, hg_proc_free() must not be called on it.
 */
void hg_proc_init(struct hg_proc *proc, hg_class_t *hg_class, hg_proc_hash_t hash);

/* Release what the processor acquired (an extra buffer it grew); the
 * processor itself is left as is, for its owner to drop. */
static inline void hg_proc_fini(struct hg_proc *proc)
{
    if (proc->extra_buf.is_mine)
        free(proc->extra_buf.buf);
}

/**
 * What hg_proc_init(), hg_proc_set_handle() and hg_proc_reset() do together,
 * for a processor without checksum on a buffer the HG layer vouches for
 * (not NULL unless op is HG_FREE): one store per field, inline, since every
 * RPC runs it up to six times. Release with hg_proc_fini().
 */
static inline void hg_proc_setup(struct hg_proc *proc, hg_class_t *hg_class,
                                 hg_handle_t handle, void *buf, size_t size,
                                 hg_proc_op_t op)
{
    /* Field by field: GCC clears the whole struct of a compound literal with
     * "rep stos", slower than these stores for its 112 bytes. */
    proc->proc_buf = (struct hg_proc_buf){.buf = buf, .size = buf ? size : 0};
    proc->extra_buf = (struct hg_proc_buf){0};
    proc->current_buf = &proc->proc_buf;
    proc->hg_class = hg_class;
    proc->handle = handle;
    proc->op = op;
    proc->flags = 0;
    proc->hash = HG_NOHASH;
    proc->crc = 0;
    proc->crc_pos = 0;
    proc->crc_final = 0;
}

/**
 * \param proc [IN]  processor (not NULL)
 * \return bytes hg_proc_checksum_get() writes: 0 (HG_NOHASH), 2, 4 or 8
 */
hg_size_t hg_proc_checksum_size(hg_proc_t proc);

/* Slow path of hg_proc_advance(): grow the buffer (encode) or fail (decode). */
void *hg_proc_advance_slow(struct hg_proc *proc, size_t n, hg_return_t *ret);

/**
 * Return a pointer to the next n bytes and move the cursor past them.
 * Encode grows into the extra buffer; decode never passes the end.
 *
 * \return the bytes, or NULL with *ret = HG_OVERFLOW or HG_NOMEM
 */
static inline void *hg_proc_advance(struct hg_proc *proc, size_t n, hg_return_t *ret)
{
    struct hg_proc_buf *b = proc->current_buf;

    if (n <= b->size - b->pos) {
        void *p = b->buf + b->pos;
        b->pos += n;
        return p;
    }
    return hg_proc_advance_slow(proc, n, ret);
}

#endif /* HG_PROC_PRIVATE_H */
