/*
 * ucx_msg.c -- messages: the send window and its queue, tagged expected
 * messages, unexpected messages as active messages matched by the plugin.
 */
#include "ucx_int.h"
#include "hgx_wire.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static void ucx_send_cb(void *request, ucs_status_t status, void *user_data);

/* An unexpected send whose data is copied behind its header in stage (one
 * buffer); a longer one goes as an iov. */
static inline bool ucx_unexp_staged(const struct ucx_op *uop)
{
    return uop->len <= UCX_STAGE_MAX - UCX_UNEXP_HDR;
}

/* Post one send; NO_RESOURCE (window full, or an unexpected send without a
 * credit: UCX not called) is returned for the caller to queue it. */
static inline ucs_status_t ucx_send_post(struct ucx_op *uop)
{
    struct ucx_peer *p = uop->peer;
    if (p->inflight >= p->cls->send_window || (uop->am && !p->credits))
        return UCS_ERR_NO_RESOURCE;
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                                 UCP_OP_ATTR_FIELD_USER_DATA,
                                 .cb.send = ucx_send_cb,
                                 .user_data = uop};
    ucs_status_ptr_t sp;
    if (uop->am) {
        /* Eager only: a rendezvous would hold the send until the peer fetched it. */
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
        param.flags = UCP_AM_SEND_FLAG_EAGER;
        if (ucx_unexp_staged(uop)) {
            sp = ucp_am_send_nbx(p->ep, UCX_AM_UNEXP, NULL, 0, uop->stage,
                                 UCX_UNEXP_HDR + uop->len, &param);
        } else {
            param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
            param.datatype = ucp_dt_make_iov();
            sp = ucp_am_send_nbx(p->ep, UCX_AM_UNEXP, NULL, 0, uop->iov, 2, &param);
        }
    } else {
        sp = ucp_tag_send_nbx(p->ep, uop->buf, uop->len, uop->tag, &param);
    }
    if (!UCS_PTR_IS_ERR(sp))
        p->credits -= uop->am; /* UCX has the message: its credit is spent */
    if (sp == NULL) {
        /* Done already (bcopy): no request, complete now. */
        /* Sent already: a cancel requested meanwhile lost, report the truth. */
        na_op_complete(na_op_from_plugin(uop), NA_SUCCESS);
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(sp))
        return UCS_PTR_STATUS(sp);
    uop->inflight = true;
    p->inflight++;
    return UCS_INPROGRESS;
}

/* A send's UCX request ended (its callback runs once): free its window slot,
 * unless its ep was dropped or replaced since (that ep's count was reset). */
static void ucx_window_release(struct ucx_op *uop)
{
    uop->inflight = false;
    if (uop->gen == uop->peer->gen)
        uop->peer->inflight--;
}

/* Outcome of a send/RMA that ended with an error: stopped by its cancel, or
 * failed with its ep dropped by another op's cancel escalation. */
na_return_t ucx_failed_ret(struct ucx_op *uop, na_return_t ret)
{
    if (na_op_cancel_requested(na_op_from_plugin(uop)))
        return NA_CANCELED;
    if (uop->gen != uop->peer->gen)
        return NA_HOSTUNREACH;
    return ret;
}

static void ucx_send_cb(void *request, ucs_status_t status, void *user_data)
{
    struct ucx_op *uop = user_data;
    na_return_t ret = ucx_status_to_na(status);
    ucx_window_release(uop);
    na_cancel_watch_stop(&uop->cancel_watch);
    if (ret != NA_SUCCESS)
        ret = ucx_failed_ret(uop, ret);
    ucp_request_free(request);
    na_op_complete(na_op_from_plugin(uop), ret);
}

/* Resume queued ops of every connected peer, in order, until its window is
 * full. */
void ucx_pending_resume(struct ucx_class *cls)
{
    struct hgx_list *it;
    hgx_list_for_each(it, &cls->peers)
    {
        struct ucx_peer *p = ucx_peer_at(it);
        struct ucx_op *uop;
        while (p->state == UCX_CONN_UP && (uop = ucx_queue_first(&p->pend))) {
            if (uop->kind == UCX_OP_RMA) {
                ucx_queue_pop(&p->pend);
                ucx_queued_add(cls, -1);
                ucx_rma_resume(uop);
                continue;
            }
            ucs_status_t st = ucx_send_post(uop);
            if (st == UCS_ERR_NO_RESOURCE)
                break;
            ucx_queue_pop(&p->pend);
            ucx_queued_add(cls, -1);
            if (UCS_STATUS_IS_ERR(st))
                na_op_complete(na_op_from_plugin(uop), ucx_status_to_na(st));
        }
    }
}

