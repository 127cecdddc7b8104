/*
 * hg_proc_types.c -- proc routines for fixed-width integers and raw bytes.
 */
#include "hg_proc_private.h"

#include "hgx_log.h"

#include <string.h>

/* Integers travel little-endian whatever the host order. */
static inline void hg_proc_copy_le(void *dst, const void *src, size_t width)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    const unsigned char *s = src;
    unsigned char *d = dst;
    for (size_t i = 0; i < width; i++)
        d[i] = s[width - 1 - i];
#else
    memcpy(dst, src, width);
#endif
}

/* Inlined with a constant width into each typed routine below. */
static inline void hg_proc_int_move(hg_proc_t proc, unsigned char *p, void *data,
                                    size_t width)
{
    if (proc->op == HG_ENCODE)
        hg_proc_copy_le(p, data, width);
    else
        hg_proc_copy_le(data, p, width);
}

/* The rare cases, out of line so the common one needs no stack frame: NULL
 * arguments, or bytes beyond the current buffer (grow or overflow). */
static hg_return_t hg_proc_int_slow(hg_proc_t proc, void *data, size_t width)
{
    hg_return_t ret = HG_SUCCESS;

    if (proc == HG_PROC_NULL || data == NULL) {
        HGX_LOG_ERROR(PROC, "NULL proc or data");
        return HG_INVALID_ARG;
    }
    unsigned char *p = hg_proc_advance_slow(proc, width, &ret);
    if (p == NULL)
        return ret;
    hg_proc_int_move(proc, p, data, width);
    return HG_SUCCESS;
}

static inline hg_return_t hg_proc_int(hg_proc_t proc, void *data, size_t width)
{
    if (__builtin_expect(proc == HG_PROC_NULL || data == NULL, 0))
        return hg_proc_int_slow(proc, data, width);
    if (proc->op == HG_FREE)
        return HG_SUCCESS;
    struct hg_proc_buf *b = proc->current_buf;
    if (__builtin_expect(width > b->size - b->pos, 0))
        return hg_proc_int_slow(proc, data, width);
    unsigned char *p = b->buf + b->pos;
    b->pos += width;
    hg_proc_int_move(proc, p, data, width);
    return HG_SUCCESS;
}

hg_return_t hg_proc_int8_t(hg_proc_t proc, void *data)
{
    return hg_proc_int(proc, data, sizeof(int8_t));
}

hg_return_t hg_proc_uint8_t(hg_proc_t proc, void *data)
{
    return hg_proc_int(proc, data, sizeof(uint8_t));
}

hg_return_t hg_proc_int16_t(hg_proc_t proc, void *data)
{
    return hg_proc_int(proc, data, sizeof(int16_t));
}

hg_return_t hg_proc_uint16_t(hg_proc_t proc, void *data)
{
    return hg_proc_int(proc, data, sizeof(uint16_t));
}

hg_return_t hg_proc_int32_t(hg_proc_t proc, void *data)
{
    return hg_proc_int(proc, data, sizeof(int32_t));
}

hg_return_t hg_proc_uint32_t(hg_proc_t proc, void *data)
{
    return hg_proc_int(proc, data, sizeof(uint32_t));
}

hg_return_t hg_proc_int64_t(hg_proc_t proc, void *data)
{
    return hg_proc_int(proc, data, sizeof(int64_t));
}

hg_return_t hg_proc_uint64_t(hg_proc_t proc, void *data)
{
    return hg_proc_int(proc, data, sizeof(uint64_t));
}

hg_return_t hg_proc_bytes(hg_proc_t proc, void *data, hg_size_t data_size)
{
    hg_return_t ret = HG_SUCCESS;
    unsigned char *p;

    if (proc == HG_PROC_NULL || (data == NULL && data_size > 0)) {
        HGX_LOG_ERROR(PROC, "NULL proc or data");
        return HG_INVALID_ARG;
    }
    if (proc->op == HG_FREE || data_size == 0)
        return HG_SUCCESS;
    if (data_size > SIZE_MAX)
        return HG_OVERFLOW;
    p = hg_proc_advance(proc, (size_t)data_size, &ret);
    if (p == NULL)
        return ret;
    if (proc->op == HG_ENCODE)
        memcpy(p, data, (size_t)data_size);
    else
        memcpy(data, p, (size_t)data_size);
    return HG_SUCCESS;
}
