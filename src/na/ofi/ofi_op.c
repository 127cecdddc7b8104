/*
 * ofi_op.c -- op state, provider contexts, posting and the retry queue.
 */
#include "ofi_int.h"

/* A new chunk of contexts, allocated without the pool's lock (a spin lock):
 * its first context for the caller, the others to the pool. */
static struct ofi_ctx *ofi_ctx_grow(struct ofi_class *cls)
{
    struct ofi_ctx_chunk *chunk = malloc(sizeof(*chunk));

    if (!chunk) {
        HGX_LOG_ERROR(OFI, "out of memory for operation contexts");
        return NULL;
    }
    for (size_t i = 0; i < OFI_CTX_CHUNK; i++) {
        chunk->ctx[i].bounce = NULL;
        chunk->ctx[i].ctrl = false;
        atomic_init(&chunk->ctx[i].late, 0);
        chunk->ctx[i].next_free = i + 1 < OFI_CTX_CHUNK ? &chunk->ctx[i + 1] : NULL;
    }
    hgx_lock(&cls->ctx_lock);
    chunk->next = cls->ctx_chunks;
    cls->ctx_chunks = chunk;
    chunk->ctx[OFI_CTX_CHUNK - 1].next_free = cls->ctx_free;
    cls->ctx_free = &chunk->ctx[1];
    hgx_unlock(&cls->ctx_lock);
    return &chunk->ctx[0];
}

/* A context from the pool, with no op (a sink's, ofi_late.c). */
struct ofi_ctx *ofi_ctx_take(struct ofi_class *cls)
{
    hgx_lock(&cls->ctx_lock);
    struct ofi_ctx *ctx = cls->ctx_free;
    if (ctx)
        cls->ctx_free = ctx->next_free;
    hgx_unlock(&cls->ctx_lock);
    if (!ctx && !(ctx = ofi_ctx_grow(cls)))
        return NULL;
    atomic_store_explicit(&ctx->op, NULL, memory_order_relaxed);
    return ctx;
}

/* The context's op is published to other threads by the provider's post
 * (and the provider's locks), so a release store is enough. */
static struct ofi_ctx *ofi_ctx_get(struct ofi_class *cls, struct ofi_op *oop)
{
    struct ofi_ctx *ctx = ofi_ctx_take(cls);
    if (!ctx)
        return NULL;
    atomic_store_explicit(&ctx->op, oop, memory_order_release);
    ctx->bounce = oop->bounce;
    if (ctx->bounce)
        atomic_fetch_add(&ctx->bounce->refs, 1);
    return ctx;
}

void ofi_ctx_put(struct ofi_class *cls, struct ofi_ctx *ctx)
{
    if (ctx->bounce) {
        ofi_bounce_put(ctx->bounce);
        ctx->bounce = NULL;
    }
    hgx_lock(&cls->ctx_lock);
    ctx->next_free = cls->ctx_free;
    cls->ctx_free = ctx;
    hgx_unlock(&cls->ctx_lock);
}

/* Reset the op area for a new operation; peer (may be NULL) gains a reference.
 * No other thread reads the op before it is posted: relaxed stores. */
struct ofi_op *ofi_op_start(na_op_id_t *op, enum ofi_op_kind kind, struct ofi_peer *peer)
{
    struct ofi_op *oop = ofi_op(op);

    oop->kind = kind;
    oop->peer = peer;
    if (peer)
        ofi_peer_ref(ofi_class(op->na_class), peer);
    oop->desc = NULL;
    oop->tmp_mr = NULL;
    oop->bounce = NULL;
    oop->gated = false;
    atomic_store_explicit(&oop->gate_open, false, memory_order_relaxed);
    oop->one_part = NULL;
    oop->parts = &oop->one_part;
    oop->nparts = 1;
    oop->post_limit = 1;
    oop->posted = 0;
    oop->retry_queued = false;
    hgx_list_init(&oop->retry_link);
    oop->cancel_state = OFI_CST_NONE;
    oop->link_armed = false;
    oop->recalled = false;
    na_cancel_watch_init(&oop->cancel_watch);
    hgx_list_init(&oop->cancel_link);
    oop->checking = false;
    hgx_list_init(&oop->check_link);
    oop->split = false;
    oop->reassembling = false;
    hgx_list_init(&oop->piece_link);
    atomic_store_explicit(&oop->done, false, memory_order_relaxed);
    return oop;
}