size_t ucx_msg_get_max_size(const na_class_t *na_class)
{
    (void)na_class;
    return UCX_MSG_SIZE_MAX;
}

na_tag_t ucx_msg_get_max_tag(const na_class_t *na_class)
{
    (void)na_class;
    return UINT32_MAX;
}

/* Tag of an expected message: the sender's class id above the NA tag. */
static ucp_tag_t ucx_tag(uint32_t id, na_tag_t tag)
{
    return (ucp_tag_t)id << UCX_TAG_ID_SHIFT | (uint32_t)tag;
}

/* Lay out an unexpected send: the header in stage (but its last word, which
 * names the peer's credit account: ucx_send writes it under the lock), then
 * the data behind it (short messages) or in a second iov entry. */
static void ucx_unexp_stage(struct ucx_op *uop, uint32_t sender, na_tag_t tag)
{
    hgx_put_u32(uop->stage, sender);
    hgx_put_u32(uop->stage + 4, (uint32_t)tag);
    if (ucx_unexp_staged(uop)) {
        memcpy(uop->stage + UCX_UNEXP_HDR, uop->buf, uop->len);
    } else {
        uop->iov[0] = (ucp_dt_iov_t){.buffer = uop->stage, .length = UCX_UNEXP_HDR};
        uop->iov[1] =
            (ucp_dt_iov_t){.buffer = (void *)(uintptr_t)uop->buf, .length = uop->len};
    }
}

/* A send UCX was not given: queued behind others or for resources (the
 * window is full, the unexpected send has no credit, or sends wait for
 * those), or failed. With NA_NO_RETRY a send refused for resources fails
 * with NA_AGAIN instead; one waiting for the connection's wire-up still
 * queues, as UCX itself takes sends on an endpoint it is wiring up. Lock
 * held. */
static na_return_t ucx_send_not_posted(struct ucx_op *uop, ucs_status_t st, bool wiring)
{
    struct ucx_peer *p = uop->peer;
    if (st == UCS_ERR_NO_RESOURCE && !wiring &&
        (p->cls->na_class->progress_mode & NA_NO_RETRY)) {
        HGX_LOG_DEBUG(UCX,
                      "send to %s refused (window full or no credit), not retried "
                      "(NA_NO_RETRY)",
                      p->str);
        return NA_AGAIN;
    }
    if (st == UCS_ERR_NO_RESOURCE) {
        hgx_list_push_back(&p->pend, &uop->qlink);
        ucx_queued_add(p->cls, 1);
        return NA_SUCCESS;
    }
    HGX_LOG_ERROR(UCX, "send to %s failed: %s", p->str, ucs_status_string(st));
    return ucx_status_to_na(st);
}

/* Both message sends; inlined into each so the common case (a connected
 * peer with room in its window) costs no call before UCX's. */
static inline __attribute__((always_inline)) na_return_t
ucx_send(na_class_t *na_class, na_op_id_t *op, const void *buf, size_t buf_size,
         na_addr_t *dest_addr, bool unexpected, uint8_t dest_id, na_tag_t tag)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct ucx_op *uop = ucx_op(op);
    struct ucx_peer *p = ucx_peer_of(dest_addr);
    na_return_t ret = NA_SUCCESS;

    ucx_op_start(uop, UCX_OP_SEND, cls);
    uop->peer = p;
    uop->buf = buf;
    uop->len = buf_size;
    uop->am = unexpected;
    if (unexpected)
        ucx_unexp_stage(uop, cls->id, tag);
    else
        uop->tag = ucx_tag(cls->id, tag);
    hgx_lock(&cls->lock);
    if ((ret = ucx_peer_ready(cls, p, "send")) == NA_SUCCESS) {
        uop->gen = p->gen;
        if (unexpected)
            hgx_put_u32(uop->stage + 8, dest_id | ucx_credit_account(p) << 8);
        /* Behind queued sends, out of resources or not connected yet: queue
         * to keep the order. */
        bool wiring = p->state != UCX_CONN_UP;
        ucs_status_t st = wiring || !hgx_list_empty(&p->pend) ? UCS_ERR_NO_RESOURCE
                                                              : ucx_send_post(uop);
        if (__builtin_expect(UCS_STATUS_IS_ERR(st), 0))
            ret = ucx_send_not_posted(uop, st, wiring);
    }
    hgx_unlock(&cls->lock);
    return ret;
}

