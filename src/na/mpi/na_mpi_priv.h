/*
 * na_mpi_priv.h -- the MPI NA plugin ("mpi+static" and "mpi+dynamic"),
 * its types and the calls between its files (private).
 *
 * Files: na_mpi.c (class, contexts, cancel, ops table), na_mpi_msg.c
 * (messages, held messages), na_mpi_progress.c (claim, poll, poll_wait),
 * na_mpi_rma.c (memory handles, put/get over mpi_emul), na_mpi_addr.c,
 * na_mpi_dynamic.c (mpi+dynamic ports and connections), na_mpi_api.c
 * (Mercury's NA_MPI_* calls). Like every plugin it builds on the shared
 * helpers: hgx_clock for every time, hgx_list for its queues, hgx_lock_t for
 * its locks, hgx_param for its settings (na_mpi_ops.params, with the
 * emulation's), na_backoff for the idle sleep, na_wait_set for the wait fd
 * (a timer set to the idle sleep's steps), and the core's
 * HGX_NA_UNEXPECTED_MAX for the held-message bound.
 *
 * One MPI_Comm_dup of MPI_COMM_WORLD (or of the comm given to
 * na_mpi_set_comm()) with MPI_ERRORS_RETURN carries all traffic, so no tag of
 * the application can match ours (mpi+dynamic: see "mpi+dynamic" below).
 * Tag space of that communicator:
 *
 *   0                         unexpected messages (8-byte header carries the NA tag)
 *   1                         mpi_emul control packets
 *   2 .. 2+S-1                mpi_emul put data   (origin -> target), S = HGX_EMUL_NSLOTS
 *   2+S .. 2+2S-1             mpi_emul get data   (target -> origin)
 *   2+2S .. MPI_TAG_UB        expected messages: 2+2S + NA tag
 *
 * The mpi_emul data tags are used on a second dup (dcomm), so that a wildcard
 * probe on comm never matches bulk data; there, the tags from 2+2S up carry
 * the data of the other tag generations (hgx_emul_set_tag_gens), as many as
 * fit below MPI_TAG_UB. mpi+dynamic connections carry data and NA messages
 * on one intercommunicator: there, 2+2S .. MPI_TAG_UB-1 is split between the
 * NA tags (at least half of it, at least MIN_NA_TAGS) and the tag
 * generations above them, and MPI_TAG_UB is BYE.
 *
 * All nonblocking MPI requests live in one table tested from poll() (see
 * hgx_mreqtab.h). Each poll pass takes the oldest message waiting on comm with
 * one MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG) and dispatches it by tag
 * (nm_claim_any); a message whose NA receive is not posted yet is held (as its
 * MPI_Message, in arrival order, at most HGX_NA_UNEXPECTED_MAX) and later
 * receives take held messages first. Every MPI call runs Open MPI's whole
 * progress engine, so one call that both detects and claims beats a probe per
 * kind. Under Open MPI, posted NA receives are also MPI_Irecvs into sinks
 * (nm_sink_get: never truncated), reported by the table's MPI_Testsome, and
 * the claim runs only as often as something needs it (nm_claim_due). One
 * class lock serializes every MPI call, so MPI_THREAD_SERIALIZED is enough.
 */
#ifndef NA_MPI_PRIV_H
#define NA_MPI_PRIV_H

#include "na_mpi_int.h"
#include "hgx_clock.h"
#include "hgx_emul.h"
#include "hgx_list.h"
#include "hgx_mreqtab.h"
#include "na_plugin.h"
#include "na_wait_set.h"
#include "hgx_spin.h"
#include "hgx_test_hooks.h"

#include <errno.h>
#include <inttypes.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define TAG_UNEXP 0
#define TAG_CTRL 1
#define TAG_PUT_BASE 2
#define TAG_GET_BASE (TAG_PUT_BASE + HGX_EMUL_NSLOTS)
#define TAG_EXP_BASE (TAG_GET_BASE + HGX_EMUL_NSLOTS)
#define MIN_NA_TAGS 1024

#define UNEXP_MAGIC 0x48554e58u /* "HUNX" */
#define UNEXP_HDR_SIZE 8
#define DEFAULT_MSG_SIZE 8192
/* A matched message this small is received with the blocking MPI_Mrecv: it
 * is below the eager limit of every MPI transport we know (Open MPI's
 * shared memory BTL has the lowest, 4 KiB), so its data has arrived with the
 * match and MPI_Mrecv returns at once, where MPI_Imrecv would cost a request
 * and an MPI_Test in a later pass. Larger ones use MPI_Imrecv. */
#define MRECV_MAX 4096

/* Longest address string: mpi+dynamic:// and a percent-escaped port. */
#define DYN_ADDR_MAX (16 + 3 * MPI_MAX_PORT_NAME)

