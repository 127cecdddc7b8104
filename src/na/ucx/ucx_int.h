/*
 * ucx_int.h -- internals shared by the files of the NA plugin over UCX (UCP): unexpected
 * messages as active messages, expected messages tagged, put/get as hgx's own
 * active-message protocol checked by the region's owner (ucx_rma.c), connections
 * through a sockaddr listener.
 *
 * Peers are identified by a 31-bit id carried in every message: a listener's
 * id is a hash of its "IP:PORT" or "[IPV6]:PORT" address in inet_ntop's
 * form (na_ipaddr_string: so a client knows it from the lookup string, the
 * same address printed the same on both sides), a non-listener draws a
 * random id. Clients send their id in the
 * connection request (UCP client id), so a listener maps every accepted
 * endpoint to an id. An expected message's 64-bit tag is
 *   bits 32..62: sender id | bits 0..31: NA tag,
 * matched by UCX against the posted receive. An unexpected message is an
 * eager active message whose data leads with a 12-byte header, the sender id,
 * the NA tag, the id of the context it is for and the sender's credit
 * account (little-endian): the plugin matches it itself, to the newest
 * receive posted on that context, or keeps it (in arrival order, per
 * context) until one is posted there. Two bounds hold on what is kept:
 * per peer, the sender's credits, UCX_CREDITS (ucx_credit.c), always; per
 * context, HGX_NA_UNEXPECTED_MAX, past which progress leaves further
 * messages with UCX, only while nothing else needs the worker
 * (ucx_progress.c, ucx_stalled). Every context
 * id has its own receives and kept messages, an entry of an array sized by
 * the class's max_contexts: the handler indexes it by the header's id (a
 * class of one context takes every id on it, as Mercury's do), a
 * context's plugin data points at its entry, so nothing is searched. Expected
 * messages need no context id: their NA tag names the operation (HG's
 * cookie, unique in the origin's class), and each is posted once.
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
 * Peers live in a per-class list until finalize, found by id in a hashed
 * peer map (na_peer_map: one lookup per unexpected message, whatever the
 * number of peers); NA addresses are small handles pointing at a peer, so
 * two receives from one peer compare equal.
 *
 * Cancel escalation: UCX cannot recall a send or put/get already on the wire.
 * A cancelled one still pending after HGX_UCX_CANCEL_ESCALATE_MS (default
 * 10000, timed by na_cancel_watch) has its peer's endpoint force-closed, which makes UCX
 * complete every request on that endpoint with an error. Cancelled ops report
 * NA_CANCELED; ops on that endpoint that were not cancelled report NA_HOSTUNREACH (the
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
 * Send window: UCP never reports "no resources" to its user; it
 * queues internally, and every send it cannot finish at once holds a UCP
 * request (and, for rendezvous, the user's buffer) until it completes. So the
 * plugin bounds the sends holding a request, per peer endpoint, to
 * HGX_UCX_SEND_WINDOW (default 256, at most 1048576, read at class init). A
 * send over the window, or behind a queued one, waits in the peer's queue
 * without touching UCX and is posted, in order, by the progress call that
 * follows a completion; so does an unexpected send without a credit, until
 * the progress call that follows their return. Sends leave the queue only
 * posted, cancelled (NA_CANCELED) or failed with their peer. A non-empty
 * queue implies a full window, so some send is in flight and its completion
 * wakes the worker, or an ep wiring up, which its flush or its deadline
 * ends, or spent credits, whose return arrives as a message: the queue never
 * stalls and never spins. The default costs no throughput:
 * messages are at most 8 KiB, a send holds a request only once the
 * transport's own buffers (socket, shared-memory FIFO) are full, and 256 of
 * them (2 MiB) keep the link busy until the next progress refills the window.
 */
#ifndef UCX_INT_H
#define UCX_INT_H

#include "hgx_lock.h"
#include "hgx_list.h"
#include "hgx_test_hooks.h"
#include "na_cancel_watch.h"
#include "na_ipaddr.h"
#include "na_wait_set.h"
#include "na_peer_map.h"
#include "na_plugin.h"
#include "na_slots.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include <ucp/api/ucp.h>

