/*
 * na_ofi.c -- NA plugin over libfabric RDM endpoints ("ofi+tcp", "ofi+sockets",
 * "ofi+shm").
 *
 * One endpoint, one address vector and one completion queue per class; every
 * context of the class shares them and an op completes on the context it was
 * posted on. Messages are tagged:
 *
 *   bit 63      unexpected message
 *   bit 62      plugin control message (RMA check), never an NA message
 *   bits 32..39 id of the receiving context
 *   bits 0..31  the NA tag of an expected message (0 in unexpected ones)
 *
 * An unexpected message carries its NA tag as remote CQ data instead, so
 * every receive matches its tag exactly (ignore mask 0): unexpected receives
 * take any unexpected message for their context, expected receives are
 * directed at their source. shm 1.17 matches a new receive against its queued
 * unmatched messages with the ignore mask left in each queued entry's slot by
 * the receive that last used it, not with the new receive's mask; with
 * wildcard receives those messages were never matched (lost) as soon as more
 * arrived than receives were posted. With every mask 0 the match is exact.
 *
 * An unexpected message starts with a fixed-size header carrying the
 * sender's raw address, so a receiver can answer a peer it has never seen.
 * Raw addresses are cached (peer table) so each peer uses one address vector
 * entry.
 *
 * Memory handles register each segment separately (tcp allows one iov per
 * registration), so a handle has one key per segment. Put/get walk both
 * segment lists and are split into several provider operations when the iov
 * limits or the maximum message size require it.
 *
 * Where the provider does not check RMA at the target (shm), the origin
 * asks the target first: a CHECK over the control tag, answered from the
 * target's table of live registrations (na_ofi_check.h), and only an OK
 * answer lets the put/get be posted.
 *
 * Posts the provider refuses with EAGAIN (rxm while it connects) wait in a
 * retry queue that progress drains. Cancel uses fi_cancel; what happens to an
 * op still pending a second later depends on the provider (see
 * ofi_cancel_policy): it may be completed without the provider, whose
 * contexts therefore live in a class pool rather than in the op id.
 */
#include "hgx_spin.h"
#include "na_netif.h"
#include "na_ofi_check.h"
#include "na_slots.h"
#include "na_plugin.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define OFI_API_VERSION FI_VERSION(1, 17)

#define OFI_TAG_UNEXPECTED (UINT64_C(1) << 63)
#define OFI_TAG_CTRL (UINT64_C(1) << 62)
#define OFI_TAG_CTX_SHIFT 32
#define OFI_TAG_NA_MASK UINT64_C(0xffffffff)

/* 8 KiB: a 4 KiB RPC payload and its headers fit one message (capped to
 * what the provider allows, see ofi_set_limits). */
#define OFI_MSG_SIZE_DEFAULT 8192
/* msg_max_inject providers: smallest inject size still worth capping to. */
#define OFI_MSG_SIZE_MIN_INJECT 4096
#define OFI_RAW_ADDR_MAX 60 /* sockaddr_in6 and shm names fit */
#define OFI_HDR_SIZE 64     /* magic, version, u16 length, raw address */
#define OFI_HDR_MAGIC 0xa7
#define OFI_HDR_VERSION 2 /* 2: the NA tag of unexpected messages in CQ data */

#define OFI_MAX_SEGMENTS 1024 /* per memory handle */
#define OFI_IOV_MAX 16 /* iovs per provider RMA operation (also capped by provider) */

#define OFI_MH_MAGIC 0x4f46 /* "OF" */
#define OFI_MH_VERSION 1
#define OFI_MH_HDR_SIZE 16 /* magic u16, version u8, flags u8, count u32, total u64 */
#define OFI_MH_SEG_SIZE 24 /* addr u64, len u64, key u64 */

#define OFI_CQ_BATCH 16
#define OFI_CQ_MAX_ROUNDS 16        /* bound the work of one poll */
#define OFI_RETRY_POLL_MS 1         /* progress often while posts wait to be retried */
#define OFI_RETRY_TIMEOUT_MS 5000   /* then a refused post fails (peer unreachable) */
#define OFI_RETRY_BLOCKED_MAX 16    /* refused peers tracked in one retry pass */
#define OFI_CANCEL_ESCALATE_MS 1000 /* a canceled op still pending: cancel again */
#define OFI_CANCEL_FORCE_MS 500     /* then complete it without the provider */
#define OFI_CANCEL_POLL_MS 100      /* wake up to escalate stuck cancels */
/* RMA check: receives kept posted for control messages, and how long an op
 * waits for the target's answer (then NA_HOSTUNREACH, as a refused post). */
#define OFI_CTRL_RECVS 2
#define OFI_CHECK_TIMEOUT_MS OFI_RETRY_TIMEOUT_MS
/* Without a wait fd, poll without sleeping this long after a CHECK left: its
 * answer usually comes sooner than a sleep (>= 50 us of timer slack) ends. */
#define OFI_CHECK_SPIN_NS 200000
/* Idle back-off without a wait fd (shm): sleep 1/OFI_SLEEP_IDLE_DIV of the
 * time since the last post or completion, within these bounds. */
#define OFI_SLEEP_MIN_NS 1000
#define OFI_SLEEP_MAX_NS 4000000
#define OFI_SLEEP_IDLE_DIV 8
/* Polling after traffic without completions: OFI_TRAFFIC_SPIN_MIN_NS after a
 * lone wake-up, doubling up to OFI_TRAFFIC_SPIN_MAX_NS while such wake-ups
 * follow each other within OFI_TRAFFIC_GAP_MUL spins (see ofi_traffic_poll). */
#define OFI_TRAFFIC_SPIN_MIN_NS 100000
#define OFI_TRAFFIC_SPIN_MAX_NS 2000000
#define OFI_TRAFFIC_GAP_MUL 4
/* Bounce buffers kept for reuse: a fresh one is faulted in page by page on
 * every get (~1000 page faults per 4 MiB, and a registration with
 * FI_MR_LOCAL). */
#define OFI_BOUNCE_CACHE_MAX 8
/* tcp gets of at least OFI_GET_GATED_MIN bytes read a head of OFI_GET_HEAD
 * bytes into a bounce buffer first and the rest straight into the caller's
 * memory once the head is in (OFI_CANCEL_FORCE_GETS). Smaller gets bounce
 * whole: one round trip, and their copy costs less than a second one. */
#define OFI_GET_HEAD 4096
#define OFI_GET_GATED_MIN ((size_t)64 << 10)
#define OFI_BOUNCE_CACHE_BYTES ((size_t)64 << 20)

#define OFI_PEER_BUCKETS_INIT 64
#define OFI_CTX_CHUNK 256 /* provider contexts allocated at a time */

/* What to do with a canceled op the provider has not completed after
 * OFI_CANCEL_ESCALATE_MS (fi_cancel only stops receives). NA_CANCELED is
 * reported only when the op's data cannot land afterwards. */
enum ofi_cancel_policy {
    /* sockets: fi_av_remove stops nothing and the provider keeps reading and
     * writing the op's buffers, so only its own completion is safe. */
    OFI_CANCEL_WAIT,
    /* shm: the initiator moves RMA data itself, so only an acknowledgment is
     * pending and the op can be completed without it (fi_av_remove would
     * unmap the peer under that acknowledgment and crash). */
    OFI_CANCEL_FORCE,
    /* tcp: a get starts with a head read into a plugin bounce buffer; only
     * once the target has answered it is the rest read straight into the
     * caller's memory (the gate opens). A get whose gate is still closed
     * (the target has not served it) is completed without the provider
     * after the escalation bound: its late data can only reach the bounce
     * buffer, freed with the last context, and the rest was never asked
     * for. Once the gate is open the get waits for the provider, as sends
     * and puts do: its data may still land, and nothing local can stop it.
     * Dropping the connection instead is unsafe in 1.17: closing a tcp
     * endpoint while a read response is partly received reports that read
     * twice, the second time with a NULL context, and rxm dereferences it
     * (and the partial data would already be in the caller's buffer). */
    OFI_CANCEL_FORCE_GETS,
};

/* Protocols offered and the provider behind each. */
struct ofi_proto {
    const char *name;       /* NA protocol */
    const char *prov_name;  /* libfabric provider */
    const char *str_prefix; /* prefix of string addresses, NULL for sockaddr ones */
    const char *iface_env;  /* the provider's own interface variable, or NULL */
    /* shm 1.17 deadlocks in fi_trecv directed at a peer whose message above
     * the inject size waits in the unexpected queue: stay at or below it. */
    bool msg_max_inject;
    /* shm 1.17 refuses a receive with ENOMEM, not EAGAIN, while all its rx_size
     * (1024) receive entries are taken: posted receives and the unexpected
     * messages it holds share them and free them when matched. Past that
     * bound nothing is lost: new messages wait in the receiver's command queue,
     * senders are refused (EAGAIN) once it holds rx_size, and refused posts
     * wait in our retry queue (OFI_RETRY_TIMEOUT_MS each). */
    bool recv_full_nomem;
    /* shm: a put above the inject size completes only once its data is in
     * the target's memory (the initiator writes it by CMA itself when the
     * part has one remote iov and no FI_DELIVERY_COMPLETE; otherwise the
     * target copies it and then acknowledges). Asking for
     * FI_DELIVERY_COMPLETE there only rules out the initiator's CMA path:
     * each put then waits for the target to progress, and an idle target
     * only polls between sleeps (push 1 MiB: 0.1x raw).
     * Parts get one remote iov so that every such put takes that path. */
    bool put_delivered_above_inject;
    /* shm: the provider does not check RMA at the target. A put/get with one
     * remote iov is done by the initiator alone with process_vm_readv/writev
     * at the descriptor's address, the key unchecked; on the other path the
     * target checks but drops a refused command unanswered, so the initiator
     * waits forever. hgx checks each put/get with the target first. */
    bool rma_unchecked;
    enum ofi_cancel_policy cancel_policy;
};

static const struct ofi_proto ofi_protos[] = {
    {"tcp", "tcp;ofi_rxm", NULL, "FI_TCP_IFACE", false, false, false, false,
     OFI_CANCEL_FORCE_GETS},
    {"sockets", "sockets", NULL, "FI_SOCKETS_IFACE", false, false, false, false,
     OFI_CANCEL_WAIT},
    {"shm", "shm", "fi_shm://", NULL, true, true, true, true, OFI_CANCEL_FORCE},
};

/* One remote endpoint; shared by every na_addr that names it. */
struct ofi_peer {
    struct ofi_peer *next; /* hash chain */
    uint64_t hash;
    _Atomic uint64_t fi_addr; /* FI_ADDR_NOTAVAIL until (re)inserted */
    atomic_int refs;          /* addresses and pending ops using it */
    atomic_int queued;        /* its ops in the retry queue */
    atomic_int bounces;       /* bounced gets the provider may still serve */
    bool removed;             /* NA_Addr_set_remove: free once unreferenced */
    size_t len;
    unsigned char raw[];
};

struct ofi_addr {
    struct na_addr head;
    struct ofi_peer *peer;
};

struct ofi_seg {
    uint64_t addr; /* local virtual address, or the owner's for remote handles */
    uint64_t len;
    uint64_t key;      /* valid once registered (or from the descriptor) */
    struct fid_mr *mr; /* local registration */
    void *desc;        /* local descriptor, for FI_MR_LOCAL providers */
};

struct ofi_mem_handle {
    struct na_mem_handle head;
    size_t nseg;
    struct ofi_seg *segs; /* &one_seg for contiguous handles */
    struct ofi_seg one_seg;
};

struct ofi_op;
struct ofi_class;

/* Provider-side buffer of a get (OFI_CANCEL_FORCE_GETS), shared by the op
 * and the contexts of its parts; the last reference returns it to the class
 * cache (or frees it). */
struct ofi_bounce {
    atomic_int refs;
    struct ofi_class *cls;
    struct ofi_peer *peer; /* referenced; its connection is kept meanwhile */
    struct fid_mr *mr;     /* FI_MR_LOCAL providers, covers cap bytes */
    size_t len;            /* bytes of the current get */
    size_t cap;            /* bytes allocated */
    struct ofi_bounce *next_free;
    unsigned char data[];
};

/* Context handed to libfabric with each provider operation. It lives in a
 * class pool, not in the op id: after a forced cancel the provider may still
 * hold it, and the op id may already be reused. Whoever swaps op to NULL
 * (the completion or the forced cancel) owns the outcome. */
struct ofi_ctx {
    struct fi_context2 fi;
    _Atomic(struct ofi_op *) op;
    struct ofi_bounce *bounce; /* referenced while the provider may write it */
    struct ofi_ctx *next_free;
    bool ctrl; /* the context of a control receive (struct ofi_ctrl_rx), not an op's */
};

struct ofi_ctx_chunk {
    struct ofi_ctx_chunk *next;
    struct ofi_ctx ctx[OFI_CTX_CHUNK];
};

/* Intrusive list of ops (retry queue, cancel list), under the class lock. */
struct ofi_link {
    struct ofi_link *prev, *next;
};

struct ofi_list {
    struct ofi_link *head, *tail;
    atomic_size_t count; /* read without the lock to skip empty lists */
};

#define OFI_OP_OF(link, member)                                                          \
    ((struct ofi_op *)((char *)(link)-offsetof(struct ofi_op, member)))

enum ofi_op_kind {
    OFI_OP_SEND,
    OFI_OP_SEND_UNEXPECTED,
    OFI_OP_RECV,
    OFI_OP_PUT,
    OFI_OP_GET
};

/* Position in the local and remote segment lists of a put/get. */
struct ofi_rma_cursor {
    const struct ofi_mem_handle *local, *remote;
    size_t lseg, rseg;   /* current segments */
    uint64_t loff, roff; /* offsets inside them */
    uint64_t left;       /* bytes still to describe */
};

/* Per-op state living in the op id (na_op_plugin). */
struct ofi_op {
    enum ofi_op_kind kind;
    struct ofi_peer *peer; /* target or expected source, referenced */
    fi_addr_t fi_addr;
    void *buf; /* message buffer, kept for retries, headers and reposts */
    size_t buf_size;
    void *desc;
    uint64_t tag;              /* NA tag in bits 0..31, sent as CQ data if unexpected */
    struct fid_mr *tmp_mr;     /* buffer registered for this op (FI_MR_LOCAL) */
    struct ofi_bounce *bounce; /* a bounced get's (or head's) landing area */
    const struct ofi_mem_handle *user_mh; /* where a bounced get is copied */
    uint64_t user_off;
    struct ofi_mem_handle bounce_mh; /* bounce buffer as a one-segment handle */
    /* Gated get (OFI_CANCEL_FORCE_GETS): parts past post_limit wait for the
     * head; whoever ends the head decides, under the class lock, whether the
     * gate opens (body posted from body_cur) or the body is abandoned. */
    bool gated;
    atomic_bool gate_open;
    size_t post_limit; /* parts that may be posted now */
    struct ofi_rma_cursor body_cur;

    /* Messages have one part; put/get one per provider operation. */
    struct ofi_rma_cursor cur; /* first byte of the next part to post */
    struct ofi_ctx **parts;    /* contexts of posted parts (&one_part for one) */
    struct ofi_ctx *one_part;
    size_t nparts, posted;
    atomic_size_t parts_left; /* parts in flight or unposted, + 1 while posting */
    atomic_int part_ret;      /* first error of a put/get part */

    atomic_bool done; /* provider completion handled */
    bool retry_queued;
    uint64_t retry_deadline_ms; /* give up refused posts then */
    ssize_t retry_rc;           /* outcome of the last retry */
    struct ofi_link retry_link;
    bool cancel_listed, escalated;
    uint64_t cancel_deadline_ms; /* escalate, then force OFI_CANCEL_FORCE_MS later */
    struct ofi_link cancel_link;
    /* RMA check (proto->rma_unchecked): while checking, the op waits for
     * checks_left answers to its cookie, listed in cls->checking. Whoever
     * clears checking under ctrl_lock owns the op's next step. */
    bool checking;
    size_t checks_left;
    uint64_t cookie;
    uint64_t check_deadline_ms;
    struct ofi_link check_link;
};

/* A receive kept posted for control messages. */
struct ofi_ctrl_rx {
    struct ofi_ctx ctx; /* ctx.ctrl set */
    bool posted;        /* under ctrl_lock */
    unsigned char buf[HGX_OFI_CTRL_HDR_SIZE + OFI_HDR_SIZE +
                      HGX_OFI_CHECK_MAX_RANGES * HGX_OFI_CHECK_RANGE_SIZE];
};

/* A control message the provider refused (EAGAIN), sent again by progress. */
struct ofi_ctrl_out {
    struct ofi_ctrl_out *next;
    struct ofi_peer *peer; /* referenced */
    uint64_t deadline_ms;  /* dropped then: the op waiting for it times out */
    size_t len;
    unsigned char buf[];
};

