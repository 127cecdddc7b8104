/*
 * na_mpi.c -- the MPI NA plugin ("mpi+static" and "mpi+dynamic").
 *
 * One MPI_Comm_dup of MPI_COMM_WORLD (or of the comm given to
 * na_mpi_set_comm()) with MPI_ERRORS_RETURN carries all traffic, so no tag of
 * the application can match ours (mpi+dynamic: see "mpi+dynamic" below).
 * Tag space of that communicator:
 *
 *   0                         unexpected messages (8-byte header carries the NA tag)
 *   1                         mpi_emul control packets
 *   2 .. 2+S-1                mpi_emul put data   (origin -> target), S = MPI_EMUL_NSLOTS
 *   2+S .. 2+2S-1             mpi_emul get data   (target -> origin)
 *   2+2S .. MPI_TAG_UB        expected messages: 2+2S + NA tag
 *
 * The mpi_emul data tags are used on a second dup (dcomm), so that a wildcard
 * probe on comm never matches bulk data; there, the tags from 2+2S up carry
 * the data of the other tag generations (mpi_emul_set_tag_gens), as many as
 * fit below MPI_TAG_UB. mpi+dynamic connections carry data and NA messages
 * on one intercommunicator: there, 2+2S .. MPI_TAG_UB-1 is split between the
 * NA tags (at least half of it, at least MIN_NA_TAGS) and the tag
 * generations above them, and MPI_TAG_UB is BYE.
 *
 * All nonblocking MPI requests live in one table tested from poll() (see
 * mpi_reqtab.h). Each poll pass takes the oldest message waiting on comm with
 * one MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG) and dispatches it by tag
 * (claim_any); a message whose NA receive is not posted yet is held (as its
 * MPI_Message, in arrival order, at most HELD_MAX) and later receives take held
 * messages first. Every MPI call runs Open MPI's whole progress engine, so one
 * call that both detects and claims beats a probe per kind. Under Open MPI,
 * posted NA receives are also MPI_Irecvs into sinks (sink_get: never
 * truncated), reported by the table's MPI_Testsome, and the claim runs only as
 * often as something needs it (claim_due). One class mutex serializes every MPI
 * call, so MPI_THREAD_SERIALIZED is enough.
 */
#include "na_mpi_int.h"
#include "mpi_emul.h"
#include "mpi_reqtab.h"
#include "na_plugin.h"
#include "hgx_spin.h"

#include <errno.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define TAG_UNEXP 0
#define TAG_CTRL 1
#define TAG_PUT_BASE 2
#define TAG_GET_BASE (TAG_PUT_BASE + MPI_EMUL_NSLOTS)
#define TAG_EXP_BASE (TAG_GET_BASE + MPI_EMUL_NSLOTS)
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
/* Claimed messages held for NA receives not posted yet; past this, claiming
 * stops and the per-kind probes run (see probe_waiting). */
#define HELD_MAX 4096

/* Longest address string: mpi+dynamic:// and a percent-escaped port. */
#define DYN_ADDR_MAX (16 + 3 * MPI_MAX_PORT_NAME)

struct dyn_conn;
struct dyn_acceptor;

/* A message claimed on pc->comm that no posted NA receive takes yet. */
struct held_msg {
    MPI_Message msg;
    MPI_Status st;
    struct held_msg *next;
};

struct mpi_addr;

struct mpi_class {
    /* mpi+static: the address of each rank of comm, created on first use and
     * kept until finalize; lookups and sources are references to it */
    _Atomic(struct mpi_addr *) *rank_addrs;
    MPI_Comm comm;  /* mpi+dynamic: a dup of MPI_COMM_SELF (the self connection) */
    MPI_Comm dcomm; /* mpi_emul data chunks of comm's emulation */
    int rank, size;
    bool we_init_mpi;
    pthread_mutex_t lock;
    struct hgx_mreqtab tab;
    struct mpi_emul *emul;
    size_t max_unexp, max_exp;
    na_tag_t max_tag;
    struct mpi_op *uq_head, *uq_tail; /* posted unexpected receives */
    struct mpi_op *eq_head;           /* posted expected receives (not yet in MPI) */
    unsigned long ncompleted;
    _Atomic unsigned noted;            /* ACT_* noted, not dated yet (mark_active) */
    _Atomic uint64_t last_activity_us; /* last post or progress event */
    _Atomic uint64_t spin_until_us;    /* mpi_poll_wait polls without sleeping until */
    bool waiting; /* this pass: probe comm per kind (held list full; see probe_waiting) */
    bool take_ctrl; /* this pass: probe comm for mpi_emul control packets */
    struct held_msg *held_head, *held_tail;
    int nheld;
    int nheld_unexp;      /* held messages of tag TAG_UNEXP */
    struct mpi_op *upost; /* Open MPI: unexpected receive in MPI (unexp_arm) */
    char *sink_free;      /* unused sinks, linked through their first bytes (sink_get) */
    int nsinks;           /* sinks mapped */
    bool sink_failed;     /* a mapping failed: receives are probed from then on */
    unsigned long ndropped; /* messages received and discarded (logged each) */
    int nrma;       /* put/get ops of ours in progress (they await control packets) */
    unsigned npass; /* passes since the last claim_any (see claim_due) */
    char small[MRECV_MAX]; /* unexpected messages received with MPI_Mrecv */
    /* mpi+dynamic only */
    bool dynamic, listening, published;
    int tag_bye;
    int conn_gen_base;                  /* connections: data tags of generations >= 1 */
    unsigned conn_gen_bits;             /* connections: tag-generation bits */
    struct dyn_conn *self_conn, *conns; /* conns: remote connections, newest first */
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
    struct mpi_emul *emul;
    char *port; /* port we connected to (client side), else NULL */
    int id;
    bool is_self, dead;
    bool waiting; /* this pass: a message waits on comm */
    struct dyn_conn *next;
};

struct mpi_addr {
    na_addr_t head;
    int rank;
    struct dyn_conn *conn; /* mpi+dynamic; NULL for mpi+static */
};

struct mpi_mem {
    na_mem_handle_t head;
    struct mpi_emul_mem em;
    struct na_segment one;
};

/* Plugin area of every op id (mpi_op_start sets every field: keep it in step). */
struct mpi_op {
    na_class_t *na_class;
    MPI_Request req;
    void *bounce;
    void *buf;
    size_t buf_size;
    struct mpi_op *next;
    struct mpi_emul_oreq *oreq;
    struct mpi_emul *emul; /* emulation instance of oreq */
    struct dyn_conn *conn; /* unexpected receive: connection it arrived on */
    char *sink;            /* receive posted as an MPI_Irecv into a sink (Open MPI) */
    MPI_Comm comm;         /* expected receive: communicator to match on */
    bool in_uq, in_eq;
    bool irecv; /* receive posted as an MPI_Irecv (Open MPI; sink) */
    int src, tag;
};

/* Start an op from a clean state, field by field: GCC clears a struct this
 * size with "rep stos", whose start-up costs more than the stores. */
static inline void mpi_op_start(struct mpi_op *mo, na_class_t *na_class)
{
    mo->na_class = na_class;
    memset(&mo->req, 0, sizeof(mo->req)); /* all-zero, as before: not MPI_REQUEST_NULL */
    mo->bounce = NULL;
    mo->buf = NULL;
    mo->buf_size = 0;
    mo->next = NULL;
    mo->oreq = NULL;
    mo->emul = NULL;
    mo->conn = NULL;
    mo->sink = NULL;
    memset(&mo->comm, 0, sizeof(mo->comm)); /* all-zero: "not set", not MPI_COMM_NULL */
    mo->in_uq = mo->in_eq = false;
    mo->irecv = false;
    mo->src = mo->tag = 0;
}

static MPI_Comm na_mpi_user_comm = MPI_COMM_NULL;
static MPI_Comm na_mpi_intra_comm = MPI_COMM_NULL; /* NA_MPI_Set_init_intra_comm */
static int na_mpi_init_refs; /* classes that rely on MPI_Init done by us */
static pthread_mutex_t na_mpi_global_lock = PTHREAD_MUTEX_INITIALIZER;

void na_mpi_set_comm(MPI_Comm comm)
{
    pthread_mutex_lock(&na_mpi_global_lock);
    na_mpi_user_comm = comm;
    pthread_mutex_unlock(&na_mpi_global_lock);
}

void na_mpi_set_intra_comm(MPI_Comm comm)
{
    pthread_mutex_lock(&na_mpi_global_lock);
    na_mpi_intra_comm = comm;
    pthread_mutex_unlock(&na_mpi_global_lock);
}

#define PC(cls) ((struct mpi_class *)(cls)->plugin_class)

static void log_mpi(const char *what, int rc)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof(s), "error %d", rc);
    HGX_LOG_ERROR(MPI, "%s failed: %s", what, s);
}

/*
 * The communicator mpi+static runs on when the application gave Mercury's
 * intra communicator. In Mercury it is one side (servers or clients) of a
 * split of MPI_COMM_WORLD and the plugin reaches the other side through an
 * intercommunicator over MPI_COMM_WORLD; hgx reaches every rank directly, so
 * a comm smaller than MPI_COMM_WORLD means MPI_COMM_WORLD, and one spanning
 * it is used as it is (addresses are then its ranks).
 */
static na_return_t intra_base(MPI_Comm intra, MPI_Comm *base)
{
    int inter = 0, n = 0, world = 0, rc;
    if ((rc = MPI_Comm_test_inter(intra, &inter)) != MPI_SUCCESS ||
        (rc = MPI_Comm_size(intra, &n)) != MPI_SUCCESS ||
        (rc = MPI_Comm_size(MPI_COMM_WORLD, &world)) != MPI_SUCCESS) {
        log_mpi("checking the NA_MPI_Set_init_intra_comm communicator", rc);
        return NA_INVALID_ARG;
    }
    if (inter) {
        HGX_LOG_ERROR(MPI, "NA_MPI_Set_init_intra_comm was given an intercommunicator; "
                           "mpi+static needs an intracommunicator");
        return NA_INVALID_ARG;
    }
    *base = n == world ? intra : MPI_COMM_WORLD;
    HGX_LOG_DEBUG(MPI, "mpi+static: intra communicator of %d of %d ranks, running on %s",
                  n, world, n == world ? "it" : "MPI_COMM_WORLD");
    return NA_SUCCESS;
}

