/*
 * ucx_mem.c -- memory handles: segments, registration in the region table,
 * and the descriptor peers receive.
 */
#include "ucx_int.h"
#include "hgx_wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static struct ucx_mem_handle *ucx_mh_alloc(size_t count, unsigned long flags)
{
    struct ucx_mem_handle *mh =
        calloc(1, sizeof(*mh) + count * sizeof(struct ucx_segment));
    if (mh) {
        mh->count = count;
        mh->head.flags = flags;
    }
    return mh;
}

na_return_t ucx_mem_handle_create_segments(na_class_t *na_class,
                                           struct na_segment *segments,
                                           size_t segment_count, unsigned long flags,
                                           na_mem_handle_t **mem_handle_p)
{
    (void)na_class;
    struct ucx_mem_handle *mh = ucx_mh_alloc(segment_count, flags);
    if (!mh)
        return NA_NOMEM;
    for (size_t i = 0; i < segment_count; i++) {
        mh->seg[i].base = (uint64_t)(uintptr_t)segments[i].base;
        mh->seg[i].len = segments[i].len;
        mh->head.len += segments[i].len;
    }
    *mem_handle_p = &mh->head;
    return NA_SUCCESS;
}

na_return_t ucx_mem_handle_create(na_class_t *na_class, void *buf, size_t buf_size,
                                  unsigned long flags, na_mem_handle_t **mem_handle_p)
{
    struct na_segment seg = {.base = buf, .len = buf_size};
    return ucx_mem_handle_create_segments(na_class, &seg, 1, flags, mem_handle_p);
}

size_t ucx_mem_handle_get_max_segments(const na_class_t *na_class)
{
    (void)na_class;
    return UCX_MAX_SEGMENTS;
}

/* Registration enters the handle in the region table under a fresh random
 * key: peers reach its memory only through that name (ucx_rma.c). UCX
 * registers the memory of each transfer itself. */
na_return_t ucx_mem_register(na_class_t *na_class, na_mem_handle_t *mem_handle)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct ucx_mem_handle *mh = ucx_mh(mem_handle);
    if (getrandom(&mh->key, sizeof(mh->key), 0) != (ssize_t)sizeof(mh->key)) {
        HGX_LOG_ERROR(UCX, "cannot draw a region key: %s", strerror(errno));
        return NA_PROTOCOL_ERROR;
    }
    hgx_lock(&cls->lock);
    bool ok = na_slots_add(&cls->regions, mh, &mh->index, &mh->gen);
    hgx_unlock(&cls->lock);
    return ok ? NA_SUCCESS : NA_NOMEM;
}

/* Out of the table first (later requests are refused), then wait for the
 * transfers already at work on it. */
na_return_t ucx_mem_deregister(na_class_t *na_class, na_mem_handle_t *mem_handle)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct ucx_mem_handle *mh = ucx_mh(mem_handle);
    hgx_lock(&cls->lock);
    if (na_slots_get(&cls->regions, mh->index, mh->gen) == mh)
        na_slots_remove(&cls->regions, mh->index);
    ucx_region_quiesce(cls, mh);
    hgx_unlock(&cls->lock);
    mh->index = mh->gen = 0;
    mh->key = 0;
    return NA_SUCCESS;
}

void ucx_mem_handle_free(na_class_t *na_class, na_mem_handle_t *mem_handle)
{
    (void)na_class; /* the core deregisters a registered handle first */
    free(mem_handle);
}

/* Descriptor (little-endian): version u32, flags u32, total length u64,
 * segment count u32, region index u32, generation u32, key u64, then each
 * segment's length u64. No address: the owner maps offsets itself. */
#define UCX_MH_HDR 36

size_t ucx_mem_handle_get_serialize_size(na_class_t *na_class,
                                         na_mem_handle_t *mem_handle)
{
    (void)na_class;
    return UCX_MH_HDR + 8 * ucx_mh(mem_handle)->count;
}

na_return_t ucx_mem_handle_serialize(na_class_t *na_class, void *buf, size_t buf_size,
                                     na_mem_handle_t *mem_handle)
{
    (void)na_class;
    (void)buf_size; /* checked by the core against get_serialize_size */
    struct ucx_mem_handle *mh = ucx_mh(mem_handle);
    unsigned char *out = buf;
    hgx_put_u32(out, UCX_MH_VERSION);
    hgx_put_u32(out + 4, (uint32_t)mh->head.flags);
    hgx_put_u64(out + 8, mh->head.len);
    hgx_put_u32(out + 16, (uint32_t)mh->count);
    hgx_put_u32(out + 20, mh->index);
    hgx_put_u32(out + 24, mh->gen);
    hgx_put_u64(out + 28, mh->key);
    for (size_t i = 0; i < mh->count; i++)
        hgx_put_u64(out + UCX_MH_HDR + 8 * i, mh->seg[i].len);
    return NA_SUCCESS;
}

/* Untrusted: checked for shape only. Whether it names a live region, and
 * what it may do there, only its owner can tell (ucx_region_find). */
na_return_t ucx_mem_handle_deserialize(na_class_t *na_class,
                                       na_mem_handle_t **mem_handle_p, const void *buf,
                                       size_t buf_size)
{
    (void)na_class;
    const unsigned char *in = buf;
    if (buf_size < UCX_MH_HDR)
        return NA_PROTOCOL_ERROR;
    uint32_t version = hgx_get_u32(in), flags = hgx_get_u32(in + 4),
             count = hgx_get_u32(in + 16);
    uint64_t total = hgx_get_u64(in + 8), sum = 0;
    if (version != UCX_MH_VERSION || flags == 0 ||
        (flags & ~(uint32_t)NA_MEM_READWRITE) || count == 0 || count > UCX_MAX_SEGMENTS ||
        buf_size < UCX_MH_HDR + 8 * count || total > SIZE_MAX)
        return NA_PROTOCOL_ERROR;
    struct ucx_mem_handle *mh = ucx_mh_alloc(count, flags);
    if (!mh)
        return NA_NOMEM;
    for (uint32_t i = 0; i < count; i++) {
        mh->seg[i].len = hgx_get_u64(in + UCX_MH_HDR + 8 * i);
        if ((sum += mh->seg[i].len) < mh->seg[i].len)
            break; /* overflows: sum != total below */
    }
    if (sum != total) {
        free(mh);
        return NA_PROTOCOL_ERROR;
    }
    mh->index = hgx_get_u32(in + 20);
    mh->gen = hgx_get_u32(in + 24);
    mh->key = hgx_get_u64(in + 28);
    mh->head.len = (size_t)total;
    *mem_handle_p = &mh->head;
    return NA_SUCCESS;
}
