/*
 * bulk_transfer.c -- bulk transfers: NA_Get (pull) / NA_Put (push) split into
 * chunks, a memcpy when the origin is this process or when a pull reads the
 * data an eager descriptor carried, and cancellation.
 */
#include "bulk_internal.h"
#include "hgx_assert.h"
#include "na_rma.h"

#include <stdlib.h>
#include <string.h>

struct hg_op_id {
    struct hg_completion completion;
    hg_context_t *context;
    hg_cb_t callback; /* user callback, run from HG_Trigger() */
    void *arg;
    hg_bulk_done_cb_t done; /* internal callback, run from progress */
    void *done_arg;
    hg_bulk_op_t op;
    hg_bulk_t origin, local;
    hg_size_t size;
    atomic_int pending;
    hg_return_t ret;
    atomic_bool canceled;
    /* What a re-post of a cancelled piece needs (see op_settle). */
    na_addr_t *na_addr;
    uint8_t origin_id;
    hg_size_t origin_offset, local_offset;
    size_t piece_max;
    size_t n_ops;
    struct hg_bulk_piece {
        na_op_id_t *na_op;
        struct hg_op_id *owner;
        size_t index;
        na_return_t ret;
    } pieces[];
};

static na_return_t piece_post(struct hg_op_id *op, struct hg_bulk_piece *piece);