static na_return_t na_from_mpi(int rc)
{
    int cls = rc;
    if (rc == MPI_SUCCESS)
        return NA_SUCCESS;
    MPI_Error_class(rc, &cls);
    switch (cls) {
    case MPI_ERR_TRUNCATE:
        return NA_MSGSIZE;
    case MPI_ERR_NO_MEM:
        return NA_NOMEM;
    case MPI_ERR_RANK:
    case MPI_ERR_TAG:
    case MPI_ERR_COUNT:
        return NA_INVALID_ARG;
    default:
        return NA_PROTOCOL_ERROR;
    }
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Polling windows of mpi_poll_wait. After posting a receive or a put/get (a
 * reply or completion is awaited) the window outlasts the longest sleep of a
 * peer that was active recently (MPI_SLEEP_BUSY_MAX_NS): were it shorter, two
 * peers could keep missing each other, each one's message arriving while the
 * other sleeps (a stable ~1 ms round trip). After a send or a progress event
 * more traffic is likely close too, but nothing is owed. */
#define MPI_POST_SPIN_US 2000
#define MPI_EVENT_SPIN_US 500
/* While MPI requests are outstanding (bulk chunks above all), MPI moves
 * their data only from inside our MPI calls (a rendezvous copy, a pipeline
 * fragment): a sleep there stalls the transfer itself. Keep polling as long
 * as they progress, i.e. while the last event is this recent. */
#define MPI_INFLIGHT_SPIN_US 20000

/* Kinds of activity noted since mpi_poll_wait last read the clock. */
#define ACT_EVENT 1u /* a send or a progress event: MPI_EVENT_SPIN_US */
#define ACT_POST 2u  /* a receive or a put/get posted: MPI_POST_SPIN_US */

/* A post or a progress event: traffic is likely close (see mpi_poll_wait).
 * Only noted, without a clock read (~22 ns in a VM) on the message path:
 * mpi_poll_wait dates it with the clock value it reads anyway. */
static void mark_active(struct mpi_class *pc, unsigned kind)
{
    if ((atomic_load_explicit(&pc->noted, memory_order_relaxed) & kind) != kind)
        atomic_fetch_or_explicit(&pc->noted, kind, memory_order_relaxed);
}

/* Date the activity noted since the last call at t. A note can be up to
 * NA's spin window old when dated: the polling window only grows by it. */
static void date_activity(struct mpi_class *pc, uint64_t t)
{
    if (!atomic_load_explicit(&pc->noted, memory_order_relaxed))
        return;
    unsigned kind = atomic_exchange_explicit(&pc->noted, 0u, memory_order_relaxed);
    if (!kind)
        return;
    uint64_t until = t + (kind & ACT_POST ? MPI_POST_SPIN_US : MPI_EVENT_SPIN_US);
    atomic_store(&pc->last_activity_us, t);
    if (atomic_load(&pc->spin_until_us) < until)
        atomic_store(&pc->spin_until_us, until);
}

static void op_done(struct mpi_class *pc, na_op_id_t *op, na_return_t ret)
{
    pc->ncompleted++;
    na_op_complete(op, ret);
}

#ifdef OPEN_MPI
/*
 * Open MPI 4.1 (ob1 over a single-copy BTL, e.g. vader with CMA) writes a
 * truncated rendezvous message whole, past the end of the receive buffer
 * (measured with 4.1.4: 5000 bytes sent to a 4200-byte MPI_Irecv all land).
 * So a receive posted before the size of its message is known must never be
 * truncated: it is posted for INT_MAX bytes (no message of ours is larger:
 * MPI_BYTE, int count) into a sink, SINK_SIZE bytes of address space mapped
 * without reserving memory (MAP_NORESERVE), so only pages a message touches
 * get memory, and the message is copied to the NA buffer when it fits. The
 * pages a large message took above SINK_KEEP are given back after it. Where
 * the mapping fails (strict overcommit, address space limit) the receive
 * takes the probed path, which knows the size before receiving.
 */
#define SINK_SIZE ((size_t)INT_MAX + 1)
#define SINK_KEEP ((size_t)64 << 10)
#define SINK_MAX 1024           /* sinks per class: receives posted into one at once */
#define SINK_COPY_MAX SINK_KEEP /* larger expected buffers: probed, no copy */

/* A sink for one receive, NULL if none can be had. Lock held. */
static char *sink_get(struct mpi_class *pc)
{
    char *s = pc->sink_free;
    if (s) {
        memcpy(&pc->sink_free, s, sizeof(s));
        return s;
    }
    if (pc->nsinks >= SINK_MAX || pc->sink_failed)
        return NULL;
    s = mmap(NULL, SINK_SIZE, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s == MAP_FAILED) {
        pc->sink_failed = true;
        HGX_LOG_WARNING(MPI,
                        "cannot map a receive sink (%s): receives without one are probed",
                        strerror(errno));
        return NULL;
    }
    pc->nsinks++;
    return s;
}

/* The receive into s is over; count: bytes it may have written. A request
 * freed unfinished (MPI_ERR_REQUEST, finalize) may still be written into by
 * MPI: its sink stays mapped. Lock held. */
static void sink_put(struct mpi_class *pc, char *s, int err, size_t count)
{
    if (err == MPI_ERR_REQUEST)
        return;
    if (err != MPI_SUCCESS)
        count = SINK_SIZE;
    if (count > SINK_KEEP)
        madvise(s + SINK_KEEP, count - SINK_KEEP, MADV_DONTNEED);
    memcpy(s, &pc->sink_free, sizeof(s));
    pc->sink_free = s;
}

/* Finalize, after the request table: unmap the sinks given back. */
static void sinks_unmap(struct mpi_class *pc)
{
    while (pc->sink_free) {
        char *s = pc->sink_free;
        memcpy(&pc->sink_free, s, sizeof(s));
        munmap(s, SINK_SIZE);
        pc->nsinks--;
    }
    if (pc->nsinks)
        HGX_LOG_DEBUG(MPI, "finalize: %d receive sinks left mapped (requests unfinished)",
                      pc->nsinks);
}
#endif

/*------------------------------------------------------------ class */

static bool mpi_check_protocol(const char *protocol_name)
{
    return strcmp(protocol_name, "static") == 0 || strcmp(protocol_name, "dynamic") == 0;
}

/*------------------------------------------------------------ mpi+dynamic
 *
 * A listener opens a port (MPI_Open_port) and, when a name server answers,
 * publishes it under a service name (env HGX_MPI_SERVICE, default "hgx").
 * MPI_Comm_accept blocks, so an acceptor thread loops on it (on dyn_self)
 * and hands each new intercommunicator to the progress loop under a lock;
 * this needs MPI_THREAD_MULTIPLE, checked at init. A lookup of
 * "mpi+dynamic://PORT" (port percent-escaped) or "mpi+dynamic://NAME"
 * (MPI_Lookup_name) runs MPI_Comm_connect in a helper thread and waits at most
 * HGX_MPI_CONNECT_TIMEOUT_MS (default 10000): Open MPI 4.1 has no usable
 * connect/accept timeout (its own PMIx exchange waits 600 s), so past the
 * bound the lookup fails with NA_ADDRNOTAVAIL and the helper thread is left
 * behind (detached; a late connection is never used).
 *
 * Every connection has its own mpi_emul instance sharing the registry of the
 * self connection, so put/get work across intercommunicators. Teardown: the
 * side that finalizes first sends BYE (top tag) and calls
 * MPI_Comm_disconnect, the other side disconnects when its progress sees the
 * BYE (MPI_Comm_disconnect is collective: a peer that never progresses nor
 * finalizes holds the finalizing side). Open MPI cannot interrupt a blocked
 * MPI_Comm_accept (a connect to one's own port deadlocks), so finalize joins
 * the acceptor only if it has left accept; otherwise it is detached, works on
 * its own refcounted state, and MPI_Finalize ends it.
 */

static const char *mpi_library_name(char *buf, size_t n)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(v, &len) != MPI_SUCCESS)
        snprintf(v, sizeof(v), "unknown MPI");
    if (strstr(v, "MPICH")) {
        const char *dev = strstr(v, "ch4:") ? strstr(v, "ch4:") : strstr(v, "ch3:");
        size_t dl = dev ? strcspn(dev, " \t\n,") : 0;
        snprintf(buf, n, "MPICH%s%.*s", dev ? " " : "", (int)dl, dev ? dev : "");
    } else {
        snprintf(buf, n, "%.*s", (int)strcspn(v, ",\n"), v);
    }
    return buf;
}

/*
 * MPI_Open_port, MPI_Close_port and the name service act on no communicator:
 * MPI-3 libraries raise their errors on MPI_COMM_WORLD, MPI-4 ones on
 * MPI_COMM_SELF, and those handlers are the application's (fatal by
 * default). So each such call runs with MPI_ERRORS_RETURN on both, and the
 * application's handlers are put back right after it; calls in several
 * threads at once share one window (counted). A lookup abandoned in its
 * helper thread (see dyn_connect) keeps the window open until MPI_Lookup_name
 * returns. Accept and connect run on dyn_self, a private dup of MPI_COMM_SELF
 * with MPI_ERRORS_RETURN, so the acceptor blocked in MPI_Comm_accept for the
 * life of a listener changes nothing of the application's.
 */
static pthread_mutex_t dyn_eh_lock = PTHREAD_MUTEX_INITIALIZER;
static int dyn_eh_depth;
static MPI_Errhandler dyn_eh_world, dyn_eh_self;
static MPI_Comm dyn_self = MPI_COMM_NULL; /* kept until MPI_Finalize: a detached
                                             acceptor may still use it */

static void dyn_eh_enter(void)
{
    pthread_mutex_lock(&dyn_eh_lock);
    if (dyn_eh_depth++ == 0) {
        MPI_Comm_get_errhandler(MPI_COMM_WORLD, &dyn_eh_world);
        MPI_Comm_get_errhandler(MPI_COMM_SELF, &dyn_eh_self);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    }
    pthread_mutex_unlock(&dyn_eh_lock);
}

static void dyn_eh_leave(void)
{
    pthread_mutex_lock(&dyn_eh_lock);
    if (--dyn_eh_depth == 0) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, dyn_eh_world);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, dyn_eh_self);
        MPI_Errhandler_free(&dyn_eh_world);
        MPI_Errhandler_free(&dyn_eh_self);
    }
    pthread_mutex_unlock(&dyn_eh_lock);
}

static int dyn_close_port(const char *port)
{
    dyn_eh_enter();
    int rc = MPI_Close_port(port);
    dyn_eh_leave();
    return rc;
}

/* The communicator accept and connect run on (created once per process). */
static int dyn_self_comm(void)
{
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&dyn_eh_lock);
    if (dyn_self == MPI_COMM_NULL) {
        rc = MPI_Comm_dup(MPI_COMM_SELF, &dyn_self);
        if (rc == MPI_SUCCESS)
            rc = MPI_Comm_set_errhandler(dyn_self, MPI_ERRORS_RETURN);
    }
    pthread_mutex_unlock(&dyn_eh_lock);
    return rc;
}

/* Open a port; on failure log the real cause (MPICH ch4:ucx has no MPI_Open_port). */
static na_return_t dyn_open_port(char *port, const char *why)
{
    dyn_eh_enter();
    int rc = MPI_Open_port(MPI_INFO_NULL, port);
    dyn_eh_leave();
    if (rc != MPI_SUCCESS) {
        char lib[128], es[MPI_MAX_ERROR_STRING];
        int len = 0;
        if (MPI_Error_string(rc, es, &len) != MPI_SUCCESS)
            snprintf(es, sizeof(es), "error %d", rc);
        HGX_LOG_ERROR(
            MPI,
            "MPI_Open_port is not supported by this MPI (%s): %s needs dynamic process "
            "support (MPI_Open_port/MPI_Comm_accept/MPI_Comm_connect); use Open MPI with "
            "ompi-server (tools/ompi-dynamic-run.sh) or mpi+static [MPI_Open_port: %s]",
            mpi_library_name(lib, sizeof(lib)), why, es);
        return NA_PROTONOSUPPORT;
    }
    return NA_SUCCESS;
}

