/*
 * ofi_int.h -- NA plugin over libfabric RDM endpoints ("ofi+tcp", "ofi+sockets",
 * "ofi+shm").
 *
 * One endpoint, one address vector and one completion queue per class; every
 * context of the class shares them and an op completes on the context it was
 * posted on. Messages are tagged:
 *
 *   bit 63      unexpected message
 *   bit 62      plugin control message (RMA check), never an NA message
 *   bit 61      first piece of a message sent in two (ofi_pieces.c)
 *   bit 60      second piece of such a message
 *   bits 40..55 the two-piece message's number, in its first piece
 *   bits 32..39 id of the receiving context (the sender's dest_id)
 *   bits 0..31  the NA tag of an expected message (0 in unexpected ones);
 *               in a second piece, the message's number instead
 *
 * An unexpected message carries its NA tag as remote CQ data instead, so
 * every receive matches its NA tag exactly: unexpected receives take any
 * unexpected message for their context, expected receives are directed at
 * their source. Every receive of a class uses one ignore mask: none in a
 * class of several contexts, whose receives take only their context's
 * messages; bits 32..39 in a class of one context, which takes messages sent
 * to any context id on it, as Mercury's do (a sender cannot know how many
 * contexts its peer has). One mask per class matters on shm 1.17: it matches
 * a new receive against its queued unmatched messages with the ignore mask
 * left in each queued entry's slot by the receive that last used it (0 in a
 * slot no receive has used), not with the new receive's mask. Receives of
 * different masks lost queued messages that way as soon as more arrived than
 * receives were posted; so a shm class whose mask is not 0 first posts a
 * receive into every slot and cancels them (ofi_msg_recv_init). Bits 40..55
 * and 61 are in every mask: a receive takes a first piece as it would a
 * whole message, and never a second piece, which only the receive that
 * ofi_pieces.c posts for it takes.
 *
 * An unexpected message starts with a fixed-size header carrying the
 * sender's raw address, so a receiver can answer a peer it has never seen.
 * Raw addresses are cached (peer table) so each peer uses one address vector
 * entry.
 *
 * Memory handles register each segment separately (tcp allows one iov per
 * registration), so a handle has one key per segment. Put/get walk both
 * segment lists (na_seg_cursor) and are split into several provider
 * operations when the iov limits or the maximum message size require it.
 *
 * Where the provider does not check RMA at the target (shm), the origin
 * asks the target first: a CHECK over the control tag, answered from the
 * target's table of live registrations (na_ofi_check.h), and only an OK
 * answer, or a lease an earlier one granted, lets the put/get be posted.
 *
 * Posts the provider refuses with EAGAIN (full queues, rxm while it
 * connects) wait in a retry queue that progress drains, and refused control
 * messages in an outbox. The providers say no more about a peer that is
 * not there (rxm connects again at every post, shm looks for the peer's
 * region again): while a peer's posts or control messages wait, hgx checks
 * the peer itself (ofi_reach.c) and fails them (a CHECK: its put/get) with
 * NA_HOSTUNREACH as soon as it finds the peer gone. NA_NO_RETRY turns every
 * such refusal of a caller's op into NA_AGAIN for the caller instead. Cancel uses
 * fi_cancel; what happens to an op still pending HGX_NA_CANCEL_TIMEOUT_MS later (1 s by
 * default) depends on the provider (see ofi_cancel_policy and ofi_cancel_state.h): it may
 * be completed without the provider, whose contexts therefore live in a class pool rather
 * than in the op id.
 */
#ifndef HGX_OFI_INT_H
#define HGX_OFI_INT_H

#include "hgx_assert.h"
#include "hgx_clock.h"
#include "hgx_list.h"
#include "hgx_wire.h"
#include "hgx_spin.h"
#include "hgx_test_hooks.h"
#include "ofi_cancel_state.h"
#include "na_cancel_watch.h"
#include "na_wait_set.h"
#include "na_netif.h"
#include "na_peer_map.h"
#include "na_seg_cursor.h"
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
#define OFI_TAG_CTX_MASK (UINT64_C(0xff) << OFI_TAG_CTX_SHIFT)
#define OFI_TAG_NA_MASK UINT64_C(0xffffffff)
#define OFI_TAG_FIRST (UINT64_C(1) << 61)
#define OFI_TAG_SECOND (UINT64_C(1) << 60)
#define OFI_TAG_SEQ_SHIFT 40
#define OFI_TAG_SEQ_MASK (UINT64_C(0xffff) << OFI_TAG_SEQ_SHIFT)
/* In every receive's ignore mask (see the tag layout above). */
/* Slots of the sinks for the messages of cancelled expected receives, by NA
 * tag: a burst of that many timeouts has all its late responses dropped. */
