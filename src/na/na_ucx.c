/*
 * na_ucx.c -- NA plugin over UCX (UCP): unexpected messages as active
 * messages, expected messages tagged, put/get as hgx's own active-message
 * protocol checked by the region's owner (see "put / get"),
 * connections through a sockaddr listener.
 *
 * Peers are identified by a 31-bit id carried in every message: a listener's
 * id is a hash of its "IP:PORT" address (so a client knows it from the lookup
 * string), a non-listener draws a random id. Clients send their id in the
 * connection request (UCP client id), so a listener maps every accepted
 * endpoint to an id. An expected message's 64-bit tag is
 *   bits 32..62: sender id | bits 0..31: NA tag,
 * matched by UCX against the posted receive. An unexpected message is an
 * eager active message whose data leads with an 8-byte header, the sender id
 * and the NA tag (little-endian): the plugin matches it itself, to the newest
 * posted receive, or keeps it (in arrival order) until a receive is posted.
 * The header leads the data rather than riding as the active message's own
 * header: UCP sends an active message with a header through the transport's
 * gather path, which cost about 350 cycles more per send over shm than one
 * contiguous buffer (UCP 1.13). So a short message is copied behind the
 * header into the op and sent as one buffer (the transport's inline path);
 * a longer one is sent as a two-entry iov, header then data, without a
 * copy. Newest first: a receive
 * posted again after its message was handled takes the next one, so one
 * buffer and op stay in cache instead of a pool's worth rotating through
 * it (messages still complete in arrival order). That is cheaper than a
 * tag receive, which UCX must allocate a request for and search its
 * unexpected queue with on every post (callgrind, 0 B RPC over shm: about
 * 240 fewer instructions a round trip, the AM send costing ~190 more than a
 * tag send and the receive side ~420 less), and a cancel of such a receive
 * is local and immediate.
 * Peers live in a per-class table until finalize; NA addresses are small
 * handles pointing at a peer, so two receives from one peer compare equal.
 *
 * Cancel escalation: UCX cannot recall a send or put/get already on the wire.
 * A cancelled one still pending after HGX_UCX_CANCEL_ESCALATE_MS (default
 * 10000) has its peer's endpoint force-closed, which makes UCX complete every
 * request on that endpoint with an error. Cancelled ops report NA_CANCELED;
 * ops on that endpoint that were not cancelled report NA_HOSTUNREACH (the
 * peer stopped answering, their data may or may not have moved) and queued
 * sends of the peer fail the same way. An op that completed successfully
 * after the cancel request reports NA_SUCCESS (the data moved). The peer
 * stays usable: a peer we connected to (lookup) gets a new endpoint at its
 * next operation; an accepted peer is marked failed until its client
 * connects again, and that new connection takes over the same peer (so the
 * addresses the upper layer holds work again). Every endpoint replacement
 * bumps the peer's generation; put/get ops still waiting for a reply on the
 * old endpoint fail with it. The bound is long on purpose: escalation is
 * kept for peers that are really gone, not for transfers that are merely
 * slow.
 *
 * Send window (seed 003): UCP never reports "no resources" to its user; it
 * queues internally, and every send it cannot finish at once holds a UCP
 * request (and, for rendezvous, the user's buffer) until it completes. So the
 * plugin bounds the sends holding a request, per peer endpoint, to
 * HGX_UCX_SEND_WINDOW (default 256, at most 1048576, read at class init). A
 * send over the window, or behind a queued one, waits in the peer's queue
 * without touching UCX and is posted, in order, by the progress call that
 * follows a completion. Sends leave the queue only posted, cancelled
 * (NA_CANCELED) or failed with their peer. A non-empty queue implies a full
 * window, so some send is in flight and its completion wakes the worker: the
 * queue never stalls and never spins. The default costs no throughput:
 * messages are at most 8 KiB, a send holds a request only once the
 * transport's own buffers (socket, shared-memory FIFO) are full, and 256 of
 * them (2 MiB) keep the link busy until the next progress refills the window.
 */
#include "na_netif.h"
#include "na_plugin.h"
#include "hgx_lock.h"
#include "na_slots.h"
#include "hgx_wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#define UCX_MSG_SIZE_MAX 8192
#define UCX_RNDV_THRESH                                                                  \
    "16384" /* above UCX_MSG_SIZE_MAX + UCP headers */ /* a 4 KiB RPC payload and its    \
                                                          headers fit one message */
#define UCX_TAG_ID_SHIFT 32
#define UCX_AM_UNEXP 1     /* active message id of unexpected messages */
#define UCX_AM_RMA_REQ 2   /* put/get requests, to the region's owner */
#define UCX_AM_RMA_REP 3   /* their replies, to the origin */
#define UCX_HELD_WARN 4096 /* kept unexpected messages: warn once past this many */
#define UCX_ID_MASK 0x7fffffffu
#define UCX_MAX_SEGMENTS 64
#define UCX_MH_VERSION 2u
#define UCX_ADDR_MAGIC 0x55435841u /* "UCXA" */
#define UCX_ADDR_STR_MAX 64
#define UCX_PROGRESS_MAX 1024 /* bound on one poll() pass */
#define UCX_CONNECT_MS 5000   /* lookup waits this long for the wire-up */
#define UCX_LISTEN_TRIES 8    /* free ports picked for port 0 before giving up */
#define UCX_CLOSE_MS 2000     /* finalize waits this long for each endpoint close */
/* A cancelled send/RMA still pending after this long: drop the ep. */
#define UCX_CANCEL_ESCALATE_MS 10000
#define UCX_CANCEL_POLL_MS 100 /* poll_wait wakes up this often to escalate */
#define UCX_SEND_WINDOW 256    /* sends holding a UCX request, per peer */
#define UCX_SEND_WINDOW_MAX 1048576

struct ucx_op;
struct ucx_tx;
static void ucx_tx_end(struct ucx_tx *tx);

/* Ops waiting in order: a peer's sends waiting for resources (first in,
 * first out), or the posted unexpected receives (newest first). An op waits
 * in one queue at a time: ucx_op.qnext. */
struct ucx_queue {
    struct ucx_op *head, *tail;
};

/* Header leading an unexpected message's data: sender id (4 bytes), NA tag
 * (4 bytes), little-endian. Untrusted: the message must hold it and the
 * sender must be a known peer. */
#define UCX_UNEXP_HDR 8
/* Unexpected messages of up to this many bytes, header included, are sent
 * from a copy in the op (one contiguous buffer: the inline path). */
#define UCX_STAGE_MAX 128

/* An unexpected message that arrived while no receive was posted. */
struct ucx_held {
    struct ucx_held *next;
    struct ucx_peer *peer;
    uint32_t tag;
    size_t len;
    char data[];
};

struct ucx_peer {
    struct ucx_peer *next;
    struct ucx_class *cls;
    ucp_ep_h ep;
    uint32_t id;
    bool self;
    bool failed;
    bool connecting;   /* wire-up flush not finished */
    bool outgoing;     /* we connected (lookup): can reconnect to sin */
    uint32_t gen;      /* bumped whenever ep is dropped or replaced */
    unsigned inflight; /* sends on this gen's ep holding a UCX request */
    struct sockaddr_in sin;
    char str[UCX_ADDR_STR_MAX]; /* "ucx+proto://IP:PORT" */
    struct ucx_queue pend;      /* sends waiting for resources, in order */
    struct na_addr addr; /* the peer's address: every lookup / source is a reference */
};

struct ucx_class {
    /* The worker runs serialized: every UCP call holds this lock. Held a few
     * hundred instructions per operation, so an inline lock, not a mutex;
     * a connection set-up drops it between progress passes. */
    hgx_lock_t lock;
    na_class_t *na_class;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_listener_h listener;
    int efd;
    uint32_t id;
    char proto[8];
    struct ucx_peer *peers;
    struct ucx_peer *self;
    struct ucx_op *cancel_head; /* cancelled sends/RMA still in flight */
    /* Unexpected messages are active messages, matched here: posted receives
     * and messages that found none, both in arrival order. */
    struct ucx_queue unexp;
    struct ucx_held *held_head, *held_tail;
    unsigned held;
    unsigned escalate_ms;
    long closing;            /* forced ep closes not finished yet */
    long queued;             /* sends in the peers' resource queues */
    unsigned send_window;    /* bound on a peer's inflight sends */
    struct na_slots regions; /* registered handles, named by peers' requests */
    struct na_slots rma_ops; /* put/get ops waiting for their reply, by cookie */
    struct ucx_tx *tx_head;  /* peers' transfers of our regions in flight */
};

/* A segment of a handle. Remote handles know only the lengths (base 0): the
 * owner maps offsets to addresses itself. */
struct ucx_segment {
    uint64_t base;
    uint64_t len;
};

/* A handle names its region by (index, gen, key) in its owner's region table
 * (cls->regions): that name is all a peer learns of it. Local handles get it
 * at registration; remote ones read it from the descriptor. */
struct ucx_mem_handle {
    struct na_mem_handle head;
    uint32_t index, gen;
    uint64_t key;  /* random, drawn at each registration */
    unsigned busy; /* local: peers' transfers reading or writing it (ucx_tx) */
    size_t count;
    struct ucx_segment seg[];
};

enum ucx_op_kind { UCX_OP_SEND, UCX_OP_RECV_UNEXP, UCX_OP_RECV_EXP, UCX_OP_RMA };

/* Plugin area of every op id (ucx_op_start sets every field but stage and
 * iov, which ucx_unexp_stage writes for the sends that use them: keep it in
 * step). */