static void dyn_escape(const char *in, char *out, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 4 < n; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
            (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-' ||
            *p == '~') {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    out[o] = '\0';
}

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

static bool dyn_unescape(const char *in, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = in; *p; p++) {
        if (o + 1 >= n)
            return false;
        if (*p == '%') {
            int h = hexval(p[1]), l = h < 0 ? -1 : hexval(p[2]);
            if (h < 0 || l < 0)
                return false;
            out[o++] = (char)(h * 16 + l);
            p += 2;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
    return o > 0;
}

struct dyn_acceptor {
    pthread_mutex_t mu;
    int refs;
    bool closing, in_accept;
    char port[MPI_MAX_PORT_NAME];
    MPI_Comm *pending;
    size_t npending, cap;
    pthread_t thr;
};

static void acceptor_unref(struct dyn_acceptor *a)
{
    pthread_mutex_lock(&a->mu);
    int left = --a->refs;
    pthread_mutex_unlock(&a->mu);
    if (left == 0) {
        free(a->pending);
        pthread_mutex_destroy(&a->mu);
        free(a);
    }
}

static void *acceptor_main(void *arg)
{
    struct dyn_acceptor *a = arg;
    for (;;) {
        pthread_mutex_lock(&a->mu);
        bool closing = a->closing;
        a->in_accept = !closing;
        pthread_mutex_unlock(&a->mu);
        if (closing)
            break;
        MPI_Comm c = MPI_COMM_NULL;
        int rc = MPI_Comm_accept(a->port, MPI_INFO_NULL, 0, dyn_self, &c);
        pthread_mutex_lock(&a->mu);
        a->in_accept = false;
        if (a->closing) { /* the class is gone: the connection is never used */
            pthread_mutex_unlock(&a->mu);
            break;
        }
        if (rc != MPI_SUCCESS) {
            pthread_mutex_unlock(&a->mu);
            log_mpi("MPI_Comm_accept (acceptor thread stops; no new connections)", rc);
            break;
        }
        if (a->npending == a->cap) {
            size_t cap = a->cap ? a->cap * 2 : 8;
            MPI_Comm *p = realloc(a->pending, cap * sizeof(*p));
            if (!p) {
                pthread_mutex_unlock(&a->mu);
                HGX_LOG_ERROR(MPI, "out of memory: dropping an accepted connection");
                MPI_Comm_disconnect(&c);
                continue;
            }
            a->pending = p;
            a->cap = cap;
        }
        a->pending[a->npending++] = c;
        pthread_mutex_unlock(&a->mu);
    }
    acceptor_unref(a);
    return NULL;
}

struct dyn_connector {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    bool done, abandoned, is_name;
    int rc;
    const char *failed_call;
    MPI_Comm comm;
    char target[MPI_MAX_PORT_NAME];
    char port[MPI_MAX_PORT_NAME];
};

static void connector_unref(struct dyn_connector *k)
{
    pthread_mutex_lock(&k->mu);
    int left = --k->refs;
    pthread_mutex_unlock(&k->mu);
    if (left == 0) {
        pthread_cond_destroy(&k->cv);
        pthread_mutex_destroy(&k->mu);
        free(k);
    }
}

static void *connector_main(void *arg)
{
    struct dyn_connector *k = arg;
    int rc = MPI_SUCCESS;
    const char *failed = NULL;
    MPI_Comm c = MPI_COMM_NULL;
    if (k->is_name) {
        dyn_eh_enter();
        rc = MPI_Lookup_name(k->target, MPI_INFO_NULL, k->port);
        dyn_eh_leave();
        if (rc != MPI_SUCCESS)
            failed = "MPI_Lookup_name";
    } else {
        snprintf(k->port, sizeof(k->port), "%s", k->target);
    }
    if (rc == MPI_SUCCESS) {
        rc = MPI_Comm_connect(k->port, MPI_INFO_NULL, 0, dyn_self, &c);
        if (rc != MPI_SUCCESS)
            failed = "MPI_Comm_connect";
    }
    pthread_mutex_lock(&k->mu);
    k->done = true;
    k->rc = rc;
    k->failed_call = failed;
    k->comm = c; /* abandoned: left unused (MPI may already be finalized) */
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
    connector_unref(k);
    return NULL;
}

/* Runs MPI_Lookup_name + MPI_Comm_connect in a helper thread, bounded. */
static na_return_t dyn_connect(const char *target, bool is_name, MPI_Comm *comm_p,
                               char *port_out)
{
    struct dyn_connector *k = calloc(1, sizeof(*k));
    if (!k)
        return NA_NOMEM;
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    k->refs = 2;
    k->is_name = is_name;
    snprintf(k->target, sizeof(k->target), "%s", target);
    pthread_t t;
    if (pthread_create(&t, NULL, connector_main, k) != 0) {
        k->refs = 1;
        connector_unref(k);
        return NA_NOMEM;
    }
    pthread_detach(t);
    const char *env = getenv("HGX_MPI_CONNECT_TIMEOUT_MS");
    long ms = env && *env ? strtol(env, NULL, 10) : 10000;
    if (ms <= 0)
        ms = 10000;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += ms / 1000;
    dl.tv_nsec += (ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L)
        dl.tv_sec++, dl.tv_nsec -= 1000000000L;
    na_return_t ret = NA_SUCCESS;
    pthread_mutex_lock(&k->mu);
    while (!k->done) {
        if (pthread_cond_timedwait(&k->cv, &k->mu, &dl) == ETIMEDOUT && !k->done)
            break;
    }
    if (!k->done) {
        k->abandoned = true;
        HGX_LOG_ERROR(
            MPI,
            "mpi+dynamic: %s \"%s\" did not complete within %ld ms "
            "(HGX_MPI_CONNECT_TIMEOUT_MS): is the server running and accepting, and were "
            "both "
            "jobs started with the same ompi-server (mpirun --ompi-server file:URI)?",
            is_name ? "lookup/connect of service" : "MPI_Comm_connect to port", target,
            ms);
        ret = NA_ADDRNOTAVAIL;
    } else if (k->rc != MPI_SUCCESS) {
        char es[MPI_MAX_ERROR_STRING];
        int len = 0;
        if (MPI_Error_string(k->rc, es, &len) != MPI_SUCCESS)
            snprintf(es, sizeof(es), "error %d", k->rc);
        HGX_LOG_ERROR(MPI, "mpi+dynamic: %s for \"%s\" failed: %s", k->failed_call,
                      target, es);
        ret = NA_ADDRNOTAVAIL;
    } else {
        *comm_p = k->comm;
        snprintf(port_out, MPI_MAX_PORT_NAME, "%s", k->port);
    }
    pthread_mutex_unlock(&k->mu);
    connector_unref(k);
    return ret;
}

/* New connection record for an intercommunicator. Class lock held. */
static struct dyn_conn *conn_add(struct mpi_class *pc, MPI_Comm c, const char *port)
{
    struct dyn_conn *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    if (mpi_emul_create(&k->emul, c, &pc->tab, TAG_CTRL, TAG_PUT_BASE, TAG_GET_BASE) !=
            NA_SUCCESS ||
        (port && !(k->port = strdup(port)))) {
        mpi_emul_free(k->emul);
        free(k);
        return NULL;
    }
    mpi_emul_share_registry(k->emul, pc->emul);
    mpi_emul_set_tag_gens(k->emul, pc->conn_gen_base, pc->conn_gen_bits);
    k->comm = c;
    k->id = ++pc->nconns;
    k->next = pc->conns;
    pc->conns = k;
    return k;
}

/* Move connections accepted by the acceptor thread into the class. Lock held. */
static int dyn_take_accepted(struct mpi_class *pc)
{
    struct dyn_acceptor *a = pc->acc;
    int n = 0;
    if (!a)
        return 0;
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < a->npending; i++) {
        MPI_Comm c = a->pending[i];
        struct dyn_conn *k = conn_add(pc, c, NULL);
        if (!k) {
            HGX_LOG_ERROR(MPI, "out of memory: dropping an accepted connection");
            MPI_Comm_disconnect(&c);
        } else {
            HGX_LOG_DEBUG(MPI, "mpi+dynamic: accepted connection %d", k->id);
            n++;
        }
    }
    a->npending = 0;
    pthread_mutex_unlock(&a->mu);
    return n;
}

static void dyn_disconnect(struct dyn_conn *k, bool send_bye, int tag_bye)
{
    if (k->dead || k->is_self)
        return;
    if (send_bye) {
        uint32_t bye = UNEXP_MAGIC;
        int rc = MPI_Send(&bye, (int)sizeof(bye), MPI_BYTE, 0, tag_bye, k->comm);
        if (rc != MPI_SUCCESS)
            log_mpi("MPI_Send (BYE)", rc);
    }
    int rc = MPI_Comm_disconnect(&k->comm);
    if (rc != MPI_SUCCESS)
        log_mpi("MPI_Comm_disconnect", rc);
    k->comm = MPI_COMM_NULL;
    k->dead = true;
}

/* BYE from the peer: it is finalizing; disconnect our side. Lock held. */
static int dyn_check_bye(struct mpi_class *pc, struct dyn_conn *k)
{
    int flag = 0;
    MPI_Message msg;
    uint32_t bye = 0;
    if (MPI_Improbe(0, pc->tag_bye, k->comm, &flag, &msg, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS ||
        !flag)
        return 0;
    MPI_Mrecv(&bye, (int)sizeof(bye), MPI_BYTE, &msg, MPI_STATUS_IGNORE);
    HGX_LOG_DEBUG(MPI, "mpi+dynamic: connection %d closed by the peer", k->id);
    dyn_disconnect(k, false, 0);
    return 1;
}

/* Listener setup: acceptor thread and service name. Class lock not needed (init). */
static na_return_t dyn_listen(struct mpi_class *pc)
{
    struct dyn_acceptor *a = calloc(1, sizeof(*a));
    if (!a)
        return NA_NOMEM;
    pthread_mutex_init(&a->mu, NULL);
    a->refs = 2;
    memcpy(a->port, pc->port, sizeof(a->port));
    if (pthread_create(&a->thr, NULL, acceptor_main, a) != 0) {
        a->refs = 1;
        acceptor_unref(a);
        HGX_LOG_ERROR(MPI, "cannot start the mpi+dynamic acceptor thread");
        return NA_NOMEM;
    }
    pc->acc = a;
    const char *svc = getenv("HGX_MPI_SERVICE");
    snprintf(pc->service, sizeof(pc->service), "%s", svc && *svc ? svc : "hgx");
    dyn_eh_enter();
    int rc = MPI_Publish_name(pc->service, MPI_INFO_NULL, pc->port);
    dyn_eh_leave();
    if (rc == MPI_SUCCESS) {
        pc->published = true;
        HGX_LOG_DEBUG(MPI, "mpi+dynamic: published service \"%s\"", pc->service);
    } else {
        char es[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, es, &len);
        HGX_LOG_WARNING(MPI,
                        "mpi+dynamic: MPI_Publish_name(\"%s\") failed (%s); only the "
                        "port address works (no name server, or the name is taken)",
                        pc->service, es);
    }
    return NA_SUCCESS;
}

static void dyn_finalize(struct mpi_class *pc)
{
    if (pc->acc) {
        struct dyn_acceptor *a = pc->acc;
        pthread_mutex_lock(&a->mu);
        a->closing = true;
        bool blocked = a->in_accept;
        pthread_mutex_unlock(&a->mu);
        if (blocked)
            pthread_detach(a->thr); /* ends with MPI_Finalize; see the comment above */
        else
            pthread_join(a->thr, NULL);
        dyn_take_accepted(pc); /* connections that arrived meanwhile get their BYE */
        acceptor_unref(a);
        pc->acc = NULL;
    }
    if (pc->published) {
        dyn_eh_enter();
        int rc = MPI_Unpublish_name(pc->service, MPI_INFO_NULL, pc->port);
        dyn_eh_leave();
        if (rc != MPI_SUCCESS)
            log_mpi("MPI_Unpublish_name", rc);
    }
    if (pc->listening) {
        int rc = dyn_close_port(pc->port);
        if (rc != MPI_SUCCESS)
            log_mpi("MPI_Close_port", rc);
    }
}

/* Finalize: messages claimed for NA receives never posted. Lock held. */
static void drop_held(struct mpi_class *pc)
{
    while (pc->held_head) {
        struct held_msg *h = pc->held_head;
        pc->held_head = h->next;
        int rc = hgx_mpi_mrecv_drop(&h->msg, &h->st);
        if (rc != MPI_SUCCESS)
            log_mpi("MPI_Mrecv (dropping a message at finalize)", rc);
        free(h);
    }
    if (pc->nheld)
        HGX_LOG_DEBUG(MPI, "finalize: dropped %d messages no receive was posted for",
                      pc->nheld);
    pc->held_tail = NULL;
    pc->nheld = pc->nheld_unexp = 0;
}

static na_return_t mpi_initialize(na_class_t *na_class, const struct na_info *info,
                                  bool listen)
{
    bool dynamic = strcmp(info->protocol_name, "dynamic") == 0;
    char port[MPI_MAX_PORT_NAME] = "";
    int inited = 0, finalized = 0, provided = 0, rc;
    bool we_init = false;
    na_return_t ret;

    if (info->host) {
        HGX_LOG_ERROR(MPI, "mpi+%s takes no address in the info string (got \"%s\")",
                      info->protocol_name, info->host);
        return NA_INVALID_ARG;
    }
    MPI_Finalized(&finalized);
    if (finalized) {
        HGX_LOG_ERROR(MPI, "MPI was already finalized; it cannot be initialized again");
        return NA_PROTOCOL_ERROR;
    }
    pthread_mutex_lock(&na_mpi_global_lock);
    MPI_Initialized(&inited);
    if (!inited) {
        if (na_mpi_user_comm != MPI_COMM_NULL || na_mpi_intra_comm != MPI_COMM_NULL) {
            pthread_mutex_unlock(&na_mpi_global_lock);
            HGX_LOG_ERROR(MPI, "a communicator was given (NA_MPI_Set_init_intra_comm or "
                               "hgx_init_mpi) but MPI is not initialized");
            return NA_INVALID_ARG;
        }
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS) {
            pthread_mutex_unlock(&na_mpi_global_lock);
            log_mpi("MPI_Init_thread", rc);
            return NA_PROTOCOL_ERROR;
        }
        if (provided < MPI_THREAD_SERIALIZED) {
            MPI_Finalize();
            pthread_mutex_unlock(&na_mpi_global_lock);
            HGX_LOG_ERROR(
                MPI,
                "MPI provides thread level %d, below MPI_THREAD_SERIALIZED which the NA "
                "progress thread needs",
                provided);
            return NA_PROTONOSUPPORT;
        }
        we_init = true;
        na_mpi_init_refs++;
    } else {
        MPI_Query_thread(&provided);
        if (provided < MPI_THREAD_SERIALIZED)
            HGX_LOG_WARNING(
                MPI,
                "the application initialized MPI at thread level %d (< SERIALIZED): "
                "call NA only from the thread that calls MPI",
                provided);
    }
    MPI_Comm base = na_mpi_user_comm != MPI_COMM_NULL ? na_mpi_user_comm : MPI_COMM_WORLD;
    MPI_Comm intra =
        na_mpi_user_comm == MPI_COMM_NULL ? na_mpi_intra_comm : MPI_COMM_NULL;
    pthread_mutex_unlock(&na_mpi_global_lock);
    /* mpi+dynamic connects each process on its own: an intra comm changes nothing */
    if (!dynamic && intra != MPI_COMM_NULL &&
        (ret = intra_base(intra, &base)) != NA_SUCCESS)
        goto undo_init;

    if (dynamic) {
        MPI_Query_thread(&provided);
        if (provided < MPI_THREAD_MULTIPLE) {
            HGX_LOG_ERROR(MPI,
                          "mpi+dynamic needs MPI_THREAD_MULTIPLE (MPI_Comm_accept and "
                          "MPI_Comm_connect block in helper threads) but MPI provides "
                          "thread level %d",
                          provided);
            ret = NA_PROTONOSUPPORT;
            goto undo_init;
        }
        rc = dyn_self_comm();
        if (rc != MPI_SUCCESS) {
            log_mpi("MPI_Comm_dup(MPI_COMM_SELF)", rc);
            ret = na_from_mpi(rc);
            goto undo_init;
        }
        /* Probe (and, for a listener, keep) a port: fails clearly where the MPI
         * library has no dynamic process support. */
        ret = dyn_open_port(port, "mpi+dynamic");
        if (ret != NA_SUCCESS)
            goto undo_init;
        if (!listen) {
            dyn_close_port(port);
            port[0] = '\0';
        }
        base = MPI_COMM_SELF;
    }

    struct mpi_class *pc = calloc(1, sizeof(*pc));
    if (!pc) {
        ret = NA_NOMEM;
        goto undo_init;
    }
    pc->we_init_mpi = we_init;
    pthread_mutex_init(&pc->lock, NULL);
    hgx_mreqtab_init(&pc->tab);

    rc = MPI_Comm_dup(base, &pc->comm); /* collective over base */
    if (rc != MPI_SUCCESS) {
        log_mpi("MPI_Comm_dup", rc);
        ret = NA_PROTOCOL_ERROR;
        goto free_pc;
    }
    pc->dcomm = MPI_COMM_NULL;
    if ((rc = MPI_Comm_set_errhandler(pc->comm, MPI_ERRORS_RETURN)) != MPI_SUCCESS ||
        (rc = MPI_Comm_dup(pc->comm, &pc->dcomm)) != MPI_SUCCESS || /* handler too */
        (rc = MPI_Comm_rank(pc->comm, &pc->rank)) != MPI_SUCCESS ||
        (rc = MPI_Comm_size(pc->comm, &pc->size)) != MPI_SUCCESS) {
        log_mpi("setting up the communicator", rc);
        ret = NA_PROTOCOL_ERROR;
        goto free_comm;
    }
    pc->rank_addrs = calloc((size_t)pc->size, sizeof(*pc->rank_addrs));
    if (!pc->rank_addrs) {
        ret = NA_NOMEM;
        goto free_comm;
    }
    int *tag_ub = NULL, flag = 0;
    rc = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    if (rc != MPI_SUCCESS || !flag || !tag_ub ||
        *tag_ub < TAG_EXP_BASE + MIN_NA_TAGS - 1) {
        HGX_LOG_ERROR(MPI,
                      "MPI_TAG_UB is %d; at least %d is needed for the hgx tag layout",
                      tag_ub && flag ? *tag_ub : -1, TAG_EXP_BASE + MIN_NA_TAGS - 1);
        ret = NA_PROTONOSUPPORT;
        goto free_comm;
    }
    /* mpi+dynamic connections: TAG_EXP_BASE .. tag_ub - 1 holds the NA tags
     * and, above them, the tag generations (at most half, leaving the NA at
     * least MIN_NA_TAGS; none if that does not fit two generations) */
    long long above = (long long)*tag_ub - TAG_EXP_BASE;
    if (dynamic) {
        pc->conn_gen_bits = mpi_emul_gen_bits((above - MIN_NA_TAGS) / 2);
        pc->max_tag = (na_tag_t)(above - 1 - mpi_emul_gen_span(pc->conn_gen_bits));
        pc->conn_gen_base = TAG_EXP_BASE + (int)pc->max_tag + 1;
    } else {
        pc->max_tag = (na_tag_t)above;
    }
    pc->tag_bye = *tag_ub; /* mpi+dynamic: above every NA and data tag */

    const struct na_init_info *ii = info->init_info;
    pc->max_unexp = ii->max_unexpected_size ? ii->max_unexpected_size : DEFAULT_MSG_SIZE;
    pc->max_exp = ii->max_expected_size ? ii->max_expected_size : DEFAULT_MSG_SIZE;
    if (pc->max_unexp > INT_MAX - UNEXP_HDR_SIZE || pc->max_exp > INT_MAX) {
        HGX_LOG_ERROR(MPI, "message size hints above INT_MAX are not supported");
        ret = NA_INVALID_ARG;
        goto free_comm;
    }
    ret = mpi_emul_create(&pc->emul, pc->comm, &pc->tab, TAG_CTRL, TAG_PUT_BASE,
                          TAG_GET_BASE);
    if (ret != NA_SUCCESS) {
        if (pc->emul) {
            mpi_emul_close(pc->emul);
            hgx_mreqtab_destroy(&pc->tab, 100);
            mpi_emul_free(pc->emul);
        }
        goto free_comm;
    }
    mpi_emul_set_data_comm(pc->emul, pc->dcomm);
    /* dcomm carries data only: the tag generations take TAG_EXP_BASE .. tag_ub */
    mpi_emul_set_tag_gens(pc->emul, TAG_EXP_BASE, mpi_emul_gen_bits(above + 1));
    if (dynamic) {
        pc->dynamic = true;
        pc->self_conn = calloc(1, sizeof(*pc->self_conn));
        if (!pc->self_conn) {
            mpi_emul_close(pc->emul);
            hgx_mreqtab_destroy(&pc->tab, 100);
            mpi_emul_free(pc->emul);
            ret = NA_NOMEM;
            goto free_comm;
        }
        pc->self_conn->comm = pc->comm;
        pc->self_conn->emul = pc->emul;
        pc->self_conn->is_self = true;
        if (listen) {
            memcpy(pc->port, port, sizeof(pc->port));
            pc->listening = true;
            port[0] = '\0'; /* owned by the class now */
            ret = dyn_listen(pc);
            if (ret != NA_SUCCESS) {
                dyn_close_port(pc->port);
                free(pc->self_conn);
                mpi_emul_close(pc->emul);
                hgx_mreqtab_destroy(&pc->tab, 100);
                mpi_emul_free(pc->emul);
                goto free_comm;
            }
            HGX_LOG_DEBUG(MPI, "mpi+dynamic listening on port %s", pc->port);
        }
    }
    na_class->plugin_class = pc;
    HGX_LOG_DEBUG(MPI,
                  "mpi+%s rank %d of %d, tag_ub %d, max NA tag %u, tag-generation bits "
                  "%u (connections: %u)",
                  info->protocol_name, pc->rank, pc->size, *tag_ub, pc->max_tag,
                  mpi_emul_gen_bits(above + 1), pc->conn_gen_bits);
    return NA_SUCCESS;

free_comm:
    if (pc->dcomm != MPI_COMM_NULL)
        MPI_Comm_free(&pc->dcomm);
    MPI_Comm_free(&pc->comm);
free_pc:
    free(pc->rank_addrs);
    pthread_mutex_destroy(&pc->lock);
    free(pc);
undo_init:
    if (port[0])
        dyn_close_port(port);
    if (we_init) {
        pthread_mutex_lock(&na_mpi_global_lock);
        if (--na_mpi_init_refs == 0)
            MPI_Finalize();
        pthread_mutex_unlock(&na_mpi_global_lock);
    }
    return ret;
}

static na_return_t mpi_finalize(na_class_t *na_class)
{
    struct mpi_class *pc = PC(na_class);
    pthread_mutex_lock(&pc->lock);
    struct mpi_emul_stats st;
    mpi_emul_get_stats(pc->emul, &st);
    if (st.bad_packets || st.refused)
        HGX_LOG_DEBUG(
            MPI_EMUL,
            "%lu malformed packets, %lu refused requests, %lu late chunks dropped",
            st.bad_packets, st.refused, st.late_dropped);
    drop_held(pc);
    if (pc->dynamic) {
        dyn_finalize(pc);
        for (struct dyn_conn *k = pc->conns; k; k = k->next)
            mpi_emul_close(k->emul);
    }
    mpi_emul_close(pc->emul);
    hgx_mreqtab_destroy(&pc->tab, 1000);
    if (pc->dynamic) {
        while (pc->conns) {
            struct dyn_conn *k = pc->conns;
            pc->conns = k->next;
            dyn_disconnect(k, true, pc->tag_bye);
            mpi_emul_free(k->emul);
            free(k->port);
            free(k);
        }
        free(pc->self_conn);
    }
    mpi_emul_free(pc->emul);
#ifdef OPEN_MPI
    sinks_unmap(pc);
#endif
    if (pc->ndropped)
        HGX_LOG_DEBUG(MPI, "%lu received messages were dropped", pc->ndropped);
    int rc = MPI_Comm_free(&pc->comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_free(&pc->dcomm);
    if (rc != MPI_SUCCESS)
        log_mpi("MPI_Comm_free", rc);
    pthread_mutex_unlock(&pc->lock);
    pthread_mutex_destroy(&pc->lock);
    for (int r = 0; r < pc->size; r++)
        free(atomic_load(&pc->rank_addrs[r]));
    free(pc->rank_addrs);
    bool we_init = pc->we_init_mpi;
    free(pc);
    if (we_init) {
        pthread_mutex_lock(&na_mpi_global_lock);
        if (--na_mpi_init_refs == 0) {
            rc = MPI_Finalize();
            if (rc != MPI_SUCCESS)
                log_mpi("MPI_Finalize", rc);
        }
        pthread_mutex_unlock(&na_mpi_global_lock);
    }
    return NA_SUCCESS;
}

static na_return_t mpi_context_create(na_class_t *na_class, na_context_t *context,
                                      uint8_t id)
{
    (void)na_class, (void)id;
    context->plugin_context = NULL; /* all contexts share the class's MPI state */
    return NA_SUCCESS;
}

static na_return_t mpi_context_destroy(na_class_t *na_class, na_context_t *context)
{
    (void)na_class, (void)context;
    return NA_SUCCESS;
}

/*------------------------------------------------------------ addresses */

/* A reference to rank's address in the class (mpi+static), created on first
 * use: no allocation per received message. */
static na_return_t rank_addr(na_class_t *na_class, int rank, na_addr_t **addr_p)
{
    _Atomic(struct mpi_addr *) *slot = &PC(na_class)->rank_addrs[rank];
    struct mpi_addr *a = atomic_load(slot);
    if (!a) {
        struct mpi_addr *fresh = calloc(1, sizeof(*fresh));
        if (!fresh)
            return NA_NOMEM;
        na_addr_init_owned(na_class, &fresh->head);
        fresh->rank = rank;
        if (atomic_compare_exchange_strong(slot, &a, fresh))
            a = fresh;
        else
            free(fresh); /* another thread installed one first: a is it */
    }
    *addr_p = na_addr_ref(&a->head);
    return NA_SUCCESS;
}

static na_return_t addr_new(na_class_t *na_class, struct dyn_conn *conn, int rank,
                            na_addr_t **addr_p)
{
    if (!conn && rank >= 0 && rank < PC(na_class)->size)
        return rank_addr(na_class, rank, addr_p);
    struct mpi_addr *a = calloc(1, sizeof(*a));
    if (!a)
        return NA_NOMEM;
    na_addr_init(na_class, &a->head);
    a->rank = rank;
    a->conn = conn;
    *addr_p = &a->head;
    return NA_SUCCESS;
}

static na_return_t dyn_lookup(na_class_t *na_class, const char *name, na_addr_t **addr_p)
{
    struct mpi_class *pc = PC(na_class);
    char target[MPI_MAX_PORT_NAME], port[MPI_MAX_PORT_NAME];
    if (strncmp(name, "dynamic://", 10) != 0) {
        HGX_LOG_ERROR(MPI, "address \"%s\" is not of the form mpi+dynamic://PORT-OR-NAME",
                      name);
        return strncmp(name, "static://", 9) == 0 ? NA_PROTONOSUPPORT : NA_INVALID_ARG;
    }
    if (strlen(name + 10) >= sizeof(target) ||
        !dyn_unescape(name + 10, target, sizeof(target))) {
        HGX_LOG_ERROR(MPI, "address \"%s\": empty, too long or bad %%-escape", name);
        return NA_INVALID_ARG;
    }
    /* Port names (Open MPI "JOBID.VPID:TAG", MPICH "tag#...$") hold ':' or '$';
     * anything else is a service name for MPI_Lookup_name. */
    bool is_name = !strchr(target, ':') && !strchr(target, '$');
    pthread_mutex_lock(&pc->lock);
    if (!is_name && pc->listening && strcmp(target, pc->port) == 0) {
        pthread_mutex_unlock(&pc->lock);
        return addr_new(na_class, pc->self_conn, 0, addr_p);
    }
    for (struct dyn_conn *k = pc->conns; k; k = k->next)
        if (!k->dead && k->port && !is_name && strcmp(k->port, target) == 0) {
            pthread_mutex_unlock(&pc->lock);
            return addr_new(na_class, k, 0, addr_p);
        }
    pthread_mutex_unlock(&pc->lock);
    MPI_Comm c = MPI_COMM_NULL;
    na_return_t ret = dyn_connect(target, is_name, &c, port); /* unlocked: may block */
    if (ret != NA_SUCCESS)
        return ret;
    pthread_mutex_lock(&pc->lock);
    struct dyn_conn *k = conn_add(pc, c, port);
    pthread_mutex_unlock(&pc->lock);
    if (!k) {
        MPI_Comm_disconnect(&c);
        return NA_NOMEM;
    }
    HGX_LOG_DEBUG(MPI, "mpi+dynamic: connected to %s (connection %d)", target, k->id);
    return addr_new(na_class, k, 0, addr_p);
}

static na_return_t mpi_addr_lookup(na_class_t *na_class, const char *name,
                                   na_addr_t **addr_p)
{
    struct mpi_class *pc = PC(na_class);
    const char *p = name;
    if (pc->dynamic)
        return dyn_lookup(na_class, name, addr_p);
    if (strncmp(p, "static://", 9) != 0) {
        if (strncmp(p, "dynamic://", 10) == 0) {
            char port[MPI_MAX_PORT_NAME];
            if (dyn_open_port(port, "looking up an mpi+dynamic address") == NA_SUCCESS) {
                dyn_close_port(port);
                HGX_LOG_ERROR(MPI,
                              "address \"%s\" needs a class initialized with mpi+dynamic "
                              "(this one is mpi+static)",
                              name);
            }
            return NA_PROTONOSUPPORT;
        }
        HGX_LOG_ERROR(MPI, "address \"%s\" is not of the form mpi+static://RANK", name);
        return NA_INVALID_ARG;
    }
    p += 9;
    long rank = 0;
    if (!*p || strlen(p) > 10) {
        HGX_LOG_ERROR(MPI, "address \"%s\": rank missing or too long", name);
        return NA_INVALID_ARG;
    }
    for (const char *q = p; *q; q++) {
        if (*q < '0' || *q > '9') {
            HGX_LOG_ERROR(MPI, "address \"%s\": rank must be decimal digits only", name);
            return NA_INVALID_ARG;
        }
        rank = rank * 10 + (*q - '0');
    }
    if (rank >= pc->size) {
        HGX_LOG_ERROR(MPI, "address \"%s\": rank %ld is not below the job size %d", name,
                      rank, pc->size);
        return NA_ADDRNOTAVAIL;
    }
    return addr_new(na_class, NULL, (int)rank, addr_p);
}

static void mpi_addr_destroy(na_class_t *na_class, na_addr_t *addr)
{
    (void)na_class;
    free(addr);
}

static na_return_t mpi_addr_self(na_class_t *na_class, na_addr_t **addr_p)
{
    struct mpi_class *pc = PC(na_class);
    return addr_new(na_class, pc->self_conn, pc->rank, addr_p);
}

static bool mpi_addr_cmp(na_class_t *na_class, na_addr_t *a1, na_addr_t *a2)
{
    (void)na_class;
    return ((struct mpi_addr *)a1)->rank == ((struct mpi_addr *)a2)->rank &&
           ((struct mpi_addr *)a1)->conn == ((struct mpi_addr *)a2)->conn;
}

static bool mpi_addr_is_self(na_class_t *na_class, na_addr_t *addr)
{
    if (PC(na_class)->dynamic)
        return ((struct mpi_addr *)addr)->conn == PC(na_class)->self_conn;
    return ((struct mpi_addr *)addr)->rank == PC(na_class)->rank;
}

/* mpi+dynamic address string of a connection. */
static na_return_t dyn_addr_string(struct mpi_class *pc, struct dyn_conn *k, char *buf,
                                   size_t n)
{
    char esc[3 * MPI_MAX_PORT_NAME + 1];
    const char *port = k->is_self ? (pc->listening ? pc->port : NULL) : k->port;
    int w;
    if (port) {
        dyn_escape(port, esc, sizeof(esc));
        w = snprintf(buf, n, "mpi+dynamic://%s", esc);
    } else if (k->is_self) {
        w = snprintf(buf, n, "mpi+dynamic://self-%ld",
                     (long)getpid()); /* not listening */
    } else {
        w = snprintf(buf, n, "mpi+dynamic://accepted-%d",
                     k->id); /* not looked up by name */
    }
    return w < 0 || (size_t)w >= n ? NA_OVERFLOW : NA_SUCCESS;
}

static na_return_t addr_string(struct mpi_class *pc, const struct mpi_addr *a, char *buf,
                               size_t n)
{
    if (pc->dynamic)
        return dyn_addr_string(pc, a->conn, buf, n);
    int w = snprintf(buf, n, "mpi+static://%d", a->rank);
    return w < 0 || (size_t)w >= n ? NA_OVERFLOW : NA_SUCCESS;
}

static na_return_t mpi_addr_to_string(na_class_t *na_class, char *buf, size_t *buf_size,
                                      na_addr_t *addr)
{
    return addr_string(PC(na_class), (struct mpi_addr *)addr, buf, *buf_size);
}

const char *na_mpi_port_string(na_class_t *na_class)
{
    struct mpi_class *pc = PC(na_class);
    if (pc->dynamic && !pc->listening)
        return NULL;
    pthread_mutex_lock(&pc->lock);
    if (!pc->port_str[0]) {
        struct mpi_addr self = {.rank = pc->rank, .conn = pc->self_conn};
        if (addr_string(pc, &self, pc->port_str, sizeof(pc->port_str)) != NA_SUCCESS)
            pc->port_str[0] = '\0';
    }
    pthread_mutex_unlock(&pc->lock);
    return pc->port_str[0] ? pc->port_str : NULL;
}

static size_t mpi_addr_get_serialize_size(na_class_t *na_class, na_addr_t *addr)
{
    (void)addr;
    if (PC(na_class)->dynamic) { /* the address string (lookups connect) */
        char s[DYN_ADDR_MAX];
        if (dyn_addr_string(PC(na_class), ((struct mpi_addr *)addr)->conn, s,
                            sizeof(s)) != NA_SUCCESS)
            return 0;
        return strlen(s) + 1;
    }
    return sizeof(int32_t);
}

static na_return_t mpi_addr_serialize(na_class_t *na_class, void *buf, size_t buf_size,
                                      na_addr_t *addr)
{
    if (PC(na_class)->dynamic)
        return dyn_addr_string(PC(na_class), ((struct mpi_addr *)addr)->conn, buf,
                               buf_size);
    (void)buf_size;
    int32_t r = ((struct mpi_addr *)addr)->rank;
    memcpy(buf, &r, sizeof(r));
    return NA_SUCCESS;
}

static na_return_t mpi_addr_deserialize(na_class_t *na_class, na_addr_t **addr_p,
                                        const void *buf, size_t buf_size)
{
    int32_t r;
    if (PC(na_class)->dynamic) {
        const char *s = buf;
        if (buf_size < 15 || !memchr(s, '\0', buf_size) || strncmp(s, "mpi+", 4) != 0)
            return NA_INVALID_ARG;
        return dyn_lookup(na_class, s + 4, addr_p);
    }
    if (buf_size < sizeof(r))
        return NA_INVALID_ARG;
    memcpy(&r, buf, sizeof(r));
    if (r < 0 || r >= PC(na_class)->size) {
        HGX_LOG_ERROR(MPI, "serialized address names rank %d, job size is %d", (int)r,
                      PC(na_class)->size);
        return NA_INVALID_ARG;
    }
    return addr_new(na_class, NULL, r, addr_p);
}

/*------------------------------------------------------------ messages */

static size_t mpi_max_unexp(const na_class_t *c)
{
    return PC(c)->max_unexp;
}

static size_t mpi_max_exp(const na_class_t *c)
{
    return PC(c)->max_exp;
}

static na_tag_t mpi_max_tag(const na_class_t *c)
{
    return PC(c)->max_tag;
}

static void send_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    na_op_id_t *op = obj;
    struct mpi_op *mo = na_op_plugin(op);
    struct mpi_class *pc = PC(mo->na_class);
    free(mo->bounce);
    mo->bounce = NULL;
    int cancelled = 0;
    if (err == MPI_SUCCESS)
        MPI_Test_cancelled(st, &cancelled);
    if (err != MPI_SUCCESS && err != MPI_ERR_REQUEST)
        log_mpi("message send", err);
    op_done(pc, op, cancelled || err == MPI_ERR_REQUEST ? NA_CANCELED : na_from_mpi(err));
}

/* Communicator of an address (NULL when its connection is closed). */
static bool addr_comm(struct mpi_class *pc, na_addr_t *addr, MPI_Comm *comm)
{
    struct dyn_conn *k = ((struct mpi_addr *)addr)->conn;
    if (!k) {
        *comm = pc->comm;
        return true;
    }
    if (k->dead) {
        HGX_LOG_ERROR(MPI, "mpi+dynamic: connection %d was closed by the peer", k->id);
        return false;
    }
    *comm = k->comm;
    return true;
}

static na_return_t post_send(na_class_t *na_class, na_op_id_t *op, const void *buf,
                             size_t size, na_addr_t *dest_addr, int tag, void *bounce)
{
    int dest = ((struct mpi_addr *)dest_addr)->rank;
    struct mpi_class *pc = PC(na_class);
    struct mpi_op *mo = na_op_plugin(op);
    mpi_op_start(mo, na_class);
    mo->bounce = bounce;
    pthread_mutex_lock(&pc->lock);
    MPI_Comm comm;
    if (!addr_comm(pc, dest_addr, &comm)) {
        pthread_mutex_unlock(&pc->lock);
        free(bounce);
        mo->bounce = NULL;
        return NA_ADDRNOTAVAIL;
    }
    mark_active(pc, ACT_EVENT);
    int rc = MPI_Isend(buf, (int)size, MPI_BYTE, dest, tag, comm, &mo->req);
    if (rc == MPI_SUCCESS && size <= MRECV_MAX) {
        /* Eager: usually done at once, and then no later pass has to test it. */
        int flag = 0;
        MPI_Status st;
        rc = MPI_Test(&mo->req, &flag, &st);
        if (rc != MPI_SUCCESS || flag) {
            send_done(op, 0, rc, &st);
            pthread_mutex_unlock(&pc->lock);
            return NA_SUCCESS;
        }
    }
    if (rc == MPI_SUCCESS && hgx_mreqtab_add(&pc->tab, mo->req, send_done, op, 0) != 0) {
        MPI_Cancel(&mo->req);
        MPI_Wait(&mo->req, MPI_STATUS_IGNORE);
        rc = MPI_ERR_NO_MEM;
    }
    pthread_mutex_unlock(&pc->lock);
    if (rc != MPI_SUCCESS) {
        log_mpi("MPI_Isend", rc);
        free(bounce);
        mo->bounce = NULL;
        return na_from_mpi(rc);
    }
    return NA_SUCCESS;
}

static na_return_t mpi_send_unexpected(na_class_t *na_class, na_context_t *context,
                                       na_op_id_t *op, const void *buf, size_t buf_size,
                                       void *plugin_data, na_addr_t *dest_addr,
                                       uint8_t dest_id, na_tag_t tag)
{
    (void)context, (void)plugin_data, (void)dest_id;
    unsigned char *b = malloc(UNEXP_HDR_SIZE + buf_size);
    if (!b)
        return NA_NOMEM;
    uint32_t hdr[2] = {UNEXP_MAGIC, tag};
    memcpy(b, hdr, sizeof(hdr));
    memcpy(b + UNEXP_HDR_SIZE, buf, buf_size);
    return post_send(na_class, op, b, UNEXP_HDR_SIZE + buf_size, dest_addr, TAG_UNEXP, b);
}

static na_return_t mpi_send_expected(na_class_t *na_class, na_context_t *context,
                                     na_op_id_t *op, const void *buf, size_t buf_size,
                                     void *plugin_data, na_addr_t *dest_addr,
                                     uint8_t dest_id, na_tag_t tag)
{
    (void)context, (void)plugin_data, (void)dest_id;
    return post_send(na_class, op, buf, buf_size, dest_addr, TAG_EXP_BASE + (int)tag,
                     NULL);
}

static na_return_t mpi_recv_unexpected(na_class_t *na_class, na_context_t *context,
                                       na_op_id_t *op, void *buf, size_t buf_size,
                                       void *plugin_data)
{
    (void)context, (void)plugin_data;
    struct mpi_class *pc = PC(na_class);
    struct mpi_op *mo = na_op_plugin(op);
    mpi_op_start(mo, na_class);
    mo->buf = buf;
    mo->buf_size = buf_size;
    mo->in_uq = true;
    pthread_mutex_lock(&pc->lock);
    if (pc->uq_tail)
        pc->uq_tail->next = mo;
    else
        pc->uq_head = mo;
    pc->uq_tail = mo;
    pthread_mutex_unlock(&pc->lock);
    return NA_SUCCESS;
}

/* Check an unexpected message received into data (header first) and hand
 * it to its NA receive. */
static void unexp_finish(na_op_id_t *op, const char *data, int err, const MPI_Status *st)
{
    struct mpi_op *mo = na_op_plugin(op);
    struct mpi_class *pc = PC(mo->na_class);
    na_return_t ret = NA_SUCCESS;
    int count = 0;
    uint32_t hdr[2] = {0, 0};

    if (err != MPI_SUCCESS) {
        ret = err == MPI_ERR_REQUEST ? NA_CANCELED : na_from_mpi(err);
    } else {
        MPI_Get_count(st, MPI_BYTE, &count);
        if (count >= UNEXP_HDR_SIZE)
            memcpy(hdr, data, sizeof(hdr));
        if (count < UNEXP_HDR_SIZE || hdr[0] != UNEXP_MAGIC) {
            HGX_LOG_ERROR(
                MPI, "dropped a malformed unexpected message (%d bytes) from rank %d",
                count, st->MPI_SOURCE);
            pc->ndropped++;
            ret = NA_PROTOCOL_ERROR;
        } else if ((size_t)count - UNEXP_HDR_SIZE > mo->buf_size) {
            HGX_LOG_ERROR(MPI,
                          "unexpected message of %zu bytes from rank %d does not fit the "
                          "%zu-byte receive buffer",
                          (size_t)count - UNEXP_HDR_SIZE, st->MPI_SOURCE, mo->buf_size);
            pc->ndropped++;
            ret = NA_MSGSIZE;
        } else {
            memcpy(mo->buf, data + UNEXP_HDR_SIZE, (size_t)count - UNEXP_HDR_SIZE);
            ret = addr_new(mo->na_class, mo->conn, st->MPI_SOURCE,
                           &op->info.info.recv_unexpected.source);
            op->info.info.recv_unexpected.actual_buf_size =
                (size_t)count - UNEXP_HDR_SIZE;
            op->info.info.recv_unexpected.tag = hdr[1];
        }
    }
    op_done(pc, op, ret);
}

static void unexp_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    na_op_id_t *op = obj;
    struct mpi_op *mo = na_op_plugin(op);
    void *bounce = mo->bounce;
    mo->bounce = NULL;
    unexp_finish(op, bounce, err, st);
    free(bounce);
}

