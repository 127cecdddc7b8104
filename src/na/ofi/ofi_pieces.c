/*
 * ofi_pieces.c -- messages above the provider's inject size, sent in two pieces.
 *
 * shm 1.17 copies a message of at most its inject size (4 KiB) through the
 * receiver's inject buffers; a larger one goes by CMA, a syscall plus an
 * acknowledgment that costs three times a 4 KiB message, or without CMA by a
 * SAR protocol that stalls when peers send many at once. A class of such a
 * provider (piece_size != 0) sends a message above piece_size as two
 * messages of at most that size:
 *
 *   first   the message's first piece_size bytes, tagged as the message
 *           would be plus OFI_TAG_FIRST and the message's number (bits
 *           40..55); every receive ignores those bits, so the receive the
 *           message is for takes it;
 *   second  the rest, tagged OFI_TAG_SECOND | context id | number, which
 *           only the receive posted for it matches.
 *
 * The sender posts both as the two parts of one op. A receive that takes a
 * first piece posts a receive for the second, directed at the sender, into
 * the rest of its buffer, and completes when that ends. A second piece that
 * does not come within twice the retry bound (the sender may wait that long
 * for the provider to take it) is given up: an unexpected receive drops the
 * first piece and waits for the next message, an expected one fails with
 * NA_PROTOCOL_ERROR. A second piece arriving after its receive was given up
 * or canceled is taken by a sink and dropped (ofi_late.c).
 */
#include "ofi_int.h"

/* Receives wait this many retry bounds for a second piece. */
#define OFI_PIECE_WAIT_RETRIES 2

void ofi_pieces_split(struct ofi_class *cls, struct ofi_op *oop)
{
    oop->split = true;
    oop->piece_seq =
        (uint16_t)atomic_fetch_add_explicit(&cls->piece_seq, 1, memory_order_relaxed);
    oop->parts = oop->two_parts;
    oop->nparts = oop->post_limit = 2;
    atomic_store_explicit(&oop->part_ret, NA_SUCCESS, memory_order_relaxed);
    atomic_store_explicit(&oop->parts_left, 3, memory_order_relaxed); /* + guard */
}

uint64_t ofi_pieces_first_tag(const struct ofi_op *oop, uint64_t tag)
{
    return tag | OFI_TAG_FIRST | (uint64_t)oop->piece_seq << OFI_TAG_SEQ_SHIFT;
}

/* The tag of the second piece of the message oop sends or receives. */
static uint64_t ofi_pieces_second_tag(const struct ofi_op *oop)
{
    return (oop->tag & OFI_TAG_CTX_MASK) | OFI_TAG_SECOND | oop->piece_seq;
}

ssize_t ofi_pieces_post_second(struct ofi_class *cls, struct ofi_op *oop,
                               struct ofi_ctx *ctx)
{
    if (oop->kind == OFI_OP_RECV) {
        ssize_t rc = fi_trecv(cls->ep, (char *)oop->buf + oop->piece_len,
                              oop->buf_size - oop->piece_len, oop->desc, oop->fi_addr,
                              ofi_pieces_second_tag(oop), cls->recv_ignore, ctx);
        return rc == -FI_ENOMEM && cls->proto->recv_full_nomem ? -FI_EAGAIN : rc;
    }
    return fi_tsend(cls->ep, (char *)oop->buf + cls->piece_size,
                    oop->buf_size - cls->piece_size, oop->desc, oop->fi_addr,
                    ofi_pieces_second_tag(oop), ctx);
}

static void ofi_pieces_unlist(struct ofi_class *cls, struct ofi_op *oop)
{
    ofi_mutex_lock(cls, &cls->lock);
    if (hgx_list_linked(&oop->piece_link))
        ofi_list_remove(&cls->reassembly, &oop->piece_link);
    ofi_mutex_unlock(cls, &cls->lock);
}

