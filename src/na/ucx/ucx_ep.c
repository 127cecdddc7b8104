/*
 * ucx_ep.c -- peers and their endpoints: the connection state machine,
 * lazy connection at the first operation, accepted clients, failures.
 */
#include "ucx_int.h"
#include "hgx_assert.h"
#include "hgx_clock.h"
#include "hgx_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

na_return_t ucx_status_to_na(ucs_status_t status)
{
    switch (status) {
    case UCS_OK:
        return NA_SUCCESS;
    case UCS_ERR_CANCELED:
        return NA_CANCELED;
    case UCS_ERR_MESSAGE_TRUNCATED:
        return NA_MSGSIZE;
    case UCS_ERR_NO_MEMORY:
        return NA_NOMEM;
    case UCS_ERR_INVALID_PARAM:
        return NA_INVALID_ARG;
    case UCS_ERR_TIMED_OUT:
    case UCS_ERR_ENDPOINT_TIMEOUT:
        return NA_TIMEOUT;
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_REJECTED:
        return NA_HOSTUNREACH;
    default:
        return NA_PROTOCOL_ERROR;
    }
}

/* FNV-1a: a listener's id must be computable from its address string alone. */
uint32_t ucx_hash_id(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h & UCX_ID_MASK;
}

uint32_t ucx_random_id(void)
{
    uint32_t id = 0;
    if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
        id = (uint32_t)getpid() ^ (uint32_t)time(NULL) * 2654435761u;
    return id & UCX_ID_MASK;
}

/* The peer map holds the first peer of each id. One id can name two peers,
 * twins of each other: the one we connected to (lookup) and the one that
 * connected to us (accepted), when two listening processes each look the
 * other up. The key is the id, little-endian. */
static struct ucx_peer *ucx_peer_first(struct ucx_class *cls, uint32_t id)
{
    unsigned char key[4];
    hgx_put_u32(key, id);
    return na_peer_map_find(&cls->peer_map, key, sizeof(key));
}

/* The peer of id we connected to (outgoing) or that connected to us. */
static struct ucx_peer *ucx_peer_get(struct ucx_class *cls, uint32_t id, bool outgoing)
{
    struct ucx_peer *p = ucx_peer_first(cls, id);
    if (p && p->outgoing != outgoing)
        p = p->twin;
    return p;
}

/* The peer of id an operation uses: the one we connected to, else the
 * accepted one. */
static struct ucx_peer *ucx_peer_pick(struct ucx_class *cls, uint32_t id)
{
    struct ucx_peer *p = ucx_peer_first(cls, id);
    if (p && !p->outgoing && p->twin)
        p = p->twin;
    return p;
}

/* The live peer of id (a peer we connected to is never FAILED). */
struct ucx_peer *ucx_peer_find(struct ucx_class *cls, uint32_t id)
{
    struct ucx_peer *p = ucx_peer_pick(cls, id);
    return p && p->state != UCX_CONN_FAILED ? p : NULL;
}

/* The sender of a received message: its live peer, else the failed one. UCX
 * may report the peer's disconnection before the last messages it sent.
 * That depends only on which peers exist, so the last answer is kept until
 * a peer is added: a run of messages from one peer costs no lookup. */
struct ucx_peer *ucx_peer_find_sender(struct ucx_class *cls, uint32_t id)
{
    struct ucx_peer *p = cls->last_sender;
    if (__builtin_expect(p && p->id == id, 1))
        return p;
    if ((p = ucx_peer_pick(cls, id)))
        cls->last_sender = p;
    return p;
}

/* The peer (not ourselves) whose current ep is ep, or NULL. */
struct ucx_peer *ucx_peer_of_ep(struct ucx_class *cls, ucp_ep_h ep)
{
    struct hgx_list *it;
    hgx_list_for_each(it, &cls->peers)
    {
        struct ucx_peer *p = ucx_peer_at(it);
        if (p->ep == ep && !p->self)
            return p;
    }
    return NULL;
}