/* Pop the first posted unexpected receive. Lock held. */
static struct mpi_op *uq_pop(struct mpi_class *pc)
{
    struct mpi_op *mo = pc->uq_head;
    pc->uq_head = mo->next;
    if (!pc->uq_head)
        pc->uq_tail = NULL;
    mo->in_uq = false;
    mo->next = NULL;
    return mo;
}

/* Receive the matched unexpected message msg into the first posted NA
 * unexpected receive. Lock held, pc->uq_head set. */
static void unexp_recv(struct mpi_class *pc, MPI_Message *msg, MPI_Status *st,
                       struct dyn_conn *conn)
{
    int count = 0, rc;
    struct mpi_op *mo = uq_pop(pc);
    mo->conn = conn;
    na_op_id_t *op = na_op_from_plugin(mo);
    MPI_Get_count(st, MPI_BYTE, &count); /* MPI_UNDEFINED (< 0) above INT_MAX bytes */
    if (count >= 0 && count <= MRECV_MAX) {
        rc = MPI_Mrecv(pc->small, count, MPI_BYTE, msg, st);
        unexp_finish(op, pc->small, rc, st);
        return;
    }
    if (count < 0 ||
        (size_t)count - UNEXP_HDR_SIZE > mo->buf_size) { /* refused before any copy */
        HGX_LOG_ERROR(MPI,
                      "unexpected message of %d bytes from rank %d does not fit the "
                      "%zu-byte receive buffer: dropped",
                      count - UNEXP_HDR_SIZE, st->MPI_SOURCE, mo->buf_size);
        rc = hgx_mpi_mrecv_drop(msg, st);
        if (rc != MPI_SUCCESS)
            log_mpi("MPI_Mrecv (dropping an unexpected message)", rc);
        pc->ndropped++;
        op_done(pc, op, NA_MSGSIZE);
        return;
    }
    mo->bounce = malloc((size_t)count);
    if (!mo->bounce) {
        HGX_LOG_ERROR(MPI, "out of memory: dropped an unexpected message from rank %d",
                      st->MPI_SOURCE);
        hgx_mpi_mrecv_drop(msg, st);
        pc->ndropped++;
        op_done(pc, op, NA_NOMEM);
        return;
    }
    rc = MPI_Imrecv(mo->bounce, count, MPI_BYTE, msg, &mo->req);
    if (rc == MPI_SUCCESS && hgx_mreqtab_add(&pc->tab, mo->req, unexp_done, op, 0) != 0) {
        rc = MPI_Wait(&mo->req, st);
        unexp_done(op, 0, rc, st);
        return;
    }
    if (rc != MPI_SUCCESS) {
        log_mpi("MPI_Imrecv", rc);
        free(mo->bounce);
        mo->bounce = NULL;
        op_done(pc, op, na_from_mpi(rc));
    }
}

