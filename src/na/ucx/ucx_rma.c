/*
 * ucx_rma.c -- put and get: hgx's own active-message protocol, checked by
 * the region's owner.
 */
#include "ucx_int.h"
#include "hgx_assert.h"
#include "hgx_wire.h"
#include "na_seg_cursor.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Put and get are hgx's own protocol on active messages (docs/na-ucx.md):
 * UCX's put/get over tcp and shared memory trust the address and key they
 * are sent, so the target checks every request against its region table.
 *   request (UCX_AM_RMA_REQ, origin -> owner), header: kind u32 (GET, PUT),
 *     index u32, key u64, cookie u64, offset u64, length u64, gen u32;
 *     a put's data follows as the message's data.
 *   reply (UCX_AM_RMA_REP, owner -> origin), header: kind u32 (GET_REP,
 *     PUT_ACK), status u32 (na_return_t), cookie u64; a good get's data
 *     follows. Both are sent with UCP_AM_SEND_FLAG_REPLY: the owner answers
 *     on the request's own ep, the origin takes replies only from the ep it
 *     asked on. The cookie names the origin's op in cls->rma_ops: a reply
 *     that names no live op (cancelled, stale, forged) is dropped. */
enum ucx_rma_kind { UCX_RMA_GET = 1, UCX_RMA_PUT, UCX_RMA_GET_REP, UCX_RMA_PUT_ACK };
#define UCX_RMA_REQ_HDR 44
#define UCX_RMA_REP_HDR 16

struct ucx_rma_req {
    bool put;
    uint32_t index, gen;
    uint64_t key, cookie, offset, length;
};

/* A peer's transfer of one of our regions, or a refusal, until its reply is
 * sent (and, for a put, its data received). */
struct ucx_tx {
    struct hgx_list link; /* in cls->txs */
    struct ucx_class *cls;
    struct ucx_mem_handle *mh; /* region read or written; NULL for a refusal */
    ucp_ep_h ep;               /* the origin's */
    bool data;                 /* the reply carries iov (a get's data) */
    unsigned char hdr[UCX_RMA_REP_HDR];
    size_t n;
    ucp_dt_iov_t iov[];
};

/* Requests refused by a region check, and messages dropped as malformed or
 * matching no live op, across all classes (tests check them). */
static atomic_long ucx_rma_refused, ucx_rma_dropped;

void na_ucx_rma_counts(long *refused, long *dropped)
{
    *refused = atomic_load(&ucx_rma_refused);
    *dropped = atomic_load(&ucx_rma_dropped);
}

/* iov entries over [off, off + len) of mh's memory (at most mh->count). */
static size_t ucx_seg_iov(const struct ucx_mem_handle *mh, size_t off, size_t len,
                          ucp_dt_iov_t *iov)
{
    size_t n = 0;
    for (size_t i = 0; i < mh->count && len > 0; i++) {
        size_t sl = mh->seg[i].len;
        if (off >= sl) {
            off -= sl;
            continue;
        }
        size_t take = sl - off < len ? sl - off : len;
        iov[n++] = (ucp_dt_iov_t){.buffer = (char *)(uintptr_t)mh->seg[i].base + off,
                                  .length = take};
        len -= take;
        off = 0;
    }
    return n;
}

/* Copy len bytes between two iov lists that hold them (the shared segment
 * cursor walks both). */
static void ucx_iov_copy(const ucp_dt_iov_t *dst, size_t nd, const ucp_dt_iov_t *src,
                         size_t ns, size_t len)
{
    struct na_seg_cursor cur;
    struct na_seg_run run;
    bool fits = na_seg_cursor_init(&cur, NA_SEG_LIST(dst, nd, length), 0,
                                   NA_SEG_LIST(src, ns, length), 0, len);
    HGX_ASSERT(fits); /* both lists were built for len bytes */
    (void)fits;
    while (na_seg_cursor_next(&cur, &run))
        memmove((char *)dst[run.local_index].buffer + run.local_offset,
                (const char *)src[run.remote_index].buffer + run.remote_offset, run.len);
}

