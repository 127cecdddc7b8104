/*
 * ofi_rma.c -- put/get: parts cut at the provider limits, bounce buffers and the
 * gated tcp get.
 */
#include "ofi_int.h"

static void ofi_seek(const struct ofi_mem_handle *mh, uint64_t offset, size_t *seg,
                     uint64_t *off)
{
    size_t i = 0;
    while (i < mh->nseg - 1 && offset >= mh->segs[i].len) {
        offset -= mh->segs[i].len;
        i++;
    }
    *seg = i;
    *off = offset;
}

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

    ofi_mutex_lock(cls, &cls->ctx_lock);
    for (struct ofi_bounce **p = &cls->bounce_free; *p; p = &(*p)->next_free)
        if ((*p)->cap >= len && (!best || (*p)->cap < (*best)->cap))
            best = p;
    struct ofi_bounce *b = best ? *best : NULL;
    if (b) {
        *best = b->next_free;
        cls->bounce_free_count--;
        cls->bounce_free_bytes -= b->cap;
    }
    ofi_mutex_unlock(cls, &cls->ctx_lock);
    return b;
}

/* Keep a buffer nobody references any more, within the cache bounds. */
static void ofi_bounce_recycle(struct ofi_class *cls, struct ofi_bounce *b)
{
    ofi_mutex_lock(cls, &cls->ctx_lock);
    bool keep = cls->bounce_free_count < OFI_BOUNCE_CACHE_MAX &&
                b->cap <= OFI_BOUNCE_CACHE_BYTES - cls->bounce_free_bytes;
    if (keep) {
        b->next_free = cls->bounce_free;
        cls->bounce_free = b;
        cls->bounce_free_count++;
        cls->bounce_free_bytes += b->cap;
    }
    ofi_mutex_unlock(cls, &cls->ctx_lock);
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
    ofi_peer_ref(peer);
    atomic_fetch_add(&peer->bounces, 1);
    return b;
}