#define OFI_LATE_MAX 256
#define OFI_TAG_PIECE_IGNORE (OFI_TAG_FIRST | OFI_TAG_SEQ_MASK)

/* 8 KiB: a 4 KiB RPC payload and its headers fit one message (capped to
 * what the provider allows, see ofi_set_limits). */
#define OFI_MSG_SIZE_DEFAULT 8192
/* msg_max_inject providers: smallest inject size worth sending pieces of. */
#define OFI_MSG_SIZE_MIN_INJECT 4096
#define OFI_RAW_ADDR_MAX 60 /* sockaddr_in6 and shm names fit */
#define OFI_HDR_SIZE 64     /* magic, version, u16 length, raw address */
#define OFI_HDR_MAGIC 0xa7
#define OFI_HDR_VERSION 2 /* 2: the NA tag of unexpected messages in CQ data */

/* Segments per memory handle: each is registered on its own, and a
 * descriptor carries 24 bytes per segment. */
#define OFI_MAX_SEGMENTS 65536
/* shm: a put of at most the inject size waits for the target to progress
 * (put_delivered_above_inject), and an idle target polls between sleeps, so
 * a push of thousands of small segments takes seconds: 4096 of 768 B took
 * over 5 s here. */
#define OFI_SHM_MAX_SEGMENTS 1024
#define OFI_IOV_MAX 16 /* iovs per provider RMA operation (also capped by provider) */

#define OFI_MH_MAGIC 0x4f46 /* "OF" */
#define OFI_MH_VERSION 1
#define OFI_MH_HDR_SIZE 16 /* magic u16, version u8, flags u8, count u32, total u64 */
#define OFI_MH_SEG_SIZE 24 /* addr u64, len u64, key u64 */

#define OFI_CQ_BATCH 16
#define OFI_CQ_MAX_ROUNDS 16 /* bound the work of one poll */
/* While posts wait to be retried, progress runs OFI_RETRY_POLL_MS after a
 * refusal, then at doubling intervals up to OFI_RETRY_POLL_MAX_MS: rxm
 * moves a connection on once per 10 ms CM turn, and a connection takes a
 * few turns, so polling faster only spins. */
#define OFI_RETRY_POLL_MS 1
#define OFI_RETRY_POLL_MAX_MS 10
/* A refused post whose peer is not found gone (a listener that never
 * completes the connection, a link that drops packets, a peer that stopped
 * draining its shm queue) fails after the provider has taken nothing of it
 * for this long (HGX_OFI_RETRY_TIMEOUT_MS), with NA_HOSTUNREACH: by default
 * the UCX plugin's bound for a connection (UCX_CONNECT_MS). */
#define OFI_RETRY_TIMEOUT_MS 5000
#define OFI_RETRY_BLOCKED_MAX 16 /* refused peers tracked in one retry pass */
/* Checking a refused peer (ofi_reach.c). Over tcp and sockets hgx connects
 * to it itself once the provider has had OFI_REACH_GRACE_MS to connect: rxm
 * connects within a few of its 10 ms CM progress turns, and a peer that
 * connects in time is not disturbed by a stray connection. Over shm the
 * peer's region and process are looked at from the first refusal. Looked at
 * again every OFI_REACH_POLL_MS while the posts wait. */
#define OFI_REACH_GRACE_MS 100
#define OFI_REACH_POLL_MS 10
/* A canceled op still pending after HGX_NA_CANCEL_TIMEOUT_MS is canceled
 * again, and this long after that completed without the provider where the
 * policy allows it. */
#define OFI_CANCEL_FORCE_MS 500
#define OFI_CANCEL_POLL_MS 100 /* wake up to escalate stuck cancels */
/* tcp and sockets: a canceled op the provider keeps waits at most this long
 * for a peer host that acknowledges nothing (ofi_link.c); probes every
 * OFI_LINK_PROBE_S seconds of silence. */
#define OFI_LINK_TIMEOUT_MS 10000
#define OFI_LINK_PROBE_S 1
#define OFI_LINK_SAVED_MAX 8 /* a peer's connections whose settings are kept */
/* RMA check: receives kept posted for control messages, and how long an op
 * waits for the target's answer (then NA_HOSTUNREACH, as a refused post). */