struct ucx_op {
    enum ucx_op_kind kind;
    struct ucx_class *cls;
    void *req;             /* outstanding receive request, for cancel */
    bool posting;          /* inside ucp_tag_recv_nbx: its request is not ours yet */
    bool done_inline;      /* the receive completed during its own posting */
    struct ucx_peer *peer; /* send: destination */
    const void *buf;       /* send queued for resources */
    size_t len;
    ucp_tag_t tag; /* expected send */
    bool am;       /* unexpected send: an active message led by stage's header */
    /* Unexpected send: the header, then (short messages) a copy of the data;
     * UCX may read it, and iov, until the send completes. */
    unsigned char stage[UCX_STAGE_MAX];
    ucp_dt_iov_t iov[2];
    void *rbuf; /* unexpected receive: the posted buffer */
    size_t rsize;
    struct ucx_op *qnext; /* in a struct ucx_queue */
    size_t pieces;        /* RMA: its send and its reply, until each ended */
    na_return_t rma_ret;  /* RMA: first error */
    bool put;             /* RMA: a put (else a get) */
    bool landing;         /* get: the reply's data is being received */
    uint64_t cookie;      /* RMA: name in cls->rma_ops while the reply is awaited */
    ucp_dt_iov_t *riov;   /* RMA: the local segments moved (iov, or malloc'd) */
    size_t riov_n;
    uint32_t gen;       /* send/RMA: peer generation at posting */
    bool inflight;      /* send: a UCX request is outstanding */
    bool cancel_listed; /* in cls->cancel_head, waiting for escalation */
    uint64_t cancel_deadline_ms;
    struct ucx_op *cancel_prev, *cancel_next;
};

/* Start an op from a clean state. Field by field, not a compound literal:
 * GCC clears a struct this size with "rep stos", whose start-up costs more
 * than the stores (about 8 ns more on this machine's EPYC; four ops per
 * round trip). */
static inline void ucx_op_start(struct ucx_op *uop, enum ucx_op_kind kind,
                                struct ucx_class *cls)
{
    uop->kind = kind;
    uop->cls = cls;
    uop->req = NULL;
    uop->posting = false;
    uop->done_inline = false;
    uop->peer = NULL;
    uop->buf = NULL;
    uop->len = 0;
    uop->tag = 0;
    uop->am = false;
    uop->rbuf = NULL;
    uop->rsize = 0;
    uop->qnext = NULL;
    uop->pieces = 0;
    uop->rma_ret = NA_SUCCESS;
    uop->put = false;
    uop->landing = false;
    uop->cookie = 0;
    uop->riov = NULL;
    uop->riov_n = 0;
    uop->gen = 0;
    uop->inflight = false;
    uop->cancel_listed = false;
    uop->cancel_deadline_ms = 0;
    uop->cancel_prev = uop->cancel_next = NULL;
}

static void ucx_queue_push(struct ucx_queue *q, struct ucx_op *uop)
{
    uop->qnext = NULL;
    if (q->tail)
        q->tail->qnext = uop;
    else
        q->head = uop;
    q->tail = uop;
}

/* Put uop first: the next pop takes it (a stack). */
static void ucx_queue_push_front(struct ucx_queue *q, struct ucx_op *uop)
{
    uop->qnext = q->head;
    q->head = uop;
    if (!q->tail)
        q->tail = uop;
}

static struct ucx_op *ucx_queue_pop(struct ucx_queue *q)
{
    struct ucx_op *uop = q->head;
    if (uop && !(q->head = uop->qnext))
        q->tail = NULL;
    return uop;
}

/* Take uop out of q; false if it was not there. */
static bool ucx_queue_remove(struct ucx_queue *q, struct ucx_op *uop)
{
    struct ucx_op *prev = NULL;
    for (struct ucx_op *o = q->head; o; prev = o, o = o->qnext) {
        if (o != uop)
            continue;
        if (prev)
            prev->qnext = o->qnext;
        else
            q->head = o->qnext;
        if (q->tail == o)
            q->tail = prev;
        return true;
    }
    return false;
}

/* Sends queued for resources across all classes (tests check it drains). */
static atomic_long ucx_pending_total;

long na_ucx_pending_count(void);
long na_ucx_pending_count(void)
{
    return atomic_load(&ucx_pending_total);
}

/* Unexpected messages kept with no receive posted, across all classes, and
 * the most ever kept at once (tests check the path ran and drains). */
static atomic_long ucx_held_total, ucx_held_peak;

long na_ucx_held_count(long *peak);
long na_ucx_held_count(long *peak)
{
    if (peak)
        *peak = atomic_load(&ucx_held_peak);
    return atomic_load(&ucx_held_total);
}

static void ucx_held_add(struct ucx_class *cls, long n)
{
    cls->held += (unsigned)n;
    long now = atomic_fetch_add(&ucx_held_total, n) + n;
    if (now > atomic_load(&ucx_held_peak))
        atomic_store(&ucx_held_peak, now);
}

/* Count sends entering (n > 0) or leaving a peer's resource queue. */
static void ucx_queued_add(struct ucx_class *cls, long n)
{
    cls->queued += n;
    atomic_fetch_add(&ucx_pending_total, n);
}

static struct ucx_class *ucx_cls(const na_class_t *na_class)
{
    return na_class->plugin_class;
}

static struct ucx_op *ucx_op(na_op_id_t *op)
{
    return na_op_plugin(op);
}

static struct ucx_peer *ucx_peer_of(na_addr_t *addr)
{
    return (struct ucx_peer *)((char *)addr - offsetof(struct ucx_peer, addr));
}

static na_return_t ucx_status_to_na(ucs_status_t status)
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
static uint32_t ucx_hash_id(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h & UCX_ID_MASK;
}

static uint32_t ucx_random_id(void)
{
    uint32_t id = 0;
    if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
        id = (uint32_t)getpid() ^ (uint32_t)time(NULL) * 2654435761u;
    return id & UCX_ID_MASK;
}

/*---------------------------------------------------------------- peers */

static struct ucx_peer *ucx_peer_find(struct ucx_class *cls, uint32_t id)
{
    for (struct ucx_peer *p = cls->peers; p; p = p->next)
        if (p->id == id && !p->failed)
            return p;
    return NULL;
}

/* The sender of a received message: its live peer, else the failed one. UCX
 * may report the peer's disconnection before the last messages it sent. */
static struct ucx_peer *ucx_peer_find_sender(struct ucx_class *cls, uint32_t id)
{
    struct ucx_peer *p = ucx_peer_find(cls, id);
    for (struct ucx_peer *q = cls->peers; q && !p; q = q->next)
        if (q->id == id)
            p = q;
    return p;
}

static struct ucx_peer *ucx_peer_new(struct ucx_class *cls, uint32_t id, const char *str)
{
    struct ucx_peer *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->cls = cls;
    p->id = id;
    na_addr_init_owned(cls->na_class, &p->addr);
    snprintf(p->str, sizeof(p->str), "%s", str);
    /* Appended: an id seen twice resolves to the first (our own outgoing) ep. */
    struct ucx_peer **tail = &cls->peers;
    while (*tail)
        tail = &(*tail)->next;
    *tail = p;
    return p;
}

/* p's ep is being dropped or replaced. Its sends in flight end with it and
 * hold no slot of the window of the next ep. */
static void ucx_peer_new_gen(struct ucx_peer *p)
{
    p->gen++;
    p->inflight = 0;
}

static void ucx_rma_fail_peer(struct ucx_class *cls, struct ucx_peer *p, na_return_t ret);

/* Fail what waits for p: queued sends, and put/get ops awaiting a reply. */
static void ucx_pending_fail(struct ucx_peer *p, na_return_t ret)
{
    struct ucx_op *uop;
    while ((uop = ucx_queue_pop(&p->pend))) {
        ucx_queued_add(p->cls, -1);
        na_op_complete(na_op_from_plugin(uop), ret);
    }
    ucx_rma_fail_peer(p->cls, p, ret);
}

/* The peer died: UCX fails the requests on its ep; we fail what we queued. */
static void ucx_ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    struct ucx_peer *p = arg;
    if (ep != p->ep) {
        /* An ep we dropped or replaced already: its requests are UCX's to end. */
        HGX_LOG_DEBUG(UCX, "old connection to %s failed: %s", p->str,
                      ucs_status_string(status));
        return;
    }
    HGX_LOG_ERROR(UCX, "connection to %s failed: %s", p->str, ucs_status_string(status));
    p->failed = true;
    ucx_pending_fail(p, NA_HOSTUNREACH);
}

static void ucx_ep_params_err(ucp_ep_params_t *params, struct ucx_peer *p)
{
    params->field_mask |=
        UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params->err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params->err_handler.cb = ucx_ep_error_cb;
    params->err_handler.arg = p;
}

static uint64_t ucx_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Take an op off the escalation list (no-op if not listed). Lock held. */
static void ucx_cancel_unlist(struct ucx_op *uop)
{
    if (!uop->cancel_listed)
        return;
    if (uop->cancel_prev)
        uop->cancel_prev->cancel_next = uop->cancel_next;
    else
        uop->cls->cancel_head = uop->cancel_next;
    if (uop->cancel_next)
        uop->cancel_next->cancel_prev = uop->cancel_prev;
    uop->cancel_prev = uop->cancel_next = NULL;
    uop->cancel_listed = false;
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

/* Drop p's ep (cancel escalation). The peer object stays: an outgoing peer
 * reconnects at its next operation; an accepted one waits for its client to
 * connect again. Lock held. */
static void ucx_ep_drop(struct ucx_class *cls, struct ucx_peer *p)
{
    ucp_ep_h ep = p->ep;
    p->ep = NULL;
    ucx_peer_new_gen(p); /* before the close: completions it triggers see the new gen */
    if (!p->outgoing)
        p->failed = true;
    ucx_pending_fail(p, NA_HOSTUNREACH);
    ucx_ep_close_force(cls, ep);
}

/* Open an ep to an outgoing peer's listener; the wire-up goes on in the
 * background (operations posted meanwhile are queued by UCX). Lock held. */
static ucs_status_t ucx_ep_open_client(struct ucx_class *cls, struct ucx_peer *p)
{
    ucp_ep_params_t params = {
        .field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR,
        .flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER | UCP_EP_PARAMS_FLAGS_SEND_CLIENT_ID,
        .sockaddr = {.addr = (const struct sockaddr *)&p->sin,
                     .addrlen = sizeof(p->sin)}};
    ucx_ep_params_err(&params, p);
    return ucp_ep_create(cls->worker, &params, &p->ep);
}

/* The slow half of ucx_peer_ready: a failed peer, or an ep to reconnect. */
static na_return_t ucx_peer_reconnect(struct ucx_class *cls, struct ucx_peer *p,
                                      const char *what)
{
    if (p->failed) {
        HGX_LOG_ERROR(UCX, "%s to %s: connection failed", what, p->str);
        return NA_HOSTUNREACH;
    }
    ucs_status_t st = p->outgoing ? ucx_ep_open_client(cls, p) : UCS_ERR_NOT_CONNECTED;
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "%s to %s: cannot reconnect: %s", what, p->str,
                      ucs_status_string(st));
        p->ep = NULL;
        return NA_HOSTUNREACH;
    }
    HGX_LOG_DEBUG(UCX, "reconnecting to %s", p->str);
    return NA_SUCCESS;
}