/* Hand the oldest unexpected message MPI holds on comm to the first posted NA
 * receive (per-kind probing: connections, or pc->comm with the held list
 * full). One per pass: probing again for a second one would delay the
 * completion of the first. Lock held. */
static int match_unexpected_on(struct mpi_class *pc, MPI_Comm comm, struct dyn_conn *conn)
{
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    if (!pc->uq_head || pc->upost)
        return MPI_SUCCESS;
    int rc = MPI_Improbe(MPI_ANY_SOURCE, TAG_UNEXP, comm, &flag, &msg, &st);
    if (rc == MPI_SUCCESS && flag)
        unexp_recv(pc, &msg, &st, conn);
    return rc;
}

static int match_unexpected(struct mpi_class *pc)
{
    int rc = pc->waiting ? match_unexpected_on(pc, pc->comm, pc->self_conn) : MPI_SUCCESS;
    for (struct dyn_conn *k = pc->conns; k && rc == MPI_SUCCESS && pc->uq_head;
         k = k->next)
        if (!k->dead && k->waiting)
            rc = match_unexpected_on(pc, k->comm, k);
    return rc;
}

#ifdef OPEN_MPI
/* Post mo's receive as an MPI_Irecv into a sink, recorded with fn; false if
 * it could not be (nothing received). Lock held. */