struct dyn_conn;
struct dyn_acceptor;

/* A message claimed on pc->comm that no posted NA receive takes yet. */
/* Cancelled expected receives remembered so that their late messages are
 * dropped (na_mpi_late.c): slots of a table indexed by tag. */
#define NM_LATE_SLOTS 4096
struct nm_late {
    int src, tag;
    MPI_Comm comm;
    bool set;
};

struct held_msg {
    MPI_Message msg;
    MPI_Status st;
    struct hgx_list link; /* nm_class.held, in arrival order */
};

struct nm_addr;

struct nm_class {
    /* mpi+static: the address of each rank of comm, created on first use and
     * kept until finalize; lookups and sources are references to it */
    _Atomic(struct nm_addr *) *rank_addrs;
    MPI_Comm comm;  /* mpi+dynamic: a dup of MPI_COMM_SELF (the self connection) */
    MPI_Comm dcomm; /* mpi_emul data chunks of comm's emulation */
    int rank, size;
    bool we_init_mpi;
    /* Serializes every MPI call of the class (so MPI_THREAD_SERIALIZED is
     * enough) and is held across them, which can take long: HGX_LOCK_MUTEX,
     * never a spin lock (hgx_lock.h); HGX_LOCK_NONE for a class of
     * NA_THREAD_MODE_SINGLE, which one thread alone uses. */
    hgx_lock_t lock;
    struct hgx_mreqtab tab;
    struct hgx_emul *emul;
    size_t max_unexp, max_exp;
    na_tag_t max_tag;
    struct hgx_list uq; /* posted unexpected receives (nm_op.link), in posting order */
    struct hgx_list eq; /* posted expected receives not yet in MPI, in posting order */
    unsigned long ncompleted;
    _Atomic unsigned noted;            /* ACT_* noted, not dated yet (nm_mark_active) */
    _Atomic uint64_t last_activity_us; /* last post or progress event */
    _Atomic uint64_t spin_until_us;    /* nm_poll_wait polls without sleeping until */
    /* The wait fd (nm_poll_get_fd, made on first request; fd -1 until
     * then): a timer alone, set by nm_poll_try_wait to the step nm_poll_wait
     * would sleep, due then (0: unset, or a poll ran since). Lock held. */
    struct na_wait_set wait;
    uint64_t wait_due_us;
    bool waiting; /* this pass: probe comm per kind (held list full; see nm_probe_waiting)
                   */
    bool take_ctrl;       /* this pass: probe comm for mpi_emul control packets */
    struct hgx_list held; /* struct held_msg, oldest first */
    int nheld;
    /* Claimed messages held for NA receives not posted yet; past this
     * (HGX_NA_UNEXPECTED_MAX, read at initialize), claiming stops and the
     * per-kind probes run (see nm_probe_waiting). */
    int held_max;
    int nheld_unexp;     /* held messages of tag TAG_UNEXP */
    struct nm_op *upost; /* Open MPI: unexpected receive in MPI (nm_unexp_arm) */
    char *sink_free;  /* unused sinks, linked through their first bytes (nm_sink_get) */
    int nsinks;       /* sinks mapped */
    bool sink_failed; /* a mapping failed: receives are probed from then on */
    unsigned long ndropped; /* messages received and discarded (logged each) */
    /* Cancelled expected receives (na_mpi_late.c) by tag, how many are set,
     * and their late messages dropped. */
    struct nm_late late[NM_LATE_SLOTS];
    unsigned late_live;
    unsigned long late_dropped;
    int nrma;       /* put/get ops of ours in progress (they await control packets) */
    unsigned npass; /* passes since the last nm_claim_any (see nm_claim_due) */
    char small[MRECV_MAX]; /* unexpected messages received with MPI_Mrecv */
    /* mpi+dynamic only */
    bool dynamic, listening, published;
    /* Below MPI_THREAD_MULTIPLE (a client then): lookups connect in the calling
     * thread, under the class lock, so no other thread calls MPI */
    bool connect_inline;
    int tag_bye;
    int conn_gen_base;      /* connections: data tags of generations >= 1 */
    unsigned conn_gen_bits; /* connections: tag-generation bits */
    struct dyn_conn *self_conn;
    struct hgx_list conns; /* remote connections (dyn_conn.link), newest first */
    int nconns;
    struct dyn_acceptor *acc;
    char port[MPI_MAX_PORT_NAME];
    char service[256];
    char port_str[DYN_ADDR_MAX]; /* NA_MPI_Get_port_name: our address string */
};

/* mpi+dynamic: one connection = a 1-to-1 intercommunicator (both sides use
 * their dyn_self), the peer is rank 0 of its remote group. */