static void op_free(struct hg_op_id *op)
{
    na_class_t *na_class = op->context->hg_class->na_class;

    for (size_t i = 0; i < op->n_ops; i++)
        if (op->pieces[i].na_op)
            NA_Op_destroy(na_class, op->pieces[i].na_op);
    NA_Addr_free(na_class, op->na_addr);
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

static void op_error(struct hg_op_id *op, hg_return_t ret)
{
    if (ret != HG_SUCCESS && op->ret == HG_SUCCESS)
        op->ret = ret;
}

/*
 * All pieces ended. Either the cancel succeeded or the transfer did, never
 * both: when every piece was cancelled nothing moved and the transfer is
 * HG_CANCELED; when some pieces had already moved their data the cancel lost,
 * so the cancelled pieces are posted again and the transfer completes in
 * full. Returns true when the transfer is settled.
 */
static bool op_settle(struct hg_op_id *op)
{
    size_t n_canceled = 0, n_moved = 0;
    for (size_t i = 0; i < op->n_ops; i++) {
        if (op->pieces[i].ret == NA_CANCELED)
            n_canceled++;
        else if (op->pieces[i].ret == NA_SUCCESS)
            n_moved++;
    }
    if (n_canceled == 0 || op->ret != HG_CANCELED)
        return true;
    if (n_moved == 0)
        return true; /* nothing moved: the cancel wins */
    op->ret = HG_SUCCESS;
    atomic_store(&op->pending, 1);
    for (size_t i = 0; i < op->n_ops; i++) {
        struct hg_bulk_piece *piece = &op->pieces[i];
        if (piece->ret != NA_CANCELED)
            continue;
        atomic_fetch_add(&op->pending, 1);
        na_return_t na_ret = piece_post(op, piece);
        if (na_ret != NA_SUCCESS) {
            atomic_fetch_sub(&op->pending, 1);
            op_error(op, hg_ret_from_na(na_ret));
        }
    }
    return atomic_fetch_sub(&op->pending, 1) == 1;
}

/* One piece finished (or the poster let go): at zero, report. */
static void op_piece_done(struct hg_op_id *op)
{
    int before = atomic_fetch_sub(&op->pending, 1);
    HGX_ASSERT(before > 0);
    if (before != 1)
        return;
    if (!op_settle(op))
        return;
    if (op->done) {
        op->done(op->done_arg, op->ret);
        op_free(op);
        return;
    }
    op->completion.run = user_complete_run;
    hg_completion_push(op->context, &op->completion);
}

static void na_piece_cb(const struct na_cb_info *info)
{
    struct hg_bulk_piece *piece = info->arg;
    struct hg_op_id *op = piece->owner;

    piece->ret = info->ret;
    if (info->ret != NA_SUCCESS)
        op_error(op, hg_ret_from_na(info->ret));
    op_piece_done(op);
}

static na_return_t piece_post(struct hg_op_id *op, struct hg_bulk_piece *piece)
{
    na_class_t *na_class = op->context->hg_class->na_class;
    hg_size_t off = (hg_size_t)piece->index * op->piece_max;
    size_t len =
        op->size - off < op->piece_max ? (size_t)(op->size - off) : op->piece_max;

    piece->ret = NA_SUCCESS;
    return (op->op == HG_BULK_PULL ? NA_Get : NA_Put)(
        na_class, op->context->na_context, na_piece_cb, piece, op->local->mem,
        op->local_offset + off, op->origin->mem, op->origin_offset + off, len,
        op->na_addr, op->origin_id, piece->na_op);
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

/* Pull from the copy of the data an eager descriptor carried: no RMA. */
static void transfer_eager(struct hg_op_id *op, hg_size_t origin_offset,
                           hg_size_t local_offset)
{
    struct na_segment whole = {.base = op->origin->eager, .len = (size_t)op->origin->len};
    struct hg_bulk flat = {.segment_count = 1, .segments = &whole};

    copy_local(op->local, local_offset, &flat, origin_offset, op->size);
}

/* Transfer to self: find the live origin handle and copy, honoring its permissions. */
static hg_return_t transfer_self(struct hg_op_id *op, hg_size_t origin_offset,
                                 hg_size_t local_offset)
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

static hg_return_t
transfer_start(hg_context_t *context, hg_cb_t callback, void *arg, hg_bulk_done_cb_t done,
               void *done_arg, hg_bulk_op_t op_type, hg_addr_t origin_addr,
               uint8_t origin_id, hg_bulk_t origin, hg_size_t origin_offset,
               hg_bulk_t local, hg_size_t local_offset, hg_size_t size, hg_op_id_t *op_id)
{
    if (!context || !origin_addr || !origin || !local ||
        (op_type != HG_BULK_PULL && op_type != HG_BULK_PUSH)) {
        HGX_LOG_ERROR(BULK, "invalid argument");
        return HG_INVALID_ARG;
    }
    if (local->remote || origin_offset > origin->len ||
        size > origin->len - origin_offset || local_offset > local->len ||
        size > local->len - local_offset) {
        HGX_LOG_ERROR(BULK, "transfer of %llu bytes out of bounds",
                      (unsigned long long)size);
        return HG_INVALID_ARG;
    }
    hg_class_t *hg_class = context->hg_class;
    bool self = origin_addr->is_self;
    if (!self && !origin->remote) {
        HGX_LOG_ERROR(BULK, "origin handle is local but the origin address is not self");
        return HG_INVALID_ARG;
    }
    /* As Mercury, the origin handle's own flags are checked first; its owner
     * still decides what a peer may do to its memory. */
    if (!(origin->flags &
          (op_type == HG_BULK_PULL ? HG_BULK_READ_ONLY : HG_BULK_WRITE_ONLY))) {
        HGX_LOG_ERROR(BULK, "origin handle does not allow %s",
                      op_type == HG_BULK_PULL ? "reads" : "writes");
        return HG_PERMISSION;
    }
    bool eager = origin->eager && op_type == HG_BULK_PULL;
    size_t max = na_rma_piece_max(hg_class->na_class);
    size_t n_ops = self || eager || size == 0 ? 0 : (size_t)((size + max - 1) / max);
    struct hg_op_id *op = calloc(1, sizeof(*op) + n_ops * sizeof(op->pieces[0]));
    if (!op)
        return HG_NOMEM;
    op->context = context;
    op->callback = callback;
    op->arg = arg;
    op->done = done;
    op->done_arg = done_arg;
    op->op = op_type;
    op->size = size;
    op->piece_max = max;
    op->n_ops = n_ops;
    op->origin_id = origin_id;
    op->origin_offset = origin_offset;
    op->local_offset = local_offset;
    HG_Bulk_ref_incr(origin);
    HG_Bulk_ref_incr(local);
    op->origin = origin;
    op->local = local;
    atomic_init(&op->pending, 1);
    atomic_init(&op->canceled, false);
    atomic_fetch_add(&context->n_handles, 1);

    hg_return_t ret = HG_SUCCESS;
    if (eager)
        transfer_eager(op, origin_offset, local_offset);
    else if (self)
        ret = transfer_self(op, origin_offset, local_offset);
    else if (NA_Addr_dup(hg_class->na_class, origin_addr->na_addr, &op->na_addr) !=
             NA_SUCCESS)
        ret = HG_NOMEM;
    else
        for (size_t i = 0; i < n_ops; i++) {
            op->pieces[i] = (struct hg_bulk_piece){.owner = op, .index = i};
            if (!(op->pieces[i].na_op = NA_Op_create(hg_class->na_class, NA_OP_SINGLE)))
                ret = HG_NOMEM;
        }
    if (ret != HG_SUCCESS) {
        op_free(op);
        return ret;
    }
    if (op_id && op_id != HG_OP_ID_IGNORE)
        *op_id = op;
    for (size_t i = 0; i < n_ops; i++) {
        atomic_fetch_add(&op->pending, 1);
        na_return_t na_ret = piece_post(op, &op->pieces[i]);
        if (na_ret != NA_SUCCESS) {
            atomic_fetch_sub(&op->pending, 1);
            HGX_LOG_ERROR(BULK, "could not post transfer piece: %s",
                          NA_Error_to_string(na_ret));
            op_error(op, hg_ret_from_na(na_ret));
            /* Stop the pieces already posted; the callback reports the error. */
            for (size_t j = 0; j < i; j++)
                NA_Cancel(hg_class->na_class, context->na_context, op->pieces[j].na_op);
            break;
        }
    }
    op_piece_done(op);
    return HG_SUCCESS;
}

hg_return_t HG_Bulk_transfer(hg_context_t *context, hg_cb_t callback, void *arg,
                             hg_bulk_op_t op, hg_addr_t origin_addr,
                             hg_bulk_t origin_handle, hg_size_t origin_offset,
                             hg_bulk_t local_handle, hg_size_t local_offset,
                             hg_size_t size, hg_op_id_t *op_id)
{
    return HG_Bulk_transfer_id(context, callback, arg, op, origin_addr, 0, origin_handle,
                               origin_offset, local_handle, local_offset, size, op_id);
}

hg_return_t HG_Bulk_transfer_id(hg_context_t *context, hg_cb_t callback, void *arg,
                                hg_bulk_op_t op, hg_addr_t origin_addr, uint8_t origin_id,
                                hg_bulk_t origin_handle, hg_size_t origin_offset,
                                hg_bulk_t local_handle, hg_size_t local_offset,
                                hg_size_t size, hg_op_id_t *op_id)
{
    hg_return_t ret = transfer_start(context, callback, arg, NULL, NULL, op, origin_addr,
                                     origin_id, origin_handle, origin_offset,
                                     local_handle, local_offset, size, op_id);
    if (ret == HG_SUCCESS)
        hg_count(context->hg_class, HG_COUNT_BULK, 1);
    return ret;
}

hg_return_t HG_Bulk_bind_transfer(hg_context_t *context, hg_cb_t callback, void *arg,
                                  hg_bulk_op_t op, hg_bulk_t origin_handle,
                                  hg_size_t origin_offset, hg_bulk_t local_handle,
                                  hg_size_t local_offset, hg_size_t size,
                                  hg_op_id_t *op_id)
{
    if (!origin_handle || !origin_handle->addr) {
        HGX_LOG_ERROR(BULK, "origin bulk handle is not bound (HG_Bulk_bind)");
        return HG_INVALID_ARG;
    }
    return HG_Bulk_transfer_id(context, callback, arg, op, origin_handle->addr,
                               origin_handle->context_id, origin_handle, origin_offset,
                               local_handle, local_offset, size, op_id);
}

hg_return_t hg_bulk_transfer_internal(hg_context_t *context, hg_bulk_done_cb_t done,
                                      void *arg, hg_bulk_op_t op, hg_addr_t origin_addr,
                                      uint8_t origin_id, hg_bulk_t origin_handle,
                                      hg_size_t origin_offset, hg_bulk_t local_handle,
                                      hg_size_t local_offset, hg_size_t size,
                                      hg_op_id_t *op_id)
{
    return transfer_start(context, NULL, NULL, done, arg, op, origin_addr, origin_id,
                          origin_handle, origin_offset, local_handle, local_offset, size,
                          op_id);
}

hg_return_t HG_Bulk_cancel(hg_op_id_t op_id)
{
    if (!op_id || op_id == (hg_op_id_t)HG_OP_ID_IGNORE)
        return HG_INVALID_ARG;
    if (atomic_exchange(&op_id->canceled, true))
        return HG_SUCCESS;
    hg_class_t *hg_class = op_id->context->hg_class;
    for (size_t i = 0; i < op_id->n_ops; i++)
        NA_Cancel(hg_class->na_class, op_id->context->na_context, op_id->pieces[i].na_op);
    return HG_SUCCESS;
}