struct ofi_class {
    const struct ofi_proto *proto;
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_ep *ep;
    struct fid_av *av;
    struct fid_cq *cq;
    int wait_fd;         /* -1 when the CQ has no fd (shm, NA_NO_BLOCK) */
    bool no_block;       /* NA_NO_BLOCK: never wait, so no CQ wait object */
    bool single;         /* NA_THREAD_MODE_SINGLE: the mutexes guard nothing */
    char bind_desc[300]; /* " on HOST:PORT" for setup errors, "" for shm */
    uint64_t mr_mode;
    size_t iov_limit, rma_iov_limit, max_msg_size;
    size_t max_unexpected_size, max_expected_size;

    unsigned char self_raw[OFI_RAW_ADDR_MAX];
    size_t self_len;
    unsigned char hdr[OFI_HDR_SIZE]; /* our unexpected header, sent with each message */
    struct fid_mr *hdr_mr;
    void *hdr_desc;

    pthread_mutex_t lock; /* peer table, retry queue and cancel list */
    struct ofi_peer **buckets;
    size_t nbuckets, npeers;
    struct ofi_list retry;      /* ops the provider refused with EAGAIN, in order */
    atomic_int anon_queued;     /* queued ops without a peer (unexpected receives) */
    struct ofi_list canceled;   /* canceled ops still with the provider */
    atomic_ulong n_bad_headers; /* unexpected messages dropped as malformed */

    pthread_mutex_t ctx_lock; /* context pool and bounce cache */
    struct ofi_ctx *ctx_free;
    struct ofi_ctx_chunk *ctx_chunks;
    struct ofi_bounce *bounce_free;
    size_t bounce_free_count, bounce_free_bytes;

    /* Sleep back-off without a wait fd: posts and completions raise the flag,
     * the sleeper turns it into the time the idle period started. */
    atomic_bool active;
    _Atomic uint64_t idle_since_ns;

    /* Polling after wake-ups without completions (ofi_traffic_poll). */
    _Atomic uint64_t traffic_spin_ns, traffic_end_ns;

    /* RMA check (proto->rma_unchecked). ctrl_lock is taken before the class
     * lock, never after it. */
    pthread_mutex_t ctrl_lock;
    struct hgx_ofi_keytab keys;     /* our registrations, judged for peers */
    struct na_slots cookies;        /* our ops waiting for answers */
    struct ofi_list checking;       /* those ops, first deadline first */
    _Atomic uint64_t check_sent_ns; /* when the last CHECK left */
    struct ofi_ctrl_rx *ctrl_rx;    /* OFI_CTRL_RECVS receives */
    struct fid_mr *ctrl_rx_mr;      /* FI_MR_LOCAL providers */
    atomic_int ctrl_unposted;       /* receives to post again */
    struct ofi_ctrl_out *outbox;
    atomic_size_t outbox_count;
    atomic_ulong n_bad_ctrl;      /* malformed control messages dropped */
    atomic_ulong n_check_refused; /* CHECKs we refused */
    atomic_ulong n_stale_answers; /* answers for no waiting op (late, forged) */
};

static inline struct ofi_class *ofi_class(const na_class_t *na_class)
{
    return na_class->plugin_class;
}

static uint64_t ofi_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t ofi_now_ms(void)
{
    return ofi_now_ns() / 1000000u;
}

/* For the sleep back-off of classes without a wait fd; no clock read on
 * the fast path. */
static inline void ofi_activity_mark(struct ofi_class *cls)
{
    if (cls->wait_fd < 0 && !atomic_load_explicit(&cls->active, memory_order_relaxed))
        atomic_store_explicit(&cls->active, true, memory_order_relaxed);
}

/* Translate a positive libfabric error code. */
static na_return_t ofi_na_error(int err)
{
    switch (err) {
    case 0:
        return NA_SUCCESS;
    case FI_EAGAIN:
        return NA_AGAIN;
    case FI_ENOMEM:
    case FI_ENOSPC:
        return NA_NOMEM;
    case FI_EINVAL:
        return NA_INVALID_ARG;
    case FI_ECANCELED:
        return NA_CANCELED;
    case FI_ETRUNC:
    case FI_EMSGSIZE:
    case FI_ETOOSMALL:
        return NA_MSGSIZE;
    case FI_EACCES:
        return NA_ACCESS;
    case FI_EPERM:
    case FI_EKEYREJECTED:
        return NA_PERMISSION;
    case FI_EFAULT:
        return NA_FAULT;
    case FI_EBUSY:
        return NA_BUSY;
    case FI_ENODEV:
    case FI_ENODATA:
        return NA_NODEV;
    case FI_ENOSYS:
    case FI_EOPNOTSUPP:
        return NA_OPNOTSUPPORTED;
    case FI_EOVERFLOW:
        return NA_OVERFLOW;
    case FI_EADDRINUSE:
        return NA_ADDRINUSE;
    case FI_EADDRNOTAVAIL:
        return NA_ADDRNOTAVAIL;
    case FI_ETIMEDOUT:
        return NA_TIMEOUT;
    case FI_EIO:
    case FI_EREMOTEIO:
        return NA_IO_ERROR;
    case FI_ENOENT: /* sockets, when it cannot connect to the peer */
    case FI_ENETDOWN:
    case FI_ENETUNREACH:
    case FI_EHOSTDOWN:
    case FI_EHOSTUNREACH:
    case FI_ECONNREFUSED:
    case FI_ECONNRESET:
    case FI_ECONNABORTED:
    case FI_ENOTCONN:
    case FI_ESHUTDOWN:
        return NA_HOSTUNREACH;
    default:
        return NA_PROTOCOL_ERROR;
    }
}

/* ---------------------------------------------------------------------------
 * Protocols
 * ------------------------------------------------------------------------- */

static const struct ofi_proto *ofi_proto_find(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof(ofi_protos) / sizeof(ofi_protos[0]); i++)
        if (strlen(ofi_protos[i].name) == len &&
            strncmp(ofi_protos[i].name, name, len) == 0)
            return &ofi_protos[i];
    return NULL;
}

static bool ofi_check_protocol(const char *protocol_name)
{
    return protocol_name && ofi_proto_find(protocol_name, strlen(protocol_name)) != NULL;
}

/* ---------------------------------------------------------------------------
 * Raw addresses: sockaddr_in/in6 for tcp and sockets, a name for shm
 * ------------------------------------------------------------------------- */

/* Check untrusted raw address bytes and put them in canonical form, so that
 * equal peers have equal bytes. */
static bool ofi_raw_addr_normalize(const struct ofi_class *cls, unsigned char *raw,
                                   size_t *len)
{
    const char *prefix = cls->proto->str_prefix;

    if (prefix) {
        size_t n = strnlen((const char *)raw, *len);
        size_t plen = strlen(prefix);
        if (n <= plen || memcmp(raw, prefix, plen) != 0)
            return false;
        for (size_t i = plen; i < n; i++)
            if (!isgraph(raw[i]))
                return false;
        *len = n; /* drop the NUL libfabric may count */
        return true;
    }

    sa_family_t family;
    if (*len < sizeof(family))
        return false;
    memcpy(&family, raw, sizeof(family));
    if (family == AF_INET && *len == sizeof(struct sockaddr_in)) {
        struct sockaddr_in sin;
        memcpy(&sin, raw, sizeof(sin));
        if (sin.sin_port == 0)
            return false;
        memset(sin.sin_zero, 0, sizeof(sin.sin_zero));
        memcpy(raw, &sin, sizeof(sin));
        return true;
    }
    if (family == AF_INET6 && *len == sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 sin6;
        memcpy(&sin6, raw, sizeof(sin6));
        if (sin6.sin6_port == 0)
            return false;
        sin6.sin6_flowinfo = 0;
        memcpy(raw, &sin6, sizeof(sin6));
        return true;
    }
    return false;
}

/* "tcp://1.2.3.4:5", "tcp://[::1]:5" or "shm://name" into buf (NUL included). */
static size_t ofi_raw_addr_format(const struct ofi_class *cls, const unsigned char *raw,
                                  size_t len, char *buf, size_t buf_size)
{
    const char *proto = cls->proto->name;

    if (cls->proto->str_prefix) {
        size_t plen = strlen(cls->proto->str_prefix);
        return (size_t)snprintf(buf, buf_size, "ofi+%s://%.*s", proto, (int)(len - plen),
                                (const char *)raw + plen) +
               1;
    }
    char host[INET6_ADDRSTRLEN] = "?";
    sa_family_t family;
    memcpy(&family, raw, sizeof(family));
    if (family == AF_INET) {
        struct sockaddr_in sin;
        memcpy(&sin, raw, sizeof(sin));
        inet_ntop(AF_INET, &sin.sin_addr, host, sizeof(host));
        return (size_t)snprintf(buf, buf_size, "ofi+%s://%s:%u", proto, host,
                                ntohs(sin.sin_port)) +
               1;
    }
    struct sockaddr_in6 sin6;
    memcpy(&sin6, raw, sizeof(sin6));
    inet_ntop(AF_INET6, &sin6.sin6_addr, host, sizeof(host));
    return (size_t)snprintf(buf, buf_size, "ofi+%s://[%s]:%u", proto, host,
                            ntohs(sin6.sin6_port)) +
           1;
}

/* Resolve host (name or literal) to a socket address of the given family
 * (AF_UNSPEC: IPv4 preferred). */
static na_return_t ofi_resolve_host(const char *host, int family, unsigned int port,
                                    struct sockaddr_storage *ss, size_t *len)
{
    struct addrinfo hints = {.ai_family = family, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res, *pick = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);

    if (rc != 0) {
        HGX_LOG_ERROR(OFI, "cannot resolve host \"%s\": %s", host, gai_strerror(rc));
        return NA_ADDRNOTAVAIL;
    }
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET) {
            pick = ai;
            break;
        }
        if (ai->ai_family == AF_INET6 && !pick)
            pick = ai;
    }
    if (!pick) {
        freeaddrinfo(res);
        HGX_LOG_ERROR(OFI, "host \"%s\" has no IPv4/IPv6 address", host);
        return NA_ADDRNOTAVAIL;
    }
    memset(ss, 0, sizeof(*ss));
    memcpy(ss, pick->ai_addr, pick->ai_addrlen);
    *len = pick->ai_addrlen;
    if (pick->ai_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
    freeaddrinfo(res);
    return NA_SUCCESS;
}

/* "host:port" or "[v6]:port" of a peer into its raw address. */
static na_return_t ofi_parse_ip_addr(const struct ofi_class *cls, const char *hp,
                                     unsigned char *raw, size_t *len)
{
    char host[256];
    const char *colon;

    if (hp[0] == '[') {
        const char *end = strchr(hp, ']');
        if (!end || end[1] != ':' || (size_t)(end - hp - 1) >= sizeof(host))
            return NA_INVALID_ARG;
        memcpy(host, hp + 1, (size_t)(end - hp - 1));
        host[end - hp - 1] = '\0';
        colon = end + 1;
    } else {
        colon = strrchr(hp, ':');
        if (!colon || colon == hp || (size_t)(colon - hp) >= sizeof(host))
            return NA_INVALID_ARG;
        memcpy(host, hp, (size_t)(colon - hp));
        host[colon - hp] = '\0';
    }
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || errno != 0 || port <= 0 || port > 65535)
        return NA_INVALID_ARG;

    sa_family_t family;
    memcpy(&family, cls->self_raw, sizeof(family));
    struct sockaddr_storage ss;
    size_t sslen;
    na_return_t ret = ofi_resolve_host(host, family, (unsigned int)port, &ss, &sslen);
    if (ret != NA_SUCCESS)
        return ret;
    memcpy(raw, &ss, sslen);
    *len = sslen;
    return ofi_raw_addr_normalize(cls, raw, len) ? NA_SUCCESS : NA_INVALID_ARG;
}

/* ---------------------------------------------------------------------------
 * Peer table: raw address -> address vector entry
 * ------------------------------------------------------------------------- */

static uint64_t ofi_hash(const unsigned char *raw, size_t len)
{
    uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ raw[i]) * UINT64_C(1099511628211);
    return h;
}

static struct ofi_peer *ofi_peer_find_locked(struct ofi_class *cls,
                                             const unsigned char *raw, size_t len,
                                             uint64_t hash)
{
    for (struct ofi_peer *p = cls->buckets[hash % cls->nbuckets]; p; p = p->next)
        if (p->hash == hash && p->len == len && memcmp(p->raw, raw, len) == 0)
            return p;
    return NULL;
}

static void ofi_peer_table_grow_locked(struct ofi_class *cls)
{
    size_t n = cls->nbuckets * 2;
    struct ofi_peer **buckets = calloc(n, sizeof(*buckets));
    if (!buckets)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < cls->nbuckets; i++)
        for (struct ofi_peer *p = cls->buckets[i], *next; p; p = next) {
            next = p->next;
            p->next = buckets[p->hash % n];
            buckets[p->hash % n] = p;
        }
    free(cls->buckets);
    cls->buckets = buckets;
    cls->nbuckets = n;
}

static void ofi_peer_unlink_locked(struct ofi_class *cls, struct ofi_peer *peer)
{
    struct ofi_peer **pp = &cls->buckets[peer->hash % cls->nbuckets];
    while (*pp != peer)
        pp = &(*pp)->next;
    *pp = peer->next;
    cls->npeers--;
}

static na_return_t ofi_av_insert_locked(struct ofi_class *cls, struct ofi_peer *peer)
{
    char addr[OFI_RAW_ADDR_MAX + 1]; /* string addresses need their NUL */
    fi_addr_t fi_addr = FI_ADDR_NOTAVAIL;

    memcpy(addr, peer->raw, peer->len);
    addr[peer->len] = '\0';
    int rc = fi_av_insert(cls->av, addr, 1, &fi_addr, 0, NULL);
    if (rc != 1) {
        char str[128];
        ofi_raw_addr_format(cls, peer->raw, peer->len, str, sizeof(str));
        HGX_LOG_ERROR(OFI, "fi_av_insert(%s) failed: %s", str,
                      rc < 0 ? fi_strerror(-rc) : "address rejected");
        return rc < 0 ? ofi_na_error(-rc) : NA_ADDRNOTAVAIL;
    }
    atomic_store(&peer->fi_addr, fi_addr);
    return NA_SUCCESS;
}

/* One thread alone uses a class in NA_THREAD_MODE_SINGLE: no mutex then. */
static void ofi_mutex_lock(const struct ofi_class *cls, pthread_mutex_t *m)
{
    if (!cls->single)
        pthread_mutex_lock(m);
}

static void ofi_mutex_unlock(const struct ofi_class *cls, pthread_mutex_t *m)
{
    if (!cls->single)
        pthread_mutex_unlock(m);
}

/* Find or create the peer of a normalized raw address, referenced. */
static na_return_t ofi_peer_get(struct ofi_class *cls, const unsigned char *raw,
                                size_t len, struct ofi_peer **peer_p)
{
    uint64_t hash = ofi_hash(raw, len);
    na_return_t ret = NA_SUCCESS;

    ofi_mutex_lock(cls, &cls->lock);
    struct ofi_peer *peer = ofi_peer_find_locked(cls, raw, len, hash);
    if (!peer) {
        peer = calloc(1, sizeof(*peer) + len);
        HGX_CHECK(OFI, !peer, out, ret, NA_NOMEM, "out of memory for a peer");
        peer->hash = hash;
        peer->len = len;
        memcpy(peer->raw, raw, len);
        atomic_init(&peer->fi_addr, FI_ADDR_NOTAVAIL);
        ret = ofi_av_insert_locked(cls, peer);
        if (ret != NA_SUCCESS) {
            free(peer);
            goto out;
        }
        if (cls->npeers >= cls->nbuckets)
            ofi_peer_table_grow_locked(cls);
        peer->next = cls->buckets[hash % cls->nbuckets];
        cls->buckets[hash % cls->nbuckets] = peer;
        cls->npeers++;
    }
    peer->removed = false;
    atomic_fetch_add(&peer->refs, 1);
    *peer_p = peer;
out:
    ofi_mutex_unlock(cls, &cls->lock);
    return ret;
}

static void ofi_av_remove_locked(struct ofi_class *cls, struct ofi_peer *peer)
{
    fi_addr_t fi_addr = atomic_exchange(&peer->fi_addr, FI_ADDR_NOTAVAIL);
    if (fi_addr == FI_ADDR_NOTAVAIL)
        return;
    int rc = fi_av_remove(cls->av, &fi_addr, 1, 0);
    if (rc != 0)
        HGX_LOG_ERROR(OFI, "fi_av_remove failed: %s", fi_strerror(-rc));
}

