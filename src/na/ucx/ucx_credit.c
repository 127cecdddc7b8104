/*
 * ucx_credit.c -- flow control of unexpected messages: per-peer credits.
 *
 * A UCX active-message handler cannot refuse a message (ucx_progress.c), so
 * the bound on what a receiver keeps is set by its senders. A sender holds
 * UCX_CREDITS credits per peer connection and spends one for each unexpected
 * message it hands UCX; with none left, sends wait in order in the peer's
 * queue, or fail with NA_AGAIN under NA_NO_RETRY (ucx_msg.c). The receiver
 * counts the messages it took from each peer and, as they are consumed
 * (handed to a receive at arrival or later from their box, or dropped),
 * returns them in batches of UCX_CREDIT_BATCH with a UCX_AM_CREDIT message.
 * A message that arrives while the peer's account already owes UCX_CREDITS
 * breaks the protocol: it is dropped, logged and counted, never kept.
 *
 * Accounts. Every unexpected message names its sender's account: the
 * generation of the sender's peer (23 bits) and whether the sender connected
 * to us (bit 0). A new ep (reconnect, cancel escalation) is a new generation,
 * hence a new account with every credit. The receiver keeps one account per
 * peer: a message naming another one starts it, after returning what the
 * previous one was due. A return names its account, and the sender takes it
 * for its current one only, so returns for a dropped ep never add to its
 * successor. A message kept under an account that was replaced meanwhile is
 * returned alone, under its own account, when consumed.
 *
 * Bounds at a receiver, per peer: at most UCX_CREDITS messages owed to its
 * current account, and at most 2 x UCX_CREDITS kept over all accounts,
 * whatever the peer sends. A well-behaved sender meets neither: it has at
 * most UCX_CREDITS outstanding per account, and only the ep before the
 * current one may still have messages kept (the second bound could only be
 * met if it reconnected twice while the receiver kept both backlogs).
 */
#include "ucx_int.h"
#include "hgx_wire.h"

#include <stdatomic.h>
#include <stdlib.h>

/* Over every class: messages dropped for exceeding their credits, and credit
 * returns dropped as malformed, unknown or exceeding what was spent. */
static atomic_long ucx_credit_dropped_total, ucx_credit_bad_total;

void na_ucx_credit_counts(struct na_ucx_credit_counts *c)
{
    c->credits = UCX_CREDITS;
    c->dropped = atomic_load(&ucx_credit_dropped_total);
    c->bad_returns = atomic_load(&ucx_credit_bad_total);
}

/* A return's message is ours until UCX is done with it. A return lost with
 * its ep needs no retry: the sender's account ends with that ep. */
static void ucx_credit_sent(void *request, ucs_status_t status, void *user_data)
{
    (void)status;
    free(user_data);
    ucp_request_free(request);
}

/* Whether p's ep can carry a message now (UCX takes sends on an ep it is
 * wiring up). */
static bool ucx_credit_can_send(const struct ucx_peer *p)
{
    return p && p->ep && (p->state == UCX_CONN_UP || p->state == UCX_CONN_CONNECTING);
}

/* Return count credits of account to the peer a. Its twin reaches the same
 * class when a's own ep is down. Lock held. */
static void ucx_credit_send(struct ucx_class *cls, struct ucx_peer *a, uint32_t account,
                            unsigned count)
{
    struct ucx_peer *to = ucx_credit_can_send(a)         ? a
                          : ucx_credit_can_send(a->twin) ? a->twin
                                                         : NULL;
    unsigned char *msg = to ? malloc(UCX_CREDIT_MSG) : NULL;
    if (!msg) {
        HGX_LOG_DEBUG(UCX, "%u credits for %s not returned: %s", count, a->str,
                      to ? "out of memory" : "not connected");
        return;
    }
    hgx_put_u32(msg, cls->id);
    hgx_put_u32(msg + 4, account);
    hgx_put_u32(msg + 8, count);
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                                 UCP_OP_ATTR_FIELD_USER_DATA |
                                                 UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = UCP_AM_SEND_FLAG_EAGER,
                                 .cb.send = ucx_credit_sent,
                                 .user_data = msg};
    ucs_status_ptr_t sp =
        ucp_am_send_nbx(to->ep, UCX_AM_CREDIT, NULL, 0, msg, UCX_CREDIT_MSG, &param);
    if (UCS_PTR_IS_ERR(sp))
        HGX_LOG_DEBUG(UCX, "%u credits for %s not returned: %s", count, a->str,
                      ucs_status_string(UCS_PTR_STATUS(sp)));
    if (!sp || UCS_PTR_IS_ERR(sp))
        free(msg);
}