/* Make sure p can take an operation: reconnect an outgoing peer whose ep was
 * dropped by a cancel escalation. Inline: a connected peer, the common case,
 * costs one test per send. Lock held. */
static inline na_return_t ucx_peer_ready(struct ucx_class *cls, struct ucx_peer *p,
                                         const char *what)
{
    if (__builtin_expect(p->ep != NULL && !p->failed, 1))
        return NA_SUCCESS;
    return ucx_peer_reconnect(cls, p, what);
}

static void ucx_sockaddr_string(const struct sockaddr *sa, const char *proto, char *out,
                                size_t size)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        port = ntohs(in6->sin6_port);
    }
    snprintf(out, size, "ucx+%s://%s:%u", proto, ip, port);
}

/* A client connected to our listener: accept it under the id it sent. */
static void ucx_conn_cb(ucp_conn_request_h req, void *arg)
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
    struct ucx_peer *p = NULL;
    for (struct ucx_peer *q = cls->peers; q && !p; q = q->next)
        if (q->id == id && !q->self && !q->outgoing)
            p = q;
    bool reused = p != NULL;
    if (!p && !(p = ucx_peer_new(cls, id, str))) {
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
            p->failed = true;
        return;
    }
    ucp_ep_h old = p->ep;
    p->ep = ep;
    if (reused) {
        ucx_peer_new_gen(p);
        p->failed = false;
        snprintf(p->str, sizeof(p->str), "%s", str);
        ucx_pending_fail(p, NA_HOSTUNREACH); /* queued for the old connection */
        if (old)
            ucx_ep_close_force(cls, old);
    }
    HGX_LOG_DEBUG(UCX, "%s %s (id %08x)", reused ? "reaccepted" : "accepted", str, p->id);
}

/*---------------------------------------------------------------- progress */

static void ucx_send_cb(void *request, ucs_status_t status, void *user_data);
static void ucx_cancel_check(struct ucx_class *cls);

/* An unexpected send whose data is copied behind its header in stage (one
 * buffer); a longer one goes as an iov. */
static inline bool ucx_unexp_staged(const struct ucx_op *uop)
{
    return uop->len <= UCX_STAGE_MAX - UCX_UNEXP_HDR;
}
static na_return_t ucx_am_handler_set(struct ucx_class *cls);

/* Post one send; NO_RESOURCE (window full, UCX not called) is returned for
 * the caller to queue it. */
static inline ucs_status_t ucx_send_post(struct ucx_op *uop)
{
    struct ucx_peer *p = uop->peer;
    if (p->inflight >= p->cls->send_window)
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
static na_return_t ucx_failed_ret(struct ucx_op *uop, na_return_t ret)
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
    ucx_cancel_unlist(uop);
    if (ret != NA_SUCCESS)
        ret = ucx_failed_ret(uop, ret);
    ucp_request_free(request);
    na_op_complete(na_op_from_plugin(uop), ret);
}

/* Resume queued sends of every peer, in order, until its window is full. */
static void ucx_pending_resume(struct ucx_class *cls)
{
    for (struct ucx_peer *p = cls->peers; p; p = p->next) {
        while (p->pend.head && p->ep) {
            struct ucx_op *uop = p->pend.head;
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

/* Drive the worker until it has nothing left to do (bounded), or until the
 * context has a completion to hand up: every extra pass costs a system call
 * per TCP interface (UCX polls its sockets), and the caller polls again.
 * Send completions free window slots here: refill them from the queues. */
static unsigned ucx_progress(struct ucx_class *cls, na_context_t *context)
{
    unsigned total = 0, n;
    do {
        n = ucp_worker_progress(cls->worker);
        total += n;
    } while (n && total < UCX_PROGRESS_MAX &&
             !(context && atomic_load(&context->cq_count)));
    if (cls->queued)
        ucx_pending_resume(cls);
    return total;
}

static na_return_t ucx_poll(na_class_t *na_class, na_context_t *context,
                            unsigned int *count_p)
{
    struct ucx_class *cls = ucx_cls(na_class);
    hgx_lock(&cls->lock);
    unsigned n = ucx_progress(cls, context);
    if (cls->cancel_head)
        ucx_cancel_check(cls);
    hgx_unlock(&cls->lock);
    if (count_p)
        *count_p = n;
    return n ? NA_SUCCESS : NA_TIMEOUT;
}

static na_return_t ucx_poll_wait(na_class_t *na_class, na_context_t *context,
                                 unsigned int timeout_ms)
{
    struct ucx_class *cls = ucx_cls(na_class);
    (void)context;

    hgx_lock(&cls->lock);
    ucs_status_t st = ucp_worker_arm(cls->worker);
    /* Cancels waiting for escalation: wake up in time to escalate them. */
    if (cls->cancel_head && timeout_ms > UCX_CANCEL_POLL_MS)
        timeout_ms = UCX_CANCEL_POLL_MS;
    hgx_unlock(&cls->lock);
    if (st == UCS_OK) {
        /* Armed: the fd fires on the next event, so sleeping cannot miss one. */
        struct pollfd pfd = {.fd = cls->efd, .events = POLLIN};
        int rc = poll(&pfd, 1, timeout_ms > INT32_MAX ? -1 : (int)timeout_ms);
        if (rc < 0 && errno != EINTR) {
            HGX_LOG_ERROR(UCX, "poll on the worker fd failed: %s", strerror(errno));
            return NA_IO_ERROR;
        }
        if (rc == 0)
            return NA_TIMEOUT;
    } else if (st != UCS_ERR_BUSY) {
        HGX_LOG_ERROR(UCX, "ucp_worker_arm failed: %s", ucs_status_string(st));
        return NA_PROTOCOL_ERROR;
    }
    /* Busy (events already pending) or woken up: process them. */
    return ucx_poll(na_class, context, NULL) == NA_SUCCESS ? NA_SUCCESS : NA_TIMEOUT;
}

static int ucx_poll_get_fd(na_class_t *na_class, na_context_t *context)
{
    (void)context;
    return ucx_cls(na_class)->efd;
}

static bool ucx_poll_try_wait(na_class_t *na_class, na_context_t *context)
{
    struct ucx_class *cls = ucx_cls(na_class);
    (void)context;
    hgx_lock(&cls->lock);
    /* No sleeping on the fd while cancels wait for escalation (a timer, not an event). */
    ucs_status_t st = cls->cancel_head ? UCS_ERR_BUSY : ucp_worker_arm(cls->worker);
    hgx_unlock(&cls->lock);
    return st == UCS_OK;
}

static long ucx_ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)(t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/*---------------------------------------------------------------- class */

static bool ucx_check_protocol(const char *protocol_name)
{
    return strcmp(protocol_name, "tcp") == 0 || strcmp(protocol_name, "shm") == 0 ||
           strcmp(protocol_name, "all") == 0;
}

/* Transports per protocol; sockaddr wire-up uses the tcp connection manager,
 * which UCX_TLS does not filter. */
static const char *ucx_tls(const char *proto)
{
    if (strcmp(proto, "tcp") == 0)
        return "tcp,self";
    if (strcmp(proto, "shm") == 0)
        return "posix,sysv,cma,self,tcp";
    return NULL;
}

/* Our endpoints ask for peer-failure handling, and UCX 1.13's shared-memory
 * transports only offer it when told to: without this, shm traffic silently
 * goes over TCP loopback. The user's own UCX setting wins. */
static bool ucx_mm_error_handling(const char *proto)
{
    return strcmp(proto, "tcp") != 0 && !getenv("UCX_MM_ERROR_HANDLING") &&
           !getenv("UCX_POSIX_ERROR_HANDLING") && !getenv("UCX_SYSV_ERROR_HANDLING");
}

/* shm keeps tcp in UCX_TLS only for the listener's wire-up, but UCX then
 * picks tcp as the high-bandwidth RMA lanes of every shm endpoint (cma offers
 * no peer-failure handling), and an endpoint's lanes keep their interfaces
 * polled: an epoll_wait per TCP device in every worker progress. Without
 * rendezvous lanes the endpoint is shared memory only; messages (<= 8 KiB) are
 * eager and put/get data goes by rendezvous over shared-memory active
 * messages. The CM connection
 * still reports a dead peer. The user's own UCX setting wins. */
static bool ucx_no_rndv_lanes(const char *proto)
{
    return strcmp(proto, "shm") == 0 && !getenv("UCX_MAX_RNDV_RAILS");
}

static na_return_t ucx_config_set(ucp_config_t *config, const char *name,
                                  const char *value)
{
    ucs_status_t st = ucp_config_modify(config, name, value);
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "cannot set UCX_%s=%s: %s", name, value,
                      ucs_status_string(st));
        return NA_PROTOCOL_ERROR;
    }
    return NA_SUCCESS;
}

/* ifname: the interface the class names ("" for any); UCX's network
 * devices are kept to it, so that a class on loopback never sends over
 * another interface. The user's UCX_NET_DEVICES wins. */
static na_return_t ucx_context_open(struct ucx_class *cls, const char *proto,
                                    const char *ifname)
{
    ucp_config_t *config = NULL;
    ucs_status_t st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "ucp_config_read failed: %s", ucs_status_string(st));
        return NA_PROTOCOL_ERROR;
    }
    const char *tls = ucx_tls(proto);
    na_return_t ret = NA_SUCCESS;
    if (tls)
        ret = ucx_config_set(config, "TLS", tls);
    if (ret == NA_SUCCESS && *ifname && !getenv("UCX_NET_DEVICES"))
        ret = ucx_config_set(config, "NET_DEVICES", ifname);
    if (ret == NA_SUCCESS && ucx_mm_error_handling(proto))
        ret = ucx_config_set(config, "MM_ERROR_HANDLING", "y");
    if (ret == NA_SUCCESS && ucx_no_rndv_lanes(proto))
        ret = ucx_config_set(config, "MAX_RNDV_RAILS", "0");
    /* Messages (at most UCX_MSG_SIZE_MAX) stay eager: a rendezvous message
     * holds its sender until the receiver fetches it, so a slow or dropped
     * peer would keep sends (and their window slots) in flight. */
    if (ret == NA_SUCCESS && !getenv("UCX_RNDV_THRESH"))
        ret = ucx_config_set(config, "RNDV_THRESH", UCX_RNDV_THRESH);
    if (ret != NA_SUCCESS) {
        ucp_config_release(config);
        return ret;
    }
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features =
                               UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP};
    st = ucp_init(&params, config, &cls->context);
    ucp_config_release(config);
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "ucp_init (%s) failed: %s", proto, ucs_status_string(st));
        return NA_NODEV;
    }
    return NA_SUCCESS;
}

