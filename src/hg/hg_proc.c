/*
 * hg_proc.c -- processor life cycle, buffers and checksum.
 */
#include "hg_proc_private.h"

#include "hg_crc64.h"
#include "hgx_log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Extra buffers grow in whole pages, at least doubling, so that encoding a
 * large payload field by field costs amortized O(1) per byte. */
#define HG_PROC_EXTRA_ALIGN ((size_t)4096)

hg_return_t hg_proc_create_internal(hg_proc_hash_t hash, hg_proc_t *proc_p)
{
    struct hg_proc *proc;

    if (proc_p == NULL || (unsigned)hash > HG_NOHASH) {
        HGX_LOG_ERROR(PROC, "invalid argument (proc_p=%p, hash=%d)", (void *)proc_p,
                      (int)hash);
        return HG_INVALID_ARG;
    }
    proc = malloc(sizeof(*proc));
    if (proc == NULL) {
        HGX_LOG_ERROR(PROC, "could not allocate proc");
        return HG_NOMEM;
    }
    hg_proc_init(proc, NULL, hash);
    *proc_p = proc;
    return HG_SUCCESS;
}

void hg_proc_init(struct hg_proc *proc, hg_class_t *hg_class, hg_proc_hash_t hash)
{
    memset(proc, 0, sizeof(*proc));
    proc->hash = hash;
    proc->op = HG_ENCODE;
    proc->current_buf = &proc->proc_buf;
    proc->hg_class = hg_class;
}

hg_return_t hg_proc_create(hg_class_t *hg_class, hg_proc_hash_t hash, hg_proc_t *proc_p)
{
    hg_return_t ret = hg_proc_create_internal(hash, proc_p);

    if (ret == HG_SUCCESS)
        (*proc_p)->hg_class = hg_class;
    return ret;
}

hg_return_t hg_proc_create_set(hg_class_t *hg_class, void *buf, hg_size_t buf_size,
                               hg_proc_op_t op, hg_proc_hash_t hash, hg_proc_t *proc_p)
{
    hg_proc_t proc;
    hg_return_t ret = hg_proc_create(hg_class, hash, &proc);

    if (ret != HG_SUCCESS)
        return ret;
    ret = hg_proc_reset(proc, buf, buf_size, op);
    if (ret != HG_SUCCESS) {
        hg_proc_free(proc);
        return ret;
    }
    *proc_p = proc;
    return HG_SUCCESS;
}

static void hg_proc_drop_extra(struct hg_proc *proc)
{
    if (proc->extra_buf.is_mine)
        free(proc->extra_buf.buf);
    proc->extra_buf = (struct hg_proc_buf){0};
}

hg_return_t hg_proc_free(hg_proc_t proc)
{
    if (proc == HG_PROC_NULL)
        return HG_SUCCESS;
    hg_proc_fini(proc);
    free(proc);
    return HG_SUCCESS;
}

hg_return_t hg_proc_reset(hg_proc_t proc, void *buf, hg_size_t buf_size, hg_proc_op_t op)
{
    if (proc == HG_PROC_NULL || (unsigned)op > HG_FREE ||
        (buf == NULL && op != HG_FREE) || buf_size > SIZE_MAX) {
        HGX_LOG_ERROR(PROC, "invalid argument (proc=%p, buf=%p, op=%d)", (void *)proc,
                      buf, (int)op);
        return HG_INVALID_ARG;
    }
    hg_proc_drop_extra(proc);
    proc->proc_buf = (struct hg_proc_buf){.buf = buf, .size = buf ? (size_t)buf_size : 0};
    proc->current_buf = &proc->proc_buf;
    proc->op = op;
    proc->flags = 0;
    proc->crc = 0;
    proc->crc_pos = 0;
    proc->crc_final = 0;
    return HG_SUCCESS;
}

hg_class_t *hg_proc_get_class(hg_proc_t proc)
{
    return proc->hg_class;
}

void hg_proc_set_handle(hg_proc_t proc, hg_handle_t handle)
{
    proc->handle = handle;
}

hg_handle_t hg_proc_get_handle(hg_proc_t proc)
{
    return proc->handle;
}

hg_proc_op_t hg_proc_get_op(hg_proc_t proc)
{
    return proc->op;
}

void hg_proc_set_flags(hg_proc_t proc, uint8_t flags)
{
    proc->flags = flags;
}

uint8_t hg_proc_get_flags(hg_proc_t proc)
{
    return proc->flags;
}

hg_size_t hg_proc_get_size(hg_proc_t proc)
{
    return proc->current_buf->size;
}

hg_size_t hg_proc_get_size_used(hg_proc_t proc)
{
    return proc->current_buf->pos;
}

