/*
 * ofi_late.c -- expected messages that arrive after their receive was
 * cancelled (a response to a forward that timed out).
 *
 * libfabric keeps a tagged message that no receive matches in the
 * provider's unexpected queue until the endpoint closes: rxm holds one of
 * its receive buffers per message (about 17 KB each with tcp), and shm's
 * queue fills until the sender's sends are refused and the peer looks
 * unreachable. So when an expected receive ends cancelled, a sink receive
 * is posted in its place: same tag, directed at the same sender, into one
 * shared discard buffer. The late message lands there and is dropped; a
 * sink that takes the first piece of a message in two (ofi_pieces.c) posts
 * one more for the second. Sinks are contexts without an op (struct
 * ofi_ctx.late names their slot): their completion, data or error, only
 * frees them. They sit in a table of OFI_LATE_MAX slots indexed by the NA
 * tag: HG's tags are consecutive, so a burst of that many timeouts has all
 * its sinks; a sink whose slot a newer one needs is cancelled. A receive
 * posted again with a sink's tag cancels that sink, so a message that has
 * not arrived yet goes to the new receive.
 */
#include "ofi_int.h"

/* The shared discard buffer: every sink writes there, nobody reads. Class
 * lock held. */
static bool ofi_late_buf(struct ofi_class *cls)
{
    if (cls->late_buf)
        return true;
    cls->late_buf = malloc(cls->max_expected_size);
    if (!cls->late_buf)
        return false;
    if (cls->mr_mode & FI_MR_LOCAL) {
        na_return_t ret;
        cls->late_mr =
            ofi_mr_open(cls, cls->late_buf, cls->max_expected_size, FI_RECV, &ret);
        if (!cls->late_mr) {
            free(cls->late_buf);
            cls->late_buf = NULL;
            return false;
        }
    }
    return true;
}

/* Empty slot i; returns its peer reference, for the caller to put once it
 * has dropped the class lock (ofi_peer_put takes it). Class lock held. */
static struct ofi_peer *ofi_late_slot_clear(struct ofi_class *cls, unsigned i)
{
    struct ofi_late_sink *s = &cls->late[i];
    struct ofi_peer *peer = s->peer;
    if (s->ctx) /* its completion, if any is still to come, only frees it */
        atomic_store_explicit(&s->ctx->late, 0, memory_order_relaxed);
    s->ctx = NULL;
    s->peer = NULL;
    atomic_fetch_sub(&cls->late_live, 1);
    return peer;
}

static unsigned ofi_late_slot(uint64_t tag)
{
    return (unsigned)(tag & OFI_TAG_NA_MASK) % OFI_LATE_MAX;
}

/* Post a sink for tag from peer into its slot, cancelling the sink that
 * held it; returns that sink's peer reference (or NULL) for the caller to
 * put. Class lock held. */
static struct ofi_peer *ofi_late_post_locked(struct ofi_class *cls, struct ofi_peer *peer,
                                             fi_addr_t addr, uint64_t tag)
{
    struct ofi_peer *evicted = NULL;
    unsigned i = ofi_late_slot(tag);
    if (cls->late[i].ctx) {
        fi_cancel(&cls->ep->fid, cls->late[i].ctx);
        evicted = ofi_late_slot_clear(cls, i);
    }
    struct ofi_ctx *ctx = ofi_late_buf(cls) ? ofi_ctx_take(cls) : NULL;
    if (!ctx)
        return evicted;
    atomic_store_explicit(&ctx->late, i + 1, memory_order_relaxed);
    void *desc = cls->late_mr ? fi_mr_desc(cls->late_mr) : NULL;
    if (fi_trecv(cls->ep, cls->late_buf, cls->max_expected_size, desc, addr, tag,
                 cls->recv_ignore, ctx) != 0) {
        /* Refused (resources): the message, if it comes, stays with the
         * provider, as it would without a sink. */
        atomic_store_explicit(&ctx->late, 0, memory_order_relaxed);
        ofi_ctx_put(cls, ctx);
        return evicted;
    }
    ofi_peer_ref(cls, peer);
    cls->late[i] =
        (struct ofi_late_sink){.ctx = ctx, .peer = peer, .addr = addr, .tag = tag};
    atomic_fetch_add(&cls->late_live, 1);
    return evicted;
}

/* An expected receive from peer (at addr) ended cancelled: its message may
 * still come. */
void ofi_late_expect(struct ofi_class *cls, struct ofi_peer *peer, fi_addr_t addr,
                     uint64_t tag)
{
    ofi_mutex_lock(cls, &cls->lock);
    struct ofi_peer *evicted = ofi_late_post_locked(cls, peer, addr, tag);
    ofi_mutex_unlock(cls, &cls->lock);
    if (evicted)
        ofi_peer_put(cls, evicted);
}

/* A receive of tag is about to be posted: cancel the sink of that tag. */
void ofi_late_forget(struct ofi_class *cls, uint64_t tag)
{
    struct ofi_peer *put = NULL;
    unsigned i = ofi_late_slot(tag);
    ofi_mutex_lock(cls, &cls->lock);
    if (cls->late[i].ctx && cls->late[i].tag == tag) {
        fi_cancel(&cls->ep->fid, cls->late[i].ctx);
        put = ofi_late_slot_clear(cls, i);
    }
    ofi_mutex_unlock(cls, &cls->lock);
    if (put)
        ofi_peer_put(cls, put);
}

/* The context of sink slot i completed with ret (tag: the message's). The
 * slot may have been given to another sink meanwhile. */
void ofi_late_done(struct ofi_class *cls, struct ofi_ctx *ctx, unsigned i,
                   na_return_t ret, uint64_t tag)
{
    struct ofi_peer *put[2] = {NULL, NULL};
    ofi_mutex_lock(cls, &cls->lock);
    if (cls->late[i].ctx == ctx) {
        struct ofi_late_sink s = cls->late[i];
        put[0] = ofi_late_slot_clear(cls, i);
        if (ret == NA_SUCCESS || ret == NA_MSGSIZE) {
            /* Second pieces count apart: a message in two counts once. */
            atomic_fetch_add(
                (tag & OFI_TAG_SECOND) ? &cls->n_late_seconds : &cls->n_late_dropped, 1);
            HGX_LOG_DEBUG(OFI,
                          "dropped an expected message (tag 0x%llx) that came after "
                          "its receive was cancelled",
                          (unsigned long long)tag);
            if ((tag & OFI_TAG_FIRST) && cls->piece_size) /* and its second piece */
                put[1] = ofi_late_post_locked(
                    cls, s.peer, s.addr,
                    (s.tag & OFI_TAG_CTX_MASK) | OFI_TAG_SECOND |
                        (tag & OFI_TAG_SEQ_MASK) >> OFI_TAG_SEQ_SHIFT);
        }
    }
    ofi_mutex_unlock(cls, &cls->lock);
    ofi_ctx_put(cls, ctx);
    for (int k = 0; k < 2; k++)
        if (put[k])
            ofi_peer_put(cls, put[k]);
}

/* Finalize, after the endpoint closed: release the sinks' peers and the
 * buffer. */
void ofi_late_fini(struct ofi_class *cls)
{
    for (unsigned i = 0; i < OFI_LATE_MAX; i++)
        if (cls->late[i].ctx)
            ofi_peer_put(cls, ofi_late_slot_clear(cls, i));
    if (cls->late_mr)
        fi_close(&cls->late_mr->fid);
    free(cls->late_buf);
}