static na_return_t ucx_worker_open(struct ucx_class *cls)
{
    ucp_worker_params_t params = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE |
                                                UCP_WORKER_PARAM_FIELD_CLIENT_ID,
                                  .thread_mode = UCS_THREAD_MODE_SERIALIZED,
                                  .client_id = cls->id};
    ucs_status_t st = ucp_worker_create(cls->context, &params, &cls->worker);
    if (st == UCS_OK)
        st = ucp_worker_get_efd(cls->worker, &cls->efd);
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "cannot create the worker: %s", ucs_status_string(st));
        return NA_PROTOCOL_ERROR;
    }
    return ucx_am_handler_set(cls);
}

/* A free port for port 0: the listener's id is derived from its address,
 * and the id must be in the worker (client id) before the listener exists. */
static int ucx_free_port(const struct sockaddr_in *sin)
{
    struct sockaddr_in bound = *sin;
    socklen_t len = sizeof(bound);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
    if (fd < 0)
        return -1;
    if (bind(fd, (const struct sockaddr *)sin, sizeof(*sin)) == 0 &&
        getsockname(fd, (struct sockaddr *)&bound, &len) == 0)
        port = ntohs(bound.sin_port);
    close(fd);
    return port;
}

/* A port in use is told apart (NA_ADDRINUSE) and, when the caller will try
 * another (busy_quiet), not logged as an error. */
static na_return_t ucx_listen(struct ucx_class *cls, const struct sockaddr_in *sin,
                              char *str, size_t size, bool busy_quiet)
{
    ucp_listener_params_t params = {
        .field_mask =
            UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
        .sockaddr = {.addr = (const struct sockaddr *)sin, .addrlen = sizeof(*sin)},
        .conn_handler = {.cb = ucx_conn_cb, .arg = cls}};
    ucs_status_t st = ucp_listener_create(cls->worker, &params, &cls->listener);
    if (st == UCS_ERR_BUSY && busy_quiet) {
        HGX_LOG_DEBUG(UCX, "port of %s taken before the listener bound it", str);
        return NA_ADDRINUSE;
    }
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "cannot listen on %s: %s", str, ucs_status_string(st));
        return st == UCS_ERR_BUSY ? NA_ADDRINUSE : NA_ADDRNOTAVAIL;
    }
    ucp_listener_attr_t attr = {.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR};
    if ((st = ucp_listener_query(cls->listener, &attr)) != UCS_OK) {
        HGX_LOG_ERROR(UCX, "cannot query the listener: %s", ucs_status_string(st));
        return NA_PROTOCOL_ERROR;
    }
    ucx_sockaddr_string((const struct sockaddr *)&attr.sockaddr, cls->proto, str, size);
    return NA_SUCCESS;
}

/* The listening address (IPv4: the id derives from it; port 0 for any) and
 * its interface, for a listener or a client that names one. shm peers share
 * our host: its listener stays on loopback unless told otherwise. */
static na_return_t ucx_netif(const char *proto, const struct na_info *info,
                             struct sockaddr_in *sin, char *ifname)
{
    bool shm = strcmp(proto, "shm") == 0;
    const struct na_netif_spec spec = {.host =
                                           info->host || !shm ? info->host : "127.0.0.1",
                                       .port = info->port,
                                       .subnet = info->init_info->ip_subnet,
                                       .env_name = "UCX_NET_DEVICES",
                                       .family = AF_INET};
    struct sockaddr_storage ss;
    socklen_t len;
    na_return_t ret = na_netif_select(&spec, &ss, &len, ifname);
    if (ret == NA_SUCCESS)
        memcpy(sin, &ss, sizeof(*sin));
    return ret;
}

/* Listening address with its port and the id, known before the worker is
 * created. */
static na_return_t ucx_listen_addr(struct ucx_class *cls, struct sockaddr_in *sin,
                                   char *str, size_t size)
{
    if (sin->sin_port == 0) {
        int port = ucx_free_port(sin);
        if (port <= 0) {
            char ip[INET_ADDRSTRLEN];
            inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
            HGX_LOG_ERROR(UCX, "no free TCP port on %s: %s", ip, strerror(errno));
            return NA_ADDRNOTAVAIL;
        }
        sin->sin_port = htons((uint16_t)port);
    }
    ucx_sockaddr_string((const struct sockaddr *)sin, cls->proto, str, size);
    cls->id = ucx_hash_id(strstr(str, "://") + 3);
    return NA_SUCCESS;
}

/* Listen on info's address, the worker created with the id derived from it.
 * For port 0 the port is picked first (the id needs it before the worker
 * exists), and another socket can take it before the listener binds it:
 * outgoing connections draw from the same ephemeral range. Then a new port
 * is picked, with a new worker for its id. */
static na_return_t ucx_open_listening(struct ucx_class *cls, const struct sockaddr_in *at,
                                      char *str, size_t size)
{
    for (int tries = 1;; tries++) {
        struct sockaddr_in sin = *at;
        bool retry = at->sin_port == 0 && tries < UCX_LISTEN_TRIES;
        na_return_t ret = ucx_listen_addr(cls, &sin, str, size);
        if (ret == NA_SUCCESS)
            ret = ucx_worker_open(cls);
        if (ret == NA_SUCCESS)
            ret = ucx_listen(cls, &sin, str, size, retry);
        if (ret != NA_ADDRINUSE || !retry)
            return ret;
        ucp_worker_destroy(cls->worker);
        cls->worker = NULL;
        cls->efd = -1;
    }
}

/* Our own peer: an ep on our own worker (the "self" transport). */
static na_return_t ucx_self_open(struct ucx_class *cls, const char *str)
{
    ucp_address_t *wa = NULL;
    size_t wa_len = 0;
    ucs_status_t st = ucp_worker_get_address(cls->worker, &wa, &wa_len);
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "cannot get the worker address: %s", ucs_status_string(st));
        return NA_PROTOCOL_ERROR;
    }
    cls->self = ucx_peer_new(cls, cls->id, str);
    if (!cls->self) {
        ucp_worker_release_address(cls->worker, wa);
        return NA_NOMEM;
    }
    cls->self->self = true;
    ucp_ep_params_t params = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                              .address = wa};
    st = ucp_ep_create(cls->worker, &params, &cls->self->ep);
    ucp_worker_release_address(cls->worker, wa);
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "cannot create the self endpoint: %s", ucs_status_string(st));
        return NA_PROTOCOL_ERROR;
    }
    return NA_SUCCESS;
}

static void ucx_close_ep(struct ucx_class *cls, ucp_ep_h ep)
{
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = UCP_EP_CLOSE_FLAG_FORCE};
    ucs_status_ptr_t sp = ucp_ep_close_nbx(ep, &param);
    if (sp == NULL || UCS_PTR_IS_ERR(sp))
        return;
    /* A forced close never waits for the peer; a few progress calls finish it. */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (ucp_request_check_status(sp) == UCS_INPROGRESS &&
           ucx_ms_since(&t0) < UCX_CLOSE_MS)
        ucp_worker_progress(cls->worker);
    ucp_request_free(sp);
}

static void ucx_class_free(struct ucx_class *cls)
{
    /* Forced closes from cancel escalations: let them finish (bounded). */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (cls->closing > 0 && ucx_ms_since(&t0) < UCX_CLOSE_MS)
        ucp_worker_progress(cls->worker);
    while (cls->peers) {
        struct ucx_peer *p = cls->peers;
        cls->peers = p->next;
        ucx_pending_fail(p, NA_CANCELED);
        if (p->ep)
            ucx_close_ep(cls, p->ep);
        free(p);
    }
    /* Peers' transfers the closes did not end: UCX is done with them. */
    while (cls->tx_head)
        ucx_tx_end(cls->tx_head);
    na_slots_fini(&cls->regions);
    na_slots_fini(&cls->rma_ops);
    while (cls->held_head) {
        struct ucx_held *m = cls->held_head;
        cls->held_head = m->next;
        ucx_held_add(cls, -1);
        free(m);
    }
    if (cls->listener)
        ucp_listener_destroy(cls->listener);
    if (cls->worker)
        ucp_worker_destroy(cls->worker);
    if (cls->context)
        ucp_cleanup(cls->context);
    free(cls);
}