/* Free what ofi_op_start and posting acquired. Contexts left in parts[]
 * are done with the provider (ghosts of a forced cancel were taken out). */
void ofi_op_release(struct ofi_class *cls, struct ofi_op *oop)
{
    ofi_pieces_end(cls, oop);
    for (size_t i = 0; i < oop->posted; i++)
        if (oop->parts[i])
            ofi_ctx_put(cls, oop->parts[i]);
    if (oop->parts != &oop->one_part && oop->parts != oop->two_parts)
        free(oop->parts);
    if (oop->tmp_mr)
        ofi_mr_close(oop->tmp_mr);
    if (oop->bounce)
        ofi_bounce_put(oop->bounce);
    if (oop->peer)
        ofi_peer_put(cls, oop->peer);
}

/* The op is over: release it and hand it to the core. */
void ofi_op_finish(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret)
{
    na_op_id_t *op = na_op_from_plugin(oop);

    /* Store done before reading the state; ofi_cancel does the reverse, so
     * one of us sees the other (both are seq_cst). One thread alone does
     * both in NA_THREAD_MODE_SINGLE. */
    if (cls->single)
        atomic_store_explicit(&oop->done, true, memory_order_relaxed);
    else
        atomic_store(&oop->done, true);
    if (na_op_cancel_requested(op)) {
        ofi_mutex_lock(cls, &cls->lock);
        ofi_cancel_unlist_locked(cls, oop);
        ofi_mutex_unlock(cls, &cls->lock);
        /* Report the truth so that a cancel never hides a transfer: an op
         * that completed keeps NA_SUCCESS (its data moved), one that ended
         * in error after the cancel request was stopped by it. */
        if (ret != NA_SUCCESS)
            ret = NA_CANCELED;
    }
    if (oop->bounce && ret == NA_SUCCESS)
        ofi_bounce_copy_out(oop);
    ofi_op_release(cls, oop);
    na_op_complete(op, ret);
}

/* One part ended (or the posting guard was dropped); the last one finishes
 * the op with the first error seen. */
void ofi_part_done(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret)
{
    if (ret != NA_SUCCESS) {
        int expected = NA_SUCCESS;
        atomic_compare_exchange_strong(&oop->part_ret, &expected, (int)ret);
    }
    size_t left = atomic_fetch_sub(&oop->parts_left, 1);
    HGX_ASSERT(left > 0);
    if (left == 1)
        ofi_op_finish(cls, oop, (na_return_t)atomic_load(&oop->part_ret));
}

/* Give up the parts not posted yet; the op ends with ret once the others land. */
void ofi_parts_abandon(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret)
{
    int expected = NA_SUCCESS;
    atomic_compare_exchange_strong(&oop->part_ret, &expected, (int)ret);
    HGX_ASSERT(oop->posted <= oop->nparts);
    atomic_fetch_sub(&oop->parts_left, oop->nparts - oop->posted);
    ofi_part_done(cls, oop, NA_SUCCESS);
}

/* Caller holds the lock with the op listed as canceled (so it is alive). */
void ofi_cancel_contexts_locked(struct ofi_class *cls, struct ofi_op *oop)
{
    HGX_ASSERT(ofi_cst_listed(oop->cancel_state));
    for (size_t i = 0; i < oop->posted; i++)
        if (oop->parts[i] && fi_cancel(&cls->ep->fid, oop->parts[i]) == 0 &&
            oop->kind == OFI_OP_RECV && cls->proto->cancel_recv_recalls)
            oop->recalled = true;
}

/* A whole message, or the first piece of one in two (ofi_pieces.c). */
static ssize_t ofi_post_send(struct ofi_class *cls, struct ofi_op *oop,
                             struct ofi_ctx *ctx)
{
    size_t len = oop->split ? cls->piece_size : oop->buf_size;
    uint64_t tag = oop->split ? ofi_pieces_first_tag(oop, oop->tag) : oop->tag;