hg_size_t hg_proc_get_size_left(hg_proc_t proc)
{
    return proc->current_buf->size - proc->current_buf->pos;
}

void *hg_proc_get_extra_buf(hg_proc_t proc)
{
    return proc->extra_buf.buf;
}

hg_size_t hg_proc_get_extra_size(hg_proc_t proc)
{
    return proc->extra_buf.size;
}

struct XDR *hg_proc_get_xdr_ptr(hg_proc_t proc)
{
    (void)proc;
    return NULL; /* hgx encodes without XDR (HG_HAS_XDR is not set) */
}

/* Grow to at least want bytes; the first growth copies what proc_buf holds. */
static hg_return_t hg_proc_grow(struct hg_proc *proc, size_t want)
{
    size_t cur = proc->current_buf->size, new_size;
    unsigned char *nb;

    if (want <= cur)
        return HG_SUCCESS;
    if (proc->current_buf == &proc->extra_buf && !proc->extra_buf.is_mine) {
        /* realloc would move a buffer the caller now owns */
        HGX_LOG_ERROR(PROC, "cannot grow an extra buffer that was handed over");
        return HG_INVALID_ARG;
    }
    new_size = cur > SIZE_MAX / 2 ? want : (want > 2 * cur ? want : 2 * cur);
    if (new_size <= SIZE_MAX - HG_PROC_EXTRA_ALIGN)
        new_size = (new_size + HG_PROC_EXTRA_ALIGN - 1) & ~(HG_PROC_EXTRA_ALIGN - 1);

    if (proc->current_buf == &proc->extra_buf) {
        nb = realloc(proc->extra_buf.buf, new_size);
    } else {
        nb = malloc(new_size);
        if (nb != NULL && proc->proc_buf.pos > 0)
            memcpy(nb, proc->proc_buf.buf, proc->proc_buf.pos);
    }
    if (nb == NULL) {
        HGX_LOG_ERROR(PROC, "could not allocate extra buffer of %zu bytes", new_size);
        return HG_NOMEM;
    }
    if (proc->current_buf != &proc->extra_buf) {
        proc->extra_buf.pos = proc->proc_buf.pos;
        proc->current_buf = &proc->extra_buf;
    }
    proc->extra_buf.buf = nb;
    proc->extra_buf.size = new_size;
    proc->extra_buf.is_mine = true;
    return HG_SUCCESS;
}

void *hg_proc_advance_slow(struct hg_proc *proc, size_t n, hg_return_t *ret)
{
    struct hg_proc_buf *b = proc->current_buf;

    if (proc->op != HG_ENCODE) {
        /* Decoding: the input is untrusted, so running short is an error the
         * caller reports; keep it at debug level to not flood the log. */
        HGX_LOG_DEBUG(PROC, "decode needs %zu bytes, %zu left", n, b->size - b->pos);
        *ret = HG_OVERFLOW;
        return NULL;
    }
    if (n > SIZE_MAX - b->pos) {
        HGX_LOG_ERROR(PROC, "encode size overflows (%zu + %zu)", b->pos, n);
        *ret = HG_OVERFLOW;
        return NULL;
    }
    *ret = hg_proc_grow(proc, b->pos + n);
    if (*ret != HG_SUCCESS)
        return NULL;
    return hg_proc_advance(proc, n, ret);
}

hg_return_t hg_proc_set_size(hg_proc_t proc, hg_size_t buf_size)
{
    if (proc == HG_PROC_NULL || proc->op != HG_ENCODE) {
        HGX_LOG_ERROR(PROC, "set_size needs an encoding proc");
        return HG_INVALID_ARG;
    }
    if (buf_size > SIZE_MAX)
        return HG_NOMEM;
    return hg_proc_grow(proc, (size_t)buf_size);
}

hg_return_t hg_proc_set_extra_buf_is_mine(hg_proc_t proc, uint8_t mine)
{
    if (proc == HG_PROC_NULL || proc->extra_buf.buf == NULL) {
        HGX_LOG_ERROR(PROC, "no extra buffer to hand over");
        return HG_INVALID_ARG;
    }
    proc->extra_buf.is_mine = !mine;
    return HG_SUCCESS;
}

/* Add the bytes processed since the last call to the CRC. */
static void hg_proc_crc_catch_up(struct hg_proc *proc)
{
    struct hg_proc_buf *b = proc->current_buf;

    if (proc->hash == HG_NOHASH || proc->op == HG_FREE || b->pos == proc->crc_pos)
        return;
    proc->crc = hgx_crc64(proc->crc, b->buf + proc->crc_pos, b->pos - proc->crc_pos);
    proc->crc_pos = b->pos;
}