#define UCX_MSG_SIZE_MAX 8192
#define UCX_RNDV_THRESH                                                                  \
    "16384" /* above UCX_MSG_SIZE_MAX + UCP headers */ /* a 4 KiB RPC payload and its    \
                                                          headers fit one message */
#define UCX_TAG_ID_SHIFT 32
#define UCX_AM_UNEXP 1   /* active message id of unexpected messages */
#define UCX_AM_RMA_REQ 2 /* put/get requests, to the region's owner */
#define UCX_AM_RMA_REP 3 /* their replies, to the origin */
#define UCX_AM_CREDIT 4  /* credit returns, to the sender of unexpected messages */
#define UCX_ID_MASK 0x7fffffffu
/* per memory handle, as OFI's: Mercury's own bulk test makes 1024 */
#define UCX_MAX_SEGMENTS 65536 /* per memory handle: 8 bytes each in a descriptor */
#define UCX_MH_VERSION 2u
#define UCX_ADDR_MAGIC 0x55435841u                /* "UCXA" */
#define UCX_ADDR_STR_MAX (NA_IPADDR_STR_MAX + 16) /* "ucx+PROTO://" and the address */
#define UCX_PROGRESS_MAX 1024                     /* bound on one poll() pass */
#define UCX_CONNECT_MS 5000                       /* a wire-up not done by then fails */
#define UCX_LISTEN_TRIES 8 /* free ports picked for port 0 before giving up */
#define UCX_CLOSE_MS 2000  /* finalize waits this long for each endpoint close */
/* poll_wait wakes up this often while the unexpected backlog is at its bound
 * (a receive posted by another thread). */
#define UCX_TIMER_POLL_MS 100
/* Tags of cancelled expected receives remembered, so that their messages
 * are dropped if they come (ucx_late.c): slots of a table indexed by tag. */
#define UCX_LATE_SLOTS 4096
#define UCX_LATE_NONE (~(ucp_tag_t)0) /* no tag has bit 63 set */

/* Header leading an unexpected message's data: sender id (4 bytes), NA tag
 * (4 bytes), then a word of the target context id (bits 0..7) and the
 * sender's credit account (bits 8..31, ucx_credit.c), little-endian.
 * Untrusted: the message must hold it, the sender must be a known peer and
 * the context id below the receiving class's max_contexts unless that is 1. */
#define UCX_UNEXP_HDR 12
/* Credits: unexpected messages a sender may have outstanding per peer
 * connection (ucx_credit.c). 64 messages of at most 8 KiB are 512 KiB in
 * flight, which keeps a link busy while the receiver consumes the first half
 * and returns it; and a receiver keeps at most 512 KiB per peer. */
#define UCX_CREDITS 64u
/* A receiver returns credits once this many are owed (one small message per
 * 32 unexpected ones): half, so the sender still has the other half to send
 * while a return travels. */
#define UCX_CREDIT_BATCH (UCX_CREDITS / 2)
/* Credit return: the returning class's id, the account, the count (4 bytes
 * each, little-endian). */
#define UCX_CREDIT_MSG 12
/* No account yet: above every 24-bit account. */
#define UCX_ACCOUNT_NONE UINT32_MAX
#define UCX_ACCOUNT_GEN_MASK 0x7fffffu
/* Unexpected messages of up to this many bytes, header included, are sent
 * from a copy in the op (one contiguous buffer: the inline path). */
#define UCX_STAGE_MAX 128

/* An unexpected message that arrived while no receive was posted. */
struct ucx_held {
    struct hgx_list link; /* in its box's held list */
    struct ucx_peer *peer;
    struct ucx_peer *acct_peer; /* the peer whose account it is in (ucx_credit.c) */
    uint32_t account;
    uint32_t tag;
    size_t len;
    char data[];
};

/* Unexpected messages for one context id: the receives posted on it (newest
 * first) and the messages that arrived for it while none was (arrival
 * order): at most UCX_CREDITS per peer account (ucx_credit.c), and about
 * HGX_NA_UNEXPECTED_MAX while the worker is idle (ucx_progress.c). */