struct dyn_conn {
    MPI_Comm comm; /* MPI_COMM_NULL once disconnected */
    struct hgx_emul *emul;
    char *port; /* port we connected to (client side), else NULL */
    int id;
    bool is_self, dead;
    bool waiting;         /* this pass: a message waits on comm */
    struct hgx_list link; /* on nm_class.conns */
};

struct nm_addr {
    na_addr_t head;
    int rank;
    struct dyn_conn *conn; /* mpi+dynamic; NULL for mpi+static */
};

struct nm_mem {
    na_mem_handle_t head;
    struct hgx_emul_mem em;
    struct na_segment one;
};

/* Plugin area of every op id (nm_op_start sets every field: keep it in step). */
struct nm_op {
    na_class_t *na_class;
    MPI_Request req;
    void *bounce;
    void *buf;
    size_t buf_size;
    struct hgx_list link; /* on uq or eq while its receive waits there */
    struct hgx_emul_oreq *oreq;
    struct hgx_emul *emul; /* emulation instance of oreq */
    struct dyn_conn *conn; /* unexpected receive: connection it arrived on */
    char *sink;            /* receive posted as an MPI_Irecv into a sink (Open MPI) */
    MPI_Comm comm;         /* expected receive: communicator to match on */
    bool irecv;            /* receive posted as an MPI_Irecv (Open MPI; sink) */
    int src, tag;
};

/* Start an op from a clean state, field by field: GCC clears a struct this
 * size with "rep stos", whose start-up costs more than the stores. */
static inline void nm_op_start(struct nm_op *mo, na_class_t *na_class)
{
    mo->na_class = na_class;
    memset(&mo->req, 0, sizeof(mo->req)); /* all-zero, as before: not MPI_REQUEST_NULL */
    mo->bounce = NULL;
    mo->buf = NULL;
    mo->buf_size = 0;
    hgx_list_init(&mo->link);
    mo->oreq = NULL;
    mo->emul = NULL;
    mo->conn = NULL;
    mo->sink = NULL;
    memset(&mo->comm, 0, sizeof(mo->comm)); /* all-zero: "not set", not MPI_COMM_NULL */
    mo->irecv = false;
    mo->src = mo->tag = 0;
}

#define PC(cls) ((struct nm_class *)(cls)->plugin_class)

/* Polling windows of nm_poll_wait. After posting a receive or a put/get (a
 * reply or completion is awaited) the window outlasts the longest sleep of a
 * peer that was active recently (NM_SLEEP_BUSY_MAX_NS): were it shorter, two
 * peers could keep missing each other, each one's message arriving while the
 * other sleeps (a stable ~1 ms round trip). After a send or a progress event
 * more traffic is likely close too, but nothing is owed. */
#define NM_POST_SPIN_US 2000
#define NM_EVENT_SPIN_US 500
/* While MPI requests are outstanding (bulk chunks above all), MPI moves
 * their data only from inside our MPI calls (a rendezvous copy, a pipeline
 * fragment): a sleep there stalls the transfer itself. Keep polling as long
 * as they progress, i.e. while the last event is this recent. */
#define NM_INFLIGHT_SPIN_US 20000

/* Kinds of activity noted since nm_poll_wait last read the clock. */
#define ACT_EVENT 1u /* a send or a progress event: NM_EVENT_SPIN_US */
#define ACT_POST 2u  /* a receive or a put/get posted: NM_POST_SPIN_US */

/* A post or a progress event: traffic is likely close (see nm_poll_wait).
 * Only noted, without a clock read (~22 ns in a VM) on the message path:
 * nm_poll_wait dates it with the clock value it reads anyway. */
static inline void nm_mark_active(struct nm_class *pc, unsigned kind)
{
    if ((atomic_load_explicit(&pc->noted, memory_order_relaxed) & kind) != kind)
        atomic_fetch_or_explicit(&pc->noted, kind, memory_order_relaxed);
}

/* An NA op of the class ends with ret. */
static inline void nm_op_done(struct nm_class *pc, na_op_id_t *op, na_return_t ret)
{
    pc->ncompleted++;
    na_op_complete(op, ret);
}

#ifdef OPEN_MPI
/* Receive sinks (nm_sink_get in na_mpi.c says why). */
#define SINK_SIZE ((size_t)INT_MAX + 1)
#define SINK_KEEP ((size_t)64 << 10)
#define SINK_MAX 1024           /* sinks per class: receives posted into one at once */
#define SINK_COPY_MAX SINK_KEEP /* larger expected buffers: probed, no copy */

#endif

/* The calls between the plugin's files: hidden, so they are not exported and
 * link-time optimization inlines them as if each file were the whole plugin. */
#pragma GCC visibility push(hidden)