/* HGX_UCX_SEND_WINDOW: a positive integer up to UCX_SEND_WINDOW_MAX. */
static unsigned ucx_env_send_window(void)
{
    const char *env = getenv("HGX_UCX_SEND_WINDOW");
    if (!env || !*env)
        return UCX_SEND_WINDOW;
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(env, &end, 10);
    if (*env < '0' || *env > '9' || *end != '\0' || errno || v == 0 ||
        v > UCX_SEND_WINDOW_MAX) {
        HGX_LOG_ERROR(UCX,
                      "HGX_UCX_SEND_WINDOW=\"%s\" is not an integer in 1..%d; using %d",
                      env, UCX_SEND_WINDOW_MAX, UCX_SEND_WINDOW);
        return UCX_SEND_WINDOW;
    }
    return (unsigned)v;
}

static na_return_t ucx_initialize(na_class_t *na_class, const struct na_info *info,
                                  bool listen)
{
    struct ucx_class *cls = calloc(1, sizeof(*cls));
    char str[UCX_ADDR_STR_MAX];
    na_return_t ret;

    if (!cls)
        return NA_NOMEM;
    hgx_lock_init_mode(&cls->lock, na_class->single);
    cls->na_class = na_class;
    cls->efd = -1;
    cls->escalate_ms = UCX_CANCEL_ESCALATE_MS;
    cls->send_window = ucx_env_send_window();
    const char *env = getenv("HGX_UCX_CANCEL_ESCALATE_MS");
    if (env && *env) {
        char *end = NULL;
        unsigned long v = strtoul(env, &end, 10);
        if (*end == '\0' && v <= 3600000)
            cls->escalate_ms = (unsigned)v;
        else
            HGX_LOG_WARNING(UCX, "ignoring HGX_UCX_CANCEL_ESCALATE_MS=\"%s\"", env);
    }
    snprintf(cls->proto, sizeof(cls->proto), "%s", info->protocol_name);
    struct sockaddr_in sin;
    char ifname[IF_NAMESIZE] = "";
    if (listen || info->host) {
        ret = ucx_netif(cls->proto, info, &sin, ifname);
        if (ret != NA_SUCCESS)
            goto error;
    }
    ret = ucx_context_open(cls, cls->proto, ifname);
    if (ret != NA_SUCCESS)
        goto error;
    if (listen) {
        ret = ucx_open_listening(cls, &sin, str, sizeof(str));
    } else {
        cls->id = ucx_random_id();
        snprintf(str, sizeof(str), "ucx+%s://id-%08x", cls->proto, cls->id);
        ret = ucx_worker_open(cls);
    }
    if (ret != NA_SUCCESS)
        goto error;
    ret = ucx_self_open(cls, str);
    if (ret != NA_SUCCESS)
        goto error;
    na_class->plugin_class = cls;
    HGX_LOG_DEBUG(UCX, "class %s ready (id %08x)", str, cls->id);
    return NA_SUCCESS;

error:
    ucx_class_free(cls);
    return ret;
}

static na_return_t ucx_finalize(na_class_t *na_class)
{
    ucx_class_free(ucx_cls(na_class));
    na_class->plugin_class = NULL;
    return NA_SUCCESS;
}

static na_return_t ucx_context_create(na_class_t *na_class, na_context_t *context,
                                      uint8_t id)
{
    (void)na_class;
    (void)id;
    context->plugin_context = NULL;
    return NA_SUCCESS;
}

static na_return_t ucx_context_destroy(na_class_t *na_class, na_context_t *context)
{
    (void)na_class;
    (void)context;
    return NA_SUCCESS;
}

/*---------------------------------------------------------------- addresses */

static na_return_t ucx_addr_new(na_class_t *na_class, struct ucx_peer *p,
                                na_addr_t **addr_p)
{
    (void)na_class;
    *addr_p = na_addr_ref(&p->addr);
    return NA_SUCCESS;
}

/* "proto://host:port" -> resolved IPv4 sockaddr. */
static na_return_t ucx_parse(struct ucx_class *cls, const char *name,
                             struct sockaddr_in *sin)
{
    const char *sep = strstr(name, "://");
    if (!sep)
        return NA_INVALID_ARG;
    if ((size_t)(sep - name) != strlen(cls->proto) ||
        strncmp(name, cls->proto, (size_t)(sep - name)))
        return NA_PROTONOSUPPORT;
    const char *host = sep + 3, *colon = strrchr(host, ':');
    if (!colon || colon == host || colon[1] == '\0' || (size_t)(colon - host) >= 256)
        return NA_INVALID_ARG;
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port < 1 || port > 65535 || colon[1] == '-' || colon[1] == '+')
        return NA_INVALID_ARG;
    char hostname[256];
    memcpy(hostname, host, (size_t)(colon - host));
    hostname[colon - host] = '\0';

    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM},
                    *res = NULL;
    if (getaddrinfo(hostname, NULL, &hints, &res) != 0 || !res) {
        HGX_LOG_ERROR(UCX, "cannot resolve host \"%s\"", hostname);
        return NA_ADDRNOTAVAIL;
    }
    *sin = *(struct sockaddr_in *)res->ai_addr;
    sin->sin_port = htons((uint16_t)port);
    freeaddrinfo(res);
    return NA_SUCCESS;
}

static void ucx_connect_cb(void *request, ucs_status_t status, void *user_data)
{
    struct ucx_peer *p = user_data;
    if (status != UCS_OK)
        p->failed = true;
    p->connecting = false;
    ucp_request_free(request);
}

/* Connect to a listener; the flush completes once the wire-up is done, so
 * an unreachable peer fails the lookup instead of a later operation. */
static na_return_t ucx_connect(struct ucx_class *cls, const struct sockaddr_in *sin,
                               const char *str, uint32_t id, struct ucx_peer **peer_p)
{
    struct ucx_peer *p = ucx_peer_new(cls, id, str);
    if (!p)
        return NA_NOMEM;
    p->outgoing = true;
    p->sin = *sin;
    ucs_status_t st = ucx_ep_open_client(cls, p);
    if (st != UCS_OK) {
        p->ep = NULL;
        HGX_LOG_ERROR(UCX, "cannot connect to %s: %s", str, ucs_status_string(st));
        p->failed = true;
        return NA_HOSTUNREACH;
    }
    ucp_request_param_t fp = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                              UCP_OP_ATTR_FIELD_USER_DATA,
                              .cb.send = ucx_connect_cb,
                              .user_data = p};
    ucs_status_ptr_t sp = ucp_ep_flush_nbx(p->ep, &fp);
    if (UCS_PTR_IS_ERR(sp))
        p->failed = true;
    else if (sp) {
        /* Pending flush: wait, bounded, for it to finish or the ep to fail. */
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        p->connecting = true;
        while (!p->failed && p->connecting && ucx_ms_since(&t0) < UCX_CONNECT_MS) {
            ucx_progress(cls, NULL);
            /* Others may use the worker meanwhile (the peer is already
             * known: their sends queue behind the wire-up in UCX). */
            hgx_unlock(&cls->lock);
            sched_yield();
            hgx_lock(&cls->lock);
        }
    }
    if (p->failed) {
        HGX_LOG_ERROR(UCX, "cannot connect to %s", str);
        return NA_HOSTUNREACH;
    }
    *peer_p = p;
    return NA_SUCCESS;
}

/* Name resolution (getaddrinfo may block) runs before the lock is taken. */
static na_return_t ucx_addr_lookup(na_class_t *na_class, const char *name,
                                   na_addr_t **addr_p)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct sockaddr_in sin;
    char str[UCX_ADDR_STR_MAX];

    na_return_t ret = ucx_parse(cls, name, &sin);
    if (ret != NA_SUCCESS)
        return ret;
    /* Its tcp is there for wire-up only: a remote peer would never answer. */
    if (strcmp(cls->proto, "shm") == 0 && !na_netif_is_local((struct sockaddr *)&sin)) {
        HGX_LOG_ERROR(UCX,
                      "%s is not on this host: ucx+shm reaches local peers only "
                      "(use ucx+tcp or ucx+all)",
                      name);
        return NA_HOSTUNREACH;
    }
    ucx_sockaddr_string((const struct sockaddr *)&sin, cls->proto, str, sizeof(str));
    uint32_t id = ucx_hash_id(strstr(str, "://") + 3);
    hgx_lock(&cls->lock);
    struct ucx_peer *p = id == cls->id ? cls->self : ucx_peer_find(cls, id);
    if (p || (ret = ucx_connect(cls, &sin, str, id, &p)) == NA_SUCCESS)
        ret = ucx_addr_new(na_class, p, addr_p);
    hgx_unlock(&cls->lock);
    return ret;
}

/* Never reached: the peer holds a reference to its address until finalize. */
static void ucx_addr_destroy(na_class_t *na_class, na_addr_t *addr)
{
    (void)na_class;
    (void)addr;
}

/* Forget the connection: the next lookup connects again. */
static na_return_t ucx_addr_set_remove(na_class_t *na_class, na_addr_t *addr)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct ucx_peer *p = ucx_peer_of(addr);
    hgx_lock(&cls->lock);
    if (!p->self) {
        p->failed = true;
        ucx_pending_fail(p, NA_HOSTUNREACH);
    }
    hgx_unlock(&cls->lock);
    return NA_SUCCESS;
}

static na_return_t ucx_addr_self(na_class_t *na_class, na_addr_t **addr_p)
{
    return ucx_addr_new(na_class, ucx_cls(na_class)->self, addr_p);
}

static bool ucx_addr_cmp(na_class_t *na_class, na_addr_t *addr1, na_addr_t *addr2)
{
    (void)na_class;
    return ucx_peer_of(addr1)->id == ucx_peer_of(addr2)->id;
}

static bool ucx_addr_is_self(na_class_t *na_class, na_addr_t *addr)
{
    return ucx_peer_of(addr)->id == ucx_cls(na_class)->id;
}