static bool sink_irecv(struct mpi_class *pc, struct mpi_op *mo, int src, int tag,
                       MPI_Comm comm, hgx_mreq_fn fn)
{
    char *sink = sink_get(pc);
    if (!sink)
        return false;
    int rc = MPI_Irecv(sink, INT_MAX, MPI_BYTE, src, tag, comm, &mo->req);
    if (rc != MPI_SUCCESS) {
        log_mpi("MPI_Irecv", rc);
        sink_put(pc, sink, MPI_SUCCESS, 0);
        return false;
    }
    mo->sink = sink;
    mo->irecv = true;
    if (hgx_mreqtab_add(&pc->tab, mo->req, fn, na_op_from_plugin(mo), 0) == 0)
        return true;
    /* no memory for the table: take it back, unless it already took a message */
    MPI_Status st;
    int cancelled = 0;
    MPI_Cancel(&mo->req);
    rc = MPI_Wait(&mo->req, &st);
    if (rc == MPI_SUCCESS)
        MPI_Test_cancelled(&st, &cancelled);
    if (!cancelled) {
        fn(na_op_from_plugin(mo), 0, rc, &st);
        return true;
    }
    mo->sink = NULL;
    mo->irecv = false;
    sink_put(pc, sink, rc, 0);
    return false;
}

/* Take mo's sink after its MPI_Irecv completed; *count: bytes received (0 if
 * cancelled or failed), *cancelled. Lock held. */
static char *sink_take(struct mpi_op *mo, int err, const MPI_Status *st, int *count,
                       int *cancelled)
{
    char *sink = mo->sink;
    mo->sink = NULL;
    mo->irecv = false;
    *count = *cancelled = 0;
    if (err == MPI_SUCCESS) {
        MPI_Test_cancelled(st, cancelled);
        if (!*cancelled)
            MPI_Get_count(st, MPI_BYTE, count);
    } else if (err != MPI_ERR_REQUEST) {
        PC(mo->na_class)->ndropped++;
        log_mpi("receive", err);
    }
    return sink;
}

static void unexp_sink_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    na_op_id_t *op = obj;
    struct mpi_op *mo = na_op_plugin(op);
    struct mpi_class *pc = PC(mo->na_class);
    int count, cancelled;
    char *sink = sink_take(mo, err, st, &count, &cancelled);
    pc->upost = NULL;
    if (cancelled)
        op_done(pc, op, NA_CANCELED);
    else
        unexp_finish(op, sink, err, st);
    sink_put(pc, sink, err, (size_t)count);
}
#endif

/*
 * Open MPI, mpi+static: the first posted NA unexpected receive is also
 * posted as an MPI_Irecv(MPI_ANY_SOURCE, TAG_UNEXP) into a sink (see
 * sink_get), so a request is matched inside MPI's progress and reported by
 * the request table's MPI_Testsome, instead of an MPI_Improbe hit and an
 * MPI_Mrecv. One at a time and only while no unexpected message is held: MPI
 * gives it the oldest message not claimed yet, so arrival order holds; a
 * message claimed while it is posted is newer than the one it may hold, and
 * is held until it completed (deliver). MPICH keeps the probed path. Lock
 * held.
 */
static void unexp_arm(struct mpi_class *pc)
{
#ifdef OPEN_MPI
    if (pc->upost || !pc->uq_head || pc->nheld_unexp || pc->dynamic)
        return;
    struct mpi_op *mo = uq_pop(pc);
    pc->upost = mo;
    if (sink_irecv(pc, mo, MPI_ANY_SOURCE, TAG_UNEXP, pc->comm, unexp_sink_done))
        return;
    pc->upost = NULL; /* back to the head of the list: the probed path serves it */
    mo->in_uq = true;
    mo->next = pc->uq_head;
    pc->uq_head = mo;
    if (!pc->uq_tail)
        pc->uq_tail = mo;
#else
    (void)pc;
#endif
}

/* An expected receive probed and received with its size known (exp_recv). */
static void recv_exp_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    na_op_id_t *op = obj;
    struct mpi_op *mo = na_op_plugin(op);
    struct mpi_class *pc = PC(mo->na_class);
    int count = 0;
    na_return_t ret;
    if (err == MPI_ERR_REQUEST) {
        ret = NA_CANCELED;
    } else if (err != MPI_SUCCESS) {
        ret = na_from_mpi(err);
        log_mpi("expected receive", err);
    } else {
        MPI_Get_count(st, MPI_BYTE, &count);
        op->info.info.recv_expected.actual_buf_size = (size_t)count;
        ret = NA_SUCCESS;
    }
    op_done(pc, op, ret);
}

#ifdef OPEN_MPI
static void exp_sink_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    na_op_id_t *op = obj;
    struct mpi_op *mo = na_op_plugin(op);
    struct mpi_class *pc = PC(mo->na_class);
    int count, cancelled;
    char *sink = sink_take(mo, err, st, &count, &cancelled);
    na_return_t ret;
    if (cancelled || err == MPI_ERR_REQUEST) {
        ret = NA_CANCELED;
    } else if (err != MPI_SUCCESS) {
        ret = na_from_mpi(err);
    } else if ((size_t)count > mo->buf_size) {
        HGX_LOG_ERROR(MPI,
                      "expected message of %d bytes from rank %d larger than the "
                      "%zu-byte buffer: dropped",
                      count, st->MPI_SOURCE, mo->buf_size);
        pc->ndropped++;
        ret = NA_MSGSIZE;
    } else {
        memcpy(mo->buf, sink, (size_t)count);
        op->info.info.recv_expected.actual_buf_size = (size_t)count;
        ret = NA_SUCCESS;
    }
    sink_put(pc, sink, err, (size_t)count);
    op_done(pc, op, ret);
}

/* Whether a message for mo is held or an earlier posted receive for the same
 * source and tag still waits in the list: mo must then queue behind them. */
static bool exp_queued(const struct mpi_class *pc, const struct mpi_op *mo)
{
    for (const struct held_msg *h = pc->held_head; h; h = h->next)
        if (mo->comm == pc->comm && h->st.MPI_SOURCE == mo->src &&
            h->st.MPI_TAG == mo->tag)
            return true;
    for (const struct mpi_op *e = pc->eq_head; e; e = e->next)
        if (e->comm == mo->comm && e->src == mo->src && e->tag == mo->tag)
            return true;
    return false;
}
#endif

/*
 * Open MPI returns an error of a request on the request's communicator (ours:
 * MPI_ERRORS_RETURN), so an expected receive is posted at once as an
 * MPI_Irecv into a sink: MPI matches the reply inside whatever call runs its
 * progress, and the request table's MPI_Testsome reports it, one call instead
 * of MPI_Improbe + MPI_Mrecv; the reply is then copied to the buffer if it
 * fits, else dropped (NA_MSGSIZE). Not for buffers above SINK_COPY_MAX (the
 * copy would cost more than the probe), and not behind a held message or an
 * earlier receive of the same source and tag (MPI order), which the list
 * below serves. Lock held.
 */
static bool exp_post_irecv(struct mpi_class *pc, struct mpi_op *mo)
{
#ifdef OPEN_MPI
    if (mo->buf_size > SINK_COPY_MAX || exp_queued(pc, mo))
        return false;
    return sink_irecv(pc, mo, mo->src, mo->tag, mo->comm, exp_sink_done);
#else
    (void)pc, (void)mo;
    return false;
#endif
}

/*
 * Otherwise (MPICH) expected receives are matched from poll (claim_any, or
 * MPI_Improbe per receive) and received with MPI_Mrecv/MPI_Imrecv: the size
 * is checked before receiving, so an oversized message is reported
 * NA_MSGSIZE without MPI raising MPI_ERR_TRUNCATE, which MPICH raises on
 * MPI_COMM_WORLD from MPI_Test/MPI_Testsome/MPI_Mrecv, aborting the job.
 */
static na_return_t mpi_recv_expected(na_class_t *na_class, na_context_t *context,
                                     na_op_id_t *op, void *buf, size_t buf_size,
                                     void *plugin_data, na_addr_t *source_addr,
                                     uint8_t source_id, na_tag_t tag)
{
    (void)context, (void)plugin_data, (void)source_id;
    struct mpi_class *pc = PC(na_class);
    struct mpi_op *mo = na_op_plugin(op);
    if (buf_size > INT_MAX)
        return NA_MSGSIZE;
    mpi_op_start(mo, na_class);
    mo->buf = buf;
    mo->buf_size = buf_size;
    mo->src = ((struct mpi_addr *)source_addr)->rank;
    mo->tag = TAG_EXP_BASE + (int)tag;
    pthread_mutex_lock(&pc->lock);
    if (!addr_comm(pc, source_addr, &mo->comm)) {
        pthread_mutex_unlock(&pc->lock);
        return NA_ADDRNOTAVAIL;
    }
    mark_active(pc, ACT_POST);
    if (!exp_post_irecv(pc, mo)) {
        /* append: posting order is matching order, as for MPI receives */
        struct mpi_op **pp = &pc->eq_head;
        while (*pp)
            pp = &(*pp)->next;
        *pp = mo;
        mo->in_eq = true;
    }
    pthread_mutex_unlock(&pc->lock);
    return NA_SUCCESS;
}

/* Whether the last probe_waiting() saw a message waiting on comm. */
static bool comm_waiting(const struct mpi_class *pc, MPI_Comm comm)
{
    if (comm == pc->comm)
        return pc->waiting;
    for (const struct dyn_conn *k = pc->conns; k; k = k->next)
        if (k->comm == comm)
            return k->waiting;
    return false;
}

/* Receive the matched message msg into the posted expected receive mo (already
 * unlinked). Lock held. */
static void exp_recv(struct mpi_class *pc, struct mpi_op *mo, MPI_Message *msg,
                     MPI_Status *st)
{
    int count = 0, rc;
    mo->next = NULL;
    mo->in_eq = false;
    na_op_id_t *op = na_op_from_plugin(mo);
    MPI_Get_count(st, MPI_BYTE, &count);
    if (count < 0 || (size_t)count > mo->buf_size) {
        rc = hgx_mpi_mrecv_drop(msg, st);
        if (rc != MPI_SUCCESS)
            log_mpi("MPI_Mrecv (dropping an expected message)", rc);
        pc->ndropped++;
        HGX_LOG_ERROR(MPI,
                      "expected message of %d bytes from rank %d larger than the "
                      "%zu-byte buffer: dropped",
                      count, mo->src, mo->buf_size);
        op_done(pc, op, NA_MSGSIZE);
        return;
    }
    if (count <= MRECV_MAX) {
        rc = MPI_Mrecv(mo->buf, count, MPI_BYTE, msg, st);
        recv_exp_done(op, 0, rc, st);
        return;
    }
    rc = MPI_Imrecv(mo->buf, count, MPI_BYTE, msg, &mo->req);
    if (rc == MPI_SUCCESS &&
        hgx_mreqtab_add(&pc->tab, mo->req, recv_exp_done, op, 0) != 0) {
        rc = MPI_Wait(&mo->req, st);
        recv_exp_done(op, 0, rc, st);
        return;
    }
    if (rc != MPI_SUCCESS) {
        log_mpi("MPI_Imrecv", rc);
        op_done(pc, op, na_from_mpi(rc));
    }
}

/* Per-kind probing of the posted expected receives on the communicators
 * probe_waiting marked. */
static int match_expected(struct mpi_class *pc)
{
    struct mpi_op **pp = &pc->eq_head;
    while (*pp) {
        struct mpi_op *mo = *pp;
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        int rc = mo->comm == MPI_COMM_NULL || !comm_waiting(pc, mo->comm)
                     ? MPI_SUCCESS
                     : MPI_Improbe(mo->src, mo->tag, mo->comm, &flag, &msg, &st);
        if (rc != MPI_SUCCESS)
            return rc;
        if (!flag) {
            pp = &mo->next;
            continue;
        }
        *pp = mo->next;
        exp_recv(pc, mo, &msg, &st);
    }
    return MPI_SUCCESS;
}