/* Return what a's current account is due. owed may count fewer: messages
 * of this account can arrive between ones of an older account (over the old
 * ep, read late), and each change of account starts owed again from zero.
 * Lock held. */
static void ucx_credit_flush(struct ucx_class *cls, struct ucx_peer *a)
{
    if (!a->due)
        return;
    ucx_credit_send(cls, a, a->account, a->due);
    a->owed = a->owed > a->due ? a->owed - a->due : 0;
    a->due = 0;
}

/* A message from p naming account arrived: the peer whose account it is in
 * (the one on our side of the sender's connection: ours is accepted if the
 * sender connected), or NULL if the account is overdrawn (dropped). Lock
 * held. */
struct ucx_peer *ucx_credit_take(struct ucx_class *cls, struct ucx_peer *p,
                                 uint32_t account)
{
    bool sender_outgoing = account & 1;
    struct ucx_peer *a = p->outgoing != sender_outgoing || !p->twin ? p : p->twin;
    if (__builtin_expect(account != a->account, 0)) {
        ucx_credit_flush(cls, a);
        a->account = account;
        a->owed = 0;
    }
    if (__builtin_expect(a->owed >= UCX_CREDITS || a->kept >= 2 * UCX_CREDITS, 0)) {
        atomic_fetch_add(&ucx_credit_dropped_total, 1);
        HGX_LOG_ERROR(UCX,
                      "unexpected message from %s dropped: it exceeds the peer's credits "
                      "(%u messages owed, %u kept)",
                      a->str, a->owed, a->kept);
        return NULL;
    }
    a->owed++;
    return a;
}

/* A message of account taken by ucx_credit_take (which answered a) was
 * consumed. Lock held. */
void ucx_credit_consumed(struct ucx_class *cls, struct ucx_peer *a, uint32_t account)
{
    if (__builtin_expect(account != a->account, 0)) {
        ucx_credit_send(cls, a, account, 1); /* kept while its account was replaced */
        return;
    }
    if (++a->due >= UCX_CREDIT_BATCH)
        ucx_credit_flush(cls, a);
}

/* Log and count a credit return that is dropped. */
#define ucx_credit_bad(...)                                                              \
    do {                                                                                 \
        atomic_fetch_add(&ucx_credit_bad_total, 1);                                      \
        HGX_LOG_ERROR(UCX, __VA_ARGS__);                                                 \
    } while (0)

/* Active-message handler of credit returns (runs in ucp_worker_progress,
 * lock held). The sends they free are posted by the progress call
 * (ucx_pending_resume). */
ucs_status_t ucx_am_credit_cb(void *arg, const void *header, size_t header_length,
                              void *data, size_t length, const ucp_am_recv_param_t *param)
{
    struct ucx_class *cls = arg;
    bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
    (void)header;

    if (header_length != 0 || length != UCX_CREDIT_MSG || rndv) {
        ucx_credit_bad("dropped a malformed credit return (%zu-byte header, %zu bytes%s)",
                       header_length, length, rndv ? ", rendezvous" : "");
        return rndv ? UCS_ERR_MESSAGE_TRUNCATED : UCS_OK;
    }
    const unsigned char *in = data;
    uint32_t from = hgx_get_u32(in), account = hgx_get_u32(in + 4),
             count = hgx_get_u32(in + 8);
    bool outgoing = account & 1;
    struct ucx_peer *p = from == cls->id ? cls->self : ucx_peer_find_sender(cls, from);
    if (p && p->outgoing != outgoing)
        p = p->twin;
    if (!p) {
        ucx_credit_bad("credit return from unknown peer id %08x dropped", from);
        return UCS_OK;
    }
    if (account != ucx_credit_account(p)) {
        HGX_LOG_DEBUG(UCX, "credit return from %s for a replaced connection ignored",
                      p->str);
        return UCS_OK;
    }
    if (count == 0 || count > UCX_CREDITS - p->credits) {
        ucx_credit_bad("credit return of %u from %s dropped: %u credits were spent",
                       count, p->str, UCX_CREDITS - p->credits);
        return UCS_OK;
    }
    p->credits += count;
    return UCS_OK;
}