struct ucx_unexp_box {
    struct hgx_list posted; /* ops (ucx_queue_*) */
    struct hgx_list held;   /* struct ucx_held */
    unsigned nheld;
    na_context_t *context; /* the context of this id, while it exists */
};

/* Connection state of a peer; every change goes through ucx_peer_move,
 * which checks it against ucx_conn_legal.
 *   IDLE        an outgoing peer with no usable ep (never connected, or its
 *               ep failed or was dropped): its next operation opens one. A
 *               failed ep stays in ep until then, as UCX wants it closed
 *               outside its own callbacks.
 *   CONNECTING  ep created, its wire-up flush not done: operations queue in
 *               pend, in order, and are sent once it is UP.
 *   UP          ep usable.
 *   FAILED      an accepted peer whose ep failed, was dropped or forgotten:
 *               its operations fail until the client connects again. */
enum ucx_conn {
    UCX_CONN_IDLE,
    UCX_CONN_CONNECTING,
    UCX_CONN_UP,
    UCX_CONN_FAILED,
    UCX_CONN_STATES /* how many */
};

struct ucx_peer {
    struct hgx_list link;  /* in cls->peers, oldest first */
    struct ucx_peer *twin; /* the other peer of the same id (ucx_ep.c), or NULL */
    struct ucx_class *cls;
    ucp_ep_h ep;
    uint32_t id;
    bool self;
    enum ucx_conn state;
    bool outgoing;     /* we connected (lookup): can reconnect to sa */
    void *connect_req; /* the wire-up flush of the current ep, while CONNECTING */
    uint64_t connect_deadline_ns;
    /* Credits (ucx_credit.c). As a sender: unexpected sends this gen's ep
     * may still make. As a receiver: the peer's current account, its
     * messages taken and not returned (owed), of which consumed (due), and
     * the peer's messages kept in boxes, of every account. */
    unsigned credits;
    uint32_t account;
    unsigned owed, due, kept;
    uint32_t gen;               /* bumped whenever ep is dropped or replaced */
    unsigned inflight;          /* sends on this gen's ep holding a UCX request */
    struct sockaddr_storage sa; /* an outgoing peer's listener, IPv4 or IPv6 */
    socklen_t sa_len;
    char str[UCX_ADDR_STR_MAX]; /* "ucx+proto://IP:PORT" or "ucx+proto://[IPV6]:PORT" */
    struct hgx_list pend;       /* ops waiting for resources or wire-up, in order */
    struct na_addr addr; /* the peer's address: every lookup / source is a reference */
};