/* A new peer, listed and mapped; NULL when memory runs out. */
struct ucx_peer *ucx_peer_new(struct ucx_class *cls, uint32_t id, const char *str,
                              bool outgoing)
{
    struct ucx_peer *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->cls = cls;
    p->id = id;
    p->outgoing = outgoing;
    p->state = UCX_CONN_IDLE;
    p->credits = UCX_CREDITS;
    p->account = UCX_ACCOUNT_NONE;
    hgx_list_init(&p->pend);
    na_addr_init_owned(cls->na_class, &p->addr);
    snprintf(p->str, sizeof(p->str), "%s", str);
    /* Callers looked (id, outgoing) up first: a peer found here is the
     * other kind. */
    struct ucx_peer *first = ucx_peer_first(cls, id);
    if (first) {
        HGX_ASSERT(first->outgoing != outgoing && !first->twin);
        first->twin = p;
        p->twin = first;
    } else {
        unsigned char key[4];
        hgx_put_u32(key, id);
        if (na_peer_map_insert(&cls->peer_map, key, sizeof(key), p) != NA_SUCCESS) {
            HGX_LOG_ERROR(UCX, "out of memory for peer %s", p->str);
            free(p);
            return NULL;
        }
    }
    cls->last_sender = NULL; /* the sender of an id may change */
    hgx_list_push_back(&cls->peers, &p->link);
    return p;
}

static const char *const ucx_conn_name[UCX_CONN_STATES] = {"IDLE", "CONNECTING", "UP",
                                                           "FAILED"};

/* Legal moves [from][to]. UP to UP is an accepted peer whose client
 * connected again before its old ep reported a failure. */
static const bool ucx_conn_legal[UCX_CONN_STATES][UCX_CONN_STATES] = {
    [UCX_CONN_IDLE] = {[UCX_CONN_CONNECTING] = true,
                       [UCX_CONN_UP] = true, /* accepted, or our own peer */
                       [UCX_CONN_FAILED] = true /* accepting failed */},
    [UCX_CONN_CONNECTING] = {[UCX_CONN_IDLE] = true, [UCX_CONN_UP] = true},
    [UCX_CONN_UP] =
        {[UCX_CONN_IDLE] = true, [UCX_CONN_UP] = true, [UCX_CONN_FAILED] = true},
    [UCX_CONN_FAILED] = {[UCX_CONN_UP] = true},
};

/* Whether a peer may move from one state to another (tests check the table
 * against docs/na-ucx.md). */
bool na_ucx_conn_legal(int from, int to)
{
    return from >= 0 && from < UCX_CONN_STATES && to >= 0 && to < UCX_CONN_STATES &&
           ucx_conn_legal[from][to];
}

/* The one place a peer's state changes. Lock held. */
void ucx_peer_move(struct ucx_peer *p, enum ucx_conn to)
{
    enum ucx_conn from = p->state;
    HGX_ASSERT(na_ucx_conn_legal((int)from, (int)to));
    HGX_LOG_DEBUG(UCX, "%s: %s -> %s", p->str, ucx_conn_name[from], ucx_conn_name[to]);
    if (from == UCX_CONN_CONNECTING)
        p->cls->connecting--;
    if (to == UCX_CONN_CONNECTING)
        p->cls->connecting++;
    p->state = to;
}

/* p's ep is being dropped or replaced. Its sends in flight end with it and
 * hold no slot of the window of the next ep, which starts with every credit
 * under a new account (the gen is part of it): returns for the old one are
 * ignored (ucx_credit.c). */
static void ucx_peer_new_gen(struct ucx_peer *p)
{
    p->gen++;
    p->inflight = 0;
    p->credits = UCX_CREDITS;
}

/* Fail what waits for p: queued sends and put/get requests, and put/get ops
 * awaiting a reply. A queued put/get ends its send piece here and its reply
 * piece in ucx_rma_fail_peer. */