na_return_t ucx_msg_send_unexpected(na_class_t *na_class, na_context_t *context,
                                    na_op_id_t *op, const void *buf, size_t buf_size,
                                    void *plugin_data, na_addr_t *dest_addr,
                                    uint8_t dest_id, na_tag_t tag)
{
    (void)context;
    (void)plugin_data;
    return ucx_send(na_class, op, buf, buf_size, dest_addr, true, dest_id, tag);
}

na_return_t ucx_msg_send_expected(na_class_t *na_class, na_context_t *context,
                                  na_op_id_t *op, const void *buf, size_t buf_size,
                                  void *plugin_data, na_addr_t *dest_addr,
                                  uint8_t dest_id, na_tag_t tag)
{
    (void)context;
    (void)plugin_data;
    /* The tag alone names the receive (ucx_int.h): no context id on the wire. */
    return ucx_send(na_class, op, buf, buf_size, dest_addr, false, dest_id, tag);
}

/* An expected receive finished: fill the info and complete. */
static void ucx_recv_done(struct ucx_op *uop, ucs_status_t status,
                          const ucp_tag_recv_info_t *info)
{
    na_op_id_t *op = na_op_from_plugin(uop);
    na_return_t ret = ucx_status_to_na(status);

    uop->req = NULL;
    if (ret == NA_SUCCESS)
        op->info.info.recv_expected.actual_buf_size = info->length;
    else if (status == UCS_ERR_CANCELED) /* its message may still come */
        ucx_late_expect(uop->cls, uop->tag);
    na_op_complete(op, ret);
}

static void ucx_recv_cb(void *request, ucs_status_t status,
                        const ucp_tag_recv_info_t *info, void *user_data)
{
    struct ucx_op *uop = user_data;
    bool inline_post = uop->posting;
    ucx_recv_done(uop, status, info); /* info lives in the request: use it first */
    /* Completed inside its own post: the poster frees the request it gets back. */
    if (inline_post)
        uop->done_inline = true;
    else
        ucp_request_free(request);
}

/* NO_IMM_CMPL: every receive goes through the callback (one completion path). */
static na_return_t ucx_recv(na_class_t *na_class, na_op_id_t *op, void *buf,
                            size_t buf_size, ucp_tag_t tag)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct ucx_op *uop = ucx_op(op);
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                                 UCP_OP_ATTR_FIELD_USER_DATA |
                                                 UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
                                 .cb.recv = ucx_recv_cb,
                                 .user_data = uop};

    ucx_op_start(uop, UCX_OP_RECV_EXP, cls);
    uop->tag = tag;
    uop->posting = true;
    hgx_lock(&cls->lock);
    if (__builtin_expect(cls->late_live != 0, 0))
        ucx_late_forget(cls, tag);
    ucs_status_ptr_t sp =
        ucp_tag_recv_nbx(cls->worker, buf, buf_size, tag, ~(ucp_tag_t)0, &param);
    na_return_t ret = NA_SUCCESS;
    uop->posting = false;
    if (UCS_PTR_IS_ERR(sp)) {
        HGX_LOG_ERROR(UCX, "cannot post a receive: %s",
                      ucs_status_string(UCS_PTR_STATUS(sp)));
        ret = ucx_status_to_na(UCS_PTR_STATUS(sp));
    } else if (uop->done_inline) {
        ucp_request_free(sp);
    } else {
        uop->req = sp;
    }
    hgx_unlock(&cls->lock);
    return ret;
}