#define OFI_CTRL_RECVS 2
/* The target answers a CHECK from its progress, so this bounds how long a
 * target may go without progress before puts and gets to it fail. Not the
 * refusal bound: the CHECK left, the peer is there; 5 s as that bound, so
 * both ways of not hearing from a peer end alike. A target found gone
 * meanwhile (ofi_reach.c) fails them sooner. */
#define OFI_CHECK_TIMEOUT_MS 5000
/* Without a wait fd, poll without sleeping this long after a CHECK left: its
 * answer usually comes sooner than a sleep (>= 50 us of timer slack) ends. */
#define OFI_CHECK_SPIN_NS 200000
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
#define OFI_GET_GATED_MIN ((size_t)256 << 10)
#define OFI_BOUNCE_CACHE_BYTES ((size_t)64 << 20)

#define OFI_CTX_CHUNK 256 /* provider contexts allocated at a time */
/* Bound on the cancel completions of the receives that set the ignore masks
 * of a recv_stale_ignore provider (rx_size of them, well under 1 ms). */
#define OFI_PRIME_TIMEOUT_MS 2000

/* What to do with a canceled op the provider has not completed after
 * HGX_NA_CANCEL_TIMEOUT_MS (fi_cancel only stops receives). NA_CANCELED is
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
    /* shm 1.17: messages above the inject size go by CMA (a syscall and an
     * acknowledgment: 2.6-3.5 us a round trip where 4096 bytes take 0.9) or,
     * without CMA, by a SAR protocol that stalls when peers send many at
     * once. Such messages are sent in two pieces of at most the inject size
     * instead (ofi_pieces.c). */
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
    /* shm 1.17: a queued message is matched with the ignore mask its entry
     * kept from the receive that used it last (see the tag layout above). */
    bool recv_stale_ignore;
    size_t max_segments; /* per memory handle, at most OFI_MAX_SEGMENTS */
    /* sockets 1.17: fi_cancel of a receive returns 0 only once it has taken
     * the receive back (the buffer is no longer the provider's), but the
     * error report it then queues is dropped when the CQ's error queue is
     * full: past about 400 receives canceled at once. Such a receive is
     * completed without its report once the cancel bound has passed. */
    bool cancel_recv_recalls;
};

/* What hgx found out itself about a peer whose refused posts wait in the
 * retry queue, or whose refused control messages wait in the outbox
 * (ofi_reach.c); valid while one of them holds it, under the class lock. */
struct ofi_reach {
    int holds;        /* refused posts and control messages waiting */
    uint64_t next_ms; /* look again then */
    int fd;           /* tcp and sockets: our own connect in flight, or -1 */
    bool settled;     /* a listener answered, or there is no telling: wait */
    int gone;         /* errno: why the peer is not there (0: not found gone) */
};

/* One remote endpoint; shared by every na_addr that names it. */
struct ofi_peer;

struct ofi_addr {
    struct na_addr head;
    struct ofi_peer *peer;
};

struct ofi_peer {
    /* The source of its unexpected messages, the same for each: owned by the
     * peer (na_addr_init_owned), so a message allocates no address, and a
     * removed peer is not freed while a user holds it (ofi_addr_owned_release). */
    struct ofi_addr src;
    _Atomic uint64_t fi_addr; /* FI_ADDR_NOTAVAIL until (re)inserted */
    atomic_int refs;          /* addresses and pending ops using it */
    atomic_int queued;        /* its ops in the retry queue */
    atomic_int bounces;       /* bounced gets the provider may still serve */
    int link_holds;           /* escalated ops holding its keepalive (class lock) */
    struct ofi_link_saved *link_saved; /* its connections' settings while held */
    bool removed;                      /* NA_Addr_set_remove: free once unreferenced */
    struct ofi_reach reach;
    size_t len;
    unsigned char raw[];
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
    atomic_uint late; /* a sink's (ofi_late.c): its slot + 1; 0 for any other */
};

/* A receive posted to drop the message of a cancelled expected receive
 * (ofi_late.c). */
struct ofi_late_sink {
    struct ofi_ctx *ctx; /* NULL: slot free */
    struct ofi_peer *peer;
    fi_addr_t addr;
    uint64_t tag;
};

struct ofi_ctx_chunk {
    struct ofi_ctx_chunk *next;
    struct ofi_ctx ctx[OFI_CTX_CHUNK];
};

/* A list of ops (retry queue, cancel list, checks) under its lock, with a
 * count that progress reads without the lock to skip an empty list. */
struct ofi_list {
    struct hgx_list head;
    atomic_size_t count;
};