void ucx_pending_fail(struct ucx_peer *p, na_return_t ret)
{
    struct ucx_op *uop;
    while ((uop = ucx_queue_pop(&p->pend))) {
        ucx_queued_add(p->cls, -1);
        if (uop->kind == UCX_OP_RMA)
            ucx_rma_piece_done(uop, ret);
        else
            na_op_complete(na_op_from_plugin(uop), ret);
    }
    ucx_rma_fail_peer(p->cls, p, ret);
}

static void ucx_close_cb(void *request, ucs_status_t status, void *user_data)
{
    struct ucx_class *cls = user_data;
    (void)status;
    cls->closing--;
    ucp_request_free(request);
}

/* Force-close an ep without waiting: UCX completes its outstanding requests
 * with an error (their callbacks may run in here). Lock held. */
static void ucx_ep_close_force(struct ucx_class *cls, ucp_ep_h ep)
{
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS |
                                                 UCP_OP_ATTR_FIELD_CALLBACK |
                                                 UCP_OP_ATTR_FIELD_USER_DATA,
                                 .flags = UCP_EP_CLOSE_FLAG_FORCE,
                                 .cb.send = ucx_close_cb,
                                 .user_data = cls};
    cls->closing++; /* before the call: the callback may run inside it */
    ucs_status_ptr_t sp = ucp_ep_close_nbx(ep, &param);
    if (sp == NULL || UCS_PTR_IS_ERR(sp))
        cls->closing--; /* done at once, no callback */
}

/* p's connection is gone (failed, timed out, dropped or forgotten): an
 * outgoing peer goes back to IDLE and reconnects at its next operation, an
 * accepted one is FAILED until its client connects again. What waits for it
 * fails with NA_HOSTUNREACH. close: close the ep now; inside a UCX callback
 * it stays in p->ep, closed when replaced or at finalize. Lock held. */
void ucx_peer_down(struct ucx_class *cls, struct ucx_peer *p, bool close)
{
    if (p->state == UCX_CONN_UP || p->state == UCX_CONN_CONNECTING) {
        ucx_peer_move(p, p->outgoing ? UCX_CONN_IDLE : UCX_CONN_FAILED);
        p->connect_req = NULL; /* its flush, if pending, ends unheeded */
        ucx_peer_new_gen(p);   /* before the close: its completions see the new gen */
        ucx_pending_fail(p, NA_HOSTUNREACH);
    }
    if (close && p->ep) {
        ucp_ep_h ep = p->ep;
        p->ep = NULL;
        ucx_ep_close_force(cls, ep);
    }
}

/* The peer died: UCX fails the requests on its ep; we fail what we queued. */
static void ucx_ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    struct ucx_peer *p = arg;
    if (ep != p->ep || (p->state != UCX_CONN_UP && p->state != UCX_CONN_CONNECTING)) {
        /* An ep we dropped or replaced already: its requests are UCX's to end. */
        HGX_LOG_DEBUG(UCX, "old connection to %s failed: %s", p->str,
                      ucs_status_string(status));
        return;
    }
    /* A warning: a peer that finalizes ends its connections this way too, and
     * the operations on it report their own errors. */
    HGX_LOG_WARNING(UCX, "connection to %s lost: %s", p->str, ucs_status_string(status));
    ucx_peer_down(p->cls, p, false);
}

static void ucx_ep_params_err(ucp_ep_params_t *params, struct ucx_peer *p)
{
    params->field_mask |=
        UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params->err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params->err_handler.cb = ucx_ep_error_cb;
    params->err_handler.arg = p;
}

/* The wire-up flush of an ep ended. A flush of an ep that was dropped or
 * replaced since is ignored: only the current one moves the peer. */