/* Hand an unexpected message to a posted receive. Lock held. */
static void ucx_unexp_deliver(struct ucx_op *uop, struct ucx_peer *p, uint32_t tag,
                              const void *data, size_t len)
{
    na_op_id_t *op = na_op_from_plugin(uop);
    struct na_cb_info_recv_unexpected *ri = &op->info.info.recv_unexpected;
    na_return_t ret;

    if (len > uop->rsize) {
        HGX_LOG_ERROR(UCX,
                      "unexpected message of %zu bytes from %s exceeds the %zu-byte "
                      "buffer posted; dropped",
                      len, p->str, uop->rsize);
        ret = NA_MSGSIZE;
    } else {
        memcpy(uop->rbuf, data, len);
        ri->actual_buf_size = len;
        ri->tag = (na_tag_t)tag;
        ret = ucx_addr_new(op->na_class, p, &ri->source);
    }
    na_op_complete(op, ret);
}

/* Keep a message that found no posted receive: nothing is dropped (a
 * receiver that falls behind gets every message, in order). Its sender's
 * credits bound how many one peer has kept (ucx_credit.c); a box that
 * reaches HGX_NA_UNEXPECTED_MAX makes progress leave further messages with
 * UCX while nothing else needs the worker (ucx_progress.c). a and account:
 * its credit account (ucx_credit_take). Lock held. */
static void ucx_unexp_hold(struct ucx_class *cls, struct ucx_unexp_box *box,
                           struct ucx_peer *p, struct ucx_peer *a, uint32_t account,
                           uint32_t tag, const void *data, size_t len)
{
    struct ucx_held *m = malloc(sizeof(*m) + len);
    if (!m) {
        HGX_LOG_ERROR(UCX, "unexpected message from %s dropped: out of memory (%u kept)",
                      p->str, cls->held);
        ucx_credit_consumed(cls, a, account);
        return;
    }
    m->peer = p;
    m->acct_peer = a;
    m->account = account;
    a->kept++;
    m->tag = tag;
    m->len = len;
    memcpy(m->data, data, len);
    hgx_list_push_back(&box->held, &m->link);
    ucx_held_add(cls, box, 1);
}

/* Unexpected messages dropped for naming a context id a class of several
 * contexts does not have, over every class: tests read it. */
static atomic_long ucx_misaddressed_total;

long na_ucx_misaddressed_count(void);
long na_ucx_misaddressed_count(void)
{
    return atomic_load(&ucx_misaddressed_total);
}

/* Active-message handler of unexpected messages (runs in ucp_worker_progress,
 * lock held). Eager sends only: anything else is no message of ours. */
static ucs_status_t ucx_am_unexp_cb(void *arg, const void *header, size_t header_length,
                                    void *data, size_t length,
                                    const ucp_am_recv_param_t *param)
{
    struct ucx_class *cls = arg;
    (void)header;

    if (header_length != 0 || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ||
        length < UCX_UNEXP_HDR || length > UCX_UNEXP_HDR + UCX_MSG_SIZE_MAX) {
        HGX_LOG_ERROR(UCX,
                      "dropped a malformed unexpected message (%zu-byte active message "
                      "header, %zu bytes%s)",
                      header_length, length,
                      param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV ? ", rendezvous"
                                                                    : "");
        /* A rendezvous descriptor is dropped by UCX on an error return, and
         * its sender's send fails with it; other data is UCX's to free. */
        return param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV ? UCS_ERR_MESSAGE_TRUNCATED
                                                             : UCS_OK;
    }
    const unsigned char *in = data;
    uint32_t sender = hgx_get_u32(in), tag = hgx_get_u32(in + 4), target = in[8],
             account = hgx_get_u32(in + 8) >> 8;
    struct ucx_peer *p =
        sender == cls->id ? cls->self : ucx_peer_find_sender(cls, sender);
    if (!p) {
        HGX_LOG_ERROR(UCX, "unexpected message from unknown peer id %08x dropped",
                      sender);
        return UCS_OK;
    }
    struct ucx_peer *a = ucx_credit_take(cls, p, account);
    if (!a)
        return UCS_OK;
    if (__builtin_expect(target >= cls->n_unexp, 0)) {
        if (cls->n_unexp > 1) {
            ucx_credit_consumed(cls, a, account);
            atomic_fetch_add(&ucx_misaddressed_total, 1);
            HGX_LOG_ERROR(UCX,
                          "unexpected message from %s for context id %u dropped (%u "
                          "contexts)",
                          p->str, target, cls->n_unexp);
            return UCS_OK;
        }
        /* A class of one context takes every id there, as Mercury's do: a
         * sender cannot know how many contexts its peer has. */
        target = 0;
    }
    struct ucx_unexp_box *box = &cls->unexp[target];
    struct ucx_op *uop = ucx_queue_pop(&box->posted);
    if (uop) {
        ucx_unexp_deliver(uop, p, tag, in + UCX_UNEXP_HDR, length - UCX_UNEXP_HDR);
        ucx_credit_consumed(cls, a, account);
    } else {
        ucx_unexp_hold(cls, box, p, a, account, tag, in + UCX_UNEXP_HDR,
                       length - UCX_UNEXP_HDR);
    }
    return UCS_OK;
}