/* Point param at n iov entries: one is sent as a contiguous buffer. */
static const void *ucx_iov_param(ucp_request_param_t *param, const ucp_dt_iov_t *iov,
                                 size_t n, size_t *count)
{
    if (n == 1) {
        *count = iov[0].length;
        return iov[0].buffer;
    }
    param->op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    param->datatype = ucp_dt_make_iov();
    *count = n;
    return iov;
}

static void ucx_rma_malformed(const char *what, size_t header_length, size_t length)
{
    atomic_fetch_add(&ucx_rma_dropped, 1);
    HGX_LOG_ERROR(UCX, "dropped a malformed put/get %s (%zu-byte header, %zu bytes)",
                  what, header_length, length);
}

/* Target side: the region a request names, checked. Only (index, gen, key)
 * find it; then bounds (overflow-safe) and permission. Codes as the MPI
 * emulation's: NA_ACCESS unknown or freed region, NA_INVALID_ARG out of
 * bounds, NA_PERMISSION access not granted. Lock held. */
static na_return_t ucx_region_find(struct ucx_class *cls, const struct ucx_rma_req *rq,
                                   struct ucx_mem_handle **mh_p)
{
    unsigned long need = rq->put ? NA_MEM_WRITE_ONLY : NA_MEM_READ_ONLY;
    struct ucx_mem_handle *mh = na_slots_get(&cls->regions, rq->index, rq->gen);
    na_return_t ret = NA_SUCCESS;
    if (!mh || mh->key != rq->key)
        ret = NA_ACCESS;
    else if (rq->offset > mh->head.len || rq->length > mh->head.len - rq->offset ||
             rq->length == 0)
        ret = NA_INVALID_ARG;
    else if ((mh->head.flags & need) != need)
        ret = NA_PERMISSION;
    if (ret != NA_SUCCESS) {
        atomic_fetch_add(&ucx_rma_refused, 1);
        HGX_LOG_WARNING(
            UCX, "refused %s (region %u gen %u off %" PRIu64 " len %" PRIu64 "): %s",
            rq->put ? "put" : "get", rq->index, rq->gen, rq->offset, rq->length,
            ret == NA_ACCESS       ? "unknown or freed region"
            : ret == NA_PERMISSION ? "permission"
                                   : "out of bounds");
    }
    *mh_p = mh;
    return ret;
}

static bool ucx_rma_req_parse(const void *header, size_t header_length,
                              struct ucx_rma_req *rq)
{
    const unsigned char *in = header;
    if (header_length != UCX_RMA_REQ_HDR)
        return false;
    uint32_t kind = hgx_get_u32(in);
    if (kind != UCX_RMA_GET && kind != UCX_RMA_PUT)
        return false;
    *rq = (struct ucx_rma_req){.put = kind == UCX_RMA_PUT,
                               .index = hgx_get_u32(in + 4),
                               .key = hgx_get_u64(in + 8),
                               .cookie = hgx_get_u64(in + 16),
                               .offset = hgx_get_u64(in + 24),
                               .length = hgx_get_u64(in + 32),
                               .gen = hgx_get_u32(in + 40)};
    return true;
}

static void ucx_rma_req_write(unsigned char *out, const struct ucx_rma_req *rq)
{
    hgx_put_u32(out, rq->put ? UCX_RMA_PUT : UCX_RMA_GET);
    hgx_put_u32(out + 4, rq->index);
    hgx_put_u64(out + 8, rq->key);
    hgx_put_u64(out + 16, rq->cookie);
    hgx_put_u64(out + 24, rq->offset);
    hgx_put_u64(out + 32, rq->length);
    hgx_put_u32(out + 40, rq->gen);
}

/* A reply for the request rq, over [offset, offset + length) of mh when mh
 * is set (the region stays busy until the tx ends). Lock held. */
