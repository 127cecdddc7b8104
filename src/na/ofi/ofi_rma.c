/*
 * ofi_rma.c -- put/get: parts cut at the provider limits, bounce buffers and the
 * gated tcp get.
 */
#include "ofi_int.h"

void ofi_bounce_free(struct ofi_bounce *b)
{
    if (b->mr)
        ofi_mr_close(b->mr);
    free(b);
}

/* The smallest cached buffer that holds len bytes, taken out of the cache. */
static struct ofi_bounce *ofi_bounce_cached(struct ofi_class *cls, size_t len)
{
    struct ofi_bounce **best = NULL;

    hgx_lock(&cls->ctx_lock);
    for (struct ofi_bounce **p = &cls->bounce_free; *p; p = &(*p)->next_free)
        if ((*p)->cap >= len && (!best || (*p)->cap < (*best)->cap))
            best = p;
    struct ofi_bounce *b = best ? *best : NULL;
    if (b) {
        *best = b->next_free;
        cls->bounce_free_count--;
        cls->bounce_free_bytes -= b->cap;
    }
    hgx_unlock(&cls->ctx_lock);
    return b;
}

/* Keep a buffer nobody references any more, within the cache bounds. */
static void ofi_bounce_recycle(struct ofi_class *cls, struct ofi_bounce *b)
{
    hgx_lock(&cls->ctx_lock);
    bool keep = cls->bounce_free_count < OFI_BOUNCE_CACHE_MAX &&
                b->cap <= OFI_BOUNCE_CACHE_BYTES - cls->bounce_free_bytes;
    if (keep) {
        b->next_free = cls->bounce_free;
        cls->bounce_free = b;
        cls->bounce_free_count++;
        cls->bounce_free_bytes += b->cap;
    }
    hgx_unlock(&cls->ctx_lock);
    if (!keep)
        ofi_bounce_free(b);
}

static struct ofi_bounce *ofi_bounce_alloc(struct ofi_class *cls, size_t len,
                                           na_return_t *ret)
{
    struct ofi_bounce *b = malloc(sizeof(*b) + len);
    if (!b) {
        HGX_LOG_ERROR(OFI, "out of memory for a %zu-byte get buffer", len);
        *ret = NA_NOMEM;
        return NULL;
    }
    b->mr = NULL;
    b->cap = len;
    if (cls->mr_mode & FI_MR_LOCAL) {
        b->mr = ofi_mr_open(cls, b->data, len, FI_READ, ret);
        if (!b->mr) {
            free(b);
            return NULL;
        }
    }
    return b;
}

static struct ofi_bounce *ofi_bounce_new(struct ofi_class *cls, struct ofi_peer *peer,
                                         size_t len, na_return_t *ret)
{
    struct ofi_bounce *b = ofi_bounce_cached(cls, len);
    if (!b && !(b = ofi_bounce_alloc(cls, len, ret)))
        return NULL;
    atomic_init(&b->refs, 1);
    b->cls = cls;
    b->peer = peer;
    b->len = len;
    ofi_peer_ref(cls, peer);
    atomic_fetch_add(&peer->bounces, 1);
    return b;
}

/* The last reference also does an address removal deferred for it. */
void ofi_bounce_put(struct ofi_bounce *b)
{
    int refs = atomic_fetch_sub(&b->refs, 1);
    HGX_ASSERT(refs > 0);
    if (refs != 1)
        return;
    struct ofi_class *cls = b->cls;
    ofi_mutex_lock(cls, &cls->lock);
    if (atomic_fetch_sub(&b->peer->bounces, 1) == 1 && b->peer->removed)
        ofi_av_remove_locked(cls, b->peer);
    ofi_mutex_unlock(cls, &cls->lock);
    ofi_peer_put(cls, b->peer);
    ofi_bounce_recycle(cls, b);
}

/* Copy a bounced get to where the caller asked for it. */
void ofi_bounce_copy_out(const struct ofi_op *oop)
{
    struct na_seg_cursor cur;
    struct na_seg_run run;

    /* ofi_rma checked that the handle holds the whole get. */
    bool ok =
        na_seg_cursor_init(&cur, ofi_seg_list(oop->user_mh), oop->user_off,
                           NA_SEG_LIST(&oop->bounce_seg, 1, len), 0, oop->bounce->len);
    HGX_ASSERT(ok);
    (void)ok;
    while (na_seg_cursor_next(&cur, &run))
        memcpy((void *)(uintptr_t)(ofi_seg_at(&cur.local, run.local_index)->addr +
                                   run.local_offset),
               oop->bounce->data + run.remote_offset, run.len);
}

/* One provider operation of a put/get. */
struct ofi_rma_part {
    struct iovec iov[OFI_IOV_MAX];
    void *desc[OFI_IOV_MAX];
    struct fi_rma_iov rma_iov[OFI_IOV_MAX];
    size_t iov_count, rma_iov_count;
    uint64_t len;
};

/* Describe the next part: extend the current iov while the data stays in the
 * same segment, start a new one otherwise, and stop at the iov limits or the
 * provider's maximum message size. */