/* The last reference also does an address removal deferred for it. */
void ofi_bounce_put(struct ofi_bounce *b)
{
    if (atomic_fetch_sub(&b->refs, 1) != 1)
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
    const struct ofi_mem_handle *mh = oop->user_mh;
    const unsigned char *src = oop->bounce->data;
    size_t left = oop->bounce->len, seg;
    uint64_t off;

    ofi_seek(mh, oop->user_off, &seg, &off);
    for (; left > 0; seg++, off = 0) {
        size_t n = mh->segs[seg].len - off < left ? mh->segs[seg].len - off : left;
        memcpy((void *)(uintptr_t)(mh->segs[seg].addr + off), src, n);
        src += n;
        left -= n;
    }
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
static void ofi_rma_next_part(const struct ofi_class *cls, struct ofi_rma_cursor *cur,
                              struct ofi_rma_part *part)
{
    size_t last_lseg = SIZE_MAX, last_rseg = SIZE_MAX;
    uint64_t total = 0;
    bool virt = cls->mr_mode & FI_MR_VIRT_ADDR;

    part->iov_count = part->rma_iov_count = 0;
    while (cur->left > 0 && total < cls->max_msg_size) {
        const struct ofi_seg *ls = &cur->local->segs[cur->lseg];
        const struct ofi_seg *rs = &cur->remote->segs[cur->rseg];
        if (cur->loff == ls->len) {
            cur->lseg++;
            cur->loff = 0;
            continue;
        }
        if (cur->roff == rs->len) {
            cur->rseg++;
            cur->roff = 0;
            continue;
        }
        bool new_iov = cur->lseg != last_lseg, new_rma = cur->rseg != last_rseg;
        if ((new_iov && part->iov_count == cls->iov_limit) ||
            (new_rma && part->rma_iov_count == cls->rma_iov_limit))
            break;
        uint64_t n = cur->left;
        if (ls->len - cur->loff < n)
            n = ls->len - cur->loff;
        if (rs->len - cur->roff < n)
            n = rs->len - cur->roff;
        if (cls->max_msg_size - total < n)
            n = cls->max_msg_size - total;
        if (new_iov) {
            part->iov[part->iov_count] = (struct iovec){
                .iov_base = (void *)(uintptr_t)(ls->addr + cur->loff), .iov_len = 0};
            part->desc[part->iov_count++] = ls->desc;
            last_lseg = cur->lseg;
        }
        if (new_rma) {
            /* Without FI_MR_VIRT_ADDR a registration is addressed from 0. */
            part->rma_iov[part->rma_iov_count++] = (struct fi_rma_iov){
                .addr = (virt ? rs->addr : 0) + cur->roff, .len = 0, .key = rs->key};
            last_rseg = cur->rseg;
        }
        part->iov[part->iov_count - 1].iov_len += n;
        part->rma_iov[part->rma_iov_count - 1].len += n;
        cur->loff += n;
        cur->roff += n;
        cur->left -= n;
        total += n;
    }
    part->len = total;
}

static size_t ofi_rma_count_parts(const struct ofi_class *cls, struct ofi_rma_cursor cur)
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
    struct ofi_rma_cursor prev = oop->cur;
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

/* Point a tcp get (cursor set up with the user's local handle, the remote
 * one positioned) at a bounce buffer: the whole get below
 * OFI_GET_GATED_MIN, else its head, whatever one part carries of the first
 * OFI_GET_HEAD bytes, with the rest as the body read directly later. */
static na_return_t ofi_get_bounce_setup(struct ofi_class *cls, struct ofi_op *oop,
                                        na_offset_t local_offset,
                                        na_offset_t remote_offset)
{
    const struct ofi_mem_handle *user = oop->cur.local;
    uint64_t size = oop->cur.left;
    na_return_t ret = NA_SUCCESS;

    oop->gated = size >= OFI_GET_GATED_MIN;
    oop->cur.left = oop->gated ? OFI_GET_HEAD : size;
    oop->bounce = ofi_bounce_new(cls, oop->peer, oop->cur.left, &ret);
    if (!oop->bounce)
        return ret;
    oop->user_mh = user;
    oop->user_off = local_offset;
    oop->bounce_mh.nseg = 1;
    oop->bounce_mh.segs = &oop->bounce_mh.one_seg;
    oop->bounce_mh.one_seg =
        (struct ofi_seg){.addr = (uint64_t)(uintptr_t)oop->bounce->data,
                         .len = oop->cur.left,
                         .desc = oop->bounce->mr ? fi_mr_desc(oop->bounce->mr) : NULL};
    oop->cur.local = &oop->bounce_mh;
    if (oop->gated) {
        struct ofi_rma_cursor probe = oop->cur;
        struct ofi_rma_part part;
        ofi_rma_next_part(cls, &probe, &part);
        oop->cur.left = oop->bounce->len = oop->bounce_mh.one_seg.len = part.len;
        oop->body_cur = (struct ofi_rma_cursor){
            .local = user, .remote = oop->cur.remote, .left = size - part.len};
        ofi_seek(user, local_offset + part.len, &oop->body_cur.lseg, &oop->body_cur.loff);
        ofi_seek(oop->cur.remote, remote_offset + part.len, &oop->body_cur.rseg,
                 &oop->body_cur.roff);
    }
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
    oop->cur = (struct ofi_rma_cursor){
        .local = ofi_mh(local), .remote = ofi_mh(remote), .left = size};
    ofi_seek(oop->cur.remote, remote_offset, &oop->cur.rseg, &oop->cur.roff);
    if (kind == OFI_OP_GET && cls->proto->cancel_policy == OFI_CANCEL_FORCE_GETS) {
        ret = ofi_get_bounce_setup(cls, oop, local_offset, remote_offset);
        if (ret != NA_SUCCESS)
            goto error;
    } else {
        ofi_seek(oop->cur.local, local_offset, &oop->cur.lseg, &oop->cur.loff);
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
    if (cls->proto->rma_unchecked) {
        ofi_check_start(cls, oop);
        return NA_SUCCESS;
    }
    return ofi_submit(cls, oop, false);

error:
    ofi_op_release(cls, oop);
    return ret;
}
