/*
 * bulk_transfer.c -- bulk transfers: NA_Get (pull) / NA_Put (push) split into
 * chunks, a memcpy when the origin is this process, and cancellation.
 */
#include "bulk_internal.h"

#include <stdlib.h>
#include <string.h>

/* Largest piece moved by one NA operation. */
#define HG_BULK_CHUNK_MAX ((size_t)256 * 1024)

struct hg_op_id {
    struct hg_completion completion;
    hg_context_t *context;
    hg_cb_t callback;            /* user callback, run from HG_Trigger() */
    void *arg;
    hg_bulk_done_cb_t done;      /* internal callback, run from progress */
    void *done_arg;
    hg_bulk_op_t op;
    hg_bulk_t origin, local;
    hg_size_t size;
    atomic_int pending;
    hg_return_t ret;
    atomic_bool canceled;
    size_t n_ops;
    na_op_id_t *ops[];
};

static void op_free(struct hg_op_id *op)
{
    na_class_t *na_class = op->context->hg_class->na_class;

    for (size_t i = 0; i < op->n_ops; i++)
        if (op->ops[i])
            NA_Op_destroy(na_class, op->ops[i]);
    HG_Bulk_free(op->origin);
    HG_Bulk_free(op->local);
    atomic_fetch_sub(&op->context->n_handles, 1);
    free(op);
}

static void user_complete_run(struct hg_completion *completion)
{
    struct hg_op_id *op = (struct hg_op_id *)completion;
    struct hg_cb_info info = {.arg = op->arg, .type = HG_CB_BULK, .ret = op->ret};

    info.info.bulk.origin_handle = op->origin;
    info.info.bulk.local_handle = op->local;
    info.info.bulk.op = op->op;
    info.info.bulk.size = op->size;
    if (op->callback)
        op->callback(&info);
    op_free(op);
}

/* One piece finished (or the poster let go): at zero, report. */
static void op_piece_done(struct hg_op_id *op)
{
    if (atomic_fetch_sub(&op->pending, 1) != 1)
        return;
    if (op->done) {
        op->done(op->done_arg, op->ret);
        op_free(op);
        return;
    }
    op->completion.run = user_complete_run;
    hg_completion_push(op->context, &op->completion);
}

static void op_error(struct hg_op_id *op, hg_return_t ret)
{
    if (ret != HG_SUCCESS && op->ret == HG_SUCCESS)
        op->ret = ret;
}

static void na_piece_cb(const struct na_cb_info *info)
{
    struct hg_op_id *op = info->arg;

    if (info->ret != NA_SUCCESS)
        op_error(op, hg_ret_from_na(info->ret));
    op_piece_done(op);
}

/* Copy size bytes between two local handles at the given offsets. */
static void copy_local(struct hg_bulk *dst, hg_size_t dst_off, struct hg_bulk *src,
    hg_size_t src_off, hg_size_t size)
{
    uint32_t di = 0, si = 0;

    while (di < dst->segment_count && dst_off >= dst->segments[di].len)
        dst_off -= dst->segments[di++].len;
    while (si < src->segment_count && src_off >= src->segments[si].len)
        src_off -= src->segments[si++].len;
    while (size > 0 && di < dst->segment_count && si < src->segment_count) {
        size_t dlen = dst->segments[di].len - (size_t)dst_off;
        size_t slen = src->segments[si].len - (size_t)src_off;
        size_t n = dlen < slen ? dlen : slen;
        if (n > size)
            n = (size_t)size;
        memmove((char *)dst->segments[di].base + dst_off,
            (char *)src->segments[si].base + src_off, n);
        size -= n;
        dst_off += n;
        src_off += n;
        if (dst_off == dst->segments[di].len)
            di++, dst_off = 0;
        if (src_off == src->segments[si].len)
            si++, src_off = 0;
    }
}

/* Transfer to self: find the live origin handle and copy, honoring its permissions. */
static hg_return_t transfer_self(struct hg_op_id *op, hg_size_t origin_offset, hg_size_t local_offset)
{
    struct hg_bulk *origin = op->origin;
    hg_class_t *hg_class = op->context->hg_class;

    if (origin->remote) {
        origin = hg_bulk_find_local(hg_class, origin->local_id);
        if (!origin) {
            HGX_LOG_ERROR(BULK, "self transfer: origin handle no longer exists");
            return HG_NOENTRY;
        }
    } else
        atomic_fetch_add(&origin->refcount, 1);
    hg_return_t ret = HG_SUCCESS;
    uint8_t need = op->op == HG_BULK_PULL ? HG_BULK_READ_ONLY : HG_BULK_WRITE_ONLY;
    if (!(origin->flags & need)) {
        HGX_LOG_ERROR(BULK, "self transfer: origin handle does not allow %s",
            op->op == HG_BULK_PULL ? "reads" : "writes");
        ret = HG_PERMISSION;
    } else if (op->op == HG_BULK_PULL)
        copy_local(op->local, local_offset, origin, origin_offset, op->size);
    else
        copy_local(origin, origin_offset, op->local, local_offset, op->size);
    HG_Bulk_free(origin);
    return ret;
}