static struct ucx_tx *ucx_tx_new(struct ucx_class *cls, ucp_ep_h ep,
                                 const struct ucx_rma_req *rq, na_return_t status,
                                 struct ucx_mem_handle *mh)
{
    struct ucx_tx *tx = malloc(sizeof(*tx) + (mh ? mh->count : 0) * sizeof(ucp_dt_iov_t));
    if (!tx) {
        HGX_LOG_ERROR(UCX, "out of memory for a put/get reply; request dropped");
        return NULL;
    }
    *tx = (struct ucx_tx){.cls = cls, .mh = mh, .ep = ep};
    hgx_put_u32(tx->hdr, rq->put ? UCX_RMA_PUT_ACK : UCX_RMA_GET_REP);
    hgx_put_u32(tx->hdr + 4, (uint32_t)status);
    hgx_put_u64(tx->hdr + 8, rq->cookie);
    if (mh) {
        tx->n = ucx_seg_iov(mh, rq->offset, rq->length, tx->iov);
        mh->busy++;
    }
    hgx_list_push_front(&cls->txs, &tx->link);
    return tx;
}

static struct ucx_tx *ucx_tx_at(struct hgx_list *link)
{
    return hgx_list_entry(link, struct ucx_tx, link);
}

static void ucx_tx_end(struct ucx_tx *tx)
{
    hgx_list_remove(&tx->link);
    if (tx->mh)
        tx->mh->busy--;
    free(tx);
}

/* Finalize: the transfers the closes did not end; UCX is done with them. */
void ucx_tx_end_all(struct ucx_class *cls)
{
    struct hgx_list *it;
    while ((it = hgx_list_first(&cls->txs)))
        ucx_tx_end(ucx_tx_at(it));
}

static void ucx_tx_sent_cb(void *request, ucs_status_t status, void *user_data)
{
    if (status != UCS_OK)
        HGX_LOG_DEBUG(UCX, "put/get reply not delivered: %s", ucs_status_string(status));
    ucp_request_free(request);
    ucx_tx_end(user_data);
}

/* Send tx's reply on the request's ep; tx ends when UCX is done with it. */
static void ucx_tx_reply(struct ucx_tx *tx)
{
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                                 UCP_OP_ATTR_FIELD_USER_DATA |
                                                 UCP_OP_ATTR_FIELD_FLAGS,
                                 .cb.send = ucx_tx_sent_cb,
                                 .user_data = tx,
                                 .flags = UCP_AM_SEND_FLAG_REPLY};
    size_t count = 0;
    const void *data = tx->data ? ucx_iov_param(&param, tx->iov, tx->n, &count) : NULL;
    ucs_status_ptr_t sp = ucp_am_send_nbx(tx->ep, UCX_AM_RMA_REP, tx->hdr,
                                          UCX_RMA_REP_HDR, data, count, &param);
    if (UCS_PTR_IS_ERR(sp))
        HGX_LOG_ERROR(UCX, "cannot send a put/get reply: %s",
                      ucs_status_string(UCS_PTR_STATUS(sp)));
    if (!sp || UCS_PTR_IS_ERR(sp))
        ucx_tx_end(tx);
}

/* A put's rendezvous data is in the region (or failed): acknowledge. */
static void ucx_tx_put_cb(void *request, ucs_status_t status, size_t length,
                          void *user_data)
{
    struct ucx_tx *tx = user_data;
    (void)length; /* UCX receives exactly the announced length or fails */
    ucp_request_free(request);
    if (status != UCS_OK) {
        /* The origin's ep failed mid-transfer: nobody to answer. */
        HGX_LOG_DEBUG(UCX, "put data not received: %s", ucs_status_string(status));
        ucx_tx_end(tx);
        return;
    }
    ucx_tx_reply(tx);
}