na_return_t ucx_am_handler_set(struct ucx_class *cls)
{
    static const struct {
        unsigned id;
        ucp_am_recv_callback_t cb;
    } handlers[] = {{UCX_AM_UNEXP, ucx_am_unexp_cb},
                    {UCX_AM_RMA_REQ, ucx_am_rma_req_cb},
                    {UCX_AM_RMA_REP, ucx_am_rma_rep_cb},
                    {UCX_AM_CREDIT, ucx_am_credit_cb}};
    for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++) {
        ucp_am_handler_param_t param = {.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                                                      UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                                                      UCP_AM_HANDLER_PARAM_FIELD_CB |
                                                      UCP_AM_HANDLER_PARAM_FIELD_ARG,
                                        .id = handlers[i].id,
                                        .flags = UCP_AM_FLAG_WHOLE_MSG,
                                        .cb = handlers[i].cb,
                                        .arg = cls};
        ucs_status_t st = ucp_worker_set_am_recv_handler(cls->worker, &param);
        if (st != UCS_OK) {
            HGX_LOG_ERROR(UCX, "cannot set active message handler %u: %s", handlers[i].id,
                          ucs_status_string(st));
            return NA_PROTOCOL_ERROR;
        }
    }
    return NA_SUCCESS;
}

/* Hand box's oldest kept message to uop. Out of line: a receive posted
 * before its message arrives, the common case, then needs no registers for
 * this path. Lock held. */
static __attribute__((noinline)) void
ucx_unexp_take_held(struct ucx_class *cls, struct ucx_unexp_box *box, struct ucx_op *uop)
{
    struct ucx_held *m =
        hgx_list_entry(hgx_list_pop_front(&box->held), struct ucx_held, link);
    ucx_held_add(cls, box, -1);
    m->acct_peer->kept--;
    ucx_unexp_deliver(uop, m->peer, m->tag, m->data, m->len);
    ucx_credit_consumed(cls, m->acct_peer, m->account);
    free(m);
}

/* A posted receive takes the oldest message kept for its context, or waits
 * first in that context's line for the next (ucx_int.h says why). */
na_return_t ucx_msg_recv_unexpected(na_class_t *na_class, na_context_t *context,
                                    na_op_id_t *op, void *buf, size_t buf_size,
                                    void *plugin_data)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct ucx_op *uop = ucx_op(op);
    (void)plugin_data;

    ucx_op_start(uop, UCX_OP_RECV_UNEXP, cls);
    uop->rbuf = buf;
    uop->rsize = buf_size;
    hgx_lock(&cls->lock);
    struct ucx_unexp_box *box = context->plugin_context;
    if (!hgx_list_empty(&box->held))
        ucx_unexp_take_held(cls, box, uop);
    else
        hgx_list_push_front(&box->posted, &uop->qlink);
    ucx_wait_unstalled(cls);
    hgx_unlock(&cls->lock);
    return NA_SUCCESS;
}

na_return_t ucx_msg_recv_expected(na_class_t *na_class, na_context_t *context,
                                  na_op_id_t *op, void *buf, size_t buf_size,
                                  void *plugin_data, na_addr_t *source_addr,
                                  uint8_t source_id, na_tag_t tag)
{
    (void)context;
    (void)plugin_data;
    (void)source_id;
    return ucx_recv(na_class, op, buf, buf_size,
                    ucx_tag(ucx_peer_of(source_addr)->id, tag));
}