static void ofi_peer_ref(struct ofi_peer *peer)
{
    atomic_fetch_add(&peer->refs, 1);
}

/* Unreferenced peers stay cached for the next message, unless removed. */
static void ofi_peer_put(struct ofi_class *cls, struct ofi_peer *peer)
{
    if (atomic_fetch_sub(&peer->refs, 1) != 1)
        return;
    ofi_mutex_lock(cls, &cls->lock);
    /* Only ofi_peer_get (under the lock) revives a peer: re-check here. */
    bool drop = atomic_load(&peer->refs) == 0 && peer->removed;
    if (drop) {
        ofi_av_remove_locked(cls, peer); /* in case an op re-inserted it */
        ofi_peer_unlink_locked(cls, peer);
    }
    ofi_mutex_unlock(cls, &cls->lock);
    if (drop)
        free(peer);
}

/* Address vector entry of a peer, re-inserted after NA_Addr_set_remove or a
 * cancel escalation dropped it. */
static na_return_t ofi_peer_fi_addr_locked(struct ofi_class *cls, struct ofi_peer *peer,
                                           fi_addr_t *fi_addr)
{
    na_return_t ret = NA_SUCCESS;

    if (atomic_load(&peer->fi_addr) == FI_ADDR_NOTAVAIL)
        ret = ofi_av_insert_locked(cls, peer);
    *fi_addr = atomic_load(&peer->fi_addr);
    return ret;
}

static na_return_t ofi_peer_fi_addr(struct ofi_class *cls, struct ofi_peer *peer,
                                    fi_addr_t *fi_addr)
{
    *fi_addr = atomic_load(&peer->fi_addr);
    if (*fi_addr != FI_ADDR_NOTAVAIL)
        return NA_SUCCESS;
    ofi_mutex_lock(cls, &cls->lock);
    na_return_t ret = ofi_peer_fi_addr_locked(cls, peer, fi_addr);
    ofi_mutex_unlock(cls, &cls->lock);
    return ret;
}

/* ---------------------------------------------------------------------------
 * Addresses
 * ------------------------------------------------------------------------- */

static na_return_t ofi_addr_new(na_class_t *na_class, struct ofi_peer *peer,
                                na_addr_t **addr_p)
{
    struct ofi_addr *addr = malloc(sizeof(*addr));
    if (!addr) {
        HGX_LOG_ERROR(OFI, "out of memory for an address");
        ofi_peer_put(ofi_class(na_class), peer);
        return NA_NOMEM;
    }
    na_addr_init(na_class, &addr->head);
    addr->peer = peer;
    *addr_p = &addr->head;
    return NA_SUCCESS;
}

/* Address of normalized raw bytes, with refcount 1. */
static na_return_t ofi_addr_from_raw(na_class_t *na_class, const unsigned char *raw,
                                     size_t len, na_addr_t **addr_p)
{
    struct ofi_peer *peer;
    na_return_t ret = ofi_peer_get(ofi_class(na_class), raw, len, &peer);
    if (ret != NA_SUCCESS)
        return ret;
    return ofi_addr_new(na_class, peer, addr_p);
}

static inline struct ofi_peer *ofi_addr_peer(na_addr_t *addr)
{
    return ((struct ofi_addr *)addr)->peer;
}

static na_return_t ofi_addr_lookup(na_class_t *na_class, const char *name,
                                   na_addr_t **addr_p)
{
    struct ofi_class *cls = ofi_class(na_class);
    unsigned char raw[OFI_RAW_ADDR_MAX];
    size_t len;

    if (strncmp(name, "ofi+", 4) == 0)
        name += 4;
    const char *sep = strstr(name, "://");
    if (!sep || sep == name || sep[3] == '\0') {
        HGX_LOG_ERROR(OFI, "malformed address \"%s\" (want %s://...)", name,
                      cls->proto->name);
        return NA_INVALID_ARG;
    }
    if (ofi_proto_find(name, (size_t)(sep - name)) != cls->proto) {
        HGX_LOG_ERROR(OFI, "address \"%s\" is not for protocol %s", name,
                      cls->proto->name);
        return NA_PROTONOSUPPORT;
    }
    const char *rest = sep + 3;
    if (cls->proto->str_prefix) {
        size_t plen = strlen(cls->proto->str_prefix);
        len = plen + strlen(rest);
        if (len > OFI_RAW_ADDR_MAX) {
            HGX_LOG_ERROR(OFI, "address \"%s\" is too long", name);
            return NA_INVALID_ARG;
        }
        memcpy(raw, cls->proto->str_prefix, plen);
        memcpy(raw + plen, rest, len - plen);
        if (!ofi_raw_addr_normalize(cls, raw, &len)) {
            HGX_LOG_ERROR(OFI, "malformed address \"%s\"", name);
            return NA_INVALID_ARG;
        }
    } else {
        na_return_t ret = ofi_parse_ip_addr(cls, rest, raw, &len);
        if (ret != NA_SUCCESS) {
            if (ret == NA_INVALID_ARG)
                HGX_LOG_ERROR(OFI, "malformed address \"%s\" (want %s://HOST:PORT)", name,
                              cls->proto->name);
            return ret;
        }
    }
    return ofi_addr_from_raw(na_class, raw, len, addr_p);
}

static void ofi_addr_destroy(na_class_t *na_class, na_addr_t *addr)
{
    ofi_peer_put(ofi_class(na_class), ofi_addr_peer(addr));
    free(addr);
}

/* Drop the address vector entry (and rxm's connection); a later use
 * re-inserts it, and the cache entry goes once nothing references it.
 * While a bounced get may still be served the drop waits for it (see
 * OFI_CANCEL_FORCE_GETS). */
static na_return_t ofi_addr_set_remove(na_class_t *na_class, na_addr_t *addr)
{
    struct ofi_class *cls = ofi_class(na_class);
    struct ofi_peer *peer = ofi_addr_peer(addr);

    ofi_mutex_lock(cls, &cls->lock);
    if (atomic_load(&peer->bounces) == 0)
        ofi_av_remove_locked(cls, peer);
    peer->removed = true;
    ofi_mutex_unlock(cls, &cls->lock);
    return NA_SUCCESS;
}

static na_return_t ofi_addr_self(na_class_t *na_class, na_addr_t **addr_p)
{
    struct ofi_class *cls = ofi_class(na_class);
    return ofi_addr_from_raw(na_class, cls->self_raw, cls->self_len, addr_p);
}

static bool ofi_addr_cmp(na_class_t *na_class, na_addr_t *addr1, na_addr_t *addr2)
{
    struct ofi_peer *p1 = ofi_addr_peer(addr1), *p2 = ofi_addr_peer(addr2);
    (void)na_class;
    return p1 == p2 || (p1->len == p2->len && memcmp(p1->raw, p2->raw, p1->len) == 0);
}

static bool ofi_addr_is_self(na_class_t *na_class, na_addr_t *addr)
{
    struct ofi_class *cls = ofi_class(na_class);
    struct ofi_peer *peer = ofi_addr_peer(addr);
    return peer->len == cls->self_len && memcmp(peer->raw, cls->self_raw, peer->len) == 0;
}

static na_return_t ofi_addr_to_string(na_class_t *na_class, char *buf, size_t *buf_size,
                                      na_addr_t *addr)
{
    struct ofi_peer *peer = ofi_addr_peer(addr);
    char str[128];
    size_t need =
        ofi_raw_addr_format(ofi_class(na_class), peer->raw, peer->len, str, sizeof(str));

    if (buf && *buf_size >= need)
        memcpy(buf, str, need);
    bool fits = !buf || *buf_size >= need;
    *buf_size = need;
    return fits ? NA_SUCCESS : NA_OVERFLOW;
}

/* Serialized address: u16 length (little endian) then the raw bytes. */
static size_t ofi_addr_get_serialize_size(na_class_t *na_class, na_addr_t *addr)
{
    (void)na_class;
    return 2 + ofi_addr_peer(addr)->len;
}

static na_return_t ofi_addr_serialize(na_class_t *na_class, void *buf, size_t buf_size,
                                      na_addr_t *addr)
{
    struct ofi_peer *peer = ofi_addr_peer(addr);
    unsigned char *p = buf;

    (void)na_class;
    if (buf_size < 2 + peer->len) {
        HGX_LOG_ERROR(OFI, "buffer of %zu bytes too small for an address of %zu",
                      buf_size, 2 + peer->len);
        return NA_OVERFLOW;
    }
    p[0] = (unsigned char)(peer->len & 0xff);
    p[1] = (unsigned char)(peer->len >> 8);
    memcpy(p + 2, peer->raw, peer->len);
    return NA_SUCCESS;
}

static na_return_t ofi_addr_deserialize(na_class_t *na_class, na_addr_t **addr_p,
                                        const void *buf, size_t buf_size)
{
    const unsigned char *p = buf;
    unsigned char raw[OFI_RAW_ADDR_MAX];

    if (buf_size < 2) {
        HGX_LOG_ERROR(OFI, "serialized address too short (%zu bytes)", buf_size);
        return NA_INVALID_ARG;
    }
    size_t len = (size_t)p[0] | (size_t)p[1] << 8;
    if (len == 0 || len > OFI_RAW_ADDR_MAX || buf_size < 2 + len) {
        HGX_LOG_ERROR(OFI, "serialized address has a bad length (%zu in %zu bytes)", len,
                      buf_size);
        return NA_PROTOCOL_ERROR;
    }
    memcpy(raw, p + 2, len);
    if (!ofi_raw_addr_normalize(ofi_class(na_class), raw, &len)) {
        HGX_LOG_ERROR(OFI, "serialized address is not a valid %s address",
                      ofi_class(na_class)->proto->name);
        return NA_PROTOCOL_ERROR;
    }
    return ofi_addr_from_raw(na_class, raw, len, addr_p);
}

/* ---------------------------------------------------------------------------
 * Class setup
 * ------------------------------------------------------------------------- */

static struct fi_info *ofi_hints(const struct ofi_proto *proto, bool single)
{
    struct fi_info *hints = fi_allocinfo();
    if (!hints)
        return NULL;
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ |
                  FI_REMOTE_WRITE | FI_DIRECTED_RECV;
    hints->mode = FI_CONTEXT | FI_CONTEXT2; /* each posted op has its own fi_context2 */
    hints->domain_attr->cq_data_size = sizeof(na_tag_t); /* unexpected messages' tags */
    /* One thread alone: the provider may skip its own locks. */
    hints->domain_attr->threading = single ? FI_THREAD_DOMAIN : FI_THREAD_SAFE;
    /* Every registration mode we can honor; the provider keeps what it needs.
     * Not FI_MR_PROV_KEY: tcp and sockets then number keys 0, 1, 2... in
     * every process alike, and a descriptor whose key was changed by one, or
     * that came from another process, reached another region of the target.
     * Our keys are random (ofi_mr_open). */
    hints->domain_attr->mr_mode =
        FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_ENDPOINT;
    hints->fabric_attr->prov_name = strdup(proto->prov_name);
    if (!hints->fabric_attr->prov_name) {
        fi_freeinfo(hints);
        return NULL;
    }
    return hints;
}

/* Source address for tcp/sockets, listener or not: a client's address is
 * its name in every message header and rxm's connection requests, so it
 * must be one its peers can reach (na_netif.h chooses it). Port 0: any. */
static na_return_t ofi_hints_set_src(struct ofi_class *cls, struct fi_info *hints,
                                     const struct na_info *info)
{
    const struct na_netif_spec spec = {.host = info->host,
                                       .port = info->port,
                                       .subnet = info->init_info->ip_subnet,
                                       .env_name = cls->proto->iface_env,
                                       .family = AF_UNSPEC};
    struct sockaddr_storage ss;
    socklen_t len;
    na_return_t ret = na_netif_select(&spec, &ss, &len, NULL);
    if (ret != NA_SUCCESS)
        return ret;
    char desc[sizeof(cls->bind_desc) - 4];
    ofi_raw_addr_format(cls, (const unsigned char *)&ss, len, desc, sizeof(desc));
    snprintf(cls->bind_desc, sizeof(cls->bind_desc), " on %s", desc);
    hints->src_addr = malloc(len);
    if (!hints->src_addr)
        return NA_NOMEM;
    memcpy(hints->src_addr, &ss, len);
    hints->src_addrlen = len;
    hints->addr_format = ss.ss_family == AF_INET ? FI_SOCKADDR_IN : FI_SOCKADDR_IN6;
    return NA_SUCCESS;
}

/* libfabric reads these once, at its first call (whatever the protocol);
 * a user setting wins. */
static void ofi_set_provider_defaults(void)
{
    /* Make fi_av_remove close rxm's connection to the peer, as
     * NA_Addr_set_remove asks. */
    setenv("FI_AV_REMOVE_CLEANUP", "1", 0);
    /* rxm lets tcp receive straight into the user's buffer; a message that
     * does not fit then makes tcp drop the connection. Bounce buffers keep a
     * truncation local. */
    setenv("FI_OFI_RXM_ENABLE_DYN_RBUF", "0", 0);
}

static na_return_t ofi_getinfo(struct ofi_class *cls, const struct na_info *info)
{
    na_return_t ret = NA_SUCCESS;
    struct fi_info *hints = ofi_hints(cls->proto, cls->single);

    HGX_CHECK(OFI, !hints, out, ret, NA_NOMEM, "out of memory for fi_info hints");
    if (!cls->proto->str_prefix) {
        ret = ofi_hints_set_src(cls, hints, info);
        if (ret != NA_SUCCESS)
            goto out;
    } else if (info->host) {
        HGX_LOG_DEBUG(OFI, "shm ignores host \"%s\"", info->host);
    }
    ofi_set_provider_defaults();
    int rc = fi_getinfo(OFI_API_VERSION, NULL, NULL, 0, hints, &cls->info);
    HGX_CHECK(
        OFI, rc != 0, out, ret, rc == -FI_ENODATA ? NA_NODEV : ofi_na_error(-rc),
        "libfabric provider \"%s\" unavailable for ofi+%s (RDM, tagged, RMA, directed "
        "receive, thread safe): %s",
        cls->proto->prov_name, cls->proto->name, fi_strerror(-rc));
    cls->mr_mode = cls->info->domain_attr->mr_mode;
    HGX_LOG_DEBUG(OFI, "provider %s, domain %s, mr_mode 0x%llx",
                  cls->info->fabric_attr->prov_name, cls->info->domain_attr->name,
                  (unsigned long long)cls->mr_mode);
out:
    fi_freeinfo(hints);
    return ret;
}

/* Prefer a CQ with an fd to block on; shm has none (and its fi_cq_sread
 * spins), so it gets no wait object and poll_wait sleeps in short steps.
 * NA_NO_BLOCK (busy polling) asks for none either: a wait fd is not free.
 * With one, rxm (1.17) opens its tcp CQ with an fd too, and tcp keeps every
 * connection socket and its completion-signal socketpair in an epoll set
 * nested in ours: each message arrival and each completion signal then runs
 * the kernel's epoll wake-up callbacks on two levels, 1.5-2.5 us per round
 * trip here (the raw loop too). Every wait object rxm can wake on costs the
 * same; doing without one costs milliseconds after an idle gap
 * (docs/na-ofi.md, "ofi+tcp round trip and the wait object"). */
static na_return_t ofi_open_cq(struct ofi_class *cls)
{
    struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_FD};
    int rc = cls->no_block ? -FI_ENOSYS : fi_cq_open(cls->domain, &attr, &cls->cq, NULL);

    if (rc == 0) {
        rc = fi_control(&cls->cq->fid, FI_GETWAIT, &cls->wait_fd);
        if (rc != 0) {
            HGX_LOG_ERROR(OFI, "fi_control(FI_GETWAIT) failed: %s", fi_strerror(-rc));
            return ofi_na_error(-rc);
        }
        return NA_SUCCESS;
    }
    HGX_LOG_DEBUG(OFI, "no fd wait object (%s), polling the CQ",
                  cls->no_block ? "NA_NO_BLOCK" : fi_strerror(-rc));
    attr.wait_obj = FI_WAIT_NONE;
    rc = fi_cq_open(cls->domain, &attr, &cls->cq, NULL);
    if (rc != 0) {
        HGX_LOG_ERROR(OFI, "fi_cq_open failed: %s", fi_strerror(-rc));
        return ofi_na_error(-rc);
    }
    return NA_SUCCESS;
}

/* Return the NA error of a failed setup call (logged) from the caller. */
#define OFI_TRY(cls, call, what)                                                         \
    do {                                                                                 \
        int rc_ = (call);                                                                \
        if (rc_ != 0) {                                                                  \
            HGX_LOG_ERROR(OFI, "%s failed for ofi+%s%s: %s", what, (cls)->proto->name,   \
                          (cls)->bind_desc, fi_strerror(-rc_));                          \
            return ofi_na_error(-rc_);                                                   \
        }                                                                                \
    } while (0)