/* Receive a put's rendezvous data straight into the region. */
static void ucx_tx_put_recv(struct ucx_tx *tx, void *desc)
{
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                                 UCP_OP_ATTR_FIELD_USER_DATA,
                                 .cb.recv_am = ucx_tx_put_cb,
                                 .user_data = tx};
    size_t count = 0;
    void *buf = (void *)(uintptr_t)ucx_iov_param(&param, tx->iov, tx->n, &count);
    ucs_status_ptr_t sp = ucp_am_recv_data_nbx(tx->cls->worker, desc, buf, count, &param);
    if (UCS_PTR_IS_ERR(sp)) {
        HGX_LOG_ERROR(UCX, "cannot receive put data: %s",
                      ucs_status_string(UCS_PTR_STATUS(sp)));
        hgx_put_u32(tx->hdr + 4, (uint32_t)ucx_status_to_na(UCS_PTR_STATUS(sp)));
    }
    if (!sp || UCS_PTR_IS_ERR(sp))
        ucx_tx_reply(tx);
}

/* Requests from peers (lock held). Anything malformed is dropped; a request
 * whose region check fails gets a reply with the error and no data. */
ucs_status_t ucx_am_rma_req_cb(void *arg, const void *header, size_t header_length,
                               void *data, size_t length,
                               const ucp_am_recv_param_t *param)
{
    struct ucx_class *cls = arg;
    bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
    struct ucx_rma_req rq;
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ||
        !ucx_rma_req_parse(header, header_length, &rq) ||
        length != (rq.put ? rq.length : 0)) {
        ucx_rma_malformed("request", header_length, length);
        return rndv ? UCS_ERR_INVALID_PARAM : UCS_OK; /* a rendezvous is refused */
    }
    struct ucx_mem_handle *mh = NULL;
    na_return_t ret = ucx_region_find(cls, &rq, &mh);
    /* Refused: the reply says why; a put's data is dropped. */
    struct ucx_tx *tx =
        ucx_tx_new(cls, param->reply_ep, &rq, ret, ret == NA_SUCCESS ? mh : NULL);
    if (!tx)
        return UCS_OK;
    if (ret == NA_SUCCESS && rq.put && rndv) {
        ucx_tx_put_recv(tx, data);
        return UCS_INPROGRESS; /* UCX owns the descriptor now */
    }
    if (ret == NA_SUCCESS && rq.put)
        ucx_iov_copy(tx->iov, tx->n, &(ucp_dt_iov_t){.buffer = data, .length = length}, 1,
                     length);
    tx->data = ret == NA_SUCCESS && !rq.put;
    ucx_tx_reply(tx);
    return UCS_OK;
}

static bool ucx_region_busy(void *mh)
{
    return ((struct ucx_mem_handle *)mh)->busy > 0;
}

/* Wait, bounded, for the peers' transfers on mh to end. Lock held. */
static void ucx_region_wait(struct ucx_class *cls, struct ucx_mem_handle *mh)
{
    ucx_progress_while(cls, ucx_region_busy, mh);
}

/* Deregistration: transfers already at work on mh (a get's data being sent,
 * a put's being received) end before it returns. Past UCX_CLOSE_MS, the eps
 * of those still running are dropped, which ends them with an error: mh's
 * memory is not read or written after deregistration returns. Lock held. */
void ucx_region_quiesce(struct ucx_class *cls, struct ucx_mem_handle *mh)
{
    ucx_region_wait(cls, mh);
    if (!mh->busy)
        return;
    HGX_LOG_WARNING(UCX,
                    "deregistering a region with %u transfers still running after %d "
                    "ms; dropping their connections",
                    mh->busy, UCX_CLOSE_MS);
    for (struct hgx_list *it = cls->txs.next; it != &cls->txs;) {
        struct ucx_tx *tx = ucx_tx_at(it);
        struct ucx_peer *p = tx->mh == mh ? ucx_peer_of_ep(cls, tx->ep) : NULL;
        if (!p) {
            it = it->next;
            continue;
        }
        ucx_peer_down(cls, p, true); /* may end transfers: scan again */
        it = cls->txs.next;
    }
    ucx_region_wait(cls, mh);
    if (mh->busy)
        HGX_LOG_ERROR(UCX, "%u transfers of a deregistered region did not end", mh->busy);
}