enum ofi_op_kind {
    OFI_OP_SEND,
    OFI_OP_SEND_UNEXPECTED,
    OFI_OP_RECV,
    OFI_OP_PUT,
    OFI_OP_GET
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
    struct ofi_seg bounce_seg; /* the bounce buffer as a segment list */
    /* Gated get (OFI_CANCEL_FORCE_GETS): parts past post_limit wait for the
     * head; whoever ends the head decides, under the class lock, whether the
     * gate opens (body posted from body_cur) or the body is abandoned. */
    bool gated;
    atomic_bool gate_open;
    size_t post_limit; /* parts that may be posted now */
    struct na_seg_cursor body_cur;

    /* Messages have one part; put/get one per provider operation. */
    struct na_seg_cursor cur; /* first byte of the next part to post */
    struct ofi_ctx **parts;   /* contexts of posted parts (&one_part for one) */
    struct ofi_ctx *one_part;
    size_t nparts, posted;
    atomic_size_t parts_left; /* parts in flight or unposted, + 1 while posting */
    atomic_int part_ret;      /* first error of a put/get part */

    atomic_bool done; /* provider completion handled */
    /* In the retry queue. Not hgx_list_linked(&retry_link): a pass over the
     * queue moves the ops it takes out to a list of its own and ends them
     * after dropping the lock, when cancel must no longer find them. */
    bool retry_queued;
    uint64_t retry_deadline_ms; /* give up refused posts then */
    ssize_t retry_rc;           /* outcome of the last retry */
    struct hgx_list retry_link;
    /* Cancel escalation (ofi_cancel_state.h), under the class lock. */
    enum ofi_cst cancel_state;
    struct na_cancel_watch cancel_watch; /* WATCHED: on cls->cancel_watcher */
    struct hgx_list cancel_link;         /* ESCALATED: on cls->escalated */
    uint64_t force_deadline_ns;          /* ESCALATED: force from then on */
    /* RMA check (proto->rma_unchecked): while checking, the op waits for
     * checks_left answers to its cookie, listed in cls->checking. Whoever
     * clears checking under ctrl_lock owns the op's next step (as for
     * retry_queued, expired ops move on to a list of their own). */
    bool checking;
    size_t checks_left;
    uint64_t cookie;
    uint64_t check_deadline_ms;
    uint64_t check_start_ns; /* a lease it is granted counts from then */
    struct hgx_list check_link;
    /* A message in two pieces (ofi_pieces.c). A send of two parts; a
     * receive whose first piece is in and whose second receive is posted
     * as part 1, listed in cls->reassembly until it ends. */
    bool split;
    bool reassembling;
    bool piece_expired;  /* its second piece did not come in time */
    uint16_t piece_seq;  /* the message's number */
    size_t piece_len;    /* bytes of the first piece */
    uint64_t piece_data; /* CQ data of the first piece (an unexpected NA tag) */
    uint64_t piece_deadline_ms;
    struct hgx_list piece_link;
    struct ofi_ctx *two_parts[2];
    bool recalled;    /* a receive the provider took back (cancel_recv_recalls) */
    bool check_reach; /* holds its peer's look: no answer OFI_REACH_POLL_MS on */
    bool link_armed;  /* escalated and kept: holds its peer's keepalive */
};

/* A receive kept posted for control messages. */
struct ofi_ctrl_rx {
    struct ofi_ctx ctx; /* ctx.ctrl set */
    bool posted;        /* under ctrl_lock */
    unsigned char buf[HGX_OFI_CTRL_HDR_SIZE + OFI_HDR_SIZE +
                      HGX_OFI_CHECK_MAX_RANGES * HGX_OFI_CHECK_RANGE_SIZE];
};

/* A control message the provider refused (EAGAIN), sent again by progress
 * as a refused post is: it holds its peer's look (ofi_reach.c) and is
 * dropped once the peer is found gone or at its deadline. */