static na_return_t ucx_addr_to_string(na_class_t *na_class, char *buf, size_t *buf_size,
                                      na_addr_t *addr)
{
    (void)na_class;
    const char *str = ucx_peer_of(addr)->str;
    if (strlen(str) + 1 > *buf_size)
        return NA_OVERFLOW;
    memcpy(buf, str, strlen(str) + 1);
    return NA_SUCCESS;
}

/* Serialized address: magic u32, id u32, string length u16, string. */
#define UCX_ADDR_HDR 10

static size_t ucx_addr_get_serialize_size(na_class_t *na_class, na_addr_t *addr)
{
    (void)na_class;
    return UCX_ADDR_HDR + strlen(ucx_peer_of(addr)->str);
}

static na_return_t ucx_addr_serialize(na_class_t *na_class, void *buf, size_t buf_size,
                                      na_addr_t *addr)
{
    (void)na_class;
    (void)buf_size; /* checked by the core */
    struct ucx_peer *p = ucx_peer_of(addr);
    uint32_t magic = UCX_ADDR_MAGIC, id = p->id;
    uint16_t len = (uint16_t)strlen(p->str);
    char *out = buf;
    memcpy(out, &magic, 4);
    memcpy(out + 4, &id, 4);
    memcpy(out + 8, &len, 2);
    memcpy(out + UCX_ADDR_HDR, p->str, len);
    return NA_SUCCESS;
}

static na_return_t ucx_addr_deserialize(na_class_t *na_class, na_addr_t **addr_p,
                                        const void *buf, size_t buf_size)
{
    struct ucx_class *cls = ucx_cls(na_class);
    const char *in = buf;
    uint32_t magic, id;
    uint16_t len;
    char str[UCX_ADDR_STR_MAX];

    if (buf_size < UCX_ADDR_HDR)
        return NA_INVALID_ARG;
    memcpy(&magic, in, 4);
    memcpy(&id, in + 4, 4);
    memcpy(&len, in + 8, 2);
    if (magic != UCX_ADDR_MAGIC || len >= sizeof(str) || len != buf_size - UCX_ADDR_HDR ||
        id > UCX_ID_MASK)
        return NA_PROTOCOL_ERROR;
    memcpy(str, in + UCX_ADDR_HDR, len);
    str[len] = '\0';
    if (memchr(str, '\0', len) || strncmp(str, "ucx+", 4) != 0)
        return NA_PROTOCOL_ERROR;

    /* A peer we know (e.g. an accepted client) is reused; else connect. */
    hgx_lock(&cls->lock);
    struct ucx_peer *p = id == cls->id ? cls->self : ucx_peer_find(cls, id);
    na_return_t ret = p ? ucx_addr_new(na_class, p, addr_p) : NA_NOENTRY;
    hgx_unlock(&cls->lock);
    return p ? ret : ucx_addr_lookup(na_class, str + 4, addr_p);
}

/*---------------------------------------------------------------- messages */

static size_t ucx_msg_get_max_size(const na_class_t *na_class)
{
    (void)na_class;
    return UCX_MSG_SIZE_MAX;
}

static na_tag_t ucx_msg_get_max_tag(const na_class_t *na_class)
{
    (void)na_class;
    return UINT32_MAX;
}

/* Tag of an expected message: the sender's class id above the NA tag. */
static ucp_tag_t ucx_tag(uint32_t id, na_tag_t tag)
{
    return (ucp_tag_t)id << UCX_TAG_ID_SHIFT | (uint32_t)tag;
}

/* Lay out an unexpected send: the header in stage, then the data behind it
 * (short messages) or in a second iov entry. */
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
 * window is full), or failed. Lock held. */
static na_return_t ucx_send_not_posted(struct ucx_op *uop, ucs_status_t st)
{
    struct ucx_peer *p = uop->peer;
    if (st == UCS_ERR_NO_RESOURCE) {
        ucx_queue_push(&p->pend, uop);
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
         na_addr_t *dest_addr, bool unexpected, na_tag_t tag)
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
        /* Behind queued sends, or out of resources: queue to keep the order. */
        ucs_status_t st = p->pend.head ? UCS_ERR_NO_RESOURCE : ucx_send_post(uop);
        if (__builtin_expect(UCS_STATUS_IS_ERR(st), 0))
            ret = ucx_send_not_posted(uop, st);
    }
    hgx_unlock(&cls->lock);
    return ret;
}

static na_return_t ucx_msg_send_unexpected(na_class_t *na_class, na_context_t *context,
                                           na_op_id_t *op, const void *buf,
                                           size_t buf_size, void *plugin_data,
                                           na_addr_t *dest_addr, uint8_t dest_id,
                                           na_tag_t tag)
{
    (void)context;
    (void)plugin_data;
    (void)dest_id;
    return ucx_send(na_class, op, buf, buf_size, dest_addr, true, tag);
}

static na_return_t ucx_msg_send_expected(na_class_t *na_class, na_context_t *context,
                                         na_op_id_t *op, const void *buf, size_t buf_size,
                                         void *plugin_data, na_addr_t *dest_addr,
                                         uint8_t dest_id, na_tag_t tag)
{
    (void)context;
    (void)plugin_data;
    (void)dest_id;
    return ucx_send(na_class, op, buf, buf_size, dest_addr, false, tag);
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
    uop->posting = true;
    hgx_lock(&cls->lock);
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

/* Keep a message that found no posted receive, as UCX's tag matching kept
 * unexpected messages before: nothing is dropped (a receiver that falls
 * behind gets every message), so a peer that floods a receiver that does not
 * post receives costs it memory; past UCX_HELD_WARN messages that is logged.
 * Lock held. */
static void ucx_unexp_hold(struct ucx_class *cls, struct ucx_peer *p, uint32_t tag,
                           const void *data, size_t len)
{
    struct ucx_held *m = malloc(sizeof(*m) + len);
    if (!m) {
        HGX_LOG_ERROR(UCX, "unexpected message from %s dropped: out of memory (%u kept)",
                      p->str, cls->held);
        return;
    }
    *m = (struct ucx_held){.peer = p, .tag = tag, .len = len};
    memcpy(m->data, data, len);
    if (cls->held_tail)
        cls->held_tail->next = m;
    else
        cls->held_head = m;
    cls->held_tail = m;
    ucx_held_add(cls, 1);
    if (cls->held == UCX_HELD_WARN)
        HGX_LOG_WARNING(UCX,
                        "%u unexpected messages kept with no receive posted (last "
                        "from %s)",
                        cls->held, p->str);
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
    uint32_t sender = hgx_get_u32(in), tag = hgx_get_u32(in + 4);
    struct ucx_peer *p =
        sender == cls->id ? cls->self : ucx_peer_find_sender(cls, sender);
    if (!p) {
        HGX_LOG_ERROR(UCX, "unexpected message from unknown peer id %08x dropped",
                      sender);
        return UCS_OK;
    }
    struct ucx_op *uop = ucx_queue_pop(&cls->unexp);
    if (uop)
        ucx_unexp_deliver(uop, p, tag, in + UCX_UNEXP_HDR, length - UCX_UNEXP_HDR);
    else
        ucx_unexp_hold(cls, p, tag, in + UCX_UNEXP_HDR, length - UCX_UNEXP_HDR);
    return UCS_OK;
}

static ucs_status_t ucx_am_rma_req_cb(void *arg, const void *header, size_t header_length,
                                      void *data, size_t length,
                                      const ucp_am_recv_param_t *param);
static ucs_status_t ucx_am_rma_rep_cb(void *arg, const void *header, size_t header_length,
                                      void *data, size_t length,
                                      const ucp_am_recv_param_t *param);

static na_return_t ucx_am_handler_set(struct ucx_class *cls)
{
    static const struct {
        unsigned id;
        ucp_am_recv_callback_t cb;
    } handlers[] = {{UCX_AM_UNEXP, ucx_am_unexp_cb},
                    {UCX_AM_RMA_REQ, ucx_am_rma_req_cb},
                    {UCX_AM_RMA_REP, ucx_am_rma_rep_cb}};
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

/* A posted receive takes the oldest kept message, or waits first in line
 * for the next (see the top of the file). */
static na_return_t ucx_msg_recv_unexpected(na_class_t *na_class, na_context_t *context,
                                           na_op_id_t *op, void *buf, size_t buf_size,
                                           void *plugin_data)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct ucx_op *uop = ucx_op(op);
    (void)context;
    (void)plugin_data;

    ucx_op_start(uop, UCX_OP_RECV_UNEXP, cls);
    uop->rbuf = buf;
    uop->rsize = buf_size;
    hgx_lock(&cls->lock);
    struct ucx_held *m = cls->held_head;
    if (m) {
        cls->held_head = m->next;
        if (!cls->held_head)
            cls->held_tail = NULL;
        ucx_held_add(cls, -1);
        ucx_unexp_deliver(uop, m->peer, m->tag, m->data, m->len);
        free(m);
    } else {
        ucx_queue_push_front(&cls->unexp, uop);
    }
    hgx_unlock(&cls->lock);
    return NA_SUCCESS;
}

static na_return_t ucx_msg_recv_expected(na_class_t *na_class, na_context_t *context,
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

/*---------------------------------------------------------------- memory handles */

static struct ucx_mem_handle *ucx_mh(na_mem_handle_t *mh)
{
    return (struct ucx_mem_handle *)mh;
}

static struct ucx_mem_handle *ucx_mh_alloc(size_t count, unsigned long flags)
{
    struct ucx_mem_handle *mh =
        calloc(1, sizeof(*mh) + count * sizeof(struct ucx_segment));
    if (mh) {
        mh->count = count;
        mh->head.flags = flags;
    }
    return mh;
}

static na_return_t ucx_mem_handle_create_segments(na_class_t *na_class,
                                                  struct na_segment *segments,
                                                  size_t segment_count,
                                                  unsigned long flags,
                                                  na_mem_handle_t **mem_handle_p)
{
    (void)na_class;
    struct ucx_mem_handle *mh = ucx_mh_alloc(segment_count, flags);
    if (!mh)
        return NA_NOMEM;
    for (size_t i = 0; i < segment_count; i++) {
        mh->seg[i].base = (uint64_t)(uintptr_t)segments[i].base;
        mh->seg[i].len = segments[i].len;
        mh->head.len += segments[i].len;
    }
    *mem_handle_p = &mh->head;
    return NA_SUCCESS;
}

static na_return_t ucx_mem_handle_create(na_class_t *na_class, void *buf, size_t buf_size,
                                         unsigned long flags,
                                         na_mem_handle_t **mem_handle_p)
{
    struct na_segment seg = {.base = buf, .len = buf_size};
    return ucx_mem_handle_create_segments(na_class, &seg, 1, flags, mem_handle_p);
}

static size_t ucx_mem_handle_get_max_segments(const na_class_t *na_class)
{
    (void)na_class;
    return UCX_MAX_SEGMENTS;
}

/* Registration enters the handle in the region table under a fresh random
 * key: peers reach its memory only through that name (see put / get). UCX
 * registers the memory of each transfer itself. */
static na_return_t ucx_mem_register(na_class_t *na_class, na_mem_handle_t *mem_handle)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct ucx_mem_handle *mh = ucx_mh(mem_handle);
    if (getrandom(&mh->key, sizeof(mh->key), 0) != (ssize_t)sizeof(mh->key)) {
        HGX_LOG_ERROR(UCX, "cannot draw a region key: %s", strerror(errno));
        return NA_PROTOCOL_ERROR;
    }
    hgx_lock(&cls->lock);
    bool ok = na_slots_add(&cls->regions, mh, &mh->index, &mh->gen);
    hgx_unlock(&cls->lock);
    return ok ? NA_SUCCESS : NA_NOMEM;
}

static void ucx_region_quiesce(struct ucx_class *cls, struct ucx_mem_handle *mh);

/* Out of the table first (later requests are refused), then wait for the
 * transfers already at work on it. */
static na_return_t ucx_mem_deregister(na_class_t *na_class, na_mem_handle_t *mem_handle)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct ucx_mem_handle *mh = ucx_mh(mem_handle);
    hgx_lock(&cls->lock);
    if (na_slots_get(&cls->regions, mh->index, mh->gen) == mh)
        na_slots_remove(&cls->regions, mh->index);
    ucx_region_quiesce(cls, mh);
    hgx_unlock(&cls->lock);
    mh->index = mh->gen = 0;
    mh->key = 0;
    return NA_SUCCESS;
}