/* One part of an op (its send, its reply) ended; the op completes with the
 * last one. */
void ucx_rma_piece_done(struct ucx_op *uop, na_return_t ret)
{
    if (ret != NA_SUCCESS && uop->rma_ret == NA_SUCCESS)
        uop->rma_ret = ret;
    if (--uop->pieces > 0)
        return;
    na_cancel_watch_stop(&uop->cancel_watch);
    if (uop->riov != uop->iov)
        free(uop->riov);
    uop->riov = NULL;
    /* Data that moved is reported as moved: cancel never hides a transfer. */
    na_op_complete(na_op_from_plugin(uop), uop->rma_ret != NA_SUCCESS
                                               ? ucx_failed_ret(uop, uop->rma_ret)
                                               : NA_SUCCESS);
}

/* The op no longer waits for a reply: a late one matches nothing. */
void ucx_rma_unname(struct ucx_class *cls, struct ucx_op *uop)
{
    na_slots_remove(&cls->rma_ops, (uint32_t)uop->cookie);
}

bool ucx_rma_awaiting(struct ucx_class *cls, struct ucx_op *uop)
{
    return na_slots_get(&cls->rma_ops, (uint32_t)uop->cookie,
                        (uint32_t)(uop->cookie >> 32)) == uop;
}

void ucx_rma_fail_peer(struct ucx_class *cls, struct ucx_peer *p, na_return_t ret)
{
    for (uint32_t i = 1; cls->rma_ops.used && i < cls->rma_ops.cap; i++) {
        struct ucx_op *uop = na_slots_at(&cls->rma_ops, i);
        if (uop && uop->peer == p) {
            ucx_rma_unname(cls, uop);
            ucx_rma_piece_done(uop, ret);
        }
    }
}

static void ucx_rma_sent_cb(void *request, ucs_status_t status, void *user_data)
{
    ucp_request_free(request);
    ucx_rma_piece_done(user_data, ucx_status_to_na(status));
}

static void ucx_rma_landed_cb(void *request, ucs_status_t status, size_t length,
                              void *user_data)
{
    struct ucx_op *uop = user_data;
    (void)length; /* UCX receives exactly the announced length or fails */
    ucp_request_free(request);
    uop->landing = false;
    ucx_rma_piece_done(uop, ucx_status_to_na(status));
}

/* A status a reply may carry; anything else is a protocol error. */
static na_return_t ucx_rma_status(uint32_t status)
{
    switch (status) {
    case NA_SUCCESS:
    case NA_ACCESS:
    case NA_INVALID_ARG:
    case NA_PERMISSION:
    case NA_NOMEM:
    case NA_PROTOCOL_ERROR:
    case NA_HOSTUNREACH:
        return (na_return_t)status;
    default:
        return NA_PROTOCOL_ERROR;
    }
}

/* Replies to our requests (lock held): matched by cookie to a live op asked
 * on the ep the reply came from, else dropped. A good get's data lands in the
 * op's local segments: copied when eager, received there when rendezvous. */