static void ucx_connect_cb(void *request, ucs_status_t status, void *user_data)
{
    struct ucx_peer *p = user_data;
    bool current = request == p->connect_req;
    ucp_request_free(request);
    if (!current) {
        HGX_LOG_DEBUG(UCX, "wire-up of an old connection to %s ended: %s", p->str,
                      ucs_status_string(status));
        return;
    }
    p->connect_req = NULL;
    if (status == UCS_OK) {
        ucx_peer_move(p, UCX_CONN_UP); /* the progress call posts what queued */
        return;
    }
    HGX_LOG_ERROR(UCX, "cannot connect to %s: %s", p->str, ucs_status_string(status));
    ucx_peer_down(p->cls, p, false);
}

/* Open an ep to an outgoing peer's listener without waiting: the wire-up
 * goes on in the background, and operations posted meanwhile queue in
 * p->pend until its flush ends (ucx_connect_cb) or its deadline passes
 * (ucx_connect_check). Lock held. */
static na_return_t ucx_peer_connect(struct ucx_class *cls, struct ucx_peer *p)
{
    ucx_peer_down(cls, p, true); /* closes a failed ep left behind */
    ucp_ep_params_t params = {
        .field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR,
        .flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER | UCP_EP_PARAMS_FLAGS_SEND_CLIENT_ID,
        .sockaddr = {.addr = (const struct sockaddr *)&p->sa, .addrlen = p->sa_len}};
    ucx_ep_params_err(&params, p);
    ucs_status_t st = ucp_ep_create(cls->worker, &params, &p->ep);
    if (st != UCS_OK) {
        p->ep = NULL;
        HGX_LOG_ERROR(UCX, "cannot connect to %s: %s", p->str, ucs_status_string(st));
        return NA_HOSTUNREACH;
    }
    HGX_LOG_DEBUG(UCX, "connecting to %s", p->str);
    ucx_peer_move(p, UCX_CONN_CONNECTING);
    p->connect_deadline_ns = hgx_clock_after_ms(hgx_clock_now_ns(), UCX_CONNECT_MS);
    ucp_request_param_t fp = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                              UCP_OP_ATTR_FIELD_USER_DATA,
                              .cb.send = ucx_connect_cb,
                              .user_data = p};
    ucs_status_ptr_t sp = ucp_ep_flush_nbx(p->ep, &fp);
    if (UCS_PTR_IS_ERR(sp)) {
        HGX_LOG_ERROR(UCX, "cannot connect to %s: %s", p->str,
                      ucs_status_string(UCS_PTR_STATUS(sp)));
        ucx_peer_down(cls, p, true);
        return NA_HOSTUNREACH;
    }
    if (sp)
        p->connect_req = sp;
    else
        ucx_peer_move(p, UCX_CONN_UP);
    return NA_SUCCESS;
}

/* Connections whose wire-up outlived UCX_CONNECT_MS (a peer that never
 * answers, e.g. a host that drops the handshake) fail. Lock held. */
void ucx_connect_check(struct ucx_class *cls)
{
    uint64_t now = hgx_clock_now_ns();
    struct hgx_list *it;
    hgx_list_for_each(it, &cls->peers)
    {
        struct ucx_peer *p = ucx_peer_at(it);
        if (!cls->connecting)
            break;
        if (p->state != UCX_CONN_CONNECTING ||
            !hgx_clock_passed(now, p->connect_deadline_ns))
            continue;
        HGX_LOG_ERROR(UCX, "cannot connect to %s: no answer within %d ms", p->str,
                      UCX_CONNECT_MS);
        ucx_peer_down(cls, p, true);
    }
}

/* The earliest deadline of the wire-ups in progress (UINT64_MAX for none):
 * when the wait fd's timer must fire for ucx_connect_check. Lock held. */
uint64_t ucx_connect_next_ns(struct ucx_class *cls)
{
    uint64_t next = UINT64_MAX;
    struct hgx_list *it;
    hgx_list_for_each(it, &cls->peers)
    {
        const struct ucx_peer *p = ucx_peer_at(it);
        if (p->state == UCX_CONN_CONNECTING && p->connect_deadline_ns < next)
            next = p->connect_deadline_ns;
    }
    return next;
}

/* The slow half of ucx_peer_ready: a failed accepted peer, or an outgoing
 * one to connect. */