static hg_return_t transfer_start(hg_context_t *context, hg_cb_t callback, void *arg,
    hg_bulk_done_cb_t done, void *done_arg, hg_bulk_op_t op_type, hg_addr_t origin_addr,
    uint8_t origin_id, hg_bulk_t origin, hg_size_t origin_offset, hg_bulk_t local,
    hg_size_t local_offset, hg_size_t size, hg_op_id_t *op_id)
{
    if (!context || !origin_addr || !origin || !local ||
        (op_type != HG_BULK_PULL && op_type != HG_BULK_PUSH)) {
        HGX_LOG_ERROR(BULK, "invalid argument");
        return HG_INVALID_ARG;
    }
    if (local->remote || origin_offset > origin->len || size > origin->len - origin_offset ||
        local_offset > local->len || size > local->len - local_offset) {
        HGX_LOG_ERROR(BULK, "transfer of %llu bytes out of bounds", (unsigned long long)size);
        return HG_INVALID_ARG;
    }
    hg_class_t *hg_class = context->hg_class;
    bool self = origin_addr->is_self;
    if (!self && !origin->remote) {
        HGX_LOG_ERROR(BULK, "origin handle is local but the origin address is not self");
        return HG_INVALID_ARG;
    }
    size_t n_ops = self || size == 0 ? 0 : (size_t)((size + HG_BULK_CHUNK_MAX - 1) / HG_BULK_CHUNK_MAX);
    struct hg_op_id *op = calloc(1, sizeof(*op) + n_ops * sizeof(op->ops[0]));
    if (!op)
        return HG_NOMEM;
    op->context = context;
    op->callback = callback;
    op->arg = arg;
    op->done = done;
    op->done_arg = done_arg;
    op->op = op_type;
    op->size = size;
    op->n_ops = n_ops;
    HG_Bulk_ref_incr(origin);
    HG_Bulk_ref_incr(local);
    op->origin = origin;
    op->local = local;
    atomic_init(&op->pending, 1);
    atomic_init(&op->canceled, false);
    atomic_fetch_add(&context->n_handles, 1);

    hg_return_t ret = HG_SUCCESS;
    if (self)
        ret = transfer_self(op, origin_offset, local_offset);
    else
        for (size_t i = 0; i < n_ops; i++)
            if (!(op->ops[i] = NA_Op_create(hg_class->na_class, NA_OP_SINGLE)))
                ret = HG_NOMEM;
    if (ret != HG_SUCCESS) {
        op_free(op);
        return ret;
    }
    if (op_id && op_id != HG_OP_ID_IGNORE)
        *op_id = op;
    for (size_t i = 0; i < n_ops; i++) {
        hg_size_t off = (hg_size_t)i * HG_BULK_CHUNK_MAX;
        size_t len = size - off < HG_BULK_CHUNK_MAX ? (size_t)(size - off) : HG_BULK_CHUNK_MAX;
        na_return_t na_ret;
        atomic_fetch_add(&op->pending, 1);
        if (op_type == HG_BULK_PULL)
            na_ret = NA_Get(hg_class->na_class, context->na_context, na_piece_cb, op, local->mem,
                local_offset + off, origin->mem, origin_offset + off, len, origin_addr->na_addr,
                origin_id, op->ops[i]);
        else
            na_ret = NA_Put(hg_class->na_class, context->na_context, na_piece_cb, op, local->mem,
                local_offset + off, origin->mem, origin_offset + off, len, origin_addr->na_addr,
                origin_id, op->ops[i]);
        if (na_ret != NA_SUCCESS) {
            atomic_fetch_sub(&op->pending, 1);
            HGX_LOG_ERROR(BULK, "could not post transfer piece: %s", NA_Error_to_string(na_ret));
            op_error(op, hg_ret_from_na(na_ret));
            /* Stop the pieces already posted; the callback reports the error. */
            for (size_t j = 0; j < i; j++)
                NA_Cancel(hg_class->na_class, context->na_context, op->ops[j]);
            break;
        }
    }
    op_piece_done(op);
    return HG_SUCCESS;
}

hg_return_t HG_Bulk_transfer(hg_context_t *context, hg_cb_t callback, void *arg, hg_bulk_op_t op,
    hg_addr_t origin_addr, hg_bulk_t origin_handle, hg_size_t origin_offset, hg_bulk_t local_handle,
    hg_size_t local_offset, hg_size_t size, hg_op_id_t *op_id)
{
    return transfer_start(context, callback, arg, NULL, NULL, op, origin_addr, 0, origin_handle,
        origin_offset, local_handle, local_offset, size, op_id);
}

hg_return_t HG_Bulk_transfer_id(hg_context_t *context, hg_cb_t callback, void *arg,
    hg_bulk_op_t op, hg_addr_t origin_addr, uint8_t origin_id, hg_bulk_t origin_handle,
    hg_size_t origin_offset, hg_bulk_t local_handle, hg_size_t local_offset, hg_size_t size,
    hg_op_id_t *op_id)
{
    return transfer_start(context, callback, arg, NULL, NULL, op, origin_addr, origin_id,
        origin_handle, origin_offset, local_handle, local_offset, size, op_id);
}

hg_return_t hg_bulk_transfer_internal(hg_context_t *context, hg_bulk_done_cb_t done, void *arg,
    hg_bulk_op_t op, hg_addr_t origin_addr, uint8_t origin_id, hg_bulk_t origin_handle,
    hg_size_t origin_offset, hg_bulk_t local_handle, hg_size_t local_offset, hg_size_t size,
    hg_op_id_t *op_id)
{
    return transfer_start(context, NULL, NULL, done, arg, op, origin_addr, origin_id, origin_handle,
        origin_offset, local_handle, local_offset, size, op_id);
}

hg_return_t HG_Bulk_cancel(hg_op_id_t op_id)
{
    if (!op_id || op_id == (hg_op_id_t)HG_OP_ID_IGNORE)
        return HG_INVALID_ARG;
    if (atomic_exchange(&op_id->canceled, true))
        return HG_SUCCESS;
    hg_class_t *hg_class = op_id->context->hg_class;
    for (size_t i = 0; i < op_id->n_ops; i++)
        NA_Cancel(hg_class->na_class, op_id->context->na_context, op_id->ops[i]);
    return HG_SUCCESS;
}