static na_return_t ofi_open_endpoint(struct ofi_class *cls)
{
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};

    OFI_TRY(cls, fi_fabric(cls->info->fabric_attr, &cls->fabric, NULL), "fi_fabric");
    OFI_TRY(cls, fi_domain(cls->fabric, cls->info, &cls->domain, NULL), "fi_domain");
    /* tcp binds its listening socket here (address in use / not available),
     * sockets in fi_enable. */
    OFI_TRY(cls, fi_endpoint(cls->domain, cls->info, &cls->ep, NULL), "fi_endpoint");
    na_return_t ret = ofi_open_cq(cls);
    if (ret != NA_SUCCESS)
        return ret;
    OFI_TRY(cls, fi_av_open(cls->domain, &av_attr, &cls->av, NULL), "fi_av_open");
    OFI_TRY(cls, fi_ep_bind(cls->ep, &cls->cq->fid, FI_TRANSMIT | FI_RECV),
            "fi_ep_bind(cq)");
    OFI_TRY(cls, fi_ep_bind(cls->ep, &cls->av->fid, 0), "fi_ep_bind(av)");
    OFI_TRY(cls, fi_enable(cls->ep), "fi_enable");
    return NA_SUCCESS;
}

static na_return_t ofi_read_self_addr(struct ofi_class *cls)
{
    unsigned char name[256] = {0};
    size_t len = sizeof(name);
    int rc = fi_getname(&cls->ep->fid, name, &len);

    if (rc != 0 || len > OFI_RAW_ADDR_MAX) {
        HGX_LOG_ERROR(OFI, "fi_getname failed or address too long (%zu): %s", len,
                      fi_strerror(rc ? -rc : FI_ETOOSMALL));
        return NA_PROTOCOL_ERROR;
    }
    if (!ofi_raw_addr_normalize(cls, name, &len)) {
        HGX_LOG_ERROR(OFI, "unexpected address format from fi_getname");
        return NA_PROTOCOL_ERROR;
    }
    memcpy(cls->self_raw, name, len);
    cls->self_len = len;

    /* The header every unexpected message we send starts with. */
    cls->hdr[0] = OFI_HDR_MAGIC;
    cls->hdr[1] = OFI_HDR_VERSION;
    cls->hdr[2] = (unsigned char)(len & 0xff);
    cls->hdr[3] = (unsigned char)(len >> 8);
    memcpy(cls->hdr + 4, name, len);
    return NA_SUCCESS;
}

static struct fid_mr *ofi_mr_open(struct ofi_class *cls, const void *buf, size_t len,
                                  uint64_t access, na_return_t *ret);

static size_t ofi_size_limit(size_t requested, size_t provider_max, const char *what)
{
    size_t size = requested ? requested : OFI_MSG_SIZE_DEFAULT;
    if (size < OFI_HDR_SIZE)
        size = OFI_HDR_SIZE;
    if (size > provider_max) {
        if (requested)
            HGX_LOG_WARNING(OFI, "%s size %zu capped to the provider's %zu", what, size,
                            provider_max);
        size = provider_max;
    }
    return size;
}

static void ofi_set_limits(struct ofi_class *cls, const struct na_init_info *init_info)
{
    const struct fi_info *fi = cls->info;
    size_t max_msg = fi->ep_attr->max_msg_size;

    cls->max_msg_size = max_msg;
    if (cls->proto->msg_max_inject &&
        fi->tx_attr->inject_size >= OFI_MSG_SIZE_MIN_INJECT &&
        fi->tx_attr->inject_size < max_msg)
        max_msg = fi->tx_attr->inject_size;
    cls->iov_limit =
        fi->tx_attr->iov_limit < OFI_IOV_MAX ? fi->tx_attr->iov_limit : OFI_IOV_MAX;
    cls->rma_iov_limit = fi->tx_attr->rma_iov_limit < OFI_IOV_MAX
                             ? fi->tx_attr->rma_iov_limit
                             : OFI_IOV_MAX;
    if (cls->iov_limit == 0)
        cls->iov_limit = 1;
    if (cls->rma_iov_limit == 0 || cls->proto->put_delivered_above_inject)
        cls->rma_iov_limit = 1;
    cls->max_unexpected_size =
        ofi_size_limit(init_info->max_unexpected_size, max_msg, "unexpected");
    cls->max_expected_size =
        ofi_size_limit(init_info->max_expected_size, max_msg, "expected");
    HGX_LOG_DEBUG(OFI, "iov limit %zu, rma iov limit %zu, max msg %zu, inject %zu",
                  cls->iov_limit, cls->rma_iov_limit, max_msg, fi->tx_attr->inject_size);
}

static void ofi_bounce_put(struct ofi_bounce *b);
static void ofi_bounce_free(struct ofi_bounce *b);
static na_return_t ofi_ctrl_init(struct ofi_class *cls);