na_return_t ucx_peer_wake(struct ucx_class *cls, struct ucx_peer *p, const char *what)
{
    switch (p->state) {
    case UCX_CONN_FAILED:
        HGX_LOG_ERROR(UCX, "%s to %s: connection failed", what, p->str);
        return NA_HOSTUNREACH;
    case UCX_CONN_IDLE:
        return ucx_peer_connect(cls, p);
    default:
        return NA_SUCCESS;
    }
}

/* "ucx+PROTO://IP:PORT" or "ucx+PROTO://[IPV6]:PORT": a listener's id is
 * the hash of the part after "://". */
void ucx_sockaddr_string(const struct sockaddr *sa, const char *proto, char *out,
                         size_t size)
{
    char hp[NA_IPADDR_STR_MAX];
    na_ipaddr_string(sa, hp, sizeof(hp));
    snprintf(out, size, "ucx+%s://%s", proto, hp);
}

/* A client connected to our listener: accept it under the id it sent. */
void ucx_conn_cb(ucp_conn_request_h req, void *arg)
{
    struct ucx_class *cls = arg;
    ucp_conn_request_attr_t attr = {.field_mask =
                                        UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR |
                                        UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ID};
    char str[UCX_ADDR_STR_MAX];

    if (ucp_conn_request_query(req, &attr) != UCS_OK) {
        HGX_LOG_ERROR(UCX, "cannot query a connection request: rejected");
        ucp_listener_reject(cls->listener, req);
        return;
    }
    ucx_sockaddr_string((const struct sockaddr *)&attr.client_address, cls->proto, str,
                        sizeof(str));
    uint32_t id = (uint32_t)attr.client_id & UCX_ID_MASK;
    /* A client connects again (its ep was dropped, e.g. by a cancel
     * escalation): the new connection takes over the peer it had, so the
     * addresses held for it work again. A client has one ep to us, so the old
     * accepted ep is dead or about to be. */
    struct ucx_peer *p = ucx_peer_get(cls, id, false);
    if (p && p->self) {
        HGX_LOG_ERROR(UCX, "client %s has our own id %08x: rejected", str, id);
        ucp_listener_reject(cls->listener, req);
        return;
    }
    bool reused = p != NULL;
    if (!p && !(p = ucx_peer_new(cls, id, str, false))) {
        ucp_listener_reject(cls->listener, req);
        return;
    }
    ucp_ep_params_t params = {.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST,
                              .conn_request = req};
    ucx_ep_params_err(&params, p);
    ucp_ep_h ep = NULL;
    ucs_status_t st = ucp_ep_create(cls->worker, &params, &ep);
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "cannot accept %s: %s", str, ucs_status_string(st));
        if (!reused)
            ucx_peer_move(p, UCX_CONN_FAILED);
        return;
    }
    ucp_ep_h old = p->ep;
    p->ep = ep;
    if (reused) {
        ucx_peer_new_gen(p);
        snprintf(p->str, sizeof(p->str), "%s", str);
        ucx_pending_fail(p, NA_HOSTUNREACH); /* queued for the old connection */
        if (old)
            ucx_ep_close_force(cls, old);
    }
    ucx_peer_move(p, UCX_CONN_UP);
    HGX_LOG_DEBUG(UCX, "%s %s (id %08x)", reused ? "reaccepted" : "accepted", str, p->id);
}

static bool ucx_request_running(void *request)
{
    return ucp_request_check_status(request) == UCS_INPROGRESS;
}

void ucx_close_ep(struct ucx_class *cls, ucp_ep_h ep)
{
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = UCP_EP_CLOSE_FLAG_FORCE};
    ucs_status_ptr_t sp = ucp_ep_close_nbx(ep, &param);
    if (sp == NULL || UCS_PTR_IS_ERR(sp))
        return;
    /* A forced close never waits for the peer; a few progress calls finish it. */
    ucx_progress_while(cls, ucx_request_running, sp);
    ucp_request_free(sp);
}