static void ofi_rma_next_part(const struct ofi_class *cls, struct na_seg_cursor *cur,
                              struct ofi_rma_part *part)
{
    size_t last_lseg = SIZE_MAX, last_rseg = SIZE_MAX;
    uint64_t total = 0;
    bool virt = cls->mr_mode & FI_MR_VIRT_ADDR;
    struct na_seg_run run;

    part->iov_count = part->rma_iov_count = 0;
    while (total < cls->max_msg_size) {
        struct na_seg_cursor before = *cur;
        if (!na_seg_cursor_next_max(cur, cls->max_msg_size - total, &run))
            break;
        bool new_iov = run.local_index != last_lseg,
             new_rma = run.remote_index != last_rseg;
        if ((new_iov && part->iov_count == cls->iov_limit) ||
            (new_rma && part->rma_iov_count == cls->rma_iov_limit)) {
            *cur = before; /* the run starts the next part */
            break;
        }
        if (new_iov) {
            const struct ofi_seg *ls = ofi_seg_at(&cur->local, run.local_index);
            part->iov[part->iov_count] = (struct iovec){
                .iov_base = (void *)(uintptr_t)(ls->addr + run.local_offset),
                .iov_len = 0};
            part->desc[part->iov_count++] = ls->desc;
            last_lseg = run.local_index;
        }
        if (new_rma) {
            const struct ofi_seg *rs = ofi_seg_at(&cur->remote, run.remote_index);
            /* Without FI_MR_VIRT_ADDR a registration is addressed from 0. */
            part->rma_iov[part->rma_iov_count++] =
                (struct fi_rma_iov){.addr = (virt ? rs->addr : 0) + run.remote_offset,
                                    .len = 0,
                                    .key = rs->key};
            last_rseg = run.remote_index;
        }
        /* Runs in the same segments as the last ones continue them. */
        part->iov[part->iov_count - 1].iov_len += run.len;
        part->rma_iov[part->rma_iov_count - 1].len += run.len;
        total += run.len;
    }
    part->len = total;
}

static size_t ofi_rma_count_parts(const struct ofi_class *cls, struct na_seg_cursor cur)
{
    struct ofi_rma_part part;
    size_t n = 0;
    while (cur.left > 0) {
        ofi_rma_next_part(cls, &cur, &part);
        n++;
    }
    return n;
}

/* A put is complete once the target has the data, not once it left. */
static uint64_t ofi_put_flags(const struct ofi_class *cls, uint64_t len)
{
    if (cls->proto->put_delivered_above_inject && len > cls->info->tx_attr->inject_size)
        return FI_COMPLETION;
    return FI_COMPLETION | FI_DELIVERY_COMPLETE;
}

ssize_t ofi_post_rma_part(struct ofi_class *cls, struct ofi_op *oop, struct ofi_ctx *ctx)
{
    struct na_seg_cursor prev = oop->cur;
    struct ofi_rma_part part;

    /* Moved before posting: once posted, the part may complete on another
     * thread, which for the head of a gated get sets the body's cursor. */
    ofi_rma_next_part(cls, &oop->cur, &part);
    struct fi_msg_rma msg = {
        .msg_iov = part.iov,
        .desc = part.desc,
        .iov_count = part.iov_count,
        .addr = oop->fi_addr,
        .rma_iov = part.rma_iov,
        .rma_iov_count = part.rma_iov_count,
        .context = ctx,
    };
    ssize_t rc = oop->kind == OFI_OP_PUT
                     ? fi_writemsg(cls->ep, &msg, ofi_put_flags(cls, part.len))
                     : fi_readmsg(cls->ep, &msg, FI_COMPLETION);
    if (rc != 0)
        oop->cur = prev;
    return rc;
}

/* The head of a gated get ended (its completion, or a forced cancel that
 * claimed it). The gate opens only for a head that arrived with no cancel
 * requested; otherwise the body is never asked for and the op ends with the
 * head's error or NA_CANCELED, the caller's memory untouched. The decision
 * is taken under the class lock, where ofi_cancel_may_force reads it. */
static void ofi_get_head_done(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret)
{
    HGX_ASSERT(oop->gated);
    ofi_mutex_lock(cls, &cls->lock);
    bool open = ret == NA_SUCCESS && !na_op_cancel_requested(na_op_from_plugin(oop));
    if (open) {
        oop->cur = oop->body_cur;
        oop->post_limit = oop->nparts;
        atomic_store(&oop->gate_open, true);
    }
    ofi_mutex_unlock(cls, &cls->lock);
    ofi_part_done(cls, oop, ret); /* the posting guard keeps the op alive */
    if (open)
        ofi_submit(cls, oop, true);
    else
        ofi_parts_abandon(cls, oop, ret != NA_SUCCESS ? ret : NA_CANCELED);
}

/* One provider operation of a put/get ended. */
void ofi_rma_part_end(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret)
{
    if (oop->gated && !atomic_load(&oop->gate_open))
        ofi_get_head_done(cls, oop, ret);
    else
        ofi_part_done(cls, oop, ret);
}