static void ucx_mem_handle_free(na_class_t *na_class, na_mem_handle_t *mem_handle)
{
    (void)na_class; /* the core deregisters a registered handle first */
    free(mem_handle);
}

/* Descriptor (little-endian): version u32, flags u32, total length u64,
 * segment count u32, region index u32, generation u32, key u64, then each
 * segment's length u64. No address: the owner maps offsets itself. */
#define UCX_MH_HDR 36

static size_t ucx_mem_handle_get_serialize_size(na_class_t *na_class,
                                                na_mem_handle_t *mem_handle)
{
    (void)na_class;
    return UCX_MH_HDR + 8 * ucx_mh(mem_handle)->count;
}

static na_return_t ucx_mem_handle_serialize(na_class_t *na_class, void *buf,
                                            size_t buf_size, na_mem_handle_t *mem_handle)
{
    (void)na_class;
    (void)buf_size; /* checked by the core against get_serialize_size */
    struct ucx_mem_handle *mh = ucx_mh(mem_handle);
    unsigned char *out = buf;
    hgx_put_u32(out, UCX_MH_VERSION);
    hgx_put_u32(out + 4, (uint32_t)mh->head.flags);
    hgx_put_u64(out + 8, mh->head.len);
    hgx_put_u32(out + 16, (uint32_t)mh->count);
    hgx_put_u32(out + 20, mh->index);
    hgx_put_u32(out + 24, mh->gen);
    hgx_put_u64(out + 28, mh->key);
    for (size_t i = 0; i < mh->count; i++)
        hgx_put_u64(out + UCX_MH_HDR + 8 * i, mh->seg[i].len);
    return NA_SUCCESS;
}

/* Untrusted: checked for shape only. Whether it names a live region, and
 * what it may do there, only its owner can tell (ucx_region_find). */
static na_return_t ucx_mem_handle_deserialize(na_class_t *na_class,
                                              na_mem_handle_t **mem_handle_p,
                                              const void *buf, size_t buf_size)
{
    (void)na_class;
    const unsigned char *in = buf;
    if (buf_size < UCX_MH_HDR)
        return NA_INVALID_ARG;
    uint32_t version = hgx_get_u32(in), flags = hgx_get_u32(in + 4),
             count = hgx_get_u32(in + 16);
    uint64_t total = hgx_get_u64(in + 8), sum = 0;
    if (version != UCX_MH_VERSION || flags == 0 ||
        (flags & ~(uint32_t)NA_MEM_READWRITE) || count == 0 || count > UCX_MAX_SEGMENTS ||
        buf_size != UCX_MH_HDR + 8 * count || total > SIZE_MAX)
        return NA_PROTOCOL_ERROR;
    struct ucx_mem_handle *mh = ucx_mh_alloc(count, flags);
    if (!mh)
        return NA_NOMEM;
    for (uint32_t i = 0; i < count; i++) {
        mh->seg[i].len = hgx_get_u64(in + UCX_MH_HDR + 8 * i);
        if ((sum += mh->seg[i].len) < mh->seg[i].len)
            break; /* overflows: sum != total below */
    }
    if (sum != total) {
        free(mh);
        return NA_PROTOCOL_ERROR;
    }
    mh->index = hgx_get_u32(in + 20);
    mh->gen = hgx_get_u32(in + 24);
    mh->key = hgx_get_u64(in + 28);
    mh->head.len = (size_t)total;
    *mem_handle_p = &mh->head;
    return NA_SUCCESS;
}

/*---------------------------------------------------------------- put / get */

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
    struct ucx_tx *prev, *next;
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

void na_ucx_rma_counts(long *refused, long *dropped);
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

/* Copy between two iov lists of the same total length. */
static void ucx_iov_copy(const ucp_dt_iov_t *dst, size_t nd, const ucp_dt_iov_t *src,
                         size_t ns)
{
    size_t di = 0, si = 0, doff = 0, soff = 0;
    while (di < nd && si < ns) {
        size_t n = dst[di].length - doff;
        if (n > src[si].length - soff)
            n = src[si].length - soff;
        memmove((char *)dst[di].buffer + doff, (const char *)src[si].buffer + soff, n);
        if ((doff += n) == dst[di].length) {
            di++;
            doff = 0;
        }
        if ((soff += n) == src[si].length) {
            si++;
            soff = 0;
        }
    }
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
    *tx = (struct ucx_tx){.cls = cls, .mh = mh, .ep = ep, .next = cls->tx_head};
    hgx_put_u32(tx->hdr, rq->put ? UCX_RMA_PUT_ACK : UCX_RMA_GET_REP);
    hgx_put_u32(tx->hdr + 4, (uint32_t)status);
    hgx_put_u64(tx->hdr + 8, rq->cookie);
    if (mh) {
        tx->n = ucx_seg_iov(mh, rq->offset, rq->length, tx->iov);
        mh->busy++;
    }
    if (cls->tx_head)
        cls->tx_head->prev = tx;
    cls->tx_head = tx;
    return tx;
}

static void ucx_tx_end(struct ucx_tx *tx)
{
    struct ucx_class *cls = tx->cls;
    if (tx->prev)
        tx->prev->next = tx->next;
    else
        cls->tx_head = tx->next;
    if (tx->next)
        tx->next->prev = tx->prev;
    if (tx->mh)
        tx->mh->busy--;
    free(tx);
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
static ucs_status_t ucx_am_rma_req_cb(void *arg, const void *header, size_t header_length,
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
        ucx_iov_copy(tx->iov, tx->n, &(ucp_dt_iov_t){.buffer = data, .length = length},
                     1);
    tx->data = ret == NA_SUCCESS && !rq.put;
    ucx_tx_reply(tx);
    return UCS_OK;
}

/* Wait, bounded, for the peers' transfers on mh to end. Lock held. */
static void ucx_region_wait(struct ucx_class *cls, struct ucx_mem_handle *mh)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (mh->busy && ucx_ms_since(&t0) < UCX_CLOSE_MS)
        ucp_worker_progress(cls->worker);
}

/* Deregistration: transfers already at work on mh (a get's data being sent,
 * a put's being received) end before it returns. Past UCX_CLOSE_MS, the eps
 * of those still running are dropped, which ends them with an error: mh's
 * memory is not read or written after deregistration returns. Lock held. */
static void ucx_region_quiesce(struct ucx_class *cls, struct ucx_mem_handle *mh)
{
    ucx_region_wait(cls, mh);
    if (!mh->busy)
        return;
    HGX_LOG_WARNING(UCX,
                    "deregistering a region with %u transfers still running after %d "
                    "ms; dropping their connections",
                    mh->busy, UCX_CLOSE_MS);
    for (struct ucx_tx *tx = cls->tx_head; tx;) {
        struct ucx_peer *p = NULL;
        for (struct ucx_peer *q = cls->peers; q && !p && tx->mh == mh; q = q->next)
            if (q->ep == tx->ep && !q->self)
                p = q;
        if (!p) {
            tx = tx->next;
            continue;
        }
        ucx_ep_drop(cls, p); /* may end transfers: scan again */
        tx = cls->tx_head;
    }
    ucx_region_wait(cls, mh);
    if (mh->busy)
        HGX_LOG_ERROR(UCX, "%u transfers of a deregistered region did not end", mh->busy);
}

/* One part of an op (its send, its reply) ended; the op completes with the
 * last one. */