struct ucx_class {
    /* The worker runs serialized: every UCP call holds this lock, and
     * ucp_worker_progress, which may run long (a pass of up to
     * UCX_PROGRESS_MAX events, teardown waits of UCX_CLOSE_MS), is one of
     * them. So it is an HGX_LOCK_MUTEX, whose waiters sleep, never a spin
     * lock (hgx_lock.h); HGX_LOCK_NONE for a single-thread class. */
    hgx_lock_t lock;
    na_class_t *na_class;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_listener_h listener;
    int efd;                 /* the worker's event fd, in wait */
    struct na_wait_set wait; /* what a thread sleeps on (ucx_wait.c) */
    /* efd is out of the wait set while progress is stalled (ucx_stalled):
     * UCX's events then wait for receives, not for progress. */
    bool efd_muted;
    /* ucp_worker_arm said BUSY, which also consumed the worker's signal:
     * until progress runs, the fd may not fire for what is pending. */
    bool arm_busy;
    uint32_t id;
    char proto[8];
    /* AF_INET or AF_INET6: the family of the address the class names, else
     * the one na_init_info.addr_format asks for, else IPv4. UCX's tcp
     * transport serves one family (ucx_context_open), so lookups resolve
     * to it only. */
    int family;
    struct hgx_list peers;        /* every peer, until finalize */
    struct na_peer_map peer_map;  /* the first peer of each id */
    struct ucx_peer *last_sender; /* ucx_peer_find_sender's last answer */
    struct ucx_peer *self;
    /* Cancelled sends/RMA still in flight, until HGX_UCX_CANCEL_ESCALATE_MS. */
    struct na_cancel_watcher cancel_watcher;
    unsigned held;           /* unexpected messages kept, over every context id */
    unsigned unexp_max;      /* HGX_NA_UNEXPECTED_MAX: a box's bound */
    unsigned full;           /* boxes holding unexp_max messages or more */
    bool full_warned;        /* the first time a box filled was logged as a warning */
    long closing;            /* forced ep closes not finished yet */
    long queued;             /* ops in the peers' queues (resources, wire-up) */
    unsigned connecting;     /* peers in UCX_CONN_CONNECTING */
    unsigned send_window;    /* bound on a peer's inflight sends */
    struct na_slots regions; /* registered handles, named by peers' requests */
    struct na_slots rma_ops; /* put/get ops waiting for their reply, by cookie */
    struct hgx_list txs;     /* peers' transfers of our regions in flight */
    /* Expected messages whose receive was cancelled (ucx_late.c): their tags
     * by NA tag, how many are set, and the drops UCX has not finished yet. */
    ucp_tag_t late[UCX_LATE_SLOTS];
    unsigned late_live;
    long late_receiving;
    /* Unexpected messages are active messages, matched here per target
     * context id: n_unexp (max_contexts) entries, indexed by the id. */
    unsigned n_unexp;
    struct ucx_unexp_box unexp[];
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
    ucp_tag_t tag; /* expected send or receive */
    bool am;       /* unexpected send: an active message led by stage's header */
    /* Unexpected send: the header, then (short messages) a copy of the data;
     * UCX may read it, and iov, until the send completes. */
    unsigned char stage[UCX_STAGE_MAX];
    ucp_dt_iov_t iov[2];
    void *rbuf; /* unexpected receive: the posted buffer */
    size_t rsize;
    struct hgx_list qlink; /* in a queue: ucx_queue_* */
    size_t pieces;         /* RMA: its send and its reply, until each ended */
    na_return_t rma_ret;   /* RMA: first error */
    bool put;              /* RMA: a put (else a get) */
    bool landing;          /* get: the reply's data is being received */
    uint64_t cookie;       /* RMA: name in cls->rma_ops while the reply is awaited */
    ucp_dt_iov_t *riov;    /* RMA: the local segments moved (iov, or malloc'd) */
    size_t riov_n;
    uint32_t gen;                        /* send/RMA: peer generation at posting */
    bool inflight;                       /* send: a UCX request is outstanding */
    struct na_cancel_watch cancel_watch; /* cancelled in flight: cls->cancel_watcher */
};

struct ucx_tx;

/* ucx_ep.c */
na_return_t ucx_status_to_na(ucs_status_t status);
uint32_t ucx_hash_id(const char *s);
uint32_t ucx_random_id(void);
struct ucx_peer *ucx_peer_find(struct ucx_class *cls, uint32_t id);
struct ucx_peer *ucx_peer_find_sender(struct ucx_class *cls, uint32_t id);
struct ucx_peer *ucx_peer_of_ep(struct ucx_class *cls, ucp_ep_h ep);
struct ucx_peer *ucx_peer_new(struct ucx_class *cls, uint32_t id, const char *str,
                              bool outgoing);
void ucx_peer_move(struct ucx_peer *p, enum ucx_conn to);
void ucx_pending_fail(struct ucx_peer *p, na_return_t ret);
void ucx_peer_down(struct ucx_class *cls, struct ucx_peer *p, bool close);
void ucx_connect_check(struct ucx_class *cls);
uint64_t ucx_connect_next_ns(struct ucx_class *cls);
na_return_t ucx_peer_wake(struct ucx_class *cls, struct ucx_peer *p, const char *what);
void ucx_sockaddr_string(const struct sockaddr *sa, const char *proto, char *out,
                         size_t size);
void ucx_conn_cb(ucp_conn_request_h req, void *arg);
void ucx_close_ep(struct ucx_class *cls, ucp_ep_h ep);