struct ofi_ctrl_out {
    struct ofi_ctrl_out *next;
    struct ofi_peer *peer; /* referenced */
    uint64_t deadline_ms;  /* OFI_RETRY_TIMEOUT_MS after the first refusal */
    bool check;            /* a CHECK: dropping it ends its op */
    uint64_t cookie;       /* the CHECK's op */
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
    int cq_fd; /* -1 when the CQ has no fd (shm, NA_NO_BLOCK) */
    /* What a thread sleeps on: cq_fd and a timer for the plugin's timed
     * duties (ofi_cq.c). Without cq_fd the timer alone, set to the steps of
     * the idle policy; fd -1 under NA_NO_BLOCK. */
    struct na_wait_set wait;
    bool no_block;             /* NA_NO_BLOCK: never wait, so no CQ wait object */
    bool no_retry;             /* NA_NO_RETRY: a refused post fails with NA_AGAIN */
    uint64_t retry_timeout_ms; /* HGX_OFI_RETRY_TIMEOUT_MS */
    na_class_t *na_class;      /* the NA class this is the plugin part of */
    bool single;               /* NA_THREAD_MODE_SINGLE: the mutexes guard nothing */
    char bind_desc[300];       /* " on HOST:PORT" for setup errors, "" for shm */
    uint64_t mr_mode;
    size_t iov_limit, rma_iov_limit, max_msg_size;
    size_t max_unexpected_size, max_expected_size;
    /* The ignore mask of every receive (ofi_msg_recv_init). */
    uint64_t recv_ignore;
    /* Messages above piece_size go in two pieces (0: never; ofi_pieces.c):
     * their numbers, the receives waiting for a second piece (first
     * deadline first) and the messages dropped for want of one. */
    size_t piece_size;
    atomic_uint piece_seq;
    struct ofi_list reassembly;
    atomic_ulong n_pieces_dropped;
    /* Sinks of cancelled expected receives (ofi_late.c) by NA tag, the
     * discard buffer they share, and the messages and second pieces they
     * dropped. Under lock; late_live is read without it. */
    struct ofi_late_sink late[OFI_LATE_MAX];
    atomic_uint late_live;
    void *late_buf;
    struct fid_mr *late_mr;
    atomic_ulong n_late_dropped, n_late_seconds;

    unsigned char self_raw[OFI_RAW_ADDR_MAX];
    size_t self_len;
    unsigned char hdr[OFI_HDR_SIZE]; /* our unexpected header, sent with each message */
    struct fid_mr *hdr_mr;
    void *hdr_desc;

    pthread_mutex_t lock;     /* peer table, retry queue and cancel lists */
    struct na_peer_map peers; /* ofi_peer by raw address */
    /* The sender of the last unexpected message and the raw address bytes
     * of its header as sent (ofi_peer_of_hdr); NULL once that peer is freed. */
    struct ofi_peer *last_sender;
    size_t last_sender_len;
    unsigned char last_sender_raw[OFI_RAW_ADDR_MAX];
    struct ofi_list retry;  /* ops the provider refused with EAGAIN, in order */
    atomic_int anon_queued; /* queued ops without a peer (unexpected receives) */
    struct na_cancel_watcher cancel_watcher; /* canceled ops in OFI_CST_WATCHED */
    struct hgx_list escalated;               /* those in OFI_CST_ESCALATED, in order */
    atomic_size_t n_canceling;               /* ops on either: read without the lock */
    atomic_ulong n_bad_headers; /* unexpected messages dropped as malformed */

    hgx_lock_t ctx_lock; /* context pool and bounce cache: short sections */
    struct ofi_ctx *ctx_free;
    struct ofi_ctx_chunk *ctx_chunks;
    struct ofi_bounce *bounce_free;
    size_t bounce_free_count, bounce_free_bytes;

    /* Sleep back-off without a wait fd: posts and completions raise the flag,
     * the sleeper turns it into the time the idle period started. */
    atomic_bool active;
    _Atomic uint64_t idle_since_ns;
    _Atomic uint64_t idle_due_ns; /* the wait fd's timer fires then (0: unset) */

    /* The wait set's timer (ofi_cq.c): when the next timed duty is due (0:
     * to be set again, after progress did the last), and the current step
     * of the retry back-off. */
    _Atomic uint64_t duty_due_ns;
    _Atomic uint64_t retry_step_ms;

    /* Polling after wake-ups without completions (ofi_traffic_poll). */
    _Atomic uint64_t traffic_spin_ns, traffic_end_ns;