void *hg_proc_save_ptr(hg_proc_t proc, hg_size_t data_size)
{
    hg_return_t ret;
    void *p;

    if (proc == HG_PROC_NULL || proc->op == HG_FREE || data_size > SIZE_MAX) {
        HGX_LOG_ERROR(PROC, "save_ptr needs an encoding or decoding proc");
        return NULL;
    }
    hg_proc_crc_catch_up(proc);
    if (data_size == 0) /* nothing reserved; NULL only if there is no buffer */
        return proc->current_buf->buf ? proc->current_buf->buf + proc->current_buf->pos
                                      : NULL;
    p = hg_proc_advance(proc, (size_t)data_size, &ret);
    if (p != NULL)
        proc->crc_pos = proc->current_buf->pos; /* restore_ptr feeds these bytes */
    return p;
}

hg_return_t hg_proc_restore_ptr(hg_proc_t proc, void *data, hg_size_t data_size)
{
    if (proc == HG_PROC_NULL || proc->op == HG_FREE) {
        HGX_LOG_ERROR(PROC, "restore_ptr needs an encoding or decoding proc");
        return HG_INVALID_ARG;
    }
    hg_proc_checksum_update(proc, data, data_size);
    return HG_SUCCESS;
}

void hg_proc_checksum_update(hg_proc_t proc, void *data, hg_size_t data_size)
{
    if (proc == HG_PROC_NULL || proc->hash == HG_NOHASH || proc->op == HG_FREE ||
        data == NULL || data_size == 0)
        return;
    hg_proc_crc_catch_up(proc);
    proc->crc = hgx_crc64(proc->crc, data, (size_t)data_size);
}

hg_return_t hg_proc_flush(hg_proc_t proc)
{
    if (proc == HG_PROC_NULL) {
        HGX_LOG_ERROR(PROC, "NULL proc");
        return HG_INVALID_ARG;
    }
    hg_proc_crc_catch_up(proc);
    proc->crc_final = proc->crc;
    return HG_SUCCESS;
}

hg_size_t hg_proc_checksum_size(hg_proc_t proc)
{
    static const hg_size_t sizes[] = {[HG_CRC16] = 2, [HG_CRC32] = 4, [HG_CRC64] = 8};

    return proc->hash == HG_NOHASH ? 0 : sizes[proc->hash];
}

/* Checksum as bytes, little-endian, truncated to the width of the hash method. */
static hg_return_t hg_proc_checksum_bytes(hg_proc_t proc, const void *hash,
                                          hg_size_t hash_size, unsigned char *out,
                                          size_t *len)
{
    if (proc == HG_PROC_NULL || hash == NULL || proc->hash == HG_NOHASH ||
        hash_size < hg_proc_checksum_size(proc)) {
        HGX_LOG_ERROR(PROC,
                      "invalid checksum request (proc=%p, hash=%p, size=%" PRIu64 ")",
                      (void *)proc, hash, hash_size);
        return HG_INVALID_ARG;
    }
    *len = (size_t)hg_proc_checksum_size(proc);
    for (size_t i = 0; i < *len; i++)
        out[i] = (unsigned char)(proc->crc_final >> (8 * i));
    return HG_SUCCESS;
}

hg_return_t hg_proc_checksum_get(hg_proc_t proc, void *hash, hg_size_t hash_size)
{
    unsigned char bytes[HG_PROC_CHECKSUM_MAX_SIZE];
    size_t len;
    hg_return_t ret = hg_proc_checksum_bytes(proc, hash, hash_size, bytes, &len);

    if (ret == HG_SUCCESS)
        memcpy(hash, bytes, len);
    return ret;
}

hg_return_t hg_proc_checksum_verify(hg_proc_t proc, const void *hash, hg_size_t hash_size)
{
    unsigned char bytes[HG_PROC_CHECKSUM_MAX_SIZE];
    size_t len;
    hg_return_t ret = hg_proc_checksum_bytes(proc, hash, hash_size, bytes, &len);

    if (ret != HG_SUCCESS)
        return ret;
    if (memcmp(hash, bytes, len) != 0) {
        HGX_LOG_ERROR(PROC, "checksum mismatch (computed 0x%016" PRIx64 ")",
                      proc->crc_final);
        return HG_CHECKSUM_ERROR;
    }
    return HG_SUCCESS;
}

hg_return_t hgx_proc_undo_decode(hg_proc_t proc, hg_proc_cb_t proc_cb, void *data)
{
    hg_proc_op_t op;
    hg_return_t ret;

    if (proc == HG_PROC_NULL || proc_cb == NULL || data == NULL)
        return HG_INVALID_ARG;
    op = proc->op;
    proc->op = HG_FREE;
    ret = proc_cb(proc, data);
    proc->op = op;
    return ret;
}