/* ucx_progress.c */
void ucx_held_add(struct ucx_class *cls, struct ucx_unexp_box *box, int n);
void ucx_queued_add(struct ucx_class *cls, long n);
na_ops_poll_fn ucx_poll;
na_ops_poll_wait_fn ucx_poll_wait;
na_ops_poll_get_fd_fn ucx_poll_get_fd;
/* The wait fd (ucx_wait.c). */
na_return_t ucx_wait_open(struct ucx_class *cls);
na_return_t ucx_wait_add_worker(struct ucx_class *cls);
void ucx_wait_close(struct ucx_class *cls);
ucs_status_t ucx_wait_arm(struct ucx_class *cls);
bool ucx_wait_stalled(struct ucx_class *cls);
void ucx_wait_unstalled(struct ucx_class *cls);
na_ops_poll_try_wait_fn ucx_poll_try_wait;
void ucx_progress_while(struct ucx_class *cls, bool (*more)(void *arg), void *arg);
na_ops_cancel_fn ucx_cancel;

/* ucx_credit.c */
struct ucx_peer *ucx_credit_take(struct ucx_class *cls, struct ucx_peer *p,
                                 uint32_t account);
void ucx_credit_consumed(struct ucx_class *cls, struct ucx_peer *a, uint32_t account);
ucs_status_t ucx_am_credit_cb(void *arg, const void *header, size_t header_length,
                              void *data, size_t length,
                              const ucp_am_recv_param_t *param);

/* ucx_late.c */
void ucx_late_init(struct ucx_class *cls);
void ucx_late_expect(struct ucx_class *cls, ucp_tag_t tag);
void ucx_late_forget(struct ucx_class *cls, ucp_tag_t tag);
void ucx_late_drain(struct ucx_class *cls);
void ucx_late_drain_all(struct ucx_class *cls);

/* ucx_msg.c */
na_return_t ucx_failed_ret(struct ucx_op *uop, na_return_t ret);
void ucx_pending_resume(struct ucx_class *cls);
/* Both message limits: an expected message is as large as an unexpected one. */
na_ops_msg_get_max_unexpected_size_fn ucx_msg_get_max_size;
na_ops_msg_get_max_tag_fn ucx_msg_get_max_tag;
na_ops_msg_send_unexpected_fn ucx_msg_send_unexpected;
na_ops_msg_send_expected_fn ucx_msg_send_expected;
na_return_t ucx_am_handler_set(struct ucx_class *cls);
na_ops_msg_recv_unexpected_fn ucx_msg_recv_unexpected;
na_ops_msg_recv_expected_fn ucx_msg_recv_expected;

/* ucx_addr.c */
na_return_t ucx_addr_new(na_class_t *na_class, struct ucx_peer *p, na_addr_t **addr_p);
na_ops_addr_lookup_fn ucx_addr_lookup;
na_ops_addr_destroy_fn ucx_addr_destroy;
na_ops_addr_set_remove_fn ucx_addr_set_remove;
na_ops_addr_self_fn ucx_addr_self;
na_ops_addr_cmp_fn ucx_addr_cmp;
na_ops_addr_is_self_fn ucx_addr_is_self;
na_ops_addr_to_string_fn ucx_addr_to_string;
na_ops_addr_key_fn ucx_addr_key;
na_ops_addr_get_serialize_size_fn ucx_addr_get_serialize_size;
na_ops_addr_serialize_fn ucx_addr_serialize;
na_ops_addr_deserialize_fn ucx_addr_deserialize;

/* ucx_mem.c */
na_ops_mem_handle_create_segments_fn ucx_mem_handle_create_segments;
na_ops_mem_handle_create_fn ucx_mem_handle_create;
na_ops_mem_handle_get_max_segments_fn ucx_mem_handle_get_max_segments;
na_ops_mem_register_fn ucx_mem_register;
na_ops_mem_deregister_fn ucx_mem_deregister;
na_ops_mem_handle_free_fn ucx_mem_handle_free;
na_ops_mem_handle_get_serialize_size_fn ucx_mem_handle_get_serialize_size;
na_ops_mem_handle_serialize_fn ucx_mem_handle_serialize;
na_ops_mem_handle_deserialize_fn ucx_mem_handle_deserialize;