    if (oop->kind == OFI_OP_SEND)
        return fi_tsend(cls->ep, oop->buf, len, oop->desc, oop->fi_addr, tag, ctx);
    /* Our own header replaces whatever the caller left in its first bytes. */
    struct iovec iov[2] = {
        {.iov_base = cls->hdr, .iov_len = OFI_HDR_SIZE},
        {.iov_base = (char *)oop->buf + OFI_HDR_SIZE, .iov_len = len - OFI_HDR_SIZE},
    };
    void *desc[2] = {cls->hdr_desc, oop->desc};
    const struct fi_msg_tagged msg = {
        .msg_iov = iov,
        .desc = desc,
        .iov_count = len > OFI_HDR_SIZE ? 2 : 1,
        .addr = oop->fi_addr,
        .tag = tag & ~OFI_TAG_NA_MASK,
        .context = ctx,
        .data = tag & OFI_TAG_NA_MASK,
    };
    return fi_tsendmsg(cls->ep, &msg, FI_COMPLETION | FI_REMOTE_CQ_DATA);
}

static ssize_t ofi_post_part(struct ofi_class *cls, struct ofi_op *oop,
                             struct ofi_ctx *ctx, size_t part)
{
    if (part == 1 && (oop->split || oop->reassembling))
        return ofi_pieces_post_second(cls, oop, ctx);
    switch (oop->kind) {
    case OFI_OP_SEND:
    case OFI_OP_SEND_UNEXPECTED:
        return ofi_post_send(cls, oop, ctx);
    case OFI_OP_RECV: {
        ssize_t rc = fi_trecv(cls->ep, oop->buf, oop->buf_size, oop->desc, oop->fi_addr,
                              oop->tag, cls->recv_ignore, ctx);
        return rc == -FI_ENOMEM && cls->proto->recv_full_nomem ? -FI_EAGAIN : rc;
    }
    default:
        return ofi_post_rma_part(cls, oop, ctx);
    }
}

/* Post the parts not posted yet; stops at the first refusal. Once its last
 * part is posted a message may complete on another thread at any moment, so
 * each part is recorded before it is posted and the op is not read after
 * (put/get are kept alive by their posting guard). */
static ssize_t ofi_post(struct ofi_class *cls, struct ofi_op *oop)
{
    size_t nparts = oop->post_limit;

    HGX_ASSERT(nparts <= oop->nparts);

    for (size_t i = oop->posted; i < nparts; i++) {
        struct ofi_ctx *ctx = ofi_ctx_get(cls, oop);
        if (!ctx)
            return -FI_ENOMEM;
        oop->parts[i] = ctx;
        oop->posted = i + 1;
        ssize_t rc = ofi_post_part(cls, oop, ctx, i);
        if (rc != 0) {
            oop->posted = i;
            oop->parts[i] = NULL;
            ofi_ctx_put(cls, ctx);
            return rc;
        }
    }
    return 0;
}

/* Every part allowed is with the provider now; guard (ofi_post_ends_guard)
 * was read before posting. */
static void ofi_post_done(struct ofi_class *cls, struct ofi_op *oop, bool guard)
{
    /* A cancel that came while we were posting found nothing to cancel. The
     * op may be complete already: only a listed op is known to be alive. */
    if (na_op_cancel_requested(na_op_from_plugin(oop))) {
        ofi_mutex_lock(cls, &cls->lock);
        if (ofi_cst_listed(oop->cancel_state))
            ofi_cancel_contexts_locked(cls, oop);
        ofi_mutex_unlock(cls, &cls->lock);
    }
    if (guard)
        ofi_part_done(cls, oop, NA_SUCCESS); /* drop the posting guard */
}

void ofi_log_post_error(struct ofi_class *cls, const struct ofi_op *oop, const char *why)
{
    static const char *const what[] = {"send to", "unexpected send to", "receive from",
                                       "put to", "get from"};
    char peer[128] = "any peer";

    if (oop->peer)
        ofi_raw_addr_format(cls, oop->peer->raw, oop->peer->len, peer, sizeof(peer));
    HGX_LOG_ERROR(OFI, "%s %s failed: %s", what[oop->kind], peer, why);
}

/* Posting failed for good. With nothing in flight the error goes back to the
 * caller (sync) or to the callback (async); parts in flight carry it. */
static na_return_t ofi_post_failed(struct ofi_class *cls, struct ofi_op *oop,
                                   na_return_t ret, bool async)
{
    if (ofi_op_counts_parts(oop) && oop->posted > 0) {
        ofi_parts_abandon(cls, oop, ret);
        return NA_SUCCESS;
    }
    if (oop->reassembling) { /* only progress posts a second piece's receive */
        ofi_pieces_drop(cls, oop, ret);
        return NA_SUCCESS;
    }
    if (async) {
        ofi_op_finish(cls, oop, ret);
        return NA_SUCCESS;
    }
    ofi_op_release(cls, oop);
    return ret;
}