ucs_status_t ucx_am_rma_rep_cb(void *arg, const void *header, size_t header_length,
                               void *data, size_t length,
                               const ucp_am_recv_param_t *param)
{
    struct ucx_class *cls = arg;
    const unsigned char *in = header;
    bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
    uint32_t kind = header_length == UCX_RMA_REP_HDR ? hgx_get_u32(in) : 0;
    if (kind != UCX_RMA_GET_REP && kind != UCX_RMA_PUT_ACK) {
        ucx_rma_malformed("reply", header_length, length);
        return rndv ? UCS_ERR_INVALID_PARAM : UCS_OK;
    }
    uint64_t cookie = hgx_get_u64(in + 8);
    struct ucx_op *uop = na_slots_get_cookie(&cls->rma_ops, cookie);
    if (!uop || uop->put != (kind == UCX_RMA_PUT_ACK) ||
        !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ||
        param->reply_ep != uop->peer->ep) {
        atomic_fetch_add(&ucx_rma_dropped, 1);
        HGX_LOG_DEBUG(UCX, "dropped a put/get reply matching no live operation");
        return UCS_OK; /* a rendezvous is dropped with it */
    }
    ucx_rma_unname(cls, uop);
    na_return_t ret = ucx_rma_status(hgx_get_u32(in + 4));
    if (length != (ret == NA_SUCCESS && !uop->put ? uop->len : 0)) {
        HGX_LOG_ERROR(UCX, "put/get reply from %s carries %zu bytes; dropped",
                      uop->peer->str, length);
        atomic_fetch_add(&ucx_rma_dropped, 1);
        ret = NA_PROTOCOL_ERROR;
    }
    if (ret != NA_SUCCESS || uop->put || !rndv) {
        if (ret == NA_SUCCESS && !uop->put)
            ucx_iov_copy(uop->riov, uop->riov_n,
                         &(ucp_dt_iov_t){.buffer = data, .length = length}, 1, length);
        ucx_rma_piece_done(uop, ret);
        return UCS_OK;
    }
    ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                              UCP_OP_ATTR_FIELD_USER_DATA,
                              .cb.recv_am = ucx_rma_landed_cb,
                              .user_data = uop};
    size_t count = 0;
    void *buf = (void *)(uintptr_t)ucx_iov_param(&rp, uop->riov, uop->riov_n, &count);
    uop->landing = true;
    ucs_status_ptr_t sp = ucp_am_recv_data_nbx(cls->worker, data, buf, count, &rp);
    if (!sp || UCS_PTR_IS_ERR(sp)) {
        uop->landing = false;
        ucx_rma_piece_done(uop, sp ? ucx_status_to_na(UCS_PTR_STATUS(sp)) : NA_SUCCESS);
    }
    return UCS_INPROGRESS; /* UCX owns the descriptor now */
}

struct ucx_rma_args {
    bool put;
    struct ucx_mem_handle *local, *remote;
    size_t loff, roff, size;
    struct ucx_peer *peer;
};

/* To ourselves: the same region check, then a copy. */
static void ucx_rma_self(struct ucx_class *cls, struct ucx_op *uop,
                         const struct ucx_rma_args *a)
{
    struct ucx_rma_req rq = {.put = a->put,
                             .index = a->remote->index,
                             .gen = a->remote->gen,
                             .key = a->remote->key,
                             .offset = a->roff,
                             .length = a->size};
    struct ucx_mem_handle *mh = NULL;
    na_return_t ret = ucx_region_find(cls, &rq, &mh);
    ucp_dt_iov_t *riov = ret == NA_SUCCESS ? malloc(mh->count * sizeof(*riov)) : NULL;
    if (ret == NA_SUCCESS && !riov)
        ret = NA_NOMEM;
    if (ret == NA_SUCCESS) {
        size_t rn = ucx_seg_iov(mh, a->roff, a->size, riov);
        if (a->put)
            ucx_iov_copy(riov, rn, uop->riov, uop->riov_n, a->size);
        else
            ucx_iov_copy(uop->riov, uop->riov_n, riov, rn, a->size);
    }
    free(riov);
    uop->pieces = 1;
    ucx_rma_piece_done(uop, ret);
}

/* Send uop's request, written in its stage (with a put's data). Lock held. */
static ucs_status_t ucx_rma_post(struct ucx_op *uop)
{
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                                 UCP_OP_ATTR_FIELD_USER_DATA |
                                                 UCP_OP_ATTR_FIELD_FLAGS,
                                 .cb.send = ucx_rma_sent_cb,
                                 .user_data = uop,
                                 .flags = UCP_AM_SEND_FLAG_REPLY};
    size_t count = 0;
    const void *data =
        uop->put ? ucx_iov_param(&param, uop->riov, uop->riov_n, &count) : NULL;
    ucs_status_ptr_t sp = ucp_am_send_nbx(uop->peer->ep, UCX_AM_RMA_REQ, uop->stage,
                                          UCX_RMA_REQ_HDR, data, count, &param);
    if (UCS_PTR_IS_ERR(sp)) {
        ucx_rma_unname(uop->cls, uop);
        HGX_LOG_ERROR(UCX, "%s to %s failed: %s", uop->put ? "put" : "get",
                      uop->peer->str, ucs_status_string(UCS_PTR_STATUS(sp)));
        return UCS_PTR_STATUS(sp);
    }
    if (!sp)
        ucx_rma_piece_done(uop, NA_SUCCESS); /* sent already */
    return UCS_OK;
}