/* ucx_rma.c */
void ucx_tx_end_all(struct ucx_class *cls);
ucs_status_t ucx_am_rma_req_cb(void *arg, const void *header, size_t header_length,
                               void *data, size_t length,
                               const ucp_am_recv_param_t *param);
void ucx_region_quiesce(struct ucx_class *cls, struct ucx_mem_handle *mh);
void ucx_rma_piece_done(struct ucx_op *uop, na_return_t ret);
void ucx_rma_unname(struct ucx_class *cls, struct ucx_op *uop);
bool ucx_rma_awaiting(struct ucx_class *cls, struct ucx_op *uop);
void ucx_rma_fail_peer(struct ucx_class *cls, struct ucx_peer *p, na_return_t ret);
ucs_status_t ucx_am_rma_rep_cb(void *arg, const void *header, size_t header_length,
                               void *data, size_t length,
                               const ucp_am_recv_param_t *param);
void ucx_rma_resume(struct ucx_op *uop);
na_ops_rma_fn ucx_rma_op;

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
    hgx_list_init(&uop->qlink);
    uop->pieces = 0;
    uop->rma_ret = NA_SUCCESS;
    uop->put = false;
    uop->landing = false;
    uop->cookie = 0;
    uop->riov = NULL;
    uop->riov_n = 0;
    uop->gen = 0;
    uop->inflight = false;
    na_cancel_watch_init(&uop->cancel_watch);
}

/* Ops waiting in order, linked by ucx_op.qlink (one queue at a time): a
 * peer's pend (first in, first out) or a box's posted unexpected receives
 * (pushed to the front: newest first). */
static inline struct ucx_op *ucx_queue_first(const struct hgx_list *q)
{
    struct hgx_list *link = hgx_list_first(q);
    return link ? hgx_list_entry(link, struct ucx_op, qlink) : NULL;
}

static inline struct ucx_op *ucx_queue_pop(struct hgx_list *q)
{
    struct hgx_list *link = hgx_list_pop_front(q);
    return link ? hgx_list_entry(link, struct ucx_op, qlink) : NULL;
}

/* Take uop out of its queue; false if it was in none. */
static inline bool ucx_queue_remove(struct ucx_op *uop)
{
    if (!hgx_list_linked(&uop->qlink))
        return false;
    hgx_list_remove(&uop->qlink);
    return true;
}

static inline struct ucx_peer *ucx_peer_at(struct hgx_list *link)
{
    return hgx_list_entry(link, struct ucx_peer, link);
}

/* True while cancels wait for their escalation deadline. */
static inline bool ucx_cancels_watched(const struct ucx_class *cls)
{
    return !hgx_list_empty(&cls->cancel_watcher.pending);
}

static inline struct ucx_class *ucx_cls(const na_class_t *na_class)
{
    return na_class->plugin_class;
}

static inline struct ucx_op *ucx_op(na_op_id_t *op)
{
    return na_op_plugin(op);
}

static inline struct ucx_peer *ucx_peer_of(na_addr_t *addr)
{
    return (struct ucx_peer *)((char *)addr - offsetof(struct ucx_peer, addr));
}

/* Make sure p can take an operation: connect an outgoing peer that has no
 * ep. On NA_SUCCESS the op is posted if p is UP, else queued in p->pend.
 * Inline: a connected peer, the common case, costs one test per send. Lock
 * held. */
static inline na_return_t ucx_peer_ready(struct ucx_class *cls, struct ucx_peer *p,
                                         const char *what)
{
    if (__builtin_expect(p->state == UCX_CONN_UP, 1))
        return NA_SUCCESS;
    return ucx_peer_wake(cls, p, what);
}

/* The credit account p's unexpected messages name (ucx_credit.c): its
 * generation, and whether we connected. */
static inline uint32_t ucx_credit_account(const struct ucx_peer *p)
{
    return (p->gen & UCX_ACCOUNT_GEN_MASK) << 1 | (p->outgoing ? 1u : 0u);
}

static inline struct ucx_mem_handle *ucx_mh(na_mem_handle_t *mh)
{
    return (struct ucx_mem_handle *)mh;
}

#endif /* UCX_INT_H */