/* na_mpi.c */
void nm_log_err(const char *what, int rc);
void nm_date_activity(struct nm_class *pc, uint64_t t);
#ifdef OPEN_MPI
char *nm_sink_get(struct nm_class *pc);
void nm_sink_put(struct nm_class *pc, char *s, int err, size_t count);
#endif

/* na_mpi_dynamic.c */
extern const struct hgx_param nm_param_connect_timeout_ms;
extern const struct hgx_param nm_param_service;
int nm_dyn_close_port(const char *port);
int nm_dyn_self_comm(void);
na_return_t nm_dyn_open_port(char *port, const char *why);
void nm_dyn_escape(const char *in, char *out, size_t n);
bool nm_dyn_unescape(const char *in, char *out, size_t n);
na_return_t nm_dyn_connect(const char *target, bool is_name, int tag_bye,
                           MPI_Comm *comm_p, char *port_out);
na_return_t nm_dyn_connect_inline(const char *target, bool is_name, MPI_Comm *comm_p,
                                  char *port_out);
struct dyn_conn *nm_conn_add(struct nm_class *pc, MPI_Comm c, const char *port);
int nm_dyn_take_accepted(struct nm_class *pc);
void nm_dyn_disconnect(struct dyn_conn *k, bool send_bye, int tag_bye);
int nm_dyn_check_bye(struct nm_class *pc, struct dyn_conn *k);
na_return_t nm_dyn_listen(struct nm_class *pc);
void nm_dyn_finalize(struct nm_class *pc);

/* na_mpi_addr.c */
na_return_t nm_addr_new(na_class_t *na_class, struct dyn_conn *conn, int rank,
                        na_addr_t **addr_p);
na_ops_addr_lookup_fn nm_addr_lookup;
na_ops_addr_destroy_fn nm_addr_destroy;
na_ops_addr_self_fn nm_addr_self;
na_ops_addr_cmp_fn nm_addr_cmp;
na_ops_addr_is_self_fn nm_addr_is_self;
na_ops_addr_to_string_fn nm_addr_to_string;
na_ops_addr_get_serialize_size_fn nm_addr_get_serialize_size;
na_ops_addr_serialize_fn nm_addr_serialize;
na_ops_addr_deserialize_fn nm_addr_deserialize;

/* na_mpi_msg.c */
na_ops_msg_get_max_unexpected_size_fn nm_max_unexp;
na_ops_msg_get_max_expected_size_fn nm_max_exp;
na_ops_msg_get_max_tag_fn nm_max_tag;
na_ops_msg_send_unexpected_fn nm_send_unexpected;
na_ops_msg_send_expected_fn nm_send_expected;
na_ops_msg_recv_unexpected_fn nm_recv_unexpected;
int nm_match_unexpected(struct nm_class *pc);
void nm_unexp_arm(struct nm_class *pc);
void nm_recv_exp_done(void *obj, uintptr_t aux, int err, const MPI_Status *st);
na_ops_msg_recv_expected_fn nm_recv_expected;
int nm_match_expected(struct nm_class *pc);
int nm_take_held(struct nm_class *pc);
void nm_hold(struct nm_class *pc, MPI_Message *msg, const MPI_Status *st);
int nm_claim_any(struct nm_class *pc, int *rc);
void nm_drop_held(struct nm_class *pc);

/* na_mpi_late.c */
void nm_late_expect(struct nm_class *pc, int src, int tag, MPI_Comm comm);
void nm_late_forget(struct nm_class *pc, int src, int tag, MPI_Comm comm);
bool nm_late_is(struct nm_class *pc, const MPI_Status *st, MPI_Comm comm);
void nm_late_drop(struct nm_class *pc, MPI_Message *msg, const MPI_Status *st,
                  MPI_Comm comm);

/* na_mpi_rma.c */
na_ops_mem_handle_create_fn nm_mem_handle_create;
na_ops_mem_handle_create_segments_fn nm_mem_handle_create_segments;
na_ops_mem_handle_free_fn nm_mem_handle_free;
na_ops_mem_handle_get_max_segments_fn nm_mem_max_segments;
na_ops_mem_register_fn nm_mem_register;
na_ops_mem_deregister_fn nm_mem_deregister;
na_ops_mem_handle_get_serialize_size_fn nm_mem_serialize_size;
na_ops_mem_handle_serialize_fn nm_mem_serialize;
na_ops_mem_handle_deserialize_fn nm_mem_deserialize;
na_ops_rma_fn nm_rma;

/* na_mpi_progress.c */
int nm_probe_waiting(struct nm_class *pc, int *events);
na_ops_poll_get_fd_fn nm_poll_get_fd;
na_ops_poll_try_wait_fn nm_poll_try_wait;
na_ops_poll_fn nm_poll;
na_ops_poll_wait_fn nm_poll_wait;

#pragma GCC visibility pop

#endif