/* Ops waiting in the retry queue for the same peer (or for no peer). */
static atomic_int *ofi_queued_count(struct ofi_class *cls, struct ofi_op *oop)
{
    return oop->peer ? &oop->peer->queued : &cls->anon_queued;
}

void ofi_retry_unlink_locked(struct ofi_class *cls, struct ofi_op *oop)
{
    ofi_list_remove(&cls->retry, &oop->retry_link);
    oop->retry_queued = false;
    atomic_fetch_sub(ofi_queued_count(cls, oop), 1);
    if (oop->peer)
        ofi_reach_release_locked(oop->peer);
}

/* Hand an op to the provider. Refusals with EAGAIN (full queues, rxm still
 * connecting to a new peer) park it in the retry queue that progress drains:
 * spinning here would deadlock a thread that also serves the peer. With
 * NA_NO_RETRY they fail with NA_AGAIN instead (Mercury's "no retry of
 * operations in progress"). */
na_return_t ofi_submit(struct ofi_class *cls, struct ofi_op *oop, bool async)
{
    bool guard = ofi_post_ends_guard(oop);

    ofi_activity_mark(cls);
    /* Behind ops already waiting for the same peer, to keep its order. */
    if (atomic_load(ofi_queued_count(cls, oop)) == 0) {
        ssize_t rc = ofi_post(cls, oop);
        if (rc == 0) {
            ofi_post_done(cls, oop, guard);
            return NA_SUCCESS;
        }
        if (rc != -FI_EAGAIN || cls->no_retry) {
            if (rc == -FI_EAGAIN)
                HGX_LOG_DEBUG(OFI, "refused post not retried (NA_NO_RETRY)");
            else
                ofi_log_post_error(cls, oop, fi_strerror((int)-rc));
            return ofi_post_failed(cls, oop, ofi_na_error((int)-rc), async);
        }
    }
    uint64_t now = hgx_clock_now_ms();
    oop->retry_deadline_ms = now + cls->retry_timeout_ms;
    ofi_mutex_lock(cls, &cls->lock);
    oop->retry_queued = true;
    ofi_list_push(&cls->retry, &oop->retry_link);
    atomic_fetch_add(ofi_queued_count(cls, oop), 1);
    if (oop->peer)
        ofi_reach_hold_locked(cls, oop->peer, now);
    ofi_mutex_unlock(cls, &cls->lock);
    return NA_SUCCESS;
}

/* A canceled op that never fully reached the provider. */
void ofi_abandon_canceled(struct ofi_class *cls, struct ofi_op *oop)
{
    if (ofi_op_counts_parts(oop) && oop->posted > 0)
        ofi_parts_abandon(cls, oop, NA_CANCELED);
    else
        ofi_op_finish(cls, oop, NA_CANCELED);
}

/* End an op that left the retry queue (after the lock is dropped). */
static void ofi_retry_end(struct ofi_class *cls, struct ofi_op *oop, ssize_t rc)
{
    if (rc == 0) {
        ofi_part_done(cls, oop, NA_SUCCESS); /* put/get fully posted: drop the guard */
    } else if (rc == -FI_ECANCELED) {
        ofi_abandon_canceled(cls, oop);
    } else if (rc == -FI_EHOSTUNREACH) {
        /* Found gone by ofi_reach_check_locked, which said why. */
        ofi_post_failed(cls, oop, NA_HOSTUNREACH, true);
    } else if (rc == -FI_ETIMEDOUT) {
        char why[64];
        snprintf(why, sizeof(why), "still refused after %llu ms (peer unreachable?)",
                 (unsigned long long)cls->retry_timeout_ms);
        ofi_log_post_error(cls, oop, why);
        ofi_post_failed(cls, oop, oop->peer ? NA_HOSTUNREACH : NA_AGAIN, true);
    } else {
        ofi_log_post_error(cls, oop, fi_strerror((int)-rc));
        ofi_post_failed(cls, oop, ofi_na_error((int)-rc), true);
    }
}

/* ofi_post from the retry queue; *moved tells whether the provider took a
 * part. A put or get of many parts is refused whenever the provider's queue
 * is full: each part taken restarts the op's refusal window, which bounds a
 * provider that takes nothing, not a transfer that needs longer than the
 * window to hand over all its parts. */