/* A request queued while its peer connected: send it now. Refused, the op
 * waits for no reply and ends with the error. Lock held. */
void ucx_rma_resume(struct ucx_op *uop)
{
    ucs_status_t st = ucx_rma_post(uop);
    if (st != UCS_OK) {
        uop->pieces = 1;
        ucx_rma_piece_done(uop, ucx_status_to_na(st));
    }
}

/* Name the op and write its request. Its send and its reply are the op's
 * two pieces. The request is sent now on a connected peer, else queued
 * behind the wire-up. Lock held. */
static na_return_t ucx_rma_send(struct ucx_class *cls, struct ucx_op *uop,
                                const struct ucx_rma_args *a)
{
    struct ucx_peer *p = a->peer;
    uint32_t index, gen;
    if (!na_slots_add(&cls->rma_ops, uop, &index, &gen))
        return NA_NOMEM;
    uop->cookie = na_slots_cookie(index, gen);
    uop->gen = p->gen;
    uop->pieces = 2;
    struct ucx_rma_req rq = {.put = a->put,
                             .index = a->remote->index,
                             .gen = a->remote->gen,
                             .key = a->remote->key,
                             .cookie = uop->cookie,
                             .offset = a->roff,
                             .length = a->size};
    ucx_rma_req_write(uop->stage, &rq);
    if (p->state != UCX_CONN_UP) {
        hgx_list_push_back(&p->pend, &uop->qlink);
        ucx_queued_add(cls, 1);
        return NA_SUCCESS;
    }
    ucs_status_t st = ucx_rma_post(uop);
    return st == UCS_OK ? NA_SUCCESS : ucx_status_to_na(st);
}

static na_return_t ucx_rma(na_class_t *na_class, na_op_id_t *op, struct ucx_rma_args *a)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct ucx_op *uop = ucx_op(op);
    na_return_t ret = NA_SUCCESS;

    ucx_op_start(uop, UCX_OP_RMA, cls);
    uop->peer = a->peer;
    uop->put = a->put;
    uop->len = a->size;
    uop->riov =
        a->local->count <= 2 ? uop->iov : malloc(a->local->count * sizeof(ucp_dt_iov_t));
    if (!uop->riov)
        return NA_NOMEM;
    uop->riov_n = ucx_seg_iov(a->local, a->loff, a->size, uop->riov);
    hgx_lock(&cls->lock);
    if (a->peer->self)
        ucx_rma_self(cls, uop, a);
    else if ((ret = ucx_peer_ready(cls, a->peer, a->put ? "put" : "get")) == NA_SUCCESS)
        ret = ucx_rma_send(cls, uop, a);
    hgx_unlock(&cls->lock);
    if (ret != NA_SUCCESS && uop->riov != uop->iov)
        free(uop->riov); /* refused: the op is unused */
    return ret;
}

na_return_t ucx_rma_op(na_class_t *na_class, na_op_id_t *op, bool put,
                       na_mem_handle_t *local, na_offset_t local_offset,
                       na_mem_handle_t *remote, na_offset_t remote_offset, size_t size,
                       na_addr_t *remote_addr)
{
    struct ucx_rma_args a = {.put = put,
                             .local = ucx_mh(local),
                             .remote = ucx_mh(remote),
                             .loff = local_offset,
                             .roff = remote_offset,
                             .size = size,
                             .peer = ucx_peer_of(remote_addr)};
    return ucx_rma(na_class, op, &a);
}