/* The first posted expected receive on pc->comm for (src, tag), unlinked; NULL
 * if none. Posting order is matching order, as for MPI receives. Lock held. */
static struct mpi_op *eq_take(struct mpi_class *pc, int src, int tag)
{
    for (struct mpi_op **pp = &pc->eq_head; *pp; pp = &(*pp)->next) {
        struct mpi_op *mo = *pp;
        if (mo->comm == pc->comm && mo->tag == tag && mo->src == src) {
            *pp = mo->next;
            return mo;
        }
    }
    return NULL;
}

/* Hand a message claimed on pc->comm to its posted NA receive; false if none
 * is posted (the message stays claimed). Lock held. */
static bool deliver(struct mpi_class *pc, MPI_Message *msg, MPI_Status *st)
{
    if (st->MPI_TAG == TAG_UNEXP) {
        if (!pc->uq_head || pc->upost) /* upost: its message is older than this */
            return false;
        unexp_recv(pc, msg, st, pc->self_conn);
        return true;
    }
    struct mpi_op *mo = eq_take(pc, st->MPI_SOURCE, st->MPI_TAG);
    if (!mo)
        return false;
    exp_recv(pc, mo, msg, st);
    return true;
}

/* Held messages whose NA receive is posted now, oldest first: a message held
 * for (source, tag) is older than any still in MPI, so MPI's order between
 * a pair holds. Returns the number delivered. Lock held. */
static int take_held(struct mpi_class *pc)
{
    int n = 0;
    struct held_msg **pp = &pc->held_head, *prev = NULL;
    while (*pp && (pc->uq_head || pc->eq_head)) {
        struct held_msg *h = *pp;
        if (!deliver(pc, &h->msg, &h->st)) {
            prev = h;
            pp = &h->next;
            continue;
        }
        *pp = h->next;
        if (pc->held_tail == h)
            pc->held_tail = prev;
        pc->nheld--;
        pc->nheld_unexp -= h->st.MPI_TAG == TAG_UNEXP;
        free(h);
        n++;
    }
    return n;
}

/* Keep a claimed message for a receive posted later; on no memory drop it. */
static void hold(struct mpi_class *pc, MPI_Message *msg, const MPI_Status *st)
{
    struct held_msg *h = malloc(sizeof(*h));
    if (!h) {
        HGX_LOG_ERROR(MPI, "out of memory: dropped a message (tag %d) from rank %d",
                      st->MPI_TAG, st->MPI_SOURCE);
        hgx_mpi_mrecv_drop(msg, st);
        pc->ndropped++;
        return;
    }
    h->msg = *msg;
    h->st = *st;
    h->next = NULL;
    if (pc->held_tail)
        pc->held_tail->next = h;
    else
        pc->held_head = h;
    pc->held_tail = h;
    pc->nheld++;
    pc->nheld_unexp += st->MPI_TAG == TAG_UNEXP;
}

/*
 * One MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG) on pc->comm detects and claims
 * the oldest waiting message: an RPC message goes to its posted NA receive or
 * is held, a control packet to the emulation (which takes the rest of its
 * batch in this pass), anything else (no such tag is ever sent there) is read
 * whole and dropped. Returns 1 if a message was claimed. Lock held.
 */
static int claim_any(struct mpi_class *pc, int *rc)
{
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    *rc = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, pc->comm, &flag, &msg, &st);
    if (*rc != MPI_SUCCESS || !flag)
        return 0;
    int tag = st.MPI_TAG;
    if (tag == TAG_CTRL) {
        mpi_emul_ctrl_msg(pc->emul, &msg, &st);
        pc->take_ctrl = true;
    } else if (tag == TAG_UNEXP ||
               (tag >= TAG_EXP_BASE && tag <= TAG_EXP_BASE + (int)pc->max_tag)) {
        if (!deliver(pc, &msg, &st))
            hold(pc, &msg, &st);
    } else {
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        HGX_LOG_WARNING(MPI,
                        "dropped a message of %d bytes with stray tag %d from rank %d",
                        count, tag, st.MPI_SOURCE);
        hgx_mpi_mrecv_drop(&msg, &st);
        pc->ndropped++;
    }
    return 1;
}

/*------------------------------------------------------------ memory */

static na_return_t mem_new(na_class_t *na_class, struct na_segment *segs, size_t n,
                           unsigned long flags, na_mem_handle_t **mem_handle_p)
{
    struct mpi_mem *m = calloc(1, sizeof(*m));
    if (!m)
        return NA_NOMEM;
    size_t total = 0;
    if (n == 1) {
        m->one = segs[0];
        m->em.segs = &m->one;
    } else {
        m->em.segs = malloc(sizeof(*segs) * n);
        if (!m->em.segs) {
            free(m);
            return NA_NOMEM;
        }
        memcpy(m->em.segs, segs, sizeof(*segs) * n);
    }
    for (size_t i = 0; i < n; i++)
        total += segs[i].len;
    m->em.nseg = n;
    m->em.len = total;
    m->em.flags = flags;
    m->em.owner = PC(na_class)->rank;
    m->head.len = total;
    m->head.flags = flags;
    *mem_handle_p = &m->head;
    return NA_SUCCESS;
}

static na_return_t mpi_mem_handle_create(na_class_t *na_class, void *buf, size_t buf_size,
                                         unsigned long flags,
                                         na_mem_handle_t **mem_handle_p)
{
    struct na_segment s = {buf, buf_size};
    return mem_new(na_class, &s, 1, flags, mem_handle_p);
}

static na_return_t mpi_mem_handle_create_segments(na_class_t *na_class,
                                                  struct na_segment *segments,
                                                  size_t segment_count,
                                                  unsigned long flags,
                                                  na_mem_handle_t **mem_handle_p)
{
    for (size_t i = 0; i < segment_count; i++)
        if (segments[i].len > INT_MAX) {
            HGX_LOG_ERROR(MPI, "segment %zu is larger than INT_MAX bytes", i);
            return NA_INVALID_ARG;
        }
    return mem_new(na_class, segments, segment_count, flags, mem_handle_p);
}

static void mpi_mem_handle_free(na_class_t *na_class, na_mem_handle_t *mh)
{
    (void)na_class;
    struct mpi_mem *m = (struct mpi_mem *)mh;
    if (m->em.segs && m->em.segs != &m->one)
        free(m->em.segs);
    free(m);
}

static size_t mpi_mem_max_segments(const na_class_t *na_class)
{
    (void)na_class;
    return 65536;
}

static na_return_t mpi_mem_register(na_class_t *na_class, na_mem_handle_t *mh)
{
    struct mpi_class *pc = PC(na_class);
    pthread_mutex_lock(&pc->lock);
    na_return_t ret = mpi_emul_mem_register(pc->emul, &((struct mpi_mem *)mh)->em);
    pthread_mutex_unlock(&pc->lock);
    return ret;
}

static na_return_t mpi_mem_deregister(na_class_t *na_class, na_mem_handle_t *mh)
{
    struct mpi_class *pc = PC(na_class);
    pthread_mutex_lock(&pc->lock);
    mpi_emul_mem_deregister(pc->emul, &((struct mpi_mem *)mh)->em);
    pthread_mutex_unlock(&pc->lock);
    return NA_SUCCESS;
}

static size_t mpi_mem_serialize_size(na_class_t *na_class, na_mem_handle_t *mh)
{
    (void)na_class, (void)mh;
    return sizeof(struct mpi_emul_mem_wire);
}

static na_return_t mpi_mem_serialize(na_class_t *na_class, void *buf, size_t buf_size,
                                     na_mem_handle_t *mh)
{
    (void)na_class, (void)buf_size;
    struct mpi_emul_mem_wire w;
    mpi_emul_mem_serialize(&((struct mpi_mem *)mh)->em, &w);
    memcpy(buf, &w, sizeof(w));
    return NA_SUCCESS;
}

static na_return_t mpi_mem_deserialize(na_class_t *na_class, na_mem_handle_t **mh_p,
                                       const void *buf, size_t buf_size)
{
    struct mpi_mem *m = calloc(1, sizeof(*m));
    if (!m)
        return NA_NOMEM;
    na_return_t ret = mpi_emul_mem_deserialize(
        &m->em, buf, buf_size, PC(na_class)->dynamic ? INT_MAX : PC(na_class)->size);
    if (ret != NA_SUCCESS) {
        free(m);
        return ret;
    }
    m->head.len = m->em.len;
    m->head.flags = m->em.flags;
    *mh_p = &m->head;
    return NA_SUCCESS;
}

/*------------------------------------------------------------ put / get */

static void rma_done(void *arg, na_return_t ret)
{
    na_op_id_t *op = arg;
    struct mpi_op *mo = na_op_plugin(op);
    mo->oreq = NULL;
    PC(mo->na_class)->nrma--;
    op_done(PC(mo->na_class), op, ret);
}

static na_return_t mpi_rma(na_class_t *na_class, na_op_id_t *op, bool put,
                           na_mem_handle_t *local, na_offset_t local_offset,
                           na_mem_handle_t *remote, na_offset_t remote_offset,
                           size_t size, na_addr_t *remote_addr)
{
    struct mpi_class *pc = PC(na_class);
    struct mpi_op *mo = na_op_plugin(op);
    struct mpi_mem *rm = (struct mpi_mem *)remote;
    int rank = ((struct mpi_addr *)remote_addr)->rank;
    mark_active(pc, ACT_POST);
    if (pc->dynamic) {
        /* the owner field names a rank in the owner's own job; route by connection */
        struct dyn_conn *k = ((struct mpi_addr *)remote_addr)->conn;
        struct mpi_emul_mem rem = rm->em;
        rem.owner = rank;
        mpi_op_start(mo, na_class);
        pthread_mutex_lock(&pc->lock);
        if (k->dead) {
            pthread_mutex_unlock(&pc->lock);
            HGX_LOG_ERROR(MPI, "mpi+dynamic: connection %d was closed by the peer",
                          k->id);
            return NA_ADDRNOTAVAIL;
        }
        struct mpi_emul_oreq *o = NULL;
        pc->nrma++; /* before: a 0-byte transfer completes inside mpi_emul_xfer */
        na_return_t ret =
            mpi_emul_xfer(k->emul, put, &((struct mpi_mem *)local)->em, local_offset,
                          &rem, remote_offset, size, rma_done, op, &o);
        if (ret == NA_SUCCESS) {
            mo->oreq = o;
            mo->emul = k->emul;
        } else {
            pc->nrma--;
        }
        pthread_mutex_unlock(&pc->lock);
        return ret;
    }
    if (!rm->head.remote && rm->em.id != 0)
        rm->em.owner =
            pc->rank; /* a local handle used as the remote one (self transfer) */
    if (rm->em.owner != rank) {
        HGX_LOG_ERROR(MPI_EMUL,
                      "remote memory handle belongs to rank %d, not to target rank %d",
                      rm->em.owner, rank);
        return NA_INVALID_ARG;
    }
    mpi_op_start(mo, na_class);
    pthread_mutex_lock(&pc->lock);
    struct mpi_emul_oreq *o = NULL;
    pc->nrma++; /* before: a 0-byte transfer completes inside mpi_emul_xfer */
    na_return_t ret =
        mpi_emul_xfer(pc->emul, put, &((struct mpi_mem *)local)->em, local_offset,
                      &rm->em, remote_offset, size, rma_done, op, &o);
    if (ret == NA_SUCCESS) {
        mo->oreq = o;
        mo->emul = pc->emul;
    } else {
        pc->nrma--;
    }
    pthread_mutex_unlock(&pc->lock);
    return ret;
}

/*------------------------------------------------------------ progress */

/*
 * Whether this pass runs claim_any. Under Open MPI (mpi+static) every posted
 * NA receive can be in MPI as an MPI_Irecv that the request table's
 * MPI_Testsome reports; an MPI_Improbe (~70 ns, 3x an MPI_Testsome) then only
 * finds control packets of peers' puts/gets, and messages no receive waits
 * for yet (a receive posted later takes them from MPI in order). So it runs
 * every pass only while something depends on it: a receive not in MPI (eq,
 * or uq not armed), a put/get of ours (CTS, ACK, cancel answers), or no
 * request in the table (MPI_Testsome, which also drives MPI's progress, does
 * not run); otherwise every CLAIM_EVERY-th pass, which delays the start of a
 * peer's put/get here by at most CLAIM_EVERY-1 passes. Lock held.
 */
#define CLAIM_EVERY 4

static bool claim_due(struct mpi_class *pc)
{
#ifdef OPEN_MPI
    if (pc->tab.n > 0 && !pc->eq_head && (!pc->uq_head || pc->upost) && !pc->nrma &&
        !pc->dynamic && ++pc->npass < CLAIM_EVERY)
        return false;
    pc->npass = 0;
    return true;
#else
    (void)pc;
    return true;
#endif
}

/*
 * Whether a message waits on connection k (*flag). The oldest message waiting
 * there, found with MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG), is claimed and
 * handed to the connection's emulation when its tag is not one of the NA
 * (unexpected, expected), control or BYE tags: a data chunk is attributed to
 * its transfer, anything else is received whole and dropped (counted), so a
 * stray does not stay queued in MPI. Data chunks behind an NA message still
 * reach their transfer through the emulation's per-tag probes. Returns an
 * MPI error code; *events counts the messages handed over. Lock held.
 */
#define CONN_DATA_BATCH 64