static void ucx_rma_piece_done(struct ucx_op *uop, na_return_t ret)
{
    if (ret != NA_SUCCESS && uop->rma_ret == NA_SUCCESS)
        uop->rma_ret = ret;
    if (--uop->pieces > 0)
        return;
    ucx_cancel_unlist(uop);
    if (uop->riov != uop->iov)
        free(uop->riov);
    uop->riov = NULL;
    /* Data that moved is reported as moved: cancel never hides a transfer. */
    na_op_complete(na_op_from_plugin(uop), uop->rma_ret != NA_SUCCESS
                                               ? ucx_failed_ret(uop, uop->rma_ret)
                                               : NA_SUCCESS);
}

/* The op no longer waits for a reply: a late one matches nothing. */
static void ucx_rma_unname(struct ucx_class *cls, struct ucx_op *uop)
{
    na_slots_remove(&cls->rma_ops, (uint32_t)uop->cookie);
}

static bool ucx_rma_awaiting(struct ucx_class *cls, struct ucx_op *uop)
{
    return na_slots_get(&cls->rma_ops, (uint32_t)uop->cookie,
                        (uint32_t)(uop->cookie >> 32)) == uop;
}

static void ucx_rma_fail_peer(struct ucx_class *cls, struct ucx_peer *p, na_return_t ret)
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
static ucs_status_t ucx_am_rma_rep_cb(void *arg, const void *header, size_t header_length,
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
                         &(ucp_dt_iov_t){.buffer = data, .length = length}, 1);
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
    if (ret == NA_SUCCESS) {
        ucp_dt_iov_t riov[UCX_MAX_SEGMENTS];
        size_t rn = ucx_seg_iov(mh, a->roff, a->size, riov);
        if (a->put)
            ucx_iov_copy(riov, rn, uop->riov, uop->riov_n);
        else
            ucx_iov_copy(uop->riov, uop->riov_n, riov, rn);
    }
    uop->pieces = 1;
    ucx_rma_piece_done(uop, ret);
}

/* Send the request (with a put's data). Its send and its reply are the op's
 * two pieces. Lock held. */
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
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                                 UCP_OP_ATTR_FIELD_USER_DATA |
                                                 UCP_OP_ATTR_FIELD_FLAGS,
                                 .cb.send = ucx_rma_sent_cb,
                                 .user_data = uop,
                                 .flags = UCP_AM_SEND_FLAG_REPLY};
    size_t count = 0;
    const void *data =
        a->put ? ucx_iov_param(&param, uop->riov, uop->riov_n, &count) : NULL;
    ucs_status_ptr_t sp = ucp_am_send_nbx(p->ep, UCX_AM_RMA_REQ, uop->stage,
                                          UCX_RMA_REQ_HDR, data, count, &param);
    if (UCS_PTR_IS_ERR(sp)) {
        ucx_rma_unname(cls, uop);
        HGX_LOG_ERROR(UCX, "%s to %s failed: %s", a->put ? "put" : "get", p->str,
                      ucs_status_string(UCS_PTR_STATUS(sp)));
        return ucx_status_to_na(UCS_PTR_STATUS(sp));
    }
    if (!sp)
        ucx_rma_piece_done(uop, NA_SUCCESS); /* sent already */
    return NA_SUCCESS;
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

static na_return_t ucx_rma_op(na_class_t *na_class, na_op_id_t *op, bool put,
                              na_mem_handle_t *local, na_offset_t local_offset,
                              na_mem_handle_t *remote, na_offset_t remote_offset,
                              size_t size, na_addr_t *remote_addr)
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

/*---------------------------------------------------------------- cancel */

/* Take a send out of its peer's resource queue; false if it was not queued. */
static bool ucx_pending_remove(struct ucx_op *uop)
{
    if (!ucx_queue_remove(&uop->peer->pend, uop))
        return false;
    ucx_queued_add(uop->peer->cls, -1);
    return true;
}

/* List a cancelled send/RMA still on the wire for escalation. Lock held. */
static void ucx_cancel_list(struct ucx_class *cls, struct ucx_op *uop)
{
    if (uop->cancel_listed)
        return; /* cancelled twice: keep the first deadline */
    uop->cancel_listed = true;
    uop->cancel_deadline_ms = ucx_now_ms() + cls->escalate_ms;
    uop->cancel_prev = NULL;
    uop->cancel_next = cls->cancel_head;
    if (cls->cancel_head)
        cls->cancel_head->cancel_prev = uop;
    cls->cancel_head = uop;
}

/* Escalate listed cancels past their deadline: force-close their peer's ep.
 * The close completes the ep's requests (now or in a later progress), which
 * unlists their ops; the list may change under us, so rescan after each drop.
 * Lock held. */
static void ucx_cancel_check(struct ucx_class *cls)
{
    uint64_t now = ucx_now_ms();
    struct ucx_op *uop = cls->cancel_head;
    while (uop) {
        struct ucx_op *next = uop->cancel_next;
        if (now < uop->cancel_deadline_ms) {
            uop = next;
            continue;
        }
        struct ucx_peer *p = uop->peer;
        ucx_cancel_unlist(uop);
        if (p->self || !p->ep || uop->gen != p->gen) {
            /* Self ops end on their own; an op of a dropped ep ends with it. */
            uop = next;
            continue;
        }
        HGX_LOG_WARNING(UCX,
                        "cancelled operation to %s still pending after %u ms; dropping "
                        "the connection",
                        p->str, cls->escalate_ms);
        ucx_ep_drop(cls, p);
        uop = cls->cancel_head;
    }
}

/* Receives are cancelled in UCX (callback with UCS_ERR_CANCELED); queued sends
 * are dropped. Sends and RMA already on the wire cannot be recalled: they
 * report their real outcome if they end by themselves (NA_SUCCESS if the data
 * moved); still pending after the escalation delay, their ep is dropped
 * (ucx_cancel_check) and they end NA_CANCELED. */
static na_return_t ucx_cancel(na_class_t *na_class, na_context_t *context, na_op_id_t *op)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct ucx_op *uop = ucx_op(op);
    (void)context;

    hgx_lock(&cls->lock);
    switch (uop->kind) {
    case UCX_OP_RECV_UNEXP:
        if (ucx_queue_remove(&cls->unexp, uop))
            na_op_complete(op, NA_CANCELED);
        break;
    case UCX_OP_RECV_EXP:
        if (uop->req)
            ucp_request_cancel(cls->worker, uop->req);
        break;
    case UCX_OP_SEND:
        /* Completions run under the lock: a cancel request still standing
         * here means the op has not ended. */
        if (!na_op_cancel_requested(op))
            break;
        if (ucx_pending_remove(uop))
            na_op_complete(op, NA_CANCELED);
        else if (uop->inflight)
            ucx_cancel_list(cls, uop);
        break;
    case UCX_OP_RMA:
        if (!na_op_cancel_requested(op) || uop->pieces == 0)
            break;
        /* A get whose reply has not started landing stops here and now; its
         * late reply matches nothing. */
        if (!uop->put && !uop->landing && ucx_rma_awaiting(cls, uop)) {
            bool sending = uop->pieces > 1;
            ucx_rma_unname(cls, uop);
            ucx_rma_piece_done(uop, NA_CANCELED);
            if (sending) /* the request itself is stuck: escalate that */
                ucx_cancel_list(cls, uop);
        } else {
            ucx_cancel_list(cls, uop);
        }
        break;
    }
    hgx_unlock(&cls->lock);
    return NA_SUCCESS;
}

const struct na_ops na_ucx_ops = {
    .class_name = "ucx",
    .protocols = (const char *const[]){"tcp", "shm", "all", NULL},
    .log_subsys = HGX_SUBSYS_UCX,
    /* One put is one put_nbx plus a flush: with 256 KiB pieces a 1 MiB push
     * paid four flushes and ran at ~0.5x the raw put+flush over shm; one piece
     * per transfer up to 16 MiB runs at 0.95-1.0x (docs/performance.md). */
    .rma_piece_max = (size_t)16 << 20,
    .op_size = sizeof(struct ucx_op),
    .check_protocol = ucx_check_protocol,
    .initialize = ucx_initialize,
    .finalize = ucx_finalize,
    .context_create = ucx_context_create,
    .context_destroy = ucx_context_destroy,
    .addr_lookup = ucx_addr_lookup,
    .addr_destroy = ucx_addr_destroy,
    .addr_set_remove = ucx_addr_set_remove,
    .addr_self = ucx_addr_self,
    .addr_cmp = ucx_addr_cmp,
    .addr_is_self = ucx_addr_is_self,
    .addr_to_string = ucx_addr_to_string,
    .addr_get_serialize_size = ucx_addr_get_serialize_size,
    .addr_serialize = ucx_addr_serialize,
    .addr_deserialize = ucx_addr_deserialize,
    .msg_get_max_unexpected_size = ucx_msg_get_max_size,
    .msg_get_max_expected_size = ucx_msg_get_max_size,
    .msg_get_max_tag = ucx_msg_get_max_tag,
    .msg_send_unexpected = ucx_msg_send_unexpected,
    .msg_recv_unexpected = ucx_msg_recv_unexpected,
    .msg_send_expected = ucx_msg_send_expected,
    .msg_recv_expected = ucx_msg_recv_expected,
    .mem_handle_create = ucx_mem_handle_create,
    .mem_handle_create_segments = ucx_mem_handle_create_segments,
    .mem_handle_free = ucx_mem_handle_free,
    .mem_handle_get_max_segments = ucx_mem_handle_get_max_segments,
    .mem_register = ucx_mem_register,
    .mem_deregister = ucx_mem_deregister,
    .mem_handle_get_serialize_size = ucx_mem_handle_get_serialize_size,
    .mem_handle_serialize = ucx_mem_handle_serialize,
    .mem_handle_deserialize = ucx_mem_handle_deserialize,
    .rma = ucx_rma_op,
    .poll_get_fd = ucx_poll_get_fd,
    .poll_try_wait = ucx_poll_try_wait,
    .poll = ucx_poll,
    .poll_wait = ucx_poll_wait,
    .cancel = ucx_cancel,
};