/* Point a tcp get at a bounce buffer: the whole get below
 * OFI_GET_GATED_MIN, else its head, whatever one part carries of the first
 * OFI_GET_HEAD bytes, with the rest as the body read directly later. */
static na_return_t ofi_get_bounce_setup(struct ofi_class *cls, struct ofi_op *oop,
                                        const struct ofi_mem_handle *user,
                                        na_offset_t local_offset,
                                        struct na_seg_list remote,
                                        na_offset_t remote_offset, uint64_t size)
{
    na_return_t ret = NA_SUCCESS;
    uint64_t len = size;

    oop->gated = size >= OFI_GET_GATED_MIN;
    if (oop->gated)
        len = OFI_GET_HEAD;
    oop->bounce = ofi_bounce_new(cls, oop->peer, len, &ret);
    if (!oop->bounce)
        return ret;
    oop->user_mh = user;
    oop->user_off = local_offset;
    oop->bounce_seg =
        (struct ofi_seg){.addr = (uint64_t)(uintptr_t)oop->bounce->data,
                         .len = len,
                         .desc = oop->bounce->mr ? fi_mr_desc(oop->bounce->mr) : NULL};
    struct na_seg_list bounce = NA_SEG_LIST(&oop->bounce_seg, 1, len);
    /* ofi_rma checked that both handles hold the whole get. */
    bool ok = na_seg_cursor_init(&oop->cur, bounce, 0, remote, remote_offset, len);
    if (oop->gated) {
        struct na_seg_cursor probe = oop->cur;
        struct ofi_rma_part part;
        ofi_rma_next_part(cls, &probe, &part);
        len = oop->bounce->len = oop->bounce_seg.len = part.len;
        ok = ok && na_seg_cursor_init(&oop->cur, bounce, 0, remote, remote_offset, len) &&
             na_seg_cursor_init(&oop->body_cur, ofi_seg_list(user), local_offset + len,
                                remote, remote_offset + len, size - len);
    }
    HGX_ASSERT(ok);
    (void)ok;
    return NA_SUCCESS;
}

/* Split the transfer into parts and submit them. parts_left holds one extra
 * count (the posting guard) until every part is posted (for a gated get,
 * until its body is). */
na_return_t ofi_rma(na_class_t *na_class, na_op_id_t *op, bool put,
                    na_mem_handle_t *local, na_offset_t local_offset,
                    na_mem_handle_t *remote, na_offset_t remote_offset, size_t size,
                    na_addr_t *remote_addr)
{
    struct ofi_class *cls = ofi_class(na_class);
    enum ofi_op_kind kind = put ? OFI_OP_PUT : OFI_OP_GET;
    struct ofi_op *oop = ofi_op_start(op, kind, ofi_addr_peer(remote_addr));
    na_return_t ret = NA_SUCCESS;

    HGX_CHECK(OFI, (cls->mr_mode & FI_MR_LOCAL) && !local->registered, error, ret,
              NA_INVALID_ARG, "the provider needs local memory registered (FI_MR_LOCAL)");
    ret = ofi_peer_fi_addr(cls, oop->peer, &oop->fi_addr);
    if (ret != NA_SUCCESS)
        goto error;
    if (size == 0) {
        ofi_op_finish(cls, oop, NA_SUCCESS);
        return NA_SUCCESS;
    }
    /* The core checked offsets and size against each handle's length, and
     * a handle's segments add up to its length. */
    struct na_seg_list rlist = ofi_seg_list(ofi_mh(remote));
    HGX_CHECK(OFI,
              !na_seg_cursor_init(&oop->cur, ofi_seg_list(ofi_mh(local)), local_offset,
                                  rlist, remote_offset, size),
              error, ret, NA_INVALID_ARG, "transfer of %zu bytes outside a handle", size);
    if (kind == OFI_OP_GET && cls->proto->cancel_policy == OFI_CANCEL_FORCE_GETS) {
        ret = ofi_get_bounce_setup(cls, oop, ofi_mh(local), local_offset, rlist,
                                   remote_offset, size);
        if (ret != NA_SUCCESS)
            goto error;
    }
    oop->post_limit = ofi_rma_count_parts(cls, oop->cur);
    oop->nparts = oop->post_limit;
    if (oop->gated)
        oop->nparts += ofi_rma_count_parts(cls, oop->body_cur);
    if (oop->nparts > 1) {
        oop->parts = calloc(oop->nparts, sizeof(*oop->parts));
        HGX_CHECK(OFI, !oop->parts, error, ret, NA_NOMEM,
                  "out of memory for %zu RMA parts", oop->nparts);
    }
    atomic_store(&oop->part_ret, NA_SUCCESS);
    atomic_store(&oop->parts_left, oop->nparts + 1);
    if (cls->proto->rma_unchecked && !ofi_check_leased(cls, oop))
        return ofi_check_start(cls, oop);
    return ofi_submit(cls, oop, false);

error:
    ofi_op_release(cls, oop);
    return ret;
}