static ssize_t ofi_post_some(struct ofi_class *cls, struct ofi_op *oop, uint64_t now_ms,
                             bool *moved)
{
    size_t before = oop->posted;
    ssize_t rc = ofi_post(cls, oop);
    *moved = rc == 0 || oop->posted > before;
    if (*moved)
        oop->retry_deadline_ms = now_ms + cls->retry_timeout_ms;
    return rc;
}

/* A queued post refused again: -FI_EHOSTUNREACH once its peer is found
 * gone, else -FI_EAGAIN (it keeps waiting). */
static ssize_t ofi_refused_again_locked(const struct ofi_class *cls, struct ofi_op *oop,
                                        uint64_t now_ms)
{
    return oop->peer && ofi_reach_check_locked(cls, oop->peer, now_ms) ? -FI_EHOSTUNREACH
                                                                       : -FI_EAGAIN;
}

/* A peer refused in this pass; moved: the provider took part of its op. */
struct ofi_blocked {
    const struct ofi_peer *peer;
    bool moved;
};

static const struct ofi_blocked *ofi_peer_blocked(const struct ofi_blocked *blocked,
                                                  size_t n, const struct ofi_peer *peer)
{
    for (size_t i = 0; i < n; i++)
        if (blocked[i].peer == peer)
            return &blocked[i];
    return NULL;
}

/* One pass over the retry queue, under the lock so that cancel cannot unlink
 * an op while we post it. A message posted here needs nothing more; every
 * other op leaving the queue is ended after unlocking (ending takes the
 * lock), which is safe as nothing of it is in flight or its posting guard
 * holds it. A peer refused in this pass keeps its later ops waiting, their
 * windows restarted if the provider took part of the first; one found gone
 * has all of them fail. An op times out only when it is refused itself past
 * its window. */
void ofi_retry_progress(struct ofi_class *cls)
{
    struct ofi_blocked blocked[OFI_RETRY_BLOCKED_MAX];
    size_t nblocked = 0;
    struct hgx_list out, *link, *next;

    if (atomic_load(&cls->retry.count) == 0)
        return;
    uint64_t now = hgx_clock_now_ms();
    ofi_mutex_lock(cls, &cls->lock);
    hgx_list_init(&out);
    hgx_list_for_each_safe(link, next, &cls->retry.head)
    {
        struct ofi_op *oop = hgx_list_entry(link, struct ofi_op, retry_link);
        ssize_t rc;
        bool guard = ofi_post_ends_guard(oop), moved = false;
        const struct ofi_blocked *b;
        if (na_op_cancel_requested(na_op_from_plugin(oop)) && !ofi_op_unstoppable(oop)) {
            rc = -FI_ECANCELED;
        } else if (oop->peer && oop->peer->reach.gone) {
            rc = -FI_EHOSTUNREACH;
        } else if ((b = ofi_peer_blocked(blocked, nblocked, oop->peer))) {
            if (b->moved)
                oop->retry_deadline_ms = now + cls->retry_timeout_ms;
            continue;
        } else if (oop->peer &&
                   ofi_peer_fi_addr_locked(cls, oop->peer, &oop->fi_addr) != NA_SUCCESS) {
            rc = -FI_EADDRNOTAVAIL; /* its entry was dropped meanwhile and is refused now
                                     */
        } else if ((rc = ofi_post_some(cls, oop, now, &moved)) == -FI_EAGAIN &&
                   (rc = ofi_refused_again_locked(cls, oop, now)) == -FI_EAGAIN) {
            if (now >= oop->retry_deadline_ms) {
                rc = -FI_ETIMEDOUT;
            } else {
                if (nblocked == OFI_RETRY_BLOCKED_MAX)
                    break;
                blocked[nblocked++] = (struct ofi_blocked){oop->peer, moved};
                continue;
            }
        }
        ofi_retry_unlink_locked(cls, oop);
        if (rc == 0 && !guard)
            continue;
        oop->retry_rc = rc;
        hgx_list_push_back(&out, link);
    }
    ofi_mutex_unlock(cls, &cls->lock);
    while ((link = hgx_list_pop_front(&out))) {
        struct ofi_op *oop = hgx_list_entry(link, struct ofi_op, retry_link);
        ofi_retry_end(cls, oop, oop->retry_rc);
    }
}