    /* RMA check (proto->rma_unchecked). ctrl_lock is taken before the class
     * lock, never after it. */
    pthread_mutex_t ctrl_lock;
    struct hgx_ofi_keytab keys;     /* our registrations, judged for peers */
    struct na_slots cookies;        /* our ops waiting for answers */
    struct ofi_list checking;       /* those ops, first deadline first */
    uint64_t check_reach_ms;        /* look at the peers of late answers then */
    _Atomic uint64_t check_sent_ns; /* when the last CHECK left */
    struct hgx_ofi_leases leases;   /* granted to us by targets */
    _Atomic uint64_t lease_end_ns;  /* the last lease we granted ends */
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

/* For the sleep back-off of classes without a wait fd; no clock read on
 * the fast path. */
static inline void ofi_activity_mark(struct ofi_class *cls)
{
    if (cls->cq_fd < 0 && !atomic_load_explicit(&cls->active, memory_order_relaxed))
        atomic_store_explicit(&cls->active, true, memory_order_relaxed);
}

/* One thread alone uses a class in NA_THREAD_MODE_SINGLE: no mutex then. */
static inline void ofi_mutex_lock(const struct ofi_class *cls, pthread_mutex_t *m)
{
    if (!cls->single)
        pthread_mutex_lock(m);
}

static inline void ofi_mutex_unlock(const struct ofi_class *cls, pthread_mutex_t *m)
{
    if (!cls->single)
        pthread_mutex_unlock(m);
}

static inline struct ofi_peer *ofi_addr_peer(na_addr_t *addr)
{
    return ((struct ofi_addr *)addr)->peer;
}

static inline struct ofi_mem_handle *ofi_mh(na_mem_handle_t *mh)
{
    return (struct ofi_mem_handle *)mh;
}

/* A handle's segments for na_seg_cursor. */
static inline struct na_seg_list ofi_seg_list(const struct ofi_mem_handle *mh)
{
    return NA_SEG_LIST(mh->segs, mh->nseg, len);
}

/* Segment i of a list made by ofi_seg_list. */
static inline const struct ofi_seg *ofi_seg_at(const struct na_seg_list *list, size_t i)
{
    return (const struct ofi_seg *)list->segs + i;
}

static inline struct ofi_op *ofi_op(na_op_id_t *op)
{
    return na_op_plugin(op);
}

static inline void ofi_list_init(struct ofi_list *list)
{
    hgx_list_init(&list->head);
    atomic_init(&list->count, 0);
}

static inline void ofi_list_push(struct ofi_list *list, struct hgx_list *link)
{
    HGX_ASSERT(!hgx_list_linked(link));
    hgx_list_push_back(&list->head, link);
    atomic_fetch_add(&list->count, 1);
}

static inline void ofi_list_remove(struct ofi_list *list, struct hgx_list *link)
{
    HGX_ASSERT(hgx_list_linked(link));
    HGX_ASSERT(atomic_load(&list->count) > 0);
    hgx_list_remove(link);
    atomic_fetch_sub(&list->count, 1);
}

static inline bool ofi_op_is_rma(const struct ofi_op *oop)
{
    return oop->kind == OFI_OP_PUT || oop->kind == OFI_OP_GET;
}

/* Ops whose provider operations are counted as parts, with a posting
 * guard: put/get, and sends of two pieces. */
static inline bool ofi_op_counts_parts(const struct ofi_op *oop)
{
    return ofi_op_is_rma(oop) || oop->split;
}
/* Whether posting the parts allowed now ends the posting guard of such an
 * op (a gated get keeps it until its body is posted). */
static inline bool ofi_post_ends_guard(const struct ofi_op *oop)
{
    return ofi_op_counts_parts(oop) && oop->post_limit == oop->nparts;
}

/* A gated get whose body may be reading into the caller's memory: a cancel
 * can no longer stop it, only wait for it. */
static inline bool ofi_op_unstoppable(const struct ofi_op *oop)
{
    return oop->gated && atomic_load(&oop->gate_open);
}

static inline uint64_t ofi_tag(uint8_t context_id, na_tag_t tag)
{
    return (uint64_t)context_id << OFI_TAG_CTX_SHIFT | tag;
}

/* Claim a context's op: the completion or a forced cancel, whichever comes
 * first (one thread alone runs both in NA_THREAD_MODE_SINGLE). */
HGX_ATOMIC_SWAP_FN(ofi_ctx_op_swap, _Atomic(struct ofi_op *), struct ofi_op *)

/* The sender's raw address in an unexpected header, unchecked, and its
 * length; NULL if the header is malformed. */
static inline const unsigned char *ofi_hdr_raw(const unsigned char *buf, size_t len,
                                               size_t *raw_len)
{
    if (len < OFI_HDR_SIZE || buf[0] != OFI_HDR_MAGIC || buf[1] != OFI_HDR_VERSION)
        return NULL;
    size_t n = hgx_get_u16(buf + 2);
    if (n == 0 || n > OFI_RAW_ADDR_MAX)
        return NULL;
    *raw_len = n;
    return buf + 4;
}

static inline struct ofi_ctrl_rx *ofi_ctrl_rx_of(struct ofi_ctx *ctx)
{
    return (struct ofi_ctrl_rx *)((char *)ctx - offsetof(struct ofi_ctrl_rx, ctx));
}

/* Shared between the plugin's files, invisible outside the library. */
#pragma GCC visibility push(hidden)

/* ofi_class.c */
na_return_t ofi_na_error(int err);
const struct ofi_proto *ofi_proto_find(const char *name, size_t len);

/* ofi_addr.c */
bool ofi_raw_addr_normalize(const struct ofi_class *cls, unsigned char *raw, size_t *len);
size_t ofi_raw_addr_format(const struct ofi_class *cls, const unsigned char *raw,
                           size_t len, char *buf, size_t buf_size);
na_return_t ofi_peer_get(struct ofi_class *cls, const unsigned char *raw, size_t len,
                         struct ofi_peer **peer_p);
bool ofi_peer_of_hdr(struct ofi_class *cls, const unsigned char *buf, size_t len,
                     struct ofi_peer **peer_p);
void ofi_av_remove_locked(struct ofi_class *cls, struct ofi_peer *peer);
void ofi_peer_ref(const struct ofi_class *cls, struct ofi_peer *peer);
void ofi_peer_put(struct ofi_class *cls, struct ofi_peer *peer);
na_return_t ofi_peer_fi_addr_locked(struct ofi_class *cls, struct ofi_peer *peer,
                                    fi_addr_t *fi_addr);
na_return_t ofi_peer_fi_addr(struct ofi_class *cls, struct ofi_peer *peer,
                             fi_addr_t *fi_addr);
na_return_t ofi_addr_new(na_class_t *na_class, struct ofi_peer *peer, na_addr_t **addr_p);
na_addr_t *ofi_peer_source(struct ofi_class *cls, struct ofi_peer *peer);
void ofi_addr_owned_release(na_class_t *na_class, na_addr_t *addr);
na_ops_addr_lookup_fn ofi_addr_lookup;
na_ops_addr_destroy_fn ofi_addr_destroy;
na_ops_addr_set_remove_fn ofi_addr_set_remove;
na_ops_addr_self_fn ofi_addr_self;
na_ops_addr_cmp_fn ofi_addr_cmp;
na_ops_addr_is_self_fn ofi_addr_is_self;
na_ops_addr_to_string_fn ofi_addr_to_string;
na_ops_addr_get_serialize_size_fn ofi_addr_get_serialize_size;
na_ops_addr_serialize_fn ofi_addr_serialize;
na_ops_addr_deserialize_fn ofi_addr_deserialize;

/* ofi_mem.c */
struct fid_mr *ofi_mr_open(struct ofi_class *cls, const void *buf, size_t len,
                           uint64_t access, na_return_t *ret);
void ofi_mr_close(struct fid_mr *mr);
na_ops_msg_buf_alloc_fn ofi_msg_buf_alloc;
na_ops_msg_buf_free_fn ofi_msg_buf_free;
na_ops_mem_handle_create_fn ofi_mem_handle_create;
na_ops_mem_handle_create_segments_fn ofi_mem_handle_create_segments;
na_ops_mem_handle_free_fn ofi_mem_handle_free;
na_ops_mem_handle_get_max_segments_fn ofi_mem_handle_get_max_segments;
na_ops_mem_register_fn ofi_mem_register;
na_ops_mem_deregister_fn ofi_mem_deregister;
na_ops_mem_handle_get_serialize_size_fn ofi_mem_handle_get_serialize_size;
na_ops_mem_handle_serialize_fn ofi_mem_handle_serialize;
na_ops_mem_handle_deserialize_fn ofi_mem_handle_deserialize;

/* ofi_op.c */
void ofi_ctx_put(struct ofi_class *cls, struct ofi_ctx *ctx);
struct ofi_ctx *ofi_ctx_take(struct ofi_class *cls);

/* ofi_late.c */
void ofi_late_expect(struct ofi_class *cls, struct ofi_peer *peer, fi_addr_t addr,
                     uint64_t tag);
void ofi_late_forget(struct ofi_class *cls, uint64_t tag);
void ofi_late_done(struct ofi_class *cls, struct ofi_ctx *ctx, unsigned i,
                   na_return_t ret, uint64_t tag);
void ofi_late_fini(struct ofi_class *cls);
struct ofi_op *ofi_op_start(na_op_id_t *op, enum ofi_op_kind kind, struct ofi_peer *peer);
void ofi_op_release(struct ofi_class *cls, struct ofi_op *oop);
void ofi_op_finish(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret);
void ofi_part_done(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret);
void ofi_parts_abandon(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret);
void ofi_cancel_contexts_locked(struct ofi_class *cls, struct ofi_op *oop);
void ofi_log_post_error(struct ofi_class *cls, const struct ofi_op *oop, const char *why);
void ofi_retry_unlink_locked(struct ofi_class *cls, struct ofi_op *oop);
na_return_t ofi_submit(struct ofi_class *cls, struct ofi_op *oop, bool async);
void ofi_abandon_canceled(struct ofi_class *cls, struct ofi_op *oop);
void ofi_retry_progress(struct ofi_class *cls);

/* ofi_rma.c */
void ofi_bounce_free(struct ofi_bounce *b);
void ofi_bounce_put(struct ofi_bounce *b);
void ofi_bounce_copy_out(const struct ofi_op *oop);
ssize_t ofi_post_rma_part(struct ofi_class *cls, struct ofi_op *oop, struct ofi_ctx *ctx);
void ofi_rma_part_end(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret);
na_ops_rma_fn ofi_rma;

/* ofi_reach.c */
bool ofi_shm_owner_gone(const char *name);
void ofi_reach_hold_locked(const struct ofi_class *cls, struct ofi_peer *peer,
                           uint64_t now_ms);
void ofi_reach_release_locked(struct ofi_peer *peer);
int ofi_reach_check_locked(const struct ofi_class *cls, struct ofi_peer *peer,
                           uint64_t now_ms);

/* ofi_link.c */
void ofi_link_hold_locked(const struct ofi_class *cls, struct ofi_op *oop);
void ofi_link_release_locked(const struct ofi_class *cls, struct ofi_op *oop);
void ofi_link_saved_free(struct ofi_peer *peer);

/* ofi_cq.c */
bool ofi_hdr_parse(const struct ofi_class *cls, const unsigned char *buf, size_t len,
                   unsigned char *raw, size_t *raw_len);
na_ops_poll_get_fd_fn ofi_poll_get_fd;
na_ops_poll_try_wait_fn ofi_poll_try_wait;
na_ops_poll_fn ofi_poll;
na_ops_poll_wait_fn ofi_poll_wait;

/* ofi_msg.c */
na_return_t ofi_msg_recv_init(struct ofi_class *cls, uint8_t max_contexts);
na_ops_msg_get_max_unexpected_size_fn ofi_msg_get_max_unexpected_size;
na_ops_msg_get_max_expected_size_fn ofi_msg_get_max_expected_size;
na_ops_msg_get_unexpected_header_size_fn ofi_msg_get_unexpected_header_size;
na_ops_msg_get_max_tag_fn ofi_msg_get_max_tag;
na_ops_msg_init_unexpected_fn ofi_msg_init_unexpected;
na_ops_msg_send_unexpected_fn ofi_msg_send_unexpected;
na_ops_msg_send_expected_fn ofi_msg_send_expected;
na_ops_msg_recv_unexpected_fn ofi_msg_recv_unexpected;
na_ops_msg_recv_expected_fn ofi_msg_recv_expected;

/* ofi_ctrl.c */
na_return_t ofi_ctrl_init(struct ofi_class *cls);
void ofi_ctrl_received(struct ofi_class *cls, struct ofi_ctrl_rx *rx, na_return_t ret,
                       size_t len);
na_return_t ofi_check_start(struct ofi_class *cls, struct ofi_op *oop);
bool ofi_check_leased(struct ofi_class *cls, struct ofi_op *oop);
bool ofi_check_cancel(struct ofi_class *cls, struct ofi_op *oop);
void ofi_ctrl_progress(struct ofi_class *cls);

/* ofi_cancel.c */
na_ops_cancel_fn ofi_cancel;
void ofi_cancel_unlist_locked(struct ofi_class *cls, struct ofi_op *oop);
void ofi_cancel_check(struct ofi_class *cls);

/* ofi_pieces.c */
void ofi_pieces_split(struct ofi_class *cls, struct ofi_op *oop);
uint64_t ofi_pieces_first_tag(const struct ofi_op *oop, uint64_t tag);
ssize_t ofi_pieces_post_second(struct ofi_class *cls, struct ofi_op *oop,
                               struct ofi_ctx *ctx);
void ofi_pieces_first_in(struct ofi_class *cls, struct ofi_op *oop, size_t len,
                         uint64_t data, uint64_t tag);
void ofi_pieces_second_in(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret,
                          size_t len);
void ofi_pieces_drop(struct ofi_class *cls, struct ofi_op *oop, na_return_t ret);
void ofi_pieces_end(struct ofi_class *cls, struct ofi_op *oop);
void ofi_pieces_expire(struct ofi_class *cls);
void ofi_recv_unexpected_repost(struct ofi_class *cls, struct ofi_op *oop);

#pragma GCC visibility pop

#endif /* HGX_OFI_INT_H */