void ofi_pieces_end(struct ofi_class *cls, struct ofi_op *oop)
{
    if (oop->reassembling) {
        ofi_pieces_unlist(cls, oop);
        oop->reassembling = false;
    }
}

/* Back to a receive of one part, with the contexts it holds returned (the
 * provider is done with them). Under the lock: ofi_cancel reads parts. */
static void ofi_pieces_reset(struct ofi_class *cls, struct ofi_op *oop)
{
    struct ofi_ctx *held[2] = {NULL, NULL};

    ofi_mutex_lock(cls, &cls->lock);
    for (size_t i = 0; i < oop->posted; i++)
        held[i] = oop->parts[i];
    oop->one_part = NULL;
    oop->parts = &oop->one_part;
    oop->nparts = oop->post_limit = 1;
    oop->posted = 0;
    ofi_mutex_unlock(cls, &cls->lock);
    for (size_t i = 0; i < 2; i++)
        if (held[i])
            ofi_ctx_put(cls, held[i]);
}

void ofi_recv_unexpected_repost(struct ofi_class *cls, struct ofi_op *oop)
{
    ofi_pieces_end(cls, oop);
    if (na_op_cancel_requested(na_op_from_plugin(oop))) {
        ofi_op_finish(cls, oop, NA_CANCELED);
        return;
    }
    ofi_pieces_reset(cls, oop);
    if (oop->peer) {
        ofi_peer_put(cls, oop->peer);
        oop->peer = NULL;
    }
    oop->fi_addr = FI_ADDR_UNSPEC;
    ofi_submit(cls, oop, true);
}

/* Drop a message whose pieces do not make one (logged by the caller): an
 * unexpected receive waits for the next message, an expected one ends with ret. */
void ofi_pieces_drop(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret)
{
    atomic_fetch_add(&cls->n_pieces_dropped, 1);
    if (na_op_from_plugin(oop)->info.type == NA_CB_RECV_UNEXPECTED)
        ofi_recv_unexpected_repost(cls, oop);
    else
        ofi_op_finish(cls, oop, ret);
}

void ofi_pieces_first_in(struct ofi_class *cls, struct ofi_op *oop, size_t len,
                         uint64_t data, uint64_t tag)
{
    na_op_id_t *op = na_op_from_plugin(oop);

    /* As a whole message too large for the buffer would. */
    if (len >= oop->buf_size) {
        HGX_LOG_ERROR(OFI, "message larger than its receive buffer (%zu bytes)",
                      oop->buf_size);
        ofi_op_finish(cls, oop, NA_MSGSIZE);
        return;
    }
    if (op->info.type == NA_CB_RECV_UNEXPECTED) {
        struct ofi_peer *peer;
        if (!ofi_peer_of_hdr(cls, oop->buf, len, &peer) || !peer) {
            atomic_fetch_add(&cls->n_bad_headers, 1);
            HGX_LOG_ERROR(OFI,
                          "dropped the first piece of an unexpected message (%zu bytes) "
                          "with a malformed header",
                          len);
            ofi_pieces_drop(cls, oop, NA_PROTOCOL_ERROR);
            return;
        }
        oop->peer = peer; /* the reference ofi_peer_of_hdr took */
    }
    if (ofi_peer_fi_addr(cls, oop->peer, &oop->fi_addr) != NA_SUCCESS) {
        HGX_LOG_ERROR(OFI, "dropped the first piece of a message: its sender has no "
                           "address vector entry");
        ofi_pieces_drop(cls, oop, NA_PROTOCOL_ERROR);
        return;
    }
    oop->piece_len = len;
    oop->piece_data = data;
    oop->piece_seq = (uint16_t)((tag & OFI_TAG_SEQ_MASK) >> OFI_TAG_SEQ_SHIFT);
    oop->piece_expired = false;
    oop->piece_deadline_ms =
        hgx_clock_now_ms() + OFI_PIECE_WAIT_RETRIES * cls->retry_timeout_ms;

    struct ofi_ctx *first = oop->one_part;
    ofi_mutex_lock(cls, &cls->lock);
    oop->two_parts[0] = NULL;
    oop->two_parts[1] = NULL;
    oop->one_part = NULL;
    oop->parts = oop->two_parts;
    oop->nparts = oop->post_limit = 2;
    oop->posted = 1;
    oop->reassembling = true;
    ofi_list_push(&cls->reassembly, &oop->piece_link); /* deadlines in order */
    ofi_mutex_unlock(cls, &cls->lock);
    ofi_ctx_put(cls, first);
    ofi_submit(cls, oop, true);
}