static int conn_peek(struct mpi_class *pc, struct dyn_conn *k, int *flag, int *events)
{
    for (int n = 0; n < CONN_DATA_BATCH; n++) {
        MPI_Status st;
        int rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, k->comm, flag, &st);
        if (rc != MPI_SUCCESS || !*flag)
            return rc;
        int tag = st.MPI_TAG;
        if (tag == TAG_UNEXP || tag == TAG_CTRL || tag == pc->tag_bye ||
            (tag >= TAG_EXP_BASE && tag <= TAG_EXP_BASE + (int)pc->max_tag))
            return MPI_SUCCESS;
        int got = 0;
        MPI_Message msg;
        rc = MPI_Improbe(st.MPI_SOURCE, tag, k->comm, &got, &msg, &st);
        if (rc != MPI_SUCCESS)
            return rc;
        if (got) {
            mpi_emul_data_msg(k->emul, &msg, &st);
            (*events)++;
        }
    }
    return MPI_SUCCESS; /* more may wait: the next pass goes on */
}

/*
 * pc->comm: held messages first, then claim_any (one MPI call whether or not
 * anything waits). With HELD_MAX messages held, claiming stops: pc->waiting
 * makes the per-kind probes (posted receives, control packets) run instead,
 * so the held messages bound the memory without blocking anything else.
 * Connections (mpi+dynamic) carry emulation data with RPC messages on one
 * intercommunicator, so a wildcard claim could take data chunks: one
 * MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG) per connection tells whether
 * anything waits there (and hands a data message or stray at the head to the
 * emulation, conn_peek), and only then do its per-kind probes run. Returns
 * an MPI error code; *events counts messages claimed or delivered. Lock held.
 */
static int probe_waiting(struct mpi_class *pc, int *events)
{
    int rc = MPI_SUCCESS;
    *events = pc->held_head ? take_held(pc) : 0;
    if (pc->uq_head && !pc->upost)
        unexp_arm(pc);
    pc->take_ctrl = false;
    pc->waiting = pc->nheld >= HELD_MAX;
    if (pc->waiting)
        pc->take_ctrl = true;
    else if (claim_due(pc))
        *events += claim_any(pc, &rc);
    for (struct dyn_conn *k = pc->conns; k && rc == MPI_SUCCESS; k = k->next) {
        int flag = 0;
        if (!k->dead)
            rc = conn_peek(pc, k, &flag, events);
        k->waiting = flag != 0;
    }
    return rc;
}

/* Returns the number of progress events (messages matched, MPI requests
 * completed, emulation packets and timers, connections), < 0 on error. */
static int poll_locked(struct mpi_class *pc)
{
    int events = 0;
    unsigned long before = pc->ncompleted;
    for (int round = 0; round < 16; round++) {
        int claimed = 0;
        int rc = probe_waiting(pc, &claimed);
        if (rc == MPI_SUCCESS)
            rc = match_unexpected(pc);
        if (rc == MPI_SUCCESS)
            rc = match_expected(pc);
        if (rc != MPI_SUCCESS) {
            log_mpi("MPI_Iprobe/MPI_Improbe", rc);
            return -1;
        }
        int ndone = claimed;
        int nreq = 0;
        rc = hgx_mreqtab_poll(&pc->tab, &nreq);
        ndone += nreq;
        if (rc != MPI_SUCCESS) {
            log_mpi("MPI_Test", rc);
            return -1;
        }
        /* put/get emulation: control packets (cancels first), cancel timers */
        ndone += mpi_emul_progress_ex(pc->emul, pc->take_ctrl);
        if (pc->dynamic) {
            ndone += dyn_take_accepted(pc);
            for (struct dyn_conn *k = pc->conns; k; k = k->next)
                if (!k->dead) {
                    ndone += mpi_emul_progress_ex(k->emul, k->waiting);
                    if (k->waiting)
                        ndone += dyn_check_bye(pc, k);
                }
        }
        events += ndone;
        /* An NA completion ends the pass at once: its callback is on the
         * critical path, one more round would only delay it. */
        if (ndone == 0 || pc->ncompleted != before)
            break;
    }
    return events;
}

/* One progress pass; *n = NA operations completed, *inflight = MPI requests
 * still outstanding. Any event (also a bulk chunk or a control packet served
 * for a peer) marks the class active. */
static na_return_t poll_once(struct mpi_class *pc, unsigned long *n, bool *inflight)
{
    pthread_mutex_lock(&pc->lock);
    unsigned long before = pc->ncompleted;
    int events = poll_locked(pc);
    *n = pc->ncompleted - before;
    /* not the unexpected receive waiting in MPI (unexp_arm): a server would
     * poll MPI_INFLIGHT_SPIN_US after every request instead of sleeping (a
     * request above the eager size it took meanwhile may then finish only at
     * the next wake-up) */
    *inflight = pc->tab.n > (pc->upost ? 1 : 0);
    pthread_mutex_unlock(&pc->lock);
    if (events > 0 || *n > 0)
        mark_active(pc, ACT_EVENT);
    return events < 0 ? NA_PROTOCOL_ERROR : NA_SUCCESS;
}

static na_return_t mpi_poll(na_class_t *na_class, na_context_t *context,
                            unsigned int *count_p)
{
    (void)context;
    unsigned long n = 0;
    bool inflight;
    na_return_t ret = poll_once(PC(na_class), &n, &inflight);
    if (count_p)
        *count_p = (unsigned int)n;
    return ret != NA_SUCCESS ? ret : n ? NA_SUCCESS : NA_TIMEOUT;
}

/*
 * MPI offers no wait object (no fd, no blocking "wait for anything" across
 * arbitrary requests and probes), so this is NOT a true block. Within the
 * polling window of the last activity of the class (a post, or any progress
 * event: a peer's bulk chunk or control packet served here counts, not only
 * an NA completion; see mark_active), or while MPI requests are in flight and
 * progressing, it polls (hgx_spin_pause between polls). Past it, it sleeps
 * between polls for half the time idle so far, at most 1 ms while the last
 * activity is under MPI_IDLE_US old, then at most 4 ms: a wake-up costs
 * ~25 us of CPU in a VM, so an idle process stays around 1% of a core, and a
 * request after a long idle period waits at most ~4 ms. The sleep depends
 * only on the idle time, so it does not restart short at every call.
 */
#define MPI_IDLE_US 100000
#define MPI_SLEEP_BUSY_MAX_NS 1000000L
#define MPI_SLEEP_IDLE_MAX_NS 4000000L
#define MPI_POLLS_PER_CLOCK 16

static long idle_sleep_ns(uint64_t idle_us)
{
    long cap = idle_us < MPI_IDLE_US ? MPI_SLEEP_BUSY_MAX_NS : MPI_SLEEP_IDLE_MAX_NS;
    uint64_t half_ns = idle_us * 500u;
    return half_ns < (uint64_t)cap ? (long)half_ns : cap;
}

static na_return_t mpi_poll_wait(na_class_t *na_class, na_context_t *context,
                                 unsigned int timeout_ms)
{
    struct mpi_class *pc = PC(na_class);
    uint64_t t = now_us(), deadline = t + (uint64_t)timeout_ms * 1000u;
    date_activity(pc, t);
    for (unsigned int polls = 1;; polls++) {
        unsigned long n = 0;
        bool inflight;
        na_return_t ret = poll_once(pc, &n, &inflight);
        if (ret != NA_SUCCESS)
            return ret;
        if (n > 0 || atomic_load(&context->cq_count) > 0)
            return NA_SUCCESS;
        /* While spinning, the clock only every MPI_POLLS_PER_CLOCK polls or
         * when activity waits to be dated: the windows it serves are
         * hundreds of microseconds long, and a read costs ~22 ns. */
        if (polls % MPI_POLLS_PER_CLOCK == 0 ||
            atomic_load_explicit(&pc->noted, memory_order_relaxed)) {
            t = now_us();
            date_activity(pc, t);
        }
        uint64_t last = atomic_load(&pc->last_activity_us);
        if (t >= deadline)
            return NA_TIMEOUT;
        if (t < atomic_load(&pc->spin_until_us) ||
            (inflight && t < last + MPI_INFLIGHT_SPIN_US)) {
            hgx_spin_pause();
            continue;
        }
        long ns = idle_sleep_ns(t > last ? t - last : 0);
        long max_ns = (long)(deadline - t) * 1000;
        struct timespec ts = {0, ns < max_ns ? ns : max_ns};
        nanosleep(&ts, NULL);
        polls = MPI_POLLS_PER_CLOCK - 1; /* the clock again after the sleep */
    }
}

static na_return_t mpi_cancel(na_class_t *na_class, na_context_t *context, na_op_id_t *op)
{
    (void)context;
    struct mpi_class *pc = PC(na_class);
    struct mpi_op *mo = na_op_plugin(op);
    pthread_mutex_lock(&pc->lock);
    if (atomic_load(&op->state) != NA_OP_CANCELING) {
        pthread_mutex_unlock(&pc->lock); /* completed meanwhile */
        return NA_SUCCESS;
    }
    switch (op->info.type) {
    case NA_CB_RECV_UNEXPECTED:
        if (mo->in_uq) {
            struct mpi_op **pp = &pc->uq_head, *prev = NULL;
            while (*pp && *pp != mo)
                prev = *pp, pp = &(*pp)->next;
            if (*pp) {
                *pp = mo->next;
                if (pc->uq_tail == mo)
                    pc->uq_tail = prev;
            }
            mo->in_uq = false;
            op_done(pc, op, NA_CANCELED);
        } else if (mo->irecv) {
            /* unexp_irecv_done: MPI_Test_cancelled tells cancelled from received */
            MPI_Request r = mo->req;
            int rc = MPI_Cancel(&r);
            if (rc != MPI_SUCCESS)
                log_mpi("MPI_Cancel", rc);
        } /* else: already matched, its local Imrecv completes soon */
        break;
    case NA_CB_RECV_EXPECTED:
        if (mo->in_eq) {
            struct mpi_op **pp = &pc->eq_head;
            while (*pp && *pp != mo)
                pp = &(*pp)->next;
            if (*pp)
                *pp = mo->next;
            mo->in_eq = false;
            op_done(pc, op, NA_CANCELED);
        } else if (mo->irecv) {
            /* as for sends below: MPI_Test_cancelled decides in recv_exp_done */
            MPI_Request r = mo->req;
            int rc = MPI_Cancel(&r);
            if (rc != MPI_SUCCESS)
                log_mpi("MPI_Cancel", rc);
        } /* else: matched, its local Imrecv completes soon */
        break;
    case NA_CB_SEND_EXPECTED:
    case NA_CB_SEND_UNEXPECTED: {
        /* MPI_Cancel on a copy of the handle; the table sees it complete and
         * MPI_Test_cancelled decides between NA_CANCELED and the real result
         * (sends that MPI cannot cancel complete normally). */
        MPI_Request r = mo->req;
        int rc = MPI_Cancel(&r);
        if (rc != MPI_SUCCESS)
            log_mpi("MPI_Cancel", rc);
        break;
    }
    case NA_CB_PUT:
    case NA_CB_GET:
        if (mo->oreq)
            mpi_emul_cancel(mo->emul, mo->oreq);
        break;
    default:
        break;
    }
    pthread_mutex_unlock(&pc->lock);
    return NA_SUCCESS;
}

const struct na_ops na_mpi_ops = {
    .class_name = "mpi",
    .protocols = (const char *const[]){"static", "dynamic", NULL},
    .log_subsys = HGX_SUBSYS_MPI,
    /* Every piece is one emulated transfer with its own request and CTS
     * round trip; the emulation moves a transfer in MPI_EMUL_CHUNK (16 MiB)
     * messages itself. With 256 KiB pieces Open MPI bulk ran at 0.77-0.90x raw at
     * >= 1 MiB, with 16 MiB pieces at 0.89-1.15x (docs/performance.md). */
    .rma_piece_max = (size_t)16 << 20,
    .op_size = sizeof(struct mpi_op),
    .check_protocol = mpi_check_protocol,
    .initialize = mpi_initialize,
    .finalize = mpi_finalize,
    .cleanup = NULL,
    .context_create = mpi_context_create,
    .context_destroy = mpi_context_destroy,
    .addr_lookup = mpi_addr_lookup,
    .addr_destroy = mpi_addr_destroy,
    .addr_set_remove = NULL,
    .addr_self = mpi_addr_self,
    .addr_cmp = mpi_addr_cmp,
    .addr_is_self = mpi_addr_is_self,
    .addr_to_string = mpi_addr_to_string,
    .addr_get_serialize_size = mpi_addr_get_serialize_size,
    .addr_serialize = mpi_addr_serialize,
    .addr_deserialize = mpi_addr_deserialize,
    .msg_get_max_unexpected_size = mpi_max_unexp,
    .msg_get_max_expected_size = mpi_max_exp,
    .msg_get_unexpected_header_size = NULL,
    .msg_get_expected_header_size = NULL,
    .msg_get_max_tag = mpi_max_tag,
    .msg_send_unexpected = mpi_send_unexpected,
    .msg_recv_unexpected = mpi_recv_unexpected,
    .msg_send_expected = mpi_send_expected,
    .msg_recv_expected = mpi_recv_expected,
    .mem_handle_create = mpi_mem_handle_create,
    .mem_handle_create_segments = mpi_mem_handle_create_segments,
    .mem_handle_free = mpi_mem_handle_free,
    .mem_handle_get_max_segments = mpi_mem_max_segments,
    .mem_register = mpi_mem_register,
    .mem_deregister = mpi_mem_deregister,
    .mem_handle_get_serialize_size = mpi_mem_serialize_size,
    .mem_handle_serialize = mpi_mem_serialize,
    .mem_handle_deserialize = mpi_mem_deserialize,
    .rma = mpi_rma,
    .poll_get_fd = NULL,
    .poll_try_wait = NULL,
    .poll = mpi_poll,
    .poll_wait = mpi_poll_wait,
    .cancel = mpi_cancel,
};
