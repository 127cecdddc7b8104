/*
 * fuzz_proc_common.h -- the generated structs decoded by fuzz_proc_struct, shared
 * with make_corpus.c so that the seeds are real encodings.
 */
#ifndef FUZZ_PROC_COMMON_H
#define FUZZ_PROC_COMMON_H

#include "mercury_macros.h"
#include "mercury_proc_string.h"

#include <stdlib.h>

/* A length-prefixed byte string with a hand-written proc, as users write them. */
typedef struct {
    uint32_t len;
    unsigned char *buf;
} fz_blob_t;

static inline hg_return_t hg_proc_fz_blob_t(hg_proc_t proc, void *data)
{
    fz_blob_t *b = data;
    hg_return_t ret;

    switch (hg_proc_get_op(proc)) {
    case HG_ENCODE:
        ret = hg_proc_uint32_t(proc, &b->len);
        return ret != HG_SUCCESS ? ret : hg_proc_bytes(proc, b->buf, b->len);
    case HG_DECODE:
        b->buf = NULL;
        ret = hg_proc_uint32_t(proc, &b->len);
        if (ret != HG_SUCCESS || b->len == 0)
            return ret;
        if (b->len > hg_proc_get_size_left(proc))
            return HG_OVERFLOW; /* untrusted length: check before allocating */
        b->buf = malloc(b->len);
        if (!b->buf)
            return HG_NOMEM;
        ret = hg_proc_bytes(proc, b->buf, b->len);
        if (ret != HG_SUCCESS) {
            free(b->buf);
            b->buf = NULL;
        }
        return ret;
    case HG_FREE:
        free(b->buf);
        b->buf = NULL;
        return HG_SUCCESS;
    }
    return HG_INVALID_ARG;
}

/* Fixed-size raw bytes. */
typedef struct {
    unsigned char b[12];
} fz_fixed_t;

static inline hg_return_t hg_proc_fz_fixed_t(hg_proc_t proc, void *data)
{
    return hg_proc_raw(proc, ((fz_fixed_t *)data)->b, sizeof(((fz_fixed_t *)data)->b));
}

MERCURY_GEN_PROC(fz_inner_t, ((uint16_t)(tag))((hg_string_t)(label))((int64_t)(value))(
                                 (fz_blob_t)(blob)))

MERCURY_GEN_PROC(fz_in_t,
                 ((uint8_t)(u8))((int32_t)(i32))((hg_string_t)(name))(
                     (fz_fixed_t)(fixed))((fz_inner_t)(inner))((hg_bool_t)(flag))(
                     (hg_const_string_t)(label))((fz_blob_t)(blob))((hg_bulk_t)(bulk))(
                     (uint64_t)(u64))((fz_inner_t)(inner2))((hg_string_t)(tail)))

#endif