void ofi_pieces_second_in(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret,
                          size_t len)
{
    na_op_id_t *op = na_op_from_plugin(oop);
    bool unexpected = op->info.type == NA_CB_RECV_UNEXPECTED;

    ofi_pieces_end(cls, oop);
    if (ret == NA_SUCCESS) {
        size_t total = oop->piece_len + len;
        if (unexpected) {
            struct ofi_peer *peer = oop->peer;
            oop->peer = NULL; /* its reference goes to the source address */
            op->info.info.recv_unexpected.actual_buf_size = total;
            op->info.info.recv_unexpected.source = ofi_peer_source(cls, peer);
            op->info.info.recv_unexpected.tag =
                (na_tag_t)(oop->piece_data & OFI_TAG_NA_MASK);
        } else {
            op->info.info.recv_expected.actual_buf_size = total;
        }
        ofi_op_finish(cls, oop, NA_SUCCESS);
        return;
    }
    /* Canceled or given up: the second piece may still come, and a sink
     * takes it (ofi_late.c). */
    if (ret == NA_HOSTUNREACH && (na_op_cancel_requested(op) || oop->piece_expired))
        ofi_late_expect(cls, oop->peer, oop->fi_addr, ofi_pieces_second_tag(oop));
    /* Canceled, or too large for the buffer (logged with the completion),
     * as a whole message would end. */
    if (na_op_cancel_requested(op) || ret == NA_MSGSIZE) {
        ofi_op_finish(cls, oop, ret);
        return;
    }
    char from[128];
    ofi_raw_addr_format(cls, oop->peer->raw, oop->peer->len, from, sizeof(from));
    if (oop->piece_expired) {
        HGX_LOG_ERROR(
            OFI,
            "dropped the first piece of a message from %s: its second piece "
            "did not come within %llu ms",
            from, (unsigned long long)(OFI_PIECE_WAIT_RETRIES * cls->retry_timeout_ms));
        ret = NA_PROTOCOL_ERROR;
    } else {
        HGX_LOG_ERROR(OFI, "dropped a message from %s: its second piece failed (%s)",
                      from, NA_Error_to_string(ret));
    }
    ofi_pieces_drop(cls, oop, ret);
}

/* Give up the receives whose second piece is late: cancel it, and its
 * completion (FI_ECANCELED) ends the op in ofi_pieces_second_in. A listed
 * op's second context is still its own (it is unlisted before it ends). */
void ofi_pieces_expire(struct ofi_class *cls)
{
    if (atomic_load_explicit(&cls->reassembly.count, memory_order_relaxed) == 0)
        return;
    uint64_t now = hgx_clock_now_ms();
    ofi_mutex_lock(cls, &cls->lock);
    struct hgx_list *link, *next;
    hgx_list_for_each_safe(link, next, &cls->reassembly.head)
    {
        struct ofi_op *oop = hgx_list_entry(link, struct ofi_op, piece_link);
        if (now < oop->piece_deadline_ms)
            break;
        if (oop->posted < 2)
            continue; /* refused and queued: canceled once posted */
        ofi_list_remove(&cls->reassembly, link);
        oop->piece_expired = true;
        fi_cancel(&cls->ep->fid, oop->parts[1]);
    }
    ofi_mutex_unlock(cls, &cls->lock);
}