static void ofi_class_free(struct ofi_class *cls)
{
    if (cls->ep)
        fi_close(&cls->ep->fid);
    /* Contexts of forced cancels the provider never completed. */
    for (struct ofi_ctx_chunk *c = cls->ctx_chunks; c; c = c->next)
        for (size_t i = 0; i < OFI_CTX_CHUNK; i++)
            if (c->ctx[i].bounce)
                ofi_bounce_put(c->ctx[i].bounce);
    /* Their registrations go before the domain. */
    for (struct ofi_bounce *b = cls->bounce_free, *next; b; b = next) {
        next = b->next_free;
        ofi_bounce_free(b);
    }
    if (cls->hdr_mr)
        fi_close(&cls->hdr_mr->fid);
    if (cls->ctrl_rx_mr)
        fi_close(&cls->ctrl_rx_mr->fid);
    free(cls->ctrl_rx);
    for (struct ofi_ctrl_out *o = cls->outbox, *next; o; o = next) {
        next = o->next;
        free(o); /* its peer goes with the peer table */
    }
    hgx_ofi_keytab_destroy(&cls->keys);
    na_slots_fini(&cls->cookies);
    if (cls->av)
        fi_close(&cls->av->fid);
    if (cls->cq)
        fi_close(&cls->cq->fid);
    if (cls->domain)
        fi_close(&cls->domain->fid);
    if (cls->fabric)
        fi_close(&cls->fabric->fid);
    if (cls->info)
        fi_freeinfo(cls->info);
    if (cls->buckets)
        for (size_t i = 0; i < cls->nbuckets; i++)
            for (struct ofi_peer *p = cls->buckets[i], *next; p; p = next) {
                next = p->next;
                free(p);
            }
    free(cls->buckets);
    for (struct ofi_ctx_chunk *c = cls->ctx_chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    pthread_mutex_destroy(&cls->ctrl_lock);
    pthread_mutex_destroy(&cls->ctx_lock);
    pthread_mutex_destroy(&cls->lock);
    free(cls);
}

static void ofi_cleanup(void);

static na_return_t ofi_initialize(na_class_t *na_class, const struct na_info *info,
                                  bool listen)
{
    na_return_t ret = NA_SUCCESS;
    struct ofi_class *cls = calloc(1, sizeof(*cls));

    (void)listen; /* an rxm endpoint always accepts connections */
    HGX_CHECK(OFI, !cls, error, ret, NA_NOMEM, "out of memory for the ofi class");
    pthread_mutex_init(&cls->lock, NULL);
    pthread_mutex_init(&cls->ctx_lock, NULL);
    pthread_mutex_init(&cls->ctrl_lock, NULL);
    hgx_ofi_keytab_init(&cls->keys);
    cls->wait_fd = -1;
    cls->no_block = (na_class->progress_mode & NA_NO_BLOCK) != 0;
    cls->single = na_class->single;
    cls->proto = ofi_proto_find(info->protocol_name, strlen(info->protocol_name));
    HGX_CHECK(OFI, !cls->proto, error, ret, NA_PROTONOSUPPORT,
              "protocol \"%s\" not supported by ofi", info->protocol_name);
    cls->nbuckets = OFI_PEER_BUCKETS_INIT;
    cls->buckets = calloc(cls->nbuckets, sizeof(*cls->buckets));
    HGX_CHECK(OFI, !cls->buckets, error, ret, NA_NOMEM,
              "out of memory for the peer table");

    /* A dead process's shm region under a recycled PID makes fi_enable
     * fail with EBUSY: drop such leftovers first. */
    if (strcmp(cls->proto->name, "shm") == 0)
        ofi_cleanup();
    ret = ofi_getinfo(cls, info);
    if (ret != NA_SUCCESS)
        goto error;
    ret = ofi_open_endpoint(cls);
    if (ret != NA_SUCCESS)
        goto error;
    ret = ofi_read_self_addr(cls);
    if (ret != NA_SUCCESS)
        goto error;
    ofi_set_limits(cls, info->init_info);
    if (cls->mr_mode & FI_MR_LOCAL) {
        cls->hdr_mr = ofi_mr_open(cls, cls->hdr, sizeof(cls->hdr), FI_SEND, &ret);
        if (!cls->hdr_mr)
            goto error;
        cls->hdr_desc = fi_mr_desc(cls->hdr_mr);
    }
    if (cls->proto->rma_unchecked && (ret = ofi_ctrl_init(cls)) != NA_SUCCESS)
        goto error;
    na_class->plugin_class = cls;
    return NA_SUCCESS;

error:
    if (cls)
        ofi_class_free(cls);
    return ret;
}

static na_return_t ofi_finalize(na_class_t *na_class)
{
    struct ofi_class *cls = ofi_class(na_class);
    if (cls)
        ofi_class_free(cls);
    na_class->plugin_class = NULL;
    return NA_SUCCESS;
}

/* libfabric's shm regions are /dev/shm/PID:N:N; remove those of dead processes. */
static void ofi_cleanup(void)
{
    DIR *dir = opendir("/dev/shm");
    struct dirent *ent;

    if (!dir)
        return;
    while ((ent = readdir(dir)) != NULL) {
        int pid, a, b, end = 0;
        if (sscanf(ent->d_name, "%d:%d:%d%n", &pid, &a, &b, &end) != 3 ||
            ent->d_name[end] != '\0' || pid <= 0)
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        char path[300];
        snprintf(path, sizeof(path), "/dev/shm/%s", ent->d_name);
        if (unlink(path) == 0)
            HGX_LOG_DEBUG(OFI, "removed stale shm region %s", path);
    }
    closedir(dir);
}

static na_return_t ofi_context_create(na_class_t *na_class, na_context_t *context,
                                      uint8_t id)
{
    (void)na_class;
    (void)id; /* carried in the tags */
    context->plugin_context = NULL;
    return NA_SUCCESS;
}

static na_return_t ofi_context_destroy(na_class_t *na_class, na_context_t *context)
{
    (void)na_class;
    (void)context;
    return NA_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Memory registration
 * ------------------------------------------------------------------------- */

/* Register one buffer; FI_MR_ENDPOINT providers also need it bound and enabled. */
static struct fid_mr *ofi_mr_open(struct ofi_class *cls, const void *buf, size_t len,
                                  uint64_t access, na_return_t *ret)
{
    struct fid_mr *mr = NULL;
    int rc = -FI_ENOKEY;

    /* A random key: a forged or foreign one names no registration (a
     * collision with a live key is refused by the provider: draw again). */
    for (int tries = 0; rc == -FI_ENOKEY && tries < 8; tries++) {
        uint64_t key = 0;
        if (getrandom(&key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
            HGX_LOG_ERROR(OFI, "getrandom failed for a memory key");
            *ret = NA_PROTOCOL_ERROR;
            return NULL;
        }
        rc = fi_mr_reg(cls->domain, buf, len, access, 0, key, 0, &mr, NULL);
    }

    if (rc == 0 && (cls->mr_mode & FI_MR_ENDPOINT)) {
        rc = fi_mr_bind(mr, &cls->ep->fid, 0);
        if (rc == 0)
            rc = fi_mr_enable(mr);
    }
    if (rc != 0) {
        HGX_LOG_ERROR(OFI, "registering %zu bytes at %p failed: %s", len, buf,
                      fi_strerror(-rc));
        if (mr)
            fi_close(&mr->fid);
        *ret = ofi_na_error(-rc);
        return NULL;
    }
    return mr;
}

static void ofi_mr_close(struct fid_mr *mr)
{
    int rc = fi_close(&mr->fid);
    if (rc != 0)
        HGX_LOG_ERROR(OFI, "closing a memory registration failed: %s", fi_strerror(-rc));
}

/* Message buffers are registered up front when the provider wants local
 * descriptors (FI_MR_LOCAL); plugin_data is then their registration. */
static void *ofi_msg_buf_alloc(na_class_t *na_class, size_t buf_size, unsigned long flags,
                               void **plugin_data_p)
{
    struct ofi_class *cls = ofi_class(na_class);
    void *buf = NULL;
    na_return_t ret;

    (void)flags;
    *plugin_data_p = NULL;
    if (posix_memalign(&buf, (size_t)sysconf(_SC_PAGESIZE), buf_size) != 0) {
        HGX_LOG_ERROR(OFI, "out of memory for a %zu-byte message buffer", buf_size);
        return NULL;
    }
    if (cls->mr_mode & FI_MR_LOCAL) {
        struct fid_mr *mr = ofi_mr_open(cls, buf, buf_size, FI_SEND | FI_RECV, &ret);
        if (!mr) {
            free(buf);
            return NULL;
        }
        *plugin_data_p = mr;
    }
    return buf;
}

static void ofi_msg_buf_free(na_class_t *na_class, void *buf, void *plugin_data)
{
    (void)na_class;
    if (plugin_data)
        ofi_mr_close(plugin_data);
    free(buf);
}

static inline struct ofi_mem_handle *ofi_mh(na_mem_handle_t *mh)
{
    return (struct ofi_mem_handle *)mh;
}

static struct ofi_mem_handle *ofi_mh_alloc(size_t nseg, unsigned long flags)
{
    struct ofi_mem_handle *mh = calloc(1, sizeof(*mh));
    if (!mh)
        return NULL;
    mh->nseg = nseg;
    mh->segs = nseg == 1 ? &mh->one_seg : calloc(nseg, sizeof(*mh->segs));
    if (!mh->segs) {
        free(mh);
        return NULL;
    }
    mh->head.flags = flags;
    return mh;
}

static na_return_t ofi_mem_handle_create_segments(na_class_t *na_class,
                                                  struct na_segment *segments,
                                                  size_t segment_count,
                                                  unsigned long flags,
                                                  na_mem_handle_t **mem_handle_p);

static na_return_t ofi_mem_handle_create(na_class_t *na_class, void *buf, size_t buf_size,
                                         unsigned long flags,
                                         na_mem_handle_t **mem_handle_p)
{
    struct na_segment seg = {.base = buf, .len = buf_size};
    return ofi_mem_handle_create_segments(na_class, &seg, 1, flags, mem_handle_p);
}

static na_return_t ofi_mem_handle_create_segments(na_class_t *na_class,
                                                  struct na_segment *segments,
                                                  size_t segment_count,
                                                  unsigned long flags,
                                                  na_mem_handle_t **mem_handle_p)
{
    (void)na_class;
    if (segment_count == 0 || segment_count > OFI_MAX_SEGMENTS) {
        HGX_LOG_ERROR(OFI, "segment count %zu not in 1..%d", segment_count,
                      OFI_MAX_SEGMENTS);
        return NA_INVALID_ARG;
    }
    struct ofi_mem_handle *mh = ofi_mh_alloc(segment_count, flags);
    if (!mh) {
        HGX_LOG_ERROR(OFI, "out of memory for a memory handle");
        return NA_NOMEM;
    }
    for (size_t i = 0; i < segment_count; i++) {
        mh->segs[i].addr = (uint64_t)(uintptr_t)segments[i].base;
        mh->segs[i].len = segments[i].len;
        mh->head.len += segments[i].len;
    }
    *mem_handle_p = &mh->head;
    return NA_SUCCESS;
}

/* Where hgx checks RMA, a registered segment is also in the key table. */
static void ofi_mh_close_segs(struct ofi_class *cls, struct ofi_mem_handle *mh)
{
    for (size_t i = 0; i < mh->nseg; i++)
        if (mh->segs[i].mr) {
            if (cls->proto->rma_unchecked) {
                ofi_mutex_lock(cls, &cls->ctrl_lock);
                hgx_ofi_keytab_remove(&cls->keys, mh->segs[i].key);
                ofi_mutex_unlock(cls, &cls->ctrl_lock);
            }
            ofi_mr_close(mh->segs[i].mr);
            mh->segs[i].mr = NULL;
            mh->segs[i].desc = NULL;
        }
}

static void ofi_mem_handle_free(na_class_t *na_class, na_mem_handle_t *mem_handle)
{
    struct ofi_mem_handle *mh = ofi_mh(mem_handle);
    ofi_mh_close_segs(ofi_class(na_class), mh);
    if (mh->segs != &mh->one_seg)
        free(mh->segs);
    free(mh);
}

static size_t ofi_mem_handle_get_max_segments(const na_class_t *na_class)
{
    (void)na_class;
    return OFI_MAX_SEGMENTS;
}

static uint64_t ofi_mr_access(unsigned long flags)
{
    uint64_t access = FI_READ | FI_WRITE; /* as the local side of put/get */
    if (flags & NA_MEM_READ_ONLY)
        access |= FI_REMOTE_READ;
    if (flags & NA_MEM_WRITE_ONLY)
        access |= FI_REMOTE_WRITE;
    return access;
}

/* Record a new registration for the targets' checks (rma_unchecked). */
static na_return_t ofi_mr_expose(struct ofi_class *cls, const struct ofi_seg *seg,
                                 unsigned long flags)
{
    unsigned int access = ((flags & NA_MEM_READ_ONLY) ? HGX_OFI_CHECK_READ : 0) |
                          ((flags & NA_MEM_WRITE_ONLY) ? HGX_OFI_CHECK_WRITE : 0);

    ofi_mutex_lock(cls, &cls->ctrl_lock);
    na_return_t ret =
        hgx_ofi_keytab_add(&cls->keys, seg->key, seg->addr, seg->len, access);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    if (ret != NA_SUCCESS)
        HGX_LOG_ERROR(OFI, "recording a registration for RMA checks failed: %s",
                      ret == NA_NOMEM ? "out of memory" : "key in use");
    return ret;
}

/* One registration per segment: tcp allows a single iov per registration. */
static na_return_t ofi_mem_register(na_class_t *na_class, na_mem_handle_t *mem_handle)
{
    struct ofi_class *cls = ofi_class(na_class);
    struct ofi_mem_handle *mh = ofi_mh(mem_handle);
    uint64_t access = ofi_mr_access(mh->head.flags);
    na_return_t ret = NA_SUCCESS;

    for (size_t i = 0; i < mh->nseg; i++) {
        struct ofi_seg *seg = &mh->segs[i];
        if (seg->len == 0)
            continue;
        seg->mr = ofi_mr_open(cls, (void *)(uintptr_t)seg->addr, seg->len, access, &ret);
        if (seg->mr) {
            seg->key = fi_mr_key(seg->mr);
            seg->desc = fi_mr_desc(seg->mr);
            if (cls->proto->rma_unchecked &&
                (ret = ofi_mr_expose(cls, seg, mh->head.flags)) != NA_SUCCESS) {
                ofi_mr_close(seg->mr);
                seg->mr = NULL;
            }
        }
        if (!seg->mr) {
            ofi_mh_close_segs(cls, mh);
            return ret;
        }
    }
    mh->head.registered = true;
    return NA_SUCCESS;
}

static na_return_t ofi_mem_deregister(na_class_t *na_class, na_mem_handle_t *mem_handle)
{
    struct ofi_mem_handle *mh = ofi_mh(mem_handle);
    ofi_mh_close_segs(ofi_class(na_class), mh);
    mh->head.registered = false;
    return NA_SUCCESS;
}

static void ofi_put_le(unsigned char *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t ofi_get_le(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static size_t ofi_mem_handle_get_serialize_size(na_class_t *na_class,
                                                na_mem_handle_t *mem_handle)
{
    (void)na_class;
    return OFI_MH_HDR_SIZE + ofi_mh(mem_handle)->nseg * OFI_MH_SEG_SIZE;
}

static na_return_t ofi_mem_handle_serialize(na_class_t *na_class, void *buf,
                                            size_t buf_size, na_mem_handle_t *mem_handle)
{
    struct ofi_mem_handle *mh = ofi_mh(mem_handle);
    size_t need = ofi_mem_handle_get_serialize_size(na_class, mem_handle);
    unsigned char *p = buf;

    if (buf_size < need) {
        HGX_LOG_ERROR(OFI, "buffer of %zu bytes too small for a handle of %zu", buf_size,
                      need);
        return NA_OVERFLOW;
    }
    ofi_put_le(p, OFI_MH_MAGIC, 2);
    p[2] = OFI_MH_VERSION;
    p[3] = (unsigned char)mh->head.flags;
    ofi_put_le(p + 4, mh->nseg, 4);
    ofi_put_le(p + 8, mh->head.len, 8);
    p += OFI_MH_HDR_SIZE;
    for (size_t i = 0; i < mh->nseg; i++, p += OFI_MH_SEG_SIZE) {
        ofi_put_le(p, mh->segs[i].addr, 8);
        ofi_put_le(p + 8, mh->segs[i].len, 8);
        ofi_put_le(p + 16, mh->segs[i].key, 8);
    }
    return NA_SUCCESS;
}

/* Untrusted bytes: every field is checked before it is used. */
static na_return_t ofi_mem_handle_deserialize(na_class_t *na_class,
                                              na_mem_handle_t **mem_handle_p,
                                              const void *buf, size_t buf_size)
{
    const unsigned char *p = buf;

    (void)na_class;
    if (buf_size < OFI_MH_HDR_SIZE || ofi_get_le(p, 2) != OFI_MH_MAGIC ||
        p[2] != OFI_MH_VERSION) {
        HGX_LOG_ERROR(OFI, "not an ofi memory handle (%zu bytes)", buf_size);
        return NA_PROTOCOL_ERROR;
    }
    unsigned long flags = p[3];
    uint64_t nseg = ofi_get_le(p + 4, 4);
    uint64_t total = ofi_get_le(p + 8, 8);
    if (flags == 0 || (flags & ~(unsigned long)NA_MEM_READWRITE) != 0 || nseg == 0 ||
        nseg > OFI_MAX_SEGMENTS || buf_size < OFI_MH_HDR_SIZE + nseg * OFI_MH_SEG_SIZE ||
        total > SIZE_MAX) {
        HGX_LOG_ERROR(OFI,
                      "memory handle descriptor has bad flags (0x%lx), segment count "
                      "(%llu) or size (%zu bytes)",
                      flags, (unsigned long long)nseg, buf_size);
        return NA_PROTOCOL_ERROR;
    }
    struct ofi_mem_handle *mh = ofi_mh_alloc((size_t)nseg, flags);
    if (!mh) {
        HGX_LOG_ERROR(OFI, "out of memory for a memory handle");
        return NA_NOMEM;
    }
    uint64_t sum = 0;
    p += OFI_MH_HDR_SIZE;
    for (size_t i = 0; i < nseg; i++, p += OFI_MH_SEG_SIZE) {
        struct ofi_seg *seg = &mh->segs[i];
        seg->addr = ofi_get_le(p, 8);
        seg->len = ofi_get_le(p + 8, 8);
        seg->key = ofi_get_le(p + 16, 8);
        if (seg->len > UINT64_MAX - seg->addr || seg->len > UINT64_MAX - sum) {
            ofi_mem_handle_free(na_class, &mh->head);
            HGX_LOG_ERROR(OFI, "memory handle segment %zu overflows", i);
            return NA_PROTOCOL_ERROR;
        }
        sum += seg->len;
    }
    if (sum != total) {
        ofi_mem_handle_free(na_class, &mh->head);
        HGX_LOG_ERROR(OFI, "memory handle segments sum to %llu, not %llu",
                      (unsigned long long)sum, (unsigned long long)total);
        return NA_PROTOCOL_ERROR;
    }
    mh->head.len = (size_t)total;
    mh->head.remote = true;
    *mem_handle_p = &mh->head;
    return NA_SUCCESS;
}

/* ---------------------------------------------------------------------------
 * Op state, contexts, retry queue
 * ------------------------------------------------------------------------- */

static inline struct ofi_op *ofi_op(na_op_id_t *op)
{
    return na_op_plugin(op);
}

static void ofi_list_push(struct ofi_list *list, struct ofi_link *link, bool front)
{
    link->prev = front ? NULL : list->tail;
    link->next = front ? list->head : NULL;
    if (link->prev)
        link->prev->next = link;
    else
        list->head = link;
    if (link->next)
        link->next->prev = link;
    else
        list->tail = link;
    atomic_fetch_add(&list->count, 1);
}

static void ofi_list_remove(struct ofi_list *list, struct ofi_link *link)
{
    if (link->prev)
        link->prev->next = link->next;
    else
        list->head = link->next;
    if (link->next)
        link->next->prev = link->prev;
    else
        list->tail = link->prev;
    atomic_fetch_sub(&list->count, 1);
}

static struct ofi_ctx *ofi_ctx_get(struct ofi_class *cls, struct ofi_op *oop)
{
    ofi_mutex_lock(cls, &cls->ctx_lock);
    if (!cls->ctx_free) {
        struct ofi_ctx_chunk *chunk = malloc(sizeof(*chunk));
        if (!chunk) {
            ofi_mutex_unlock(cls, &cls->ctx_lock);
            HGX_LOG_ERROR(OFI, "out of memory for operation contexts");
            return NULL;
        }
        chunk->next = cls->ctx_chunks;
        cls->ctx_chunks = chunk;
        for (size_t i = 0; i < OFI_CTX_CHUNK; i++) {
            chunk->ctx[i].bounce = NULL;
            chunk->ctx[i].ctrl = false;
            chunk->ctx[i].next_free = cls->ctx_free;
            cls->ctx_free = &chunk->ctx[i];
        }
    }
    struct ofi_ctx *ctx = cls->ctx_free;
    cls->ctx_free = ctx->next_free;
    ofi_mutex_unlock(cls, &cls->ctx_lock);
    atomic_store(&ctx->op, oop);
    ctx->bounce = oop->bounce;
    if (ctx->bounce)
        atomic_fetch_add(&ctx->bounce->refs, 1);
    return ctx;
}

static void ofi_ctx_put(struct ofi_class *cls, struct ofi_ctx *ctx)
{
    if (ctx->bounce) {
        ofi_bounce_put(ctx->bounce);
        ctx->bounce = NULL;
    }
    ofi_mutex_lock(cls, &cls->ctx_lock);
    ctx->next_free = cls->ctx_free;
    cls->ctx_free = ctx;
    ofi_mutex_unlock(cls, &cls->ctx_lock);
}

static void ofi_bounce_free(struct ofi_bounce *b)
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
static void ofi_bounce_put(struct ofi_bounce *b)
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

static void ofi_seek(const struct ofi_mem_handle *mh, uint64_t offset, size_t *seg,
                     uint64_t *off);

/* Copy a bounced get to where the caller asked for it. */
static void ofi_bounce_copy_out(const struct ofi_op *oop)
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

static inline bool ofi_op_is_rma(const struct ofi_op *oop)
{
    return oop->kind == OFI_OP_PUT || oop->kind == OFI_OP_GET;
}

/* Reset the op area for a new operation; peer (may be NULL) gains a reference. */
static struct ofi_op *ofi_op_start(na_op_id_t *op, enum ofi_op_kind kind,
                                   struct ofi_peer *peer)
{
    struct ofi_op *oop = ofi_op(op);

    oop->kind = kind;
    oop->peer = peer;
    if (peer)
        ofi_peer_ref(peer);
    oop->desc = NULL;
    oop->tmp_mr = NULL;
    oop->bounce = NULL;
    oop->gated = false;
    atomic_store(&oop->gate_open, false);
    oop->one_part = NULL;
    oop->parts = &oop->one_part;
    oop->nparts = 1;
    oop->post_limit = 1;
    oop->posted = 0;
    oop->retry_queued = false;
    oop->cancel_listed = false;
    oop->escalated = false;
    oop->checking = false;
    atomic_store(&oop->done, false);
    return oop;
}

/* Free what ofi_op_start and posting acquired. Contexts left in parts[]
 * are done with the provider (ghosts of a forced cancel were taken out). */
static void ofi_op_release(struct ofi_class *cls, struct ofi_op *oop)
{
    for (size_t i = 0; i < oop->posted; i++)
        if (oop->parts[i])
            ofi_ctx_put(cls, oop->parts[i]);
    if (oop->parts != &oop->one_part)
        free(oop->parts);
    if (oop->tmp_mr)
        ofi_mr_close(oop->tmp_mr);
    if (oop->bounce)
        ofi_bounce_put(oop->bounce);
    if (oop->peer)
        ofi_peer_put(cls, oop->peer);
}

/* The op is over: release it and hand it to the core. */
static void ofi_op_finish(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret)
{
    na_op_id_t *op = na_op_from_plugin(oop);

    /* Store done before reading the state; ofi_cancel does the reverse, so
     * one of us sees the other (both are seq_cst). */
    atomic_store(&oop->done, true);
    if (na_op_cancel_requested(op)) {
        ofi_mutex_lock(cls, &cls->lock);
        if (oop->cancel_listed)
            ofi_list_remove(&cls->canceled, &oop->cancel_link);
        oop->cancel_listed = false;
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
static void ofi_part_done(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret)
{
    if (ret != NA_SUCCESS) {
        int expected = NA_SUCCESS;
        atomic_compare_exchange_strong(&oop->part_ret, &expected, (int)ret);
    }
    if (atomic_fetch_sub(&oop->parts_left, 1) == 1)
        ofi_op_finish(cls, oop, (na_return_t)atomic_load(&oop->part_ret));
}

/* Give up the parts not posted yet; the op ends with ret once the others land. */
static void ofi_parts_abandon(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret)
{
    int expected = NA_SUCCESS;
    atomic_compare_exchange_strong(&oop->part_ret, &expected, (int)ret);
    atomic_fetch_sub(&oop->parts_left, oop->nparts - oop->posted);
    ofi_part_done(cls, oop, NA_SUCCESS);
}

/* Caller holds the lock with the op listed as canceled (so it is alive). */
static void ofi_cancel_contexts_locked(struct ofi_class *cls, struct ofi_op *oop)
{
    for (size_t i = 0; i < oop->posted; i++)
        if (oop->parts[i])
            fi_cancel(&cls->ep->fid, oop->parts[i]);
}

/* ---------------------------------------------------------------------------
 * Posting
 * ------------------------------------------------------------------------- */

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

static ssize_t ofi_post_rma_part(struct ofi_class *cls, struct ofi_op *oop,
                                 struct ofi_ctx *ctx)
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

static ssize_t ofi_post_send(struct ofi_class *cls, struct ofi_op *oop,
                             struct ofi_ctx *ctx)
{
    if (oop->kind == OFI_OP_SEND)
        return fi_tsend(cls->ep, oop->buf, oop->buf_size, oop->desc, oop->fi_addr,
                        oop->tag, ctx);
    /* Our own header replaces whatever the caller left in its first bytes. */
    struct iovec iov[2] = {
        {.iov_base = cls->hdr, .iov_len = OFI_HDR_SIZE},
        {.iov_base = (char *)oop->buf + OFI_HDR_SIZE,
         .iov_len = oop->buf_size - OFI_HDR_SIZE},
    };
    void *desc[2] = {cls->hdr_desc, oop->desc};
    const struct fi_msg_tagged msg = {
        .msg_iov = iov,
        .desc = desc,
        .iov_count = oop->buf_size > OFI_HDR_SIZE ? 2 : 1,
        .addr = oop->fi_addr,
        .tag = oop->tag & ~OFI_TAG_NA_MASK,
        .context = ctx,
        .data = oop->tag & OFI_TAG_NA_MASK,
    };
    return fi_tsendmsg(cls->ep, &msg, FI_COMPLETION | FI_REMOTE_CQ_DATA);
}

static ssize_t ofi_post_part(struct ofi_class *cls, struct ofi_op *oop,
                             struct ofi_ctx *ctx)
{
    switch (oop->kind) {
    case OFI_OP_SEND:
    case OFI_OP_SEND_UNEXPECTED:
        return ofi_post_send(cls, oop, ctx);
    case OFI_OP_RECV: {
        ssize_t rc = fi_trecv(cls->ep, oop->buf, oop->buf_size, oop->desc, oop->fi_addr,
                              oop->tag, 0, ctx);
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

    for (size_t i = oop->posted; i < nparts; i++) {
        struct ofi_ctx *ctx = ofi_ctx_get(cls, oop);
        if (!ctx)
            return -FI_ENOMEM;
        oop->parts[i] = ctx;
        oop->posted = i + 1;
        ssize_t rc = ofi_post_part(cls, oop, ctx);
        if (rc != 0) {
            oop->posted = i;
            oop->parts[i] = NULL;
            ofi_ctx_put(cls, ctx);
            return rc;
        }
    }
    return 0;
}

/* Whether posting the parts allowed now ends the posting guard of a
 * put/get (a gated get keeps it until its body is posted). */
static inline bool ofi_post_ends_guard(const struct ofi_op *oop)
{
    return ofi_op_is_rma(oop) && oop->post_limit == oop->nparts;
}

/* A gated get whose body may be reading into the caller's memory: a cancel
 * can no longer stop it, only wait for it. */
static inline bool ofi_op_unstoppable(const struct ofi_op *oop)
{
    return oop->gated && atomic_load(&oop->gate_open);
}

/* Every part allowed is with the provider now; guard (ofi_post_ends_guard)
 * was read before posting. */
static void ofi_post_done(struct ofi_class *cls, struct ofi_op *oop, bool guard)
{
    /* A cancel that came while we were posting found nothing to cancel. The
     * op may be complete already: only a listed op is known to be alive. */
    if (na_op_cancel_requested(na_op_from_plugin(oop))) {
        ofi_mutex_lock(cls, &cls->lock);
        if (oop->cancel_listed)
            ofi_cancel_contexts_locked(cls, oop);
        ofi_mutex_unlock(cls, &cls->lock);
    }
    if (guard)
        ofi_part_done(cls, oop, NA_SUCCESS); /* drop the posting guard */
}

static void ofi_log_post_error(struct ofi_class *cls, const struct ofi_op *oop,
                               const char *why)
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
    if (ofi_op_is_rma(oop) && oop->posted > 0) {
        ofi_parts_abandon(cls, oop, ret);
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

static void ofi_retry_unlink_locked(struct ofi_class *cls, struct ofi_op *oop)
{
    ofi_list_remove(&cls->retry, &oop->retry_link);
    oop->retry_queued = false;
    atomic_fetch_sub(ofi_queued_count(cls, oop), 1);
}

/* Hand an op to the provider. Refusals with EAGAIN (full queues, rxm still
 * connecting to a new peer) park it in the retry queue that progress drains:
 * spinning here would deadlock a thread that also serves the peer. */
static na_return_t ofi_submit(struct ofi_class *cls, struct ofi_op *oop, bool async)
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
        if (rc != -FI_EAGAIN) {
            ofi_log_post_error(cls, oop, fi_strerror((int)-rc));
            return ofi_post_failed(cls, oop, ofi_na_error((int)-rc), async);
        }
    }
    oop->retry_deadline_ms = ofi_now_ms() + OFI_RETRY_TIMEOUT_MS;
    ofi_mutex_lock(cls, &cls->lock);
    oop->retry_queued = true;
    ofi_list_push(&cls->retry, &oop->retry_link, false);
    atomic_fetch_add(ofi_queued_count(cls, oop), 1);
    ofi_mutex_unlock(cls, &cls->lock);
    return NA_SUCCESS;
}

/* A canceled op that never fully reached the provider. */
static void ofi_abandon_canceled(struct ofi_class *cls, struct ofi_op *oop)
{
    if (ofi_op_is_rma(oop) && oop->posted > 0)
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
    } else if (rc == -FI_ETIMEDOUT) {
        char why[64];
        snprintf(why, sizeof(why), "still refused after %d ms (peer unreachable?)",
                 OFI_RETRY_TIMEOUT_MS);
        ofi_log_post_error(cls, oop, why);
        ofi_post_failed(cls, oop, oop->peer ? NA_HOSTUNREACH : NA_AGAIN, true);
    } else {
        ofi_log_post_error(cls, oop, fi_strerror((int)-rc));
        ofi_post_failed(cls, oop, ofi_na_error((int)-rc), true);
    }
}

static bool ofi_peer_blocked(struct ofi_peer *const *blocked, size_t n,
                             const struct ofi_peer *peer)
{
    for (size_t i = 0; i < n; i++)
        if (blocked[i] == peer)
            return true;
    return false;
}

/* One pass over the retry queue, under the lock so that cancel cannot unlink
 * an op while we post it. A message posted here needs nothing more; every
 * other op leaving the queue is ended after unlocking (ending takes the
 * lock), which is safe as nothing of it is in flight or its posting guard
 * holds it. A peer refused in this pass keeps its later ops waiting. */
static void ofi_retry_progress(struct ofi_class *cls)
{
    struct ofi_peer *blocked[OFI_RETRY_BLOCKED_MAX];
    size_t nblocked = 0;
    struct ofi_link *out = NULL;

    if (atomic_load(&cls->retry.count) == 0)
        return;
    uint64_t now = ofi_now_ms();
    ofi_mutex_lock(cls, &cls->lock);
    for (struct ofi_link *link = cls->retry.head, *next; link; link = next) {
        struct ofi_op *oop = OFI_OP_OF(link, retry_link);
        ssize_t rc;
        bool guard = ofi_post_ends_guard(oop);
        next = link->next;
        if (na_op_cancel_requested(na_op_from_plugin(oop)) && !ofi_op_unstoppable(oop))
            rc = -FI_ECANCELED;
        else if (now >= oop->retry_deadline_ms)
            rc = -FI_ETIMEDOUT;
        else if (ofi_peer_blocked(blocked, nblocked, oop->peer))
            continue;
        else if (oop->peer &&
                 ofi_peer_fi_addr_locked(cls, oop->peer, &oop->fi_addr) != NA_SUCCESS)
            rc = -FI_EADDRNOTAVAIL; /* its entry was dropped meanwhile and is refused now
                                     */
        else if ((rc = ofi_post(cls, oop)) == -FI_EAGAIN) {
            if (nblocked == OFI_RETRY_BLOCKED_MAX)
                break;
            blocked[nblocked++] = oop->peer;
            continue;
        }
        ofi_retry_unlink_locked(cls, oop);
        if (rc == 0 && !guard)
            continue;
        oop->retry_rc = rc;
        link->next = out;
        out = link;
    }
    ofi_mutex_unlock(cls, &cls->lock);
    while (out) {
        struct ofi_op *oop = OFI_OP_OF(out, retry_link);
        out = out->next;
        ofi_retry_end(cls, oop, oop->retry_rc);
    }
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
static void ofi_rma_part_end(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret)
{
    if (oop->gated && !atomic_load(&oop->gate_open))
        ofi_get_head_done(cls, oop, ret);
    else
        ofi_part_done(cls, oop, ret);
}

/* ---------------------------------------------------------------------------
 * Completion
 * ------------------------------------------------------------------------- */

/* Parse the sender's header; false if it is malformed. */
static bool ofi_hdr_parse(const struct ofi_class *cls, const unsigned char *buf,
                          size_t len, unsigned char *raw, size_t *raw_len)
{
    if (len < OFI_HDR_SIZE || buf[0] != OFI_HDR_MAGIC || buf[1] != OFI_HDR_VERSION)
        return false;
    size_t n = (size_t)buf[2] | (size_t)buf[3] << 8;
    if (n == 0 || n > OFI_RAW_ADDR_MAX)
        return false;
    memcpy(raw, buf + 4, n);
    *raw_len = n;
    return ofi_raw_addr_normalize(cls, raw, raw_len);
}

/* An unexpected message arrived: find its sender from the header. A bad
 * header (or an address we cannot insert) drops the message and reposts. */
static void ofi_complete_recv_unexpected(struct ofi_class *cls, struct ofi_op *oop,
                                         size_t len, uint64_t data)
{
    na_op_id_t *op = na_op_from_plugin(oop);
    unsigned char raw[OFI_RAW_ADDR_MAX];
    size_t raw_len;
    na_addr_t *source = NULL;

    if (ofi_hdr_parse(cls, oop->buf, len, raw, &raw_len)) {
        struct ofi_peer *peer;
        if (ofi_peer_get(cls, raw, raw_len, &peer) == NA_SUCCESS &&
            ofi_addr_new(op->na_class, peer, &source) == NA_SUCCESS) {
            op->info.info.recv_unexpected.actual_buf_size = len;
            op->info.info.recv_unexpected.source = source;
            op->info.info.recv_unexpected.tag = (na_tag_t)(data & OFI_TAG_NA_MASK);
            ofi_op_finish(cls, oop, NA_SUCCESS);
            return;
        }
    } else {
        atomic_fetch_add(&cls->n_bad_headers, 1);
        HGX_LOG_ERROR(OFI,
                      "dropped an unexpected message of %zu bytes with a malformed "
                      "header (%lu so far)",
                      len, atomic_load(&cls->n_bad_headers));
    }
    if (na_op_cancel_requested(op)) {
        ofi_op_finish(cls, oop, NA_CANCELED);
        return;
    }
    ofi_ctx_put(cls, oop->one_part);
    oop->one_part = NULL;
    oop->posted = 0;
    ofi_submit(cls, oop, true);
}

static void ofi_ctrl_received(struct ofi_class *cls, struct ofi_ctrl_rx *rx,
                              na_return_t ret, size_t len);
static inline struct ofi_ctrl_rx *ofi_ctrl_rx_of(struct ofi_ctx *ctx);

static void ofi_complete(struct ofi_class *cls, struct ofi_ctx *ctx, na_return_t ret,
                         size_t len, uint64_t data)
{
    if (ctx->ctrl) {
        ofi_ctrl_received(cls, ofi_ctrl_rx_of(ctx), ret, len);
        return;
    }
    struct ofi_op *oop = atomic_exchange(&ctx->op, NULL);

    if (!oop) {
        /* Its op was completed by a forced cancel; the context is free now. */
        ofi_ctx_put(cls, ctx);
        return;
    }
    na_op_id_t *op = na_op_from_plugin(oop);
    if (ofi_op_is_rma(oop))
        ofi_rma_part_end(cls, oop, ret);
    else if (op->info.type == NA_CB_RECV_UNEXPECTED && ret == NA_SUCCESS)
        ofi_complete_recv_unexpected(cls, oop, len, data);
    else {
        if (op->info.type == NA_CB_RECV_EXPECTED)
            op->info.info.recv_expected.actual_buf_size = ret == NA_SUCCESS ? len : 0;
        ofi_op_finish(cls, oop, ret);
    }
}

static void ofi_cq_read_error(struct ofi_class *cls)
{
    struct fi_cq_err_entry err = {0};
    ssize_t rc = fi_cq_readerr(cls->cq, &err, 0);

    if (rc != 1) {
        if (rc != -FI_EAGAIN)
            HGX_LOG_ERROR(OFI, "fi_cq_readerr failed: %s", fi_strerror((int)-rc));
        return;
    }
    if (!err.op_context) {
        HGX_LOG_ERROR(OFI, "completion error without context: %s", fi_strerror(err.err));
        return;
    }
    if (err.err < 0)
        err.err = -err.err; /* shm reports negative codes */
    na_return_t ret = ofi_na_error(err.err);
    if (err.err == FI_ECANCELED) {
        /* Ours, or flushed by the provider: tcp drops the connection when the
         * target refuses an RMA access. ofi_op_finish turns either into
         * NA_CANCELED if a cancel was requested. */
        HGX_LOG_DEBUG(OFI, "operation canceled or flushed");
        ret = NA_HOSTUNREACH;
    } else if (err.err == FI_ETRUNC) {
        HGX_LOG_ERROR(OFI, "message larger than its receive buffer (%zu bytes dropped)",
                      err.olen);
    } else {
        HGX_LOG_ERROR(OFI, "operation failed: %s (%s)", fi_strerror(err.err),
                      fi_cq_strerror(cls->cq, err.prov_errno, err.err_data, NULL, 0));
    }
    ofi_complete(cls, err.op_context, ret, err.len, err.data);
}

/* Process what the CQ holds, in bounded batches; returns completions seen. */
static unsigned int ofi_cq_drain(struct ofi_class *cls)
{
    struct fi_cq_tagged_entry entries[OFI_CQ_BATCH];
    unsigned int count = 0;

    for (int round = 0; round < OFI_CQ_MAX_ROUNDS; round++) {
        ssize_t n = fi_cq_read(cls->cq, entries, OFI_CQ_BATCH);
        if (n == -FI_EAGAIN)
            break;
        if (n == -FI_EAVAIL) {
            ofi_cq_read_error(cls);
            count++;
            continue;
        }
        if (n < 0) {
            HGX_LOG_ERROR(OFI, "fi_cq_read failed: %s", fi_strerror((int)-n));
            break;
        }
        for (ssize_t i = 0; i < n; i++)
            ofi_complete(cls, entries[i].op_context, NA_SUCCESS, entries[i].len,
                         entries[i].data);
        count += (unsigned int)n;
        if (n < OFI_CQ_BATCH)
            break;
    }
    return count;
}

/* ---------------------------------------------------------------------------
 * Messages
 * ------------------------------------------------------------------------- */

static size_t ofi_msg_get_max_unexpected_size(const na_class_t *na_class)
{
    return ofi_class(na_class)->max_unexpected_size;
}

static size_t ofi_msg_get_max_expected_size(const na_class_t *na_class)
{
    return ofi_class(na_class)->max_expected_size;
}

static size_t ofi_msg_get_unexpected_header_size(const na_class_t *na_class)
{
    (void)na_class;
    return OFI_HDR_SIZE;
}

static na_tag_t ofi_msg_get_max_tag(const na_class_t *na_class)
{
    (void)na_class;
    return (na_tag_t)OFI_TAG_NA_MASK;
}

static na_return_t ofi_msg_init_unexpected(na_class_t *na_class, void *buf,
                                           size_t buf_size)
{
    if (buf_size < OFI_HDR_SIZE) {
        HGX_LOG_ERROR(OFI, "buffer of %zu bytes cannot hold the %d-byte header", buf_size,
                      OFI_HDR_SIZE);
        return NA_OVERFLOW;
    }
    memcpy(buf, ofi_class(na_class)->hdr, OFI_HDR_SIZE);
    return NA_SUCCESS;
}

static inline uint64_t ofi_tag(uint8_t context_id, na_tag_t tag)
{
    return (uint64_t)context_id << OFI_TAG_CTX_SHIFT | tag;
}

/* Local descriptor of a message buffer: its msg_buf_alloc registration, or
 * a registration just for this op when the provider requires FI_MR_LOCAL. */
static na_return_t ofi_msg_desc(struct ofi_class *cls, struct ofi_op *oop,
                                void *plugin_data, uint64_t access)
{
    na_return_t ret = NA_SUCCESS;

    if (plugin_data)
        oop->desc = fi_mr_desc(plugin_data);
    else if ((cls->mr_mode & FI_MR_LOCAL) && oop->buf_size > 0) {
        oop->tmp_mr = ofi_mr_open(cls, oop->buf, oop->buf_size, access, &ret);
        if (oop->tmp_mr)
            oop->desc = fi_mr_desc(oop->tmp_mr);
    }
    return ret;
}

/* Fill in a message op (peer already set) and submit it. */
static na_return_t ofi_msg_submit(struct ofi_class *cls, struct ofi_op *oop, void *buf,
                                  size_t buf_size, void *plugin_data, uint64_t tag)
{
    na_return_t ret = NA_SUCCESS;

    oop->buf = buf;
    oop->buf_size = buf_size;
    oop->tag = tag;
    oop->fi_addr = FI_ADDR_UNSPEC;
    if (oop->peer)
        ret = ofi_peer_fi_addr(cls, oop->peer, &oop->fi_addr);
    if (ret == NA_SUCCESS)
        ret = ofi_msg_desc(cls, oop, plugin_data,
                           oop->kind == OFI_OP_RECV ? FI_RECV : FI_SEND);
    if (ret != NA_SUCCESS) {
        ofi_op_release(cls, oop);
        return ret;
    }
    return ofi_submit(cls, oop, false);
}

static na_return_t ofi_msg_send_unexpected(na_class_t *na_class, na_context_t *context,
                                           na_op_id_t *op, const void *buf,
                                           size_t buf_size, void *plugin_data,
                                           na_addr_t *dest_addr, uint8_t dest_id,
                                           na_tag_t tag)
{
    struct ofi_op *oop =
        ofi_op_start(op, OFI_OP_SEND_UNEXPECTED, ofi_addr_peer(dest_addr));

    (void)context;
    /* The buffer is only read; it is kept non-const to share the op field. */
    return ofi_msg_submit(ofi_class(na_class), oop, (void *)(uintptr_t)buf, buf_size,
                          plugin_data, OFI_TAG_UNEXPECTED | ofi_tag(dest_id, tag));
}

static na_return_t ofi_msg_send_expected(na_class_t *na_class, na_context_t *context,
                                         na_op_id_t *op, const void *buf, size_t buf_size,
                                         void *plugin_data, na_addr_t *dest_addr,
                                         uint8_t dest_id, na_tag_t tag)
{
    struct ofi_op *oop = ofi_op_start(op, OFI_OP_SEND, ofi_addr_peer(dest_addr));

    (void)context;
    return ofi_msg_submit(ofi_class(na_class), oop, (void *)(uintptr_t)buf, buf_size,
                          plugin_data, ofi_tag(dest_id, tag));
}

static na_return_t ofi_msg_recv_unexpected(na_class_t *na_class, na_context_t *context,
                                           na_op_id_t *op, void *buf, size_t buf_size,
                                           void *plugin_data)
{
    struct ofi_op *oop = ofi_op_start(op, OFI_OP_RECV, NULL);

    return ofi_msg_submit(ofi_class(na_class), oop, buf, buf_size, plugin_data,
                          OFI_TAG_UNEXPECTED | ofi_tag(context->id, 0));
}

static na_return_t ofi_msg_recv_expected(na_class_t *na_class, na_context_t *context,
                                         na_op_id_t *op, void *buf, size_t buf_size,
                                         void *plugin_data, na_addr_t *source_addr,
                                         uint8_t source_id, na_tag_t tag)
{
    struct ofi_op *oop = ofi_op_start(op, OFI_OP_RECV, ofi_addr_peer(source_addr));

    (void)source_id; /* one endpoint per class: the sender's context is not visible */
    return ofi_msg_submit(ofi_class(na_class), oop, buf, buf_size, plugin_data,
                          ofi_tag(context->id, tag));
}

/* ---------------------------------------------------------------------------
 * RMA check (proto->rma_unchecked): control messages, target and origin
 * ------------------------------------------------------------------------- */

static inline struct ofi_ctrl_rx *ofi_ctrl_rx_of(struct ofi_ctx *ctx)
{
    return (struct ofi_ctrl_rx *)((char *)ctx - offsetof(struct ofi_ctrl_rx, ctx));
}

static void ofi_ctrl_post_locked(struct ofi_class *cls, struct ofi_ctrl_rx *rx)
{
    void *desc = cls->ctrl_rx_mr ? fi_mr_desc(cls->ctrl_rx_mr) : NULL;
    ssize_t rc = fi_trecv(cls->ep, rx->buf, sizeof(rx->buf), desc, FI_ADDR_UNSPEC,
                          OFI_TAG_CTRL, 0, &rx->ctx.fi);

    if (rc == 0 && !rx->posted) {
        rx->posted = true;
        atomic_fetch_sub(&cls->ctrl_unposted, 1);
    } else if (rc != 0 && rx->posted) {
        rx->posted = false;
        atomic_fetch_add(&cls->ctrl_unposted, 1);
    }
    if (rc != 0 && rc != -FI_EAGAIN && rc != -FI_ENOMEM)
        HGX_LOG_ERROR(OFI, "posting a control receive failed: %s", fi_strerror((int)-rc));
}

/* Post the receives the provider refused before (full queues). */
static void ofi_ctrl_repost(struct ofi_class *cls)
{
    if (atomic_load(&cls->ctrl_unposted) == 0)
        return;
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    for (size_t i = 0; i < OFI_CTRL_RECVS && atomic_load(&cls->ctrl_unposted) > 0; i++)
        if (!cls->ctrl_rx[i].posted)
            ofi_ctrl_post_locked(cls, &cls->ctrl_rx[i]);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
}

static na_return_t ofi_ctrl_init(struct ofi_class *cls)
{
    na_return_t ret = NA_SUCCESS;

    /* Control messages are injected: no completion, no buffer to keep. */
    HGX_CHECK(OFI, cls->info->tx_attr->inject_size < sizeof(cls->ctrl_rx->buf), out, ret,
              NA_PROTOCOL_ERROR,
              "ofi+%s injects %zu bytes, the RMA check needs %zu: RMA would be unchecked",
              cls->proto->name, cls->info->tx_attr->inject_size,
              sizeof(cls->ctrl_rx->buf));
    cls->ctrl_rx = calloc(OFI_CTRL_RECVS, sizeof(*cls->ctrl_rx));
    HGX_CHECK(OFI, !cls->ctrl_rx, out, ret, NA_NOMEM,
              "out of memory for control receives");
    if (cls->mr_mode & FI_MR_LOCAL) {
        cls->ctrl_rx_mr = ofi_mr_open(
            cls, cls->ctrl_rx, OFI_CTRL_RECVS * sizeof(*cls->ctrl_rx), FI_RECV, &ret);
        if (!cls->ctrl_rx_mr)
            goto out;
    }
    atomic_store(&cls->ctrl_unposted, OFI_CTRL_RECVS);
    for (size_t i = 0; i < OFI_CTRL_RECVS; i++)
        cls->ctrl_rx[i].ctx.ctrl = true;
    ofi_ctrl_repost(cls);
out:
    return ret;
}

static ssize_t ofi_ctrl_inject(struct ofi_class *cls, struct ofi_peer *peer,
                               const unsigned char *buf, size_t len)
{
    fi_addr_t fi_addr;
    if (ofi_peer_fi_addr(cls, peer, &fi_addr) != NA_SUCCESS)
        return -FI_EADDRNOTAVAIL;
    ofi_activity_mark(cls); /* an answer or the RMA follows: poll for it promptly */
    return fi_tinject(cls->ep, buf, len, fi_addr, OFI_TAG_CTRL);
}

/* Send a control message now, or from progress while the provider refuses
 * it (EAGAIN); 0, or the error that will not go away. */
static ssize_t ofi_ctrl_send(struct ofi_class *cls, struct ofi_peer *peer,
                             const unsigned char *buf, size_t len)
{
    ssize_t rc = ofi_ctrl_inject(cls, peer, buf, len);
    if (rc != -FI_EAGAIN)
        return rc;
    struct ofi_ctrl_out *o = malloc(sizeof(*o) + len);
    if (!o)
        return -FI_ENOMEM;
    ofi_peer_ref(peer);
    o->peer = peer;
    o->deadline_ms = ofi_now_ms() + OFI_RETRY_TIMEOUT_MS;
    o->len = len;
    memcpy(o->buf, buf, len);
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    o->next = cls->outbox;
    cls->outbox = o;
    atomic_fetch_add(&cls->outbox_count, 1);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    return 0;
}

/* Send what the provider refused before; order does not matter (each
 * message stands alone). */
static void ofi_ctrl_flush(struct ofi_class *cls)
{
    struct ofi_ctrl_out *list, *keep = NULL;
    size_t kept = 0;

    if (atomic_load(&cls->outbox_count) == 0)
        return;
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    list = cls->outbox;
    cls->outbox = NULL;
    atomic_store(&cls->outbox_count, 0);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    uint64_t now = ofi_now_ms();
    for (struct ofi_ctrl_out *o = list, *next; o; o = next) {
        next = o->next;
        ssize_t rc = ofi_ctrl_inject(cls, o->peer, o->buf, o->len);
        if (rc == -FI_EAGAIN && now < o->deadline_ms) {
            o->next = keep;
            keep = o;
            kept++;
            continue;
        }
        if (rc != 0)
            HGX_LOG_ERROR(OFI, "dropped a control message: %s",
                          rc == -FI_EAGAIN ? "refused for too long"
                                           : fi_strerror((int)-rc));
        ofi_peer_put(cls, o->peer);
        free(o);
    }
    if (!keep)
        return;
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    struct ofi_ctrl_out **tail = &keep;
    while (*tail)
        tail = &(*tail)->next;
    *tail = cls->outbox;
    cls->outbox = keep;
    atomic_fetch_add(&cls->outbox_count, kept);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
}

static const char *ofi_check_refusal(na_return_t ret)
{
    return ret == NA_ACCESS        ? "unknown or freed region"
           : ret == NA_INVALID_ARG ? "outside the region"
           : ret == NA_PERMISSION  ? "access not granted"
                                   : NA_Error_to_string(ret);
}

/* Target: judge every range of a CHECK against our live registrations and
 * answer its sender. */
static void ofi_ctrl_check(struct ofi_class *cls, const struct hgx_ofi_ctrl *msg)
{
    unsigned char raw[OFI_RAW_ADDR_MAX], answer[HGX_OFI_CTRL_HDR_SIZE];
    size_t raw_len;
    struct ofi_peer *peer;
    struct hgx_ofi_range r = {0};
    na_return_t status = NA_SUCCESS;

    if (!ofi_hdr_parse(cls, msg->sender, OFI_HDR_SIZE, raw, &raw_len) ||
        ofi_peer_get(cls, raw, raw_len, &peer) != NA_SUCCESS) {
        atomic_fetch_add(&cls->n_bad_ctrl, 1);
        HGX_LOG_ERROR(OFI, "dropped an RMA check with a bad sender address (%lu so far)",
                      atomic_load(&cls->n_bad_ctrl));
        return;
    }
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    for (size_t i = 0; i < msg->nranges && status == NA_SUCCESS; i++) {
        hgx_ofi_ctrl_range(msg, i, &r);
        status = hgx_ofi_keytab_check(&cls->keys, r.key, r.addr, r.len, msg->access);
    }
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    if (status != NA_SUCCESS) {
        char who[128];
        atomic_fetch_add(&cls->n_check_refused, 1);
        ofi_raw_addr_format(cls, raw, raw_len, who, sizeof(who));
        HGX_LOG_WARNING(OFI,
                        "refused a %s of %llu bytes at 0x%llx from %s: %s (%lu refused)",
                        msg->access & HGX_OFI_CHECK_WRITE ? "put" : "get",
                        (unsigned long long)r.len, (unsigned long long)r.addr, who,
                        ofi_check_refusal(status), atomic_load(&cls->n_check_refused));
    }
    ssize_t rc = ofi_ctrl_send(cls, peer, answer,
                               hgx_ofi_answer_encode(answer, msg->cookie, status));
    if (rc != 0)
        HGX_LOG_ERROR(OFI, "answering an RMA check failed: %s", fi_strerror((int)-rc));
    ofi_peer_put(cls, peer);
}

/* Origin: the op stops waiting; the caller now owns its next step. */
static void ofi_check_claim_locked(struct ofi_class *cls, struct ofi_op *oop)
{
    na_slots_remove(&cls->cookies, (uint32_t)oop->cookie);
    ofi_list_remove(&cls->checking, &oop->check_link);
    oop->checking = false;
}

/* Claim the op of a cookie if it is still waiting. */
static bool ofi_check_claim(struct ofi_class *cls, struct ofi_op *oop, uint64_t cookie)
{
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    bool mine = na_slots_get_cookie(&cls->cookies, cookie) == oop;
    if (mine)
        ofi_check_claim_locked(cls, oop);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    return mine;
}

/* A claimed op: post it if the target agreed, else end it. */
static void ofi_check_done(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret)
{
    if (ret == NA_SUCCESS && !na_op_cancel_requested(na_op_from_plugin(oop))) {
        ofi_submit(cls, oop, true);
        return;
    }
    if (ret != NA_SUCCESS && ret != NA_CANCELED) {
        char why[96];
        snprintf(why, sizeof(why), "refused by the target: %s", ofi_check_refusal(ret));
        ofi_log_post_error(cls, oop, why);
    }
    ofi_op_finish(cls, oop, ret == NA_SUCCESS ? NA_CANCELED : ret);
}

static void ofi_ctrl_answer(struct ofi_class *cls, const struct hgx_ofi_ctrl *msg)
{
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    struct ofi_op *oop = na_slots_get_cookie(&cls->cookies, msg->cookie);
    bool claimed = oop && (msg->status != NA_SUCCESS || --oop->checks_left == 0);
    if (claimed)
        ofi_check_claim_locked(cls, oop);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    if (!oop) {
        atomic_fetch_add(&cls->n_stale_answers, 1);
        HGX_LOG_DEBUG(OFI, "dropped an RMA check answer for no waiting operation");
    } else if (claimed) {
        ofi_check_done(cls, oop, msg->status);
    }
}

/* A control receive completed: handle the message, then post it again. */
static void ofi_ctrl_received(struct ofi_class *cls, struct ofi_ctrl_rx *rx,
                              na_return_t ret, size_t len)
{
    struct hgx_ofi_ctrl msg;

    if (ret != NA_SUCCESS || !hgx_ofi_ctrl_decode(rx->buf, len, OFI_HDR_SIZE, &msg)) {
        atomic_fetch_add(&cls->n_bad_ctrl, 1);
        HGX_LOG_ERROR(OFI,
                      "dropped a malformed control message of %zu bytes (%lu so far)",
                      len, atomic_load(&cls->n_bad_ctrl));
    } else if (msg.type == HGX_OFI_CTRL_CHECK) {
        ofi_ctrl_check(cls, &msg);
    } else {
        ofi_ctrl_answer(cls, &msg);
    }
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    ofi_ctrl_post_locked(cls, rx);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
}

/* The next remote ranges of a put/get, at most HGX_OFI_CHECK_MAX_RANGES. */
static size_t ofi_check_ranges(struct ofi_rma_cursor *cur, struct hgx_ofi_range *ranges)
{
    size_t n = 0;

    for (; n < HGX_OFI_CHECK_MAX_RANGES && cur->left > 0; cur->rseg++, cur->roff = 0) {
        const struct ofi_seg *rs = &cur->remote->segs[cur->rseg];
        uint64_t len = rs->len - cur->roff < cur->left ? rs->len - cur->roff : cur->left;
        if (len > 0) {
            ranges[n++] = (struct hgx_ofi_range){rs->key, rs->addr + cur->roff, len};
            cur->left -= len;
        }
    }
    return n;
}

/* Origin: ask the target to judge every remote range of a put/get (at most
 * HGX_OFI_CHECK_MAX_RANGES per CHECK); ofi_ctrl_answer posts it once all
 * answers agreed. Once the first CHECK is out an answer may end the op on
 * another thread, so the op is read only through its cookie after that. */
static void ofi_check_start(struct ofi_class *cls, struct ofi_op *oop)
{
    unsigned char buf[sizeof(cls->ctrl_rx->buf)];
    struct hgx_ofi_range ranges[HGX_OFI_CHECK_MAX_RANGES];
    struct ofi_rma_cursor cur = oop->cur;
    struct ofi_peer *peer = oop->peer;
    unsigned int access =
        oop->kind == OFI_OP_PUT ? HGX_OFI_CHECK_WRITE : HGX_OFI_CHECK_READ;
    ssize_t rc = 0;

    oop->checks_left = 0;
    for (struct ofi_rma_cursor c = cur; c.left > 0; oop->checks_left++)
        ofi_check_ranges(&c, ranges);
    oop->check_deadline_ms = ofi_now_ms() + OFI_CHECK_TIMEOUT_MS;
    atomic_store_explicit(&cls->check_sent_ns, ofi_now_ns(), memory_order_relaxed);
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    uint32_t index, gen;
    bool ok = na_slots_add(&cls->cookies, oop, &index, &gen);
    if (ok) {
        oop->cookie = na_slots_cookie(index, gen);
        oop->checking = true;
        ofi_list_push(&cls->checking, &oop->check_link, false);
    }
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    if (!ok) {
        ofi_log_post_error(cls, oop, "out of memory for its RMA check");
        ofi_op_finish(cls, oop, NA_NOMEM);
        return;
    }
    uint64_t cookie = oop->cookie;
    ofi_peer_ref(peer); /* the op may end before we are done */
    while (rc == 0 && cur.left > 0) {
        size_t n = ofi_check_ranges(&cur, ranges);
        rc = ofi_ctrl_send(
            cls, peer, buf,
            hgx_ofi_check_encode(buf, cookie, access, cls->hdr, OFI_HDR_SIZE, ranges, n));
    }
    if (rc != 0 && ofi_check_claim(cls, oop, cookie)) {
        ofi_log_post_error(cls, oop, fi_strerror((int)-rc));
        ofi_op_finish(cls, oop, ofi_na_error((int)-rc));
    }
    ofi_peer_put(cls, peer);
}

/* Origin: an op still waiting cancels at once; its late answer matches no
 * cookie then. */
static bool ofi_check_cancel(struct ofi_class *cls, struct ofi_op *oop)
{
    if (!cls->proto->rma_unchecked || !ofi_op_is_rma(oop))
        return false;
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    bool claimed = oop->checking;
    if (claimed)
        ofi_check_claim_locked(cls, oop);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    return claimed;
}

/* Origin: ops whose target did not answer in time end as unreachable. */
static void ofi_check_expire(struct ofi_class *cls)
{
    struct ofi_link *out = NULL;

    if (atomic_load(&cls->checking.count) == 0)
        return;
    uint64_t now = ofi_now_ms();
    ofi_mutex_lock(cls, &cls->ctrl_lock);
    while (cls->checking.head &&
           OFI_OP_OF(cls->checking.head, check_link)->check_deadline_ms <= now) {
        struct ofi_link *link = cls->checking.head;
        ofi_check_claim_locked(cls, OFI_OP_OF(link, check_link));
        link->next = out;
        out = link;
    }
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    while (out) {
        struct ofi_op *oop = OFI_OP_OF(out, check_link);
        out = out->next;
        char why[64];
        snprintf(why, sizeof(why), "no answer to its RMA check in %d ms",
                 OFI_CHECK_TIMEOUT_MS);
        ofi_log_post_error(cls, oop, why);
        ofi_op_finish(cls, oop, NA_HOSTUNREACH);
    }
}

/* Progress of the check: receives to post again, refused sends, deadlines. */
static void ofi_ctrl_progress(struct ofi_class *cls)
{
    if (!cls->proto->rma_unchecked)
        return;
    ofi_ctrl_repost(cls);
    ofi_ctrl_flush(cls);
    ofi_check_expire(cls);
}

/* ---------------------------------------------------------------------------
 * Put / get
 * ------------------------------------------------------------------------- */

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
static na_return_t ofi_rma(na_class_t *na_class, na_op_id_t *op, bool put,
                           na_mem_handle_t *local, na_offset_t local_offset,
                           na_mem_handle_t *remote, na_offset_t remote_offset,
                           size_t size, na_addr_t *remote_addr)
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

/* ---------------------------------------------------------------------------
 * Cancel
 * ------------------------------------------------------------------------- */

/* Receives, and put/get waiting for their RMA check, cancel at once. Sends
 * and RMA cannot be recalled by the providers;
 * they stay listed until their completion (reported as it is), and
 * ofi_cancel_check escalates if that takes too long. Ops still in the retry
 * queue end right away. */
static na_return_t ofi_cancel(na_class_t *na_class, na_context_t *context, na_op_id_t *op)
{
    struct ofi_class *cls = ofi_class(na_class);
    struct ofi_op *oop = ofi_op(op);

    (void)context;
    if (ofi_check_cancel(cls, oop)) {
        ofi_op_finish(cls, oop, NA_CANCELED);
        return NA_SUCCESS;
    }
    ofi_mutex_lock(cls, &cls->lock);
    /* The completion may have been handled meanwhile, or the op reposted. */
    if (!na_op_cancel_requested(op) || atomic_load(&oop->done) || oop->cancel_listed) {
        ofi_mutex_unlock(cls, &cls->lock);
        return NA_SUCCESS;
    }
    bool dequeued = oop->retry_queued && !ofi_op_unstoppable(oop);
    if (dequeued)
        ofi_retry_unlink_locked(cls, oop);
    if (!dequeued || oop->posted > 0) {
        oop->cancel_listed = true;
        oop->cancel_deadline_ms = ofi_now_ms() + OFI_CANCEL_ESCALATE_MS;
        ofi_list_push(&cls->canceled, &oop->cancel_link, false);
        ofi_cancel_contexts_locked(cls, oop);
    }
    ofi_mutex_unlock(cls, &cls->lock);
    if (dequeued)
        ofi_abandon_canceled(cls, oop);
    return NA_SUCCESS;
}

/* First step for a canceled op still pending: cancel again (it may have been
 * posted after the first try). */
static void ofi_cancel_escalate_locked(struct ofi_class *cls, struct ofi_op *oop)
{
    oop->escalated = true;
    ofi_cancel_contexts_locked(cls, oop);
}

/* Whether the policy lets a stuck canceled op complete without the provider. */
static bool ofi_cancel_may_force(const struct ofi_class *cls, const struct ofi_op *oop)
{
    switch (cls->proto->cancel_policy) {
    case OFI_CANCEL_FORCE:
        return true;
    case OFI_CANCEL_FORCE_GETS:
        /* only what lands in the bounce buffer: a whole small get, a head */
        return oop->bounce != NULL && !atomic_load(&oop->gate_open);
    default:
        return false;
    }
}

/* Second step (policies that allow it): claim the contexts the provider
 * still holds (they become ghosts, recycled if a completion ever shows up)
 * and return how many parts the caller must now end itself. */
static size_t ofi_cancel_force_locked(struct ofi_class *cls, struct ofi_op *oop)
{
    size_t claimed = 0;

    HGX_LOG_WARNING(OFI, "canceled operation still pending after %d ms; completing it",
                    OFI_CANCEL_ESCALATE_MS + OFI_CANCEL_FORCE_MS);
    ofi_list_remove(&cls->canceled, &oop->cancel_link);
    oop->cancel_listed = false;
    for (size_t i = 0; i < oop->posted; i++)
        if (oop->parts[i] && atomic_exchange(&oop->parts[i]->op, NULL)) {
            oop->parts[i] = NULL;
            claimed++;
        }
    return claimed;
}

/* Listed ops can only finish through ofi_op_finish, which unlists them under
 * the lock first: while we hold it, every listed op is alive. */
static void ofi_cancel_check(struct ofi_class *cls)
{
    while (atomic_load(&cls->canceled.count) > 0) {
        uint64_t now = ofi_now_ms();
        struct ofi_op *forced = NULL;
        size_t claimed = 0;

        ofi_mutex_lock(cls, &cls->lock);
        for (struct ofi_link *link = cls->canceled.head; link && !forced;
             link = link->next) {
            struct ofi_op *oop = OFI_OP_OF(link, cancel_link);
            if (!oop->escalated && now >= oop->cancel_deadline_ms)
                ofi_cancel_escalate_locked(cls, oop);
            else if (oop->escalated && ofi_cancel_may_force(cls, oop) &&
                     now >= oop->cancel_deadline_ms + OFI_CANCEL_FORCE_MS) {
                claimed = ofi_cancel_force_locked(cls, oop);
                forced = oop;
            }
        }
        ofi_mutex_unlock(cls, &cls->lock);
        if (!forced)
            return;
        /* The claimed parts keep the op alive until we end them here. */
        for (size_t i = 0; i < claimed; i++) {
            if (ofi_op_is_rma(forced))
                ofi_rma_part_end(cls, forced, NA_CANCELED);
            else
                ofi_op_finish(cls, forced, NA_CANCELED);
        }
    }
}

/* ---------------------------------------------------------------------------
 * Progress
 * ------------------------------------------------------------------------- */

static int ofi_poll_get_fd(na_class_t *na_class, na_context_t *context)
{
    (void)context;
    return ofi_class(na_class)->wait_fd;
}

static bool ofi_poll_try_wait(na_class_t *na_class, na_context_t *context)
{
    struct ofi_class *cls = ofi_class(na_class);
    struct fid *fid = &cls->cq->fid;

    (void)context;
    return cls->wait_fd >= 0 && atomic_load(&cls->retry.count) == 0 &&
           atomic_load(&cls->outbox_count) == 0 &&
           atomic_load(&cls->ctrl_unposted) == 0 &&
           fi_trywait(cls->fabric, &fid, 1) == FI_SUCCESS;
}

/* Retry refused posts, process completions, move the RMA check on, escalate
 * stuck cancels. */
static unsigned int ofi_progress(struct ofi_class *cls)
{
    ofi_retry_progress(cls);
    unsigned int count = ofi_cq_drain(cls);
    ofi_ctrl_progress(cls);
    ofi_cancel_check(cls);
    if (count > 0)
        ofi_activity_mark(cls);
    return count;
}

static na_return_t ofi_poll(na_class_t *na_class, na_context_t *context,
                            unsigned int *count_p)
{
    (void)context;
    unsigned int count = ofi_progress(ofi_class(na_class));
    if (count_p)
        *count_p = count;
    return count > 0 ? NA_SUCCESS : NA_TIMEOUT;
}

/*
 * Without a wait fd: poll, and sleep in between for a step proportional to
 * how long the class has been idle (no post, no completion). Each wake-up
 * costs 17-33 us of CPU in this VM (timer, context switch, a progress pass),
 * so the former fixed 1 ms step kept an idle server at 1.7-3.3% of a CPU; the
 * step now grows to OFI_SLEEP_MAX_NS (4 ms: 250 wake-ups a second). The price is latency
 * after a quiet period: a message arriving after an idle gap t waits up to
 * min(t / OFI_SLEEP_IDLE_DIV, 4 ms) for the receiver to notice it, so at
 * most 1/8 of the gap, and while traffic flows the steps stay short. Our own
 * posts reset the idle clock, so a reply is polled for promptly.
 */
static unsigned int ofi_sleep_poll(struct ofi_class *cls, unsigned int timeout_ms)
{
    uint64_t deadline = ofi_now_ns() + (uint64_t)timeout_ms * 1000000u;

    for (;;) {
        unsigned int count = ofi_progress(cls);
        uint64_t now = ofi_now_ns();
        if (count > 0 || now >= deadline)
            return count;
        if (atomic_exchange_explicit(&cls->active, false, memory_order_relaxed))
            atomic_store_explicit(&cls->idle_since_ns, now, memory_order_relaxed);
        uint64_t since = atomic_load_explicit(&cls->idle_since_ns, memory_order_relaxed);
        uint64_t step = now > since ? (now - since) / OFI_SLEEP_IDLE_DIV : 0;
        if (step < OFI_SLEEP_MIN_NS)
            step = OFI_SLEEP_MIN_NS;
        if (step > OFI_SLEEP_MAX_NS)
            step = OFI_SLEEP_MAX_NS;
        if (step > deadline - now)
            step = deadline - now;
        /* An answer to our CHECK is due: a sleep would only delay it. */
        if (atomic_load_explicit(&cls->checking.count, memory_order_relaxed) > 0 &&
            now - atomic_load_explicit(&cls->check_sent_ns, memory_order_relaxed) <
                OFI_CHECK_SPIN_NS) {
            hgx_spin_pause();
            continue;
        }
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)step};
        nanosleep(&ts, NULL);
    }
}

/* The fd woke us but progress completed nothing: traffic for which this side
 * gets no completion (the target of a put or get, the start of a large
 * message). Its next step (the acknowledgment of a put, the rest of a read
 * response) needs our progress again soon; blocking in between would cost a
 * wake-up each time. So poll for a while first. A transfer that outlasts the
 * poll wakes us again shortly after: each such wake-up doubles the poll, so
 * a stream of transfers (a 1 MiB read takes ~400 us over loopback tcp) is
 * served without sleeping, while a lone wake-up costs only the short poll.
 * 1 MiB ofi+tcp pulls ran at 0.55x raw with a fixed 100 us poll, 0.79x with
 * this one (docs/performance.md, session 9). */
static unsigned int ofi_traffic_poll(struct ofi_class *cls, uint64_t deadline_ns)
{
    uint64_t now = ofi_now_ns();
    uint64_t spin = atomic_load_explicit(&cls->traffic_spin_ns, memory_order_relaxed);
    uint64_t last = atomic_load_explicit(&cls->traffic_end_ns, memory_order_relaxed);
    if (spin && now - last < OFI_TRAFFIC_GAP_MUL * spin)
        spin = spin * 2 < OFI_TRAFFIC_SPIN_MAX_NS ? spin * 2 : OFI_TRAFFIC_SPIN_MAX_NS;
    else
        spin = OFI_TRAFFIC_SPIN_MIN_NS;
    atomic_store_explicit(&cls->traffic_spin_ns, spin, memory_order_relaxed);

    uint64_t end = now + spin;
    unsigned int count = 0;
    if (end > deadline_ns)
        end = deadline_ns;
    while (count == 0 && (now = ofi_now_ns()) < end) {
        hgx_spin_pause();
        count = ofi_progress(cls);
    }
    atomic_store_explicit(&cls->traffic_end_ns, now, memory_order_relaxed);
    return count;
}

static na_return_t ofi_poll_wait(na_class_t *na_class, na_context_t *context,
                                 unsigned int timeout_ms)
{
    struct ofi_class *cls = ofi_class(na_class);
    unsigned int count;

    (void)context;
    /* Retries and deadlines need progress the fd does not announce. */
    bool retrying = atomic_load(&cls->retry.count) > 0 ||
                    atomic_load(&cls->outbox_count) > 0 ||
                    atomic_load(&cls->ctrl_unposted) > 0;
    if (retrying && timeout_ms > OFI_RETRY_POLL_MS)
        timeout_ms = OFI_RETRY_POLL_MS;
    bool deadlines =
        atomic_load(&cls->canceled.count) > 0 || atomic_load(&cls->checking.count) > 0;
    if (deadlines && timeout_ms > OFI_CANCEL_POLL_MS)
        timeout_ms = OFI_CANCEL_POLL_MS;
    if (cls->wait_fd < 0) {
        count = ofi_sleep_poll(cls, timeout_ms);
    } else {
        struct fid *fid = &cls->cq->fid;
        uint64_t deadline_ns = ofi_now_ns() + (uint64_t)timeout_ms * 1000000u;
        int woke = 0;
        if (fi_trywait(cls->fabric, &fid, 1) == FI_SUCCESS) {
            struct pollfd pfd = {.fd = cls->wait_fd, .events = POLLIN};
            woke = poll(&pfd, 1, (int)timeout_ms);
            if (woke < 0 && errno != EINTR)
                HGX_LOG_ERROR(OFI, "poll on the CQ fd failed: %s", strerror(errno));
        }
        count = ofi_progress(cls);
        if (count == 0 && woke > 0)
            count = ofi_traffic_poll(cls, deadline_ns);
    }
    return count > 0 ? NA_SUCCESS : NA_TIMEOUT;
}

const struct na_ops na_ofi_ops = {
    .class_name = "ofi",
    /* The plugin cuts operations at the provider's limits itself, and over
     * tcp every piece of a get is one more read request and bounce buffer:
     * 256 KiB pieces held ofi+tcp pulls at ~0.3x the raw fi_read, one piece
     * per transfer at 0.8-1.0x (docs/na-ofi.md). */
    .rma_piece_max = (size_t)16 << 20,
    .op_size = sizeof(struct ofi_op),
    .check_protocol = ofi_check_protocol,
    .initialize = ofi_initialize,
    .finalize = ofi_finalize,
    .cleanup = ofi_cleanup,
    .context_create = ofi_context_create,
    .context_destroy = ofi_context_destroy,
    .addr_lookup = ofi_addr_lookup,
    .addr_destroy = ofi_addr_destroy,
    .addr_set_remove = ofi_addr_set_remove,
    .addr_self = ofi_addr_self,
    .addr_cmp = ofi_addr_cmp,
    .addr_is_self = ofi_addr_is_self,
    .addr_to_string = ofi_addr_to_string,
    .addr_get_serialize_size = ofi_addr_get_serialize_size,
    .addr_serialize = ofi_addr_serialize,
    .addr_deserialize = ofi_addr_deserialize,
    .msg_get_max_unexpected_size = ofi_msg_get_max_unexpected_size,
    .msg_get_max_expected_size = ofi_msg_get_max_expected_size,
    .msg_get_unexpected_header_size = ofi_msg_get_unexpected_header_size,
    .msg_get_expected_header_size = NULL,
    .msg_get_max_tag = ofi_msg_get_max_tag,
    .msg_buf_alloc = ofi_msg_buf_alloc,
    .msg_buf_free = ofi_msg_buf_free,
    .msg_init_unexpected = ofi_msg_init_unexpected,
    .msg_send_unexpected = ofi_msg_send_unexpected,
    .msg_recv_unexpected = ofi_msg_recv_unexpected,
    .msg_send_expected = ofi_msg_send_expected,
    .msg_recv_expected = ofi_msg_recv_expected,
    .mem_handle_create = ofi_mem_handle_create,
    .mem_handle_create_segments = ofi_mem_handle_create_segments,
    .mem_handle_free = ofi_mem_handle_free,
    .mem_handle_get_max_segments = ofi_mem_handle_get_max_segments,
    .mem_register = ofi_mem_register,
    .mem_deregister = ofi_mem_deregister,
    .mem_handle_get_serialize_size = ofi_mem_handle_get_serialize_size,
    .mem_handle_serialize = ofi_mem_handle_serialize,
    .mem_handle_deserialize = ofi_mem_handle_deserialize,
    .rma = ofi_rma,
    .poll_get_fd = ofi_poll_get_fd,
    .poll_try_wait = ofi_poll_try_wait,
    .poll = ofi_poll,
    .poll_wait = ofi_poll_wait,
    .cancel = ofi_cancel,
};

void hgx_ofi_ctrl_counts(const na_class_t *na_class, struct hgx_ofi_ctrl_counts *c)
{
    const struct ofi_class *cls =
        na_class->ops == &na_ofi_ops ? ofi_class(na_class) : NULL;

    *c = (struct hgx_ofi_ctrl_counts){0};
    if (cls) {
        c->bad = atomic_load(&cls->n_bad_ctrl);
        c->refused = atomic_load(&cls->n_check_refused);
        c->stale = atomic_load(&cls->n_stale_answers);
    }
}
