/*
 * mpi_emul.c -- one-sided put/get over two-sided MPI; see mpi_emul.h and
 * docs/mpi-emul-cancel.md (cancel protocol and state machines).
 */
#include "config.h"
#include "mpi_emul.h"

#include "emul_state.h"
#include "hgx_log.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CTRL_BATCH 256 /* control packets taken per progress call */
#define TBUCKETS 1024  /* target index buckets, keyed by (origin, request id) */
#define NTOMB 64       /* tombstones kept (oldest overwritten) */
#define TOMB_LIFE_US 10000000ull
#define DATA_BATCH 64 /* data messages taken per progress call */
/* With nothing receiving, the data communicator is still probed every this
 * many progress calls, to drop strays (they only cost MPI memory meanwhile). */
#define DATA_IDLE_EVERY 16
/* A matched chunk this small is received with the blocking MPI_Mrecv: below
 * every MPI transport's eager limit, its data came with the match (as
 * MRECV_MAX in na_mpi.c). Larger ones use MPI_Imrecv. */
#define DATA_MRECV_MAX 4096

/*------------------------------------------------------------ counters */

enum {
    C_REQ,
    C_YES,
    C_NO,
    C_TIMEOUT,
    C_LATE_REPLY,
    C_LATE_DATA,
    C_PARTIAL,
    C_TYES,
    C_TNO,
    C_TOMBDROP,
    C_ABORT,
    C_BAD_DATA,
    C_TEXPIRED,
    G_OACTIVE,
    G_TREC,
    G_TOMB,
    C_N
};
static atomic_ulong ctr[C_N];
#define CINC(i) atomic_fetch_add_explicit(&ctr[i], 1, memory_order_relaxed)
#define CDEC(i) atomic_fetch_sub_explicit(&ctr[i], 1, memory_order_relaxed)

void mpi_emul_get_counters(struct mpi_emul_counters *c)
{
    unsigned long v[C_N];
    for (int i = 0; i < C_N; i++)
        v[i] = atomic_load(&ctr[i]);
    *c = (struct mpi_emul_counters){.cancel_requested = v[C_REQ],
                                    .cancel_yes = v[C_YES],
                                    .cancel_no = v[C_NO],
                                    .cancel_timeout = v[C_TIMEOUT],
                                    .late_replies = v[C_LATE_REPLY],
                                    .late_data_dropped = v[C_LATE_DATA],
                                    .bad_data = v[C_BAD_DATA],
                                    .partial_local = v[C_PARTIAL],
                                    .target_yes = v[C_TYES],
                                    .target_no = v[C_TNO],
                                    .tombstone_drops = v[C_TOMBDROP],
                                    .aborts = v[C_ABORT],
                                    .target_expired = v[C_TEXPIRED],
                                    .origin_active = v[G_OACTIVE],
                                    .target_records = v[G_TREC],
                                    .tombstones = v[G_TOMB]};
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t env_ms(const char *name, uint64_t def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    return (*end || x > 86400000ull) ? def : (uint64_t)x;
}

/*------------------------------------------------------------ structures */

/* A transfer that receives data chunks: listed while more can come for it
 * (the per-tag probes of a shared communicator walk the list; its length
 * gates the probes of a separate data communicator). */
struct rxlink {
    struct rxlink *prev, *next;
    int tag;
    bool on;
};

struct mpi_emul_oreq {
    struct mpi_emul *e;
    uint32_t id;
    uint64_t seq;
    int dtag; /* data tag (id and tag generation) */
    bool put;
    enum hgx_emul_oxfer xfer;
    enum hgx_emul_ocancel cancel;
    int peer;
    struct mpi_emul_mem local; /* segments borrowed from the caller */
    uint64_t local_offset;
    size_t size;
    uint32_t nchunks;
    uint32_t outstanding; /* MPI requests on the caller's memory (put: sends; get:
                             chunk receives) */
    MPI_Request *creqs;   /* put: data sends */
    unsigned char *cdone; /* put: send completed */
    uint32_t nmatched;    /* get: chunk messages taken so far (the k-th is chunk k) */
    uint32_t nwritten;    /* get: of those, received into the caller's memory */
    struct rxlink rx;     /* get */
    uint64_t deadline, expire_at;
    na_return_t result;
    mpi_emul_done_fn done; /* NULL once it ran (or was suppressed): completed */
    void *arg;
};

struct trec { /* target side of one request */
    struct mpi_emul *e;
    enum hgx_emul_tstate state;
    bool put;
    int src;
    struct mpi_emul_ctrl pkt;
    int dtag; /* data tag (id and tag generation), once APPLYING */
    uint32_t n;
    uint32_t next;        /* put: chunk messages taken so far (the k-th is chunk k) */
    uint32_t outstanding; /* get: data sends; put: chunk receives */
    na_return_t result; /* put: once not NA_SUCCESS, the rest of its chunks is dropped */
    struct rxlink rx;   /* put */
    uint64_t expire_at; /* put after ABORT: stop waiting for its chunks */
    uint64_t last_us;   /* put: CTS sent or last chunk taken (target bound) */
    struct trec *anext; /* aborted puts still taking chunks */
    struct trec *hnext; /* index chain, newest first */
    struct trec *pnext; /* pending (RECEIVED) FIFO of this batch */
};

struct tomb {
    int src; /* -1: free */
    uint64_t seq, expire;
};

struct mpi_emul {
    MPI_Comm comm;         /* control packets */
    MPI_Comm dcomm;        /* data chunks (comm unless mpi_emul_set_data_comm) */
    struct rxlink rx_head; /* receiving transfers (circular list) */
    unsigned nrx;
    int *rx_tags; /* shared communicator: the tags to probe, copied per pass */
    unsigned rx_cap;
    unsigned data_idle; /* progress calls since the last idle data probe */
    int rank, size;
    struct hgx_mreqtab *tab;
    int tag_ctrl, tag_put, tag_get;
    int tag_gen;       /* data tags of generations >= 1 start here */
    unsigned gen_bits; /* tag generations: 2^gen_bits (0: one) */
    struct mpi_emul_mem **reg;
    uint32_t reg_cap, gen_counter;
    struct mpi_emul *regsrc; /* registry owner when shared (mpi+dynamic), else NULL */
    struct mpi_emul_oreq *slots[MPI_EMUL_NSLOTS];
    uint32_t next_slot;
    uint64_t next_seq;
    unsigned ntimed; /* origin requests with a cancel timer or expiry running */
    uint64_t cancel_timeout_us, zombie_life_us;
    uint64_t idle_us;       /* target bound: put after CTS with no chunk for this long */
    uint64_t idle_check_at; /* next scan for such puts */
    unsigned ntrec;         /* target records of this instance */
    /* target */
    struct trec *index[TBUCKETS];
    struct trec *pend_head, *pend_tail;
    struct trec *aborted; /* puts after ABORT whose chunks can still come */
    uint64_t *maxseq;     /* per origin rank: highest request seq received (0: none) */
    struct tomb tombs[NTOMB];
    unsigned ntombs, tomb_next;
    bool closing;
    bool batch_open; /* the caller took this batch's first control packet */
    struct mpi_emul_stats stats;
};

/*------------------------------------------------------------ states */

/* Every move of a state machine goes through these (emul_state.h). */
static void oreq_set_xfer(struct mpi_emul_oreq *o, enum hgx_emul_oxfer to)
{
    hgx_emul_move(HGX_EMUL_M_OXFER, o->xfer, to, o->id, o->peer);
    o->xfer = to;
}

static void oreq_set_cancel(struct mpi_emul_oreq *o, enum hgx_emul_ocancel to)
{
    hgx_emul_move(HGX_EMUL_M_OCANCEL, o->cancel, to, o->id, o->peer);
    o->cancel = to;
}

static void trec_set_state(struct trec *t, enum hgx_emul_tstate to)
{
    hgx_emul_move(HGX_EMUL_M_TARGET, t->state, to, t->pkt.req_id, t->src);
    t->state = to;
}

static bool oreq_completed(const struct mpi_emul_oreq *o)
{
    return o->done == NULL;
}

/* Cancelled locally: no answer came within the bound (whatever came later). */
static bool oreq_zombie(const struct mpi_emul_oreq *o)
{
    return o->cancel == HGX_EMUL_OC_ZOMBIE || o->cancel == HGX_EMUL_OC_ZOMBIE_YES ||
           o->cancel == HGX_EMUL_OC_ZOMBIE_NO || o->cancel == HGX_EMUL_OC_EXPIRED;
}

/* The target answered CANCELYES: it dropped the request, no data moved. */
static bool oreq_cancel_yes(const struct mpi_emul_oreq *o)
{
    return o->cancel == HGX_EMUL_OC_YES || o->cancel == HGX_EMUL_OC_ZOMBIE_YES;
}

static void mpi_err_log(const char *what, int rc)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
        strcpy(s, "?");
    HGX_LOG_ERROR(MPI_EMUL, "%s failed: %s", what, s);
}

static na_return_t mpi_err_to_na(int rc)
{
    int cls = rc;
    MPI_Error_class(rc, &cls);
    switch (cls) {
    case MPI_SUCCESS:
        return NA_SUCCESS;
    case MPI_ERR_TRUNCATE:
        return NA_MSGSIZE;
    case MPI_ERR_NO_MEM:
        return NA_NOMEM;
    case MPI_ERR_RANK:
        return NA_INVALID_ARG;
    default:
        return NA_PROTOCOL_ERROR;
    }
}

/*------------------------------------------------------------ memory */

na_return_t mpi_emul_mem_register(struct mpi_emul *e, struct mpi_emul_mem *m)
{
    uint32_t id;
    for (id = 1; id < e->reg_cap; id++)
        if (!e->reg[id])
            break;
    if (id >= e->reg_cap) {
        uint32_t cap = e->reg_cap ? e->reg_cap * 2 : 64;
        struct mpi_emul_mem **r = realloc(e->reg, sizeof(*r) * cap);
        if (!r)
            return NA_NOMEM;
        memset(r + e->reg_cap, 0, sizeof(*r) * (cap - e->reg_cap));
        if (e->reg_cap == 0)
            id = 1;
        e->reg = r;
        e->reg_cap = cap;
    }
    if (++e->gen_counter == 0)
        e->gen_counter = 1;
    m->id = id;
    m->gen = e->gen_counter;
    m->owner = e->rank;
    e->reg[id] = m;
    return NA_SUCCESS;
}

void mpi_emul_mem_deregister(struct mpi_emul *e, struct mpi_emul_mem *m)
{
    if (m->id && m->id < e->reg_cap && e->reg[m->id] == m)
        e->reg[m->id] = NULL;
    m->id = 0;
    m->gen = 0;
}

void mpi_emul_mem_serialize(const struct mpi_emul_mem *m, struct mpi_emul_mem_wire *w)
{
    memset(w, 0, sizeof(*w));
    w->magic = MPI_EMUL_MEM_MAGIC;
    w->owner = m->owner;
    w->id = m->id;
    w->gen = m->gen;
    w->flags = (uint32_t)m->flags;
    w->len = m->len;
}

na_return_t mpi_emul_mem_deserialize(struct mpi_emul_mem *m, const void *buf, size_t size,
                                     int comm_size)
{
    struct mpi_emul_mem_wire w;
    if (size < sizeof(w))
        return NA_INVALID_ARG;
    memcpy(&w, buf, sizeof(w));
    if (w.magic != MPI_EMUL_MEM_MAGIC || w.owner < 0 || w.owner >= comm_size ||
        w.id == 0 ||
        (w.flags != NA_MEM_READ_ONLY && w.flags != NA_MEM_WRITE_ONLY &&
         w.flags != NA_MEM_READWRITE) ||
        w.len == 0 || w.len > SIZE_MAX)
        return NA_INVALID_ARG;
    memset(m, 0, sizeof(*m));
    m->owner = w.owner;
    m->id = w.id;
    m->gen = w.gen;
    m->flags = w.flags;
    m->len = (size_t)w.len;
    return NA_SUCCESS;
}

/* Describe bytes [off, off+len) of a local region for MPI (no copy). */
static int mem_chunk(const struct mpi_emul_mem *m, uint64_t off, size_t len, void **ptr,
                     int *count, MPI_Datatype *dt)
{
    size_t i = 0, segoff = (size_t)off;
    while (i < m->nseg && segoff >= m->segs[i].len)
        segoff -= m->segs[i++].len;
    if (i >= m->nseg)
        return MPI_ERR_ARG;
    if (m->segs[i].len - segoff >= len) {
        *ptr = (char *)m->segs[i].base + segoff;
        *count = (int)len;
        *dt = MPI_BYTE;
        return MPI_SUCCESS;
    }
    size_t n = 0, rem = len, j = i, so = segoff;
    while (rem > 0 && j < m->nseg) {
        size_t take = m->segs[j].len - so;
        if (take > rem)
            take = rem;
        rem -= take;
        n++, j++, so = 0;
    }
    if (rem > 0)
        return MPI_ERR_ARG;
    int *bl = malloc(sizeof(int) * n);
    MPI_Aint *disp = malloc(sizeof(MPI_Aint) * n);
    int rc = MPI_ERR_NO_MEM;
    if (!bl || !disp)
        goto out;
    rem = len, so = segoff;
    for (size_t k = 0; k < n; k++) {
        size_t take = m->segs[i + k].len - so;
        if (take > rem)
            take = rem;
        bl[k] = (int)take;
        rc = MPI_Get_address((char *)m->segs[i + k].base + so, &disp[k]);
        if (rc != MPI_SUCCESS)
            goto out;
        rem -= take;
        so = 0;
    }
    rc = MPI_Type_create_hindexed((int)n, bl, disp, MPI_BYTE, dt);
    if (rc == MPI_SUCCESS && (rc = MPI_Type_commit(dt)) != MPI_SUCCESS)
        MPI_Type_free(dt);
    *ptr = MPI_BOTTOM;
    *count = 1;
out:
    free(bl);
    free(disp);
    return rc;
}

static void type_release(MPI_Datatype *dt)
{
    if (*dt != MPI_BYTE)
        MPI_Type_free(dt); /* pending communication still completes normally */
}

static size_t chunk_len(size_t size, uint32_t i)
{
    size_t off = (size_t)i * MPI_EMUL_CHUNK;
    return size - off < MPI_EMUL_CHUNK ? size - off : MPI_EMUL_CHUNK;
}

static uint32_t nchunks_of(uint64_t size)
{
    return (uint32_t)((size + MPI_EMUL_CHUNK - 1) / MPI_EMUL_CHUNK);
}

/*------------------------------------------------------------ data tags */

#define GEN_STRIDE (2 * (long long)MPI_EMUL_NSLOTS) /* tags per generation >= 1 */
#define GEN_BITS_MAX 30

long long mpi_emul_gen_span(unsigned bits)
{
    return bits ? ((1ll << bits) - 1) * GEN_STRIDE : 0;
}

unsigned mpi_emul_gen_bits(long long room)
{
    unsigned b = 0;
    while (b < GEN_BITS_MAX && mpi_emul_gen_span(b + 1) <= room)
        b++;
    return b;
}

/* The data tag of request id with sequence number seq whose origin uses
 * bits generation bits (put: origin -> target; get: target -> origin). */
static int data_tag(const struct mpi_emul *e, bool put, uint32_t id, uint64_t seq,
                    unsigned bits)
{
    uint64_t g = bits ? seq & ((1ull << bits) - 1) : 0;
    if (g == 0)
        return (put ? e->tag_put : e->tag_get) + (int)id;
    return (int)(e->tag_gen + (long long)(g - 1) * GEN_STRIDE +
                 (put ? 0 : MPI_EMUL_NSLOTS) + id);
}

/* Which request a data tag names: 1 put, 0 get, -1 no data tag; *id. Any
 * generation this side has tags for; the transfer's own tag is checked by
 * the caller. */
static int data_tag_decode(const struct mpi_emul *e, int tag, uint32_t *id)
{
    if (tag >= e->tag_put && tag < e->tag_put + MPI_EMUL_NSLOTS) {
        *id = (uint32_t)(tag - e->tag_put);
        return 1;
    }
    if (tag >= e->tag_get && tag < e->tag_get + MPI_EMUL_NSLOTS) {
        *id = (uint32_t)(tag - e->tag_get);
        return 0;
    }
    long long off = (long long)tag - e->tag_gen;
    if (!e->gen_bits || off < 0 || off >= mpi_emul_gen_span(e->gen_bits))
        return -1;
    *id = (uint32_t)(off % MPI_EMUL_NSLOTS);
    return (off / MPI_EMUL_NSLOTS) % 2 == 0;
}

/*------------------------------------------------------------ control sends */

static void ctrl_sent(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux, (void)st;
    if (err != MPI_SUCCESS && err != MPI_ERR_REQUEST)
        mpi_err_log("control packet send", err);
    free(obj);
}

static int ctrl_send(struct mpi_emul *e, int dest, const struct mpi_emul_ctrl *p)
{
    struct mpi_emul_ctrl *c = malloc(sizeof(*c));
    if (!c)
        return MPI_ERR_NO_MEM;
    *c = *p;
    c->magic = MPI_EMUL_CTRL_MAGIC;
    MPI_Request r;
    int rc = MPI_Isend(c, (int)sizeof(*c), MPI_BYTE, dest, e->tag_ctrl, e->comm, &r);
    if (rc != MPI_SUCCESS) {
        free(c);
        return rc;
    }
    if (hgx_mreqtab_add(e->tab, r, ctrl_sent, c, 0) != 0) {
        MPI_Wait(&r, MPI_STATUS_IGNORE); /* small, eager */
        free(c);
    }
    return MPI_SUCCESS;
}

static void ctrl_reply(struct mpi_emul *e, int dest, uint32_t type, uint32_t rid,
                       uint64_t seq, na_return_t status)
{
    struct mpi_emul_ctrl r = {
        .type = type, .req_id = rid, .seq = seq, .status = (int32_t)status};
    int rc = ctrl_send(e, dest, &r);
    if (rc != MPI_SUCCESS)
        mpi_err_log("sending a control reply", rc);
}

/*------------------------------------------------------------ data messages */

static void rx_add(struct mpi_emul *e, struct rxlink *l, int tag)
{
    if (l->on)
        return;
    l->tag = tag;
    l->next = &e->rx_head;
    l->prev = e->rx_head.prev;
    e->rx_head.prev->next = l;
    e->rx_head.prev = l;
    l->on = true;
    e->nrx++;
}

static void rx_del(struct mpi_emul *e, struct rxlink *l)
{
    if (!l->on)
        return;
    l->prev->next = l->next;
    l->next->prev = l->prev;
    l->on = false;
    e->nrx--;
}

/* Receive the matched data message msg whole into scratch and forget it.
 * late: the rest of a transfer cancelled locally or failed before (expected);
 * else the message failed a check (why), which is logged. */
static void data_drop(struct mpi_emul *e, MPI_Message *msg, const MPI_Status *st,
                      int count, bool late, const char *why)
{
    int rc = hgx_mpi_mrecv_drop(msg, st);
    if (rc != MPI_SUCCESS)
        mpi_err_log("MPI_Mrecv (dropped data message)", rc);
    if (late) {
        e->stats.late_dropped++;
        CINC(C_LATE_DATA);
        HGX_LOG_DEBUG(MPI_EMUL, "dropped a late data chunk from rank %d (tag %d): %s",
                      st->MPI_SOURCE, st->MPI_TAG, why);
        return;
    }
    e->stats.bad_data++;
    CINC(C_BAD_DATA);
    if (count == MPI_UNDEFINED)
        HGX_LOG_WARNING(MPI_EMUL,
                        "dropped a data message of over 2 GiB from rank %d (tag %d): %s",
                        st->MPI_SOURCE, st->MPI_TAG, why);
    else
        HGX_LOG_WARNING(MPI_EMUL,
                        "dropped a data message of %d bytes from rank %d (tag %d): %s",
                        count, st->MPI_SOURCE, st->MPI_TAG, why);
}

/* Whether the chunk message of count bytes, the next of a transfer whose
 * chunk is len bytes, is received: not while the transfer no longer takes data
 * (closed_why), nor when its size is wrong (size_why; the transfer then fails
 * with NA_PROTOCOL_ERROR in *result). A refused chunk is dropped and counted. */
static bool chunk_admit(struct mpi_emul *e, MPI_Message *msg, const MPI_Status *st,
                        int count, size_t len, bool open, const char *closed_why,
                        const char *size_why, na_return_t *result)
{
    bool fits = count == (int)len;
    if (!open) {
        data_drop(e, msg, st, count, fits,
                  fits ? closed_why : "not the size of its chunk");
        return false;
    }
    if (!fits) {
        data_drop(e, msg, st, count, false, size_why);
        *result = NA_PROTOCOL_ERROR;
        return false;
    }
    return true;
}

/* Receive the matched chunk msg, whose size was checked to be exactly len,
 * into the chunk's memory (ptr, count, dt from mem_chunk; no copy). fn runs
 * when it landed: at once for a small chunk, else from the request table.
 * The caller counted it outstanding. */
static void chunk_recv(struct mpi_emul *e, MPI_Message *msg, void *ptr, int count,
                       MPI_Datatype dt, size_t len, hgx_mreq_fn fn, void *obj,
                       uintptr_t aux)
{
    MPI_Status st;
    memset(&st, 0, sizeof(st));
    int rc;
    if (len <= DATA_MRECV_MAX) {
        rc = MPI_Mrecv(ptr, count, dt, msg, &st);
    } else {
        /* A single-copy transport often moves the data inside MPI_Imrecv: one
         * MPI_Test then completes it in this pass instead of the next one. */
        MPI_Request r;
        int flag = 0;
        rc = MPI_Imrecv(ptr, count, dt, msg, &r);
        if (rc == MPI_SUCCESS)
            rc = MPI_Test(&r, &flag, &st);
        if (rc == MPI_SUCCESS && !flag && hgx_mreqtab_add(e->tab, r, fn, obj, aux) == 0) {
            type_release(&dt);
            return;
        }
        if (rc == MPI_SUCCESS && !flag)
            rc = MPI_Wait(&r, &st); /* no room in the table; matched, so it completes */
    }
    type_release(&dt);
    fn(obj, aux, rc, &st);
}

/*------------------------------------------------------------ origin */

static void oreq_free(struct mpi_emul_oreq *o)
{
    struct mpi_emul *e = o->e;
    if (e->slots[o->id] == o)
        e->slots[o->id] = NULL;
    if (o->cancel != HGX_EMUL_OC_NONE)
        e->ntimed--;
    rx_del(e, &o->rx);
    CDEC(G_OACTIVE);
    free(o->creqs);
    free(o->cdone);
    free(o);
}

static void oreq_complete(struct mpi_emul_oreq *o, na_return_t ret)
{
    mpi_emul_done_fn done = o->done;
    o->done = NULL;
    if (done && !o->e->closing)
        done(o->arg, ret);
}

/* put: cancel the data sends MPI still holds (it may not cancel them). */
static void oreq_cancel_sends(struct mpi_emul_oreq *o)
{
    for (uint32_t i = 0; i < o->nchunks; i++)
        if (!o->cdone[i])
            MPI_Cancel(
                &o->creqs[i]); /* copy of the handle; completion comes via the table */
}

/* The single place that decides an origin request's outcome and its end.
 * Callback: once MPI holds nothing of the caller's memory for it and the
 * outcome is known. Free: once nothing more can arrive for its id. */
static void oreq_step(struct mpi_emul_oreq *o)
{
    struct mpi_emul *e = o->e;
    if (e->closing) {
        if (o->outstanding == 0)
            oreq_free(o);
        return;
    }
    if (o->outstanding > 0)
        return;
    if (!oreq_completed(o)) {
        na_return_t r;
        if (o->put) {
            if (o->xfer == HGX_EMUL_OX_REPLIED)
                r = o->result;
            else if (oreq_cancel_yes(o) || oreq_zombie(o))
                r = NA_CANCELED;
            else if (o->xfer == HGX_EMUL_OX_ABORTED)
                r = o->result != NA_SUCCESS ? o->result : NA_PROTOCOL_ERROR;
            else
                return; /* waiting for CTS / ACK */
        } else {
            if (o->xfer == HGX_EMUL_OX_REPLIED || o->result != NA_SUCCESS)
                r = o->result; /* refused, a bad chunk or an MPI error */
            else if (oreq_cancel_yes(o)) {
                r = NA_CANCELED;
                if (o->nmatched > 0) { /* the target broke the protocol */
                    HGX_LOG_ERROR(MPI_EMUL, "get %u: CANCELYES but data arrived", o->id);
                    r = NA_PROTOCOL_ERROR;
                }
            } else if (o->nwritten == o->nchunks)
                r = NA_SUCCESS;
            else if (oreq_zombie(o)) {
                r = NA_CANCELED;
                if (o->nwritten > 0)
                    CINC(C_PARTIAL);
            } else
                return; /* waiting for data */
        }
        oreq_complete(o, r);
    }
    /* Keep the id while an answer can still come for it, and for a get
     * cancelled locally but answered CANCELNO, while its chunks still come
     * (they are dropped): a new request with the id must not take them. */
    if (o->cancel == HGX_EMUL_OC_SENT || o->cancel == HGX_EMUL_OC_ZOMBIE ||
        (o->cancel == HGX_EMUL_OC_ZOMBIE_NO && o->rx.on &&
         o->xfer != HGX_EMUL_OX_REPLIED))
        return;
    oreq_free(o);
}

static void ochunk_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)st;
    struct mpi_emul_oreq *o = obj;
    o->cdone[aux] = 1;
    o->outstanding--;
    if (err != MPI_SUCCESS && err != MPI_ERR_REQUEST && o->result == NA_SUCCESS) {
        mpi_err_log("put data send", err);
        o->result = mpi_err_to_na(err);
    }
    oreq_step(o);
}

/* get: a chunk landed in the caller's memory (or failed). */
static void gchunk_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux, (void)st;
    struct mpi_emul_oreq *o = obj;
    o->outstanding--;
    if (err != MPI_SUCCESS && o->result == NA_SUCCESS) {
        if (err != MPI_ERR_REQUEST)
            mpi_err_log("get data receive", err);
        o->result = mpi_err_to_na(err);
    }
    oreq_step(o);
}

/* get: more chunks may be received into the caller's memory. */
static bool get_accepting(const struct mpi_emul_oreq *o)
{
    return !oreq_completed(o) && o->xfer != HGX_EMUL_OX_REPLIED && !oreq_cancel_yes(o) &&
           !oreq_zombie(o) && o->result == NA_SUCCESS;
}

/* A message on a get-data tag of request id: the next chunk of that get if
 * it is on the get's own tag (not that of an older use of the id), comes
 * from the get's target and has exactly that chunk's size. */
static void origin_data(struct mpi_emul *e, MPI_Message *msg, const MPI_Status *st,
                        int count, uint32_t id)
{
    struct mpi_emul_oreq *o = e->slots[id];
    if (!o || o->put || o->dtag != st->MPI_TAG || !o->rx.on ||
        o->peer != st->MPI_SOURCE) {
        data_drop(e, msg, st, count, false,
                  !o || o->put             ? "no get in progress on this tag"
                  : o->dtag != st->MPI_TAG ? "a chunk of an older use of the get's id"
                  : !o->rx.on              ? "more chunks than the get has"
                                           : "not from the get's target");
        return;
    }
    uint32_t k = o->nmatched++;
    if (o->nmatched == o->nchunks)
        rx_del(e, &o->rx);
    size_t len = chunk_len(o->size, k);
    if (!chunk_admit(e, msg, st, count, len, get_accepting(o),
                     "its get was cancelled locally or failed",
                     "not the size of its chunk; the get fails", &o->result)) {
        oreq_step(o);
        return;
    }
    void *ptr;
    int n;
    MPI_Datatype dt;
    int rc = mem_chunk(&o->local, o->local_offset + (uint64_t)k * MPI_EMUL_CHUNK, len,
                       &ptr, &n, &dt);
    if (rc != MPI_SUCCESS) {
        mpi_err_log("get: describing a chunk", rc);
        data_drop(e, msg, st, count, true, "its chunk could not be described");
        o->result = mpi_err_to_na(rc);
        oreq_step(o);
        return;
    }
    o->nwritten++;
    o->outstanding++;
    chunk_recv(e, msg, ptr, n, dt, len, gchunk_done, o, k);
}

static void send_abort(struct mpi_emul_oreq *o)
{
    if (o->xfer == HGX_EMUL_OX_ABORTED)
        return;
    oreq_set_xfer(o, HGX_EMUL_OX_ABORTED);
    ctrl_reply(o->e, o->peer, MPI_EMUL_CT_ABORT, o->id, o->seq, NA_CANCELED);
}

/* put: CTS arrived, send the data (pipelined chunks). */
static void put_post_data(struct mpi_emul_oreq *o)
{
    struct mpi_emul *e = o->e;
    oreq_set_xfer(o, HGX_EMUL_OX_SENDING);
    for (uint32_t i = 0; i < o->nchunks; i++) {
        void *ptr;
        int count;
        MPI_Datatype dt;
        int rc = mem_chunk(&o->local, o->local_offset + (uint64_t)i * MPI_EMUL_CHUNK,
                           chunk_len(o->size, i), &ptr, &count, &dt);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Isend(ptr, count, dt, o->peer, o->dtag, e->dcomm, &o->creqs[i]);
            type_release(&dt);
        }
        if (rc == MPI_SUCCESS &&
            hgx_mreqtab_add(e->tab, o->creqs[i], ochunk_done, o, i) != 0) {
            MPI_Wait(&o->creqs[i], MPI_STATUS_IGNORE);
            o->cdone[i] = 1;
            continue;
        }
        if (rc != MPI_SUCCESS) {
            mpi_err_log("put: sending data", rc);
            for (uint32_t k = i; k < o->nchunks; k++)
                o->cdone[k] = 1;
            if (o->result == NA_SUCCESS)
                o->result = mpi_err_to_na(rc);
            send_abort(o); /* the target stops taking chunks */
            break;
        }
        o->outstanding++;
    }
}

/* Cancel answer did not come in time: turn the cancel local. */
static void oreq_timeout(struct mpi_emul_oreq *o)
{
    oreq_set_cancel(o, HGX_EMUL_OC_ZOMBIE);
    o->expire_at = now_us() + o->e->zombie_life_us;
    if (oreq_completed(o))
        return; /* outcome already delivered; just wait for the answer */
    CINC(C_TIMEOUT);
    HGX_LOG_WARNING(MPI_EMUL,
                    "%s %u: no cancel answer from rank %d in time; cancelling locally",
                    o->put ? "put" : "get", o->id, o->peer);
    if (o->put && o->outstanding > 0)
        oreq_cancel_sends(o); /* sends MPI may or may not cancel */
    if (o->xfer == HGX_EMUL_OX_SENDING)
        send_abort(o);
    /* get: chunks arriving from now on are dropped (get_accepting) */
    oreq_step(o);
}

static void origin_packet(struct mpi_emul *e, int src, const struct mpi_emul_ctrl *p)
{
    struct mpi_emul_oreq *o = p->req_id < MPI_EMUL_NSLOTS ? e->slots[p->req_id] : NULL;
    if (!o || o->peer != src || o->seq != p->seq) {
        CINC(C_LATE_REPLY);
        HGX_LOG_DEBUG(MPI_EMUL,
                      "dropped a reply (type %u) for a finished request %u from rank %d",
                      p->type, p->req_id, src);
        return;
    }
    switch (p->type) {
    case MPI_EMUL_CT_CTS:
        if (!o->put || o->xfer != HGX_EMUL_OX_WAIT_CTS || oreq_cancel_yes(o)) {
            e->stats.bad_packets++;
            return;
        }
        if (oreq_zombie(o))
            send_abort(
                o); /* we reported NA_CANCELED: send nothing, let the target drop it */
        else
            put_post_data(o);
        break;
    case MPI_EMUL_CT_ACK:
    case MPI_EMUL_CT_ERR: {
        if (o->xfer == HGX_EMUL_OX_REPLIED || (p->type == MPI_EMUL_CT_ACK && !o->put)) {
            e->stats.bad_packets++;
            return;
        }
        na_return_t st = (p->status >= 0 && p->status < NA_RETURN_MAX)
                             ? (na_return_t)p->status
                             : NA_PROTOCOL_ERROR;
        oreq_set_xfer(o, HGX_EMUL_OX_REPLIED);
        if (p->type == MPI_EMUL_CT_ERR) { /* refused: no data comes */
            if (st == NA_SUCCESS)
                st = NA_PROTOCOL_ERROR;
        }
        if (o->result == NA_SUCCESS)
            o->result = st;
        break;
    }
    case MPI_EMUL_CT_CANCELYES:
    case MPI_EMUL_CT_CANCELNO: {
        bool yes = p->type == MPI_EMUL_CT_CANCELYES;
        if (o->cancel == HGX_EMUL_OC_SENT) {
            CINC(yes ? C_YES : C_NO);
            oreq_set_cancel(o, yes ? HGX_EMUL_OC_YES : HGX_EMUL_OC_NO);
        } else if (o->cancel == HGX_EMUL_OC_ZOMBIE) {
            /* A get answered NO after our local cancel: the target sends all its
             * chunks; the id stays taken until they arrived (oreq_step). */
            CINC(C_LATE_REPLY);
            oreq_set_cancel(o, yes ? HGX_EMUL_OC_ZOMBIE_YES : HGX_EMUL_OC_ZOMBIE_NO);
        } else if (o->cancel == HGX_EMUL_OC_EXPIRED) {
            CINC(C_LATE_REPLY); /* nothing waits for it any more */
        } else {
            e->stats.bad_packets++;
            return;
        }
        break;
    }
    default:
        e->stats.bad_packets++;
        return;
    }
    oreq_step(o);
}

na_return_t mpi_emul_xfer(struct mpi_emul *e, bool put, const struct mpi_emul_mem *local,
                          uint64_t local_offset, const struct mpi_emul_mem *remote,
                          uint64_t remote_offset, size_t size, mpi_emul_done_fn done,
                          void *arg, struct mpi_emul_oreq **oreq_p)
{
    *oreq_p = NULL;
    if (size == 0) {
        done(arg, NA_SUCCESS);
        return NA_SUCCESS;
    }
    uint32_t n = nchunks_of(size);
    if (n > MPI_EMUL_MAX_CHUNKS)
        return NA_MSGSIZE;
    uint32_t id = MPI_EMUL_NSLOTS;
    for (uint32_t k = 0; k < MPI_EMUL_NSLOTS; k++) {
        uint32_t s = (e->next_slot + k) % MPI_EMUL_NSLOTS;
        if (!e->slots[s]) {
            id = s;
            break;
        }
    }
    if (id == MPI_EMUL_NSLOTS) {
        HGX_LOG_ERROR(MPI_EMUL, "%u emulated transfers already active", MPI_EMUL_NSLOTS);
        return NA_AGAIN;
    }
    e->next_slot = (id + 1) % MPI_EMUL_NSLOTS;

    struct mpi_emul_oreq *o = calloc(1, sizeof(*o));
    if (!o || (put && (!(o->creqs = calloc(n, sizeof(MPI_Request))) ||
                       !(o->cdone = calloc(n, 1))))) {
        if (o)
            free(o->creqs);
        free(o);
        return NA_NOMEM;
    }
    CINC(G_OACTIVE);
    o->e = e;
    o->id = id;
    o->seq = ++e->next_seq;
    o->dtag = data_tag(e, put, id, o->seq, e->gen_bits);
    o->put = put;
    o->xfer = put ? HGX_EMUL_OX_WAIT_CTS : HGX_EMUL_OX_RECEIVING;
    o->cancel = HGX_EMUL_OC_NONE;
    o->peer = remote->owner;
    o->local = *local;
    o->local_offset = local_offset;
    o->size = size;
    o->nchunks = n;
    o->result = NA_SUCCESS;
    o->done = done;
    o->arg = arg;
    e->slots[id] = o;
    if (!put) /* chunks are taken as they arrive (origin_data), nothing is posted */
        rx_add(e, &o->rx, o->dtag);

    struct mpi_emul_ctrl p = {.type = put ? MPI_EMUL_CT_PUT : MPI_EMUL_CT_GET,
                              .req_id = id,
                              .handle_id = remote->id,
                              .gen = remote->gen,
                              .offset = remote_offset,
                              .size = size,
                              .seq = o->seq,
                              .status = (int32_t)e->gen_bits};
    int rc = ctrl_send(e, o->peer, &p);
    if (rc != MPI_SUCCESS) {
        mpi_err_log("sending put/get request", rc);
        o->done = NULL;
        oreq_step(o);
        return mpi_err_to_na(rc);
    }
    *oreq_p = o;
    return NA_SUCCESS;
}

void mpi_emul_cancel(struct mpi_emul *e, struct mpi_emul_oreq *o)
{
    if (!o || o->cancel != HGX_EMUL_OC_NONE || oreq_completed(o) || e->closing)
        return;
    CINC(C_REQ);
    ctrl_reply(e, o->peer, MPI_EMUL_CT_CANCEL, o->id, o->seq, NA_CANCELED);
    oreq_set_cancel(o, HGX_EMUL_OC_SENT);
    o->deadline = now_us() + e->cancel_timeout_us;
    e->ntimed++;
}

static int origin_timers(struct mpi_emul *e)
{
    int n = 0;
    uint64_t t = now_us();
    for (uint32_t i = 0; i < MPI_EMUL_NSLOTS; i++) {
        struct mpi_emul_oreq *o = e->slots[i];
        if (!o || o->cancel == HGX_EMUL_OC_NONE)
            continue;
        if (o->cancel == HGX_EMUL_OC_SENT && t >= o->deadline) {
            oreq_timeout(o);
            n++;
        } else if ((o->cancel == HGX_EMUL_OC_ZOMBIE ||
                    o->cancel == HGX_EMUL_OC_ZOMBIE_YES ||
                    o->cancel == HGX_EMUL_OC_ZOMBIE_NO) &&
                   t >= o->expire_at) {
            HGX_LOG_WARNING(MPI_EMUL,
                            "request %u to rank %d: no cancel answer or late data for "
                            "%llu ms, releasing its id",
                            o->id, o->peer,
                            (unsigned long long)(e->zombie_life_us / 1000));
            oreq_set_cancel(o, HGX_EMUL_OC_EXPIRED);
            oreq_step(o);
            n++;
        }
    }
    return n;
}

/*------------------------------------------------------------ target */

static unsigned tkey(int src, uint32_t rid)
{
    return ((unsigned)src * 2654435761u + rid) % TBUCKETS;
}

static struct trec *tindex_find(struct mpi_emul *e, int src, uint32_t rid)
{
    for (struct trec *t = e->index[tkey(src, rid)]; t; t = t->hnext)
        if (t->src == src && t->pkt.req_id == rid)
            return t; /* newest first */
    return NULL;
}

static void tindex_remove(struct mpi_emul *e, struct trec *t)
{
    struct trec **pp = &e->index[tkey(t->src, t->pkt.req_id)];
    while (*pp && *pp != t)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = t->hnext;
}

static void trec_free(struct mpi_emul *e, struct trec *t)
{
    if (t->state == HGX_EMUL_T_ABORTED) {
        struct trec **pp = &e->aborted;
        while (*pp && *pp != t)
            pp = &(*pp)->anext;
        if (*pp)
            *pp = t->anext;
    }
    tindex_remove(e, t);
    rx_del(e, &t->rx);
    trec_set_state(t, HGX_EMUL_T_DONE);
    CDEC(G_TREC);
    e->ntrec--;
    free(t);
}

static void pend_remove(struct mpi_emul *e, struct trec *t)
{
    struct trec **pp = &e->pend_head, *prev = NULL;
    while (*pp && *pp != t)
        prev = *pp, pp = &(*pp)->pnext;
    if (!*pp)
        return;
    *pp = t->pnext;
    if (e->pend_tail == t)
        e->pend_tail = prev;
}

static void tomb_expire(struct mpi_emul *e, uint64_t t)
{
    for (unsigned i = 0; i < NTOMB && e->ntombs; i++)
        if (e->tombs[i].src >= 0 && e->tombs[i].expire <= t) {
            e->tombs[i].src = -1;
            e->ntombs--;
            CDEC(G_TOMB);
        }
}

static void tomb_add(struct mpi_emul *e, int src, uint64_t seq)
{
    tomb_expire(e, now_us());
    struct tomb *tb = &e->tombs[e->tomb_next];
    e->tomb_next = (e->tomb_next + 1) % NTOMB;
    if (tb->src < 0) {
        e->ntombs++;
        CINC(G_TOMB);
    }
    *tb = (struct tomb){src, seq, now_us() + TOMB_LIFE_US};
}

static bool tomb_take(struct mpi_emul *e, int src, uint64_t seq)
{
    if (!e->ntombs)
        return false;
    for (unsigned i = 0; i < NTOMB; i++)
        if (e->tombs[i].src == src && e->tombs[i].seq == seq) {
            e->tombs[i].src = -1;
            e->ntombs--;
            CDEC(G_TOMB);
            return true;
        }
    return false;
}

/* The end of a target record: nothing in flight, and for a put no chunk left
 * to take (all taken, or ABORT); a put then reports its result (ACK). */
static void trec_check(struct trec *t)
{
    struct mpi_emul *e = t->e;
    if (t->outstanding > 0 || (t->rx.on && !e->closing))
        return;
    if (t->put && t->state != HGX_EMUL_T_ABORTED && !e->closing)
        ctrl_reply(e, t->src, MPI_EMUL_CT_ACK, t->pkt.req_id, t->pkt.seq, t->result);
    trec_free(e, t);
}

static void trec_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    struct trec *t = obj;
    int cancelled = 0;
    if (err == MPI_SUCCESS && st)
        MPI_Test_cancelled(st, &cancelled);
    if (!cancelled && err != MPI_SUCCESS && err != MPI_ERR_REQUEST &&
        t->result == NA_SUCCESS) {
        mpi_err_log(t->put ? "put: receiving data" : "get: sending data", err);
        t->result = mpi_err_to_na(err);
    }
    t->outstanding--;
    if (t->put)
        t->last_us = now_us();
    trec_check(t);
}

/* A request whose control packet arrived: RECEIVED until the end of this batch. */
static void target_request(struct mpi_emul *e, int src, const struct mpi_emul_ctrl *p)
{
    if (p->req_id >= MPI_EMUL_NSLOTS || p->seq == 0) {
        e->stats.bad_packets++;
        HGX_LOG_WARNING(MPI_EMUL, "dropped a request with bad id %u from rank %d",
                        p->req_id, src);
        return; /* no valid reply tag exists */
    }
    if (p->seq > e->maxseq[src])
        e->maxseq[src] = p->seq;
    if (tomb_take(e, src, p->seq)) {
        CINC(C_TOMBDROP); /* cancelled before it arrived: already answered CANCELYES */
        return;
    }
    struct trec *t = calloc(1, sizeof(*t));
    if (!t) {
        ctrl_reply(e, src, MPI_EMUL_CT_ERR, p->req_id, p->seq, NA_NOMEM);
        return;
    }
    CINC(G_TREC);
    e->ntrec++;
    t->e = e;
    t->state = HGX_EMUL_T_RECEIVED;
    t->put = p->type == MPI_EMUL_CT_PUT;
    t->src = src;
    t->pkt = *p;
    t->result = NA_SUCCESS;
    unsigned k = tkey(src, p->req_id);
    t->hnext = e->index[k];
    e->index[k] = t;
    if (e->pend_tail)
        e->pend_tail->pnext = t;
    else
        e->pend_head = t;
    e->pend_tail = t;
}

/* The registered region request p names, checked: handle and generation,
 * bounds, permission (put: write, get: read); and tags for the generation
 * bits it announces (p->status). */
static na_return_t target_region(const struct mpi_emul *e, const struct mpi_emul_ctrl *p,
                                 bool put, struct mpi_emul_mem **mp)
{
    unsigned long need = put ? NA_MEM_WRITE_ONLY : NA_MEM_READ_ONLY;
    const struct mpi_emul *r = e->regsrc ? e->regsrc : e;
    struct mpi_emul_mem *m;
    if (p->status < 0 || (unsigned)p->status > e->gen_bits)
        return NA_PROTONOSUPPORT;
    if (p->handle_id == 0 || p->handle_id >= r->reg_cap || !(m = r->reg[p->handle_id]) ||
        m->gen != p->gen)
        return NA_ACCESS;
    if (p->offset > m->len || p->size > m->len - p->offset || p->size == 0)
        return NA_INVALID_ARG;
    if ((m->flags & need) != need)
        return NA_PERMISSION;
    *mp = m;
    return NA_SUCCESS;
}

/* RECEIVED -> APPLYING (or refused). */
static void target_start(struct mpi_emul *e, struct trec *t)
{
    const struct mpi_emul_ctrl *p = &t->pkt;
    struct mpi_emul_mem *m = NULL;
    na_return_t ret = target_region(e, p, t->put, &m);
    if (ret != NA_SUCCESS) {
        e->stats.refused++;
        HGX_LOG_WARNING(
            MPI_EMUL, "refused %s from rank %d (handle %u gen %u off %llu size %llu): %s",
            t->put ? "put" : "get", t->src, p->handle_id, p->gen,
            (unsigned long long)p->offset, (unsigned long long)p->size,
            ret == NA_ACCESS           ? "unknown or freed handle"
            : ret == NA_PERMISSION     ? "permission"
            : ret == NA_PROTONOSUPPORT ? "more tag-generation bits than ours"
                                       : "out of bounds");
        ctrl_reply(e, t->src, MPI_EMUL_CT_ERR, p->req_id, p->seq, ret);
        trec_free(e, t);
        return;
    }
    t->n = nchunks_of(p->size);
    trec_set_state(t, HGX_EMUL_T_APPLYING);
    t->dtag = data_tag(e, t->put, p->req_id, p->seq, (unsigned)p->status);
    if (t->put) { /* chunks are taken as they arrive (target_data), nothing is posted */
        t->last_us = now_us();
        rx_add(e, &t->rx, t->dtag);
        ctrl_reply(e, t->src, MPI_EMUL_CT_CTS, p->req_id, p->seq, NA_SUCCESS);
        return;
    }
    t->outstanding = 1; /* guard while posting */
    for (uint32_t i = 0; i < t->n; i++) {
        void *ptr;
        int count;
        MPI_Datatype dt;
        MPI_Request r;
        int rc = mem_chunk(m, p->offset + (uint64_t)i * MPI_EMUL_CHUNK,
                           chunk_len((size_t)p->size, i), &ptr, &count, &dt);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Isend(ptr, count, dt, t->src, t->dtag, e->dcomm, &r);
            type_release(&dt);
        }
        /* no room in the table: sent now */
        if (rc == MPI_SUCCESS && hgx_mreqtab_add(e->tab, r, trec_done, t, i) != 0 &&
            (rc = MPI_Wait(&r, MPI_STATUS_IGNORE)) == MPI_SUCCESS)
            continue;
        if (rc != MPI_SUCCESS) { /* the origin's cancel or timeout recovers the rest */
            mpi_err_log("get: sending data", rc);
            t->result = mpi_err_to_na(rc);
            break;
        }
        t->outstanding++;
    }
    trec_done(t, UINTPTR_MAX, MPI_SUCCESS, NULL); /* drop the guard */
}

/* The put whose next chunk a message from src on the put-data tag of rid
 * is: the newest record of (src, rid) still taking chunks on that tag (the
 * tag generation tells an aborted put's late chunk from one of the put that
 * reused its id). *older: a record of (src, rid) takes chunks on another tag. */
static struct trec *tfind_put(struct mpi_emul *e, int src, uint32_t rid, int tag,
                              bool *older)
{
    *older = false;
    for (struct trec *t = e->index[tkey(src, rid)]; t; t = t->hnext)
        if (t->src == src && t->pkt.req_id == rid && t->rx.on) {
            if (t->dtag == tag)
                return t;
            *older = true;
        }
    return NULL;
}

/* A message on the put-data tag of request rid: the next chunk of the put
 * of (source, rid) if it has exactly that chunk's size. Once the put failed
 * (also when its region was deregistered meanwhile) or was aborted, the rest
 * of its chunks is dropped; a failed put's ACK carries the error. */
static void target_data(struct mpi_emul *e, MPI_Message *msg, const MPI_Status *st,
                        int count, uint32_t rid)
{
    bool older;
    struct trec *t = tfind_put(e, st->MPI_SOURCE, rid, st->MPI_TAG, &older);
    if (!t) {
        data_drop(e, msg, st, count, false,
                  older ? "a chunk of another use of the put's id (tag generation)"
                        : "no put from that rank in progress on this tag");
        return;
    }
    t->last_us = now_us();
    uint32_t k = t->next++;
    if (t->next == t->n)
        rx_del(e, &t->rx);
    size_t len = chunk_len((size_t)t->pkt.size, k);
    if (!chunk_admit(e, msg, st, count, len,
                     t->result == NA_SUCCESS && t->state != HGX_EMUL_T_ABORTED,
                     "its put failed or was aborted",
                     "not the size of its chunk; the put fails", &t->result)) {
        trec_check(t);
        return;
    }
    struct mpi_emul_mem *m = NULL;
    void *ptr;
    int n;
    MPI_Datatype dt;
    na_return_t ret = target_region(e, &t->pkt, true, &m);
    int rc = ret == NA_SUCCESS
                 ? mem_chunk(m, t->pkt.offset + (uint64_t)k * MPI_EMUL_CHUNK, len, &ptr,
                             &n, &dt)
                 : MPI_SUCCESS;
    if (ret != NA_SUCCESS || rc != MPI_SUCCESS) {
        if (rc != MPI_SUCCESS)
            mpi_err_log("put: describing a chunk", rc);
        else
            HGX_LOG_WARNING(MPI_EMUL,
                            "put %u from rank %d: its region was deregistered while "
                            "it applied; it fails",
                            rid, st->MPI_SOURCE);
        data_drop(e, msg, st, count, true, "its put failed");
        t->result = rc != MPI_SUCCESS ? mpi_err_to_na(rc) : ret;
        trec_check(t);
        return;
    }
    t->outstanding++;
    chunk_recv(e, msg, ptr, n, dt, len, trec_done, t, k);
}

static void target_cancel(struct mpi_emul *e, int src, const struct mpi_emul_ctrl *p)
{
    struct trec *t = p->req_id < MPI_EMUL_NSLOTS ? tindex_find(e, src, p->req_id) : NULL;
    if (t && t->pkt.seq == p->seq) {
        if (t->state == HGX_EMUL_T_RECEIVED) { /* nothing written or sent: drop it */
            pend_remove(e, t);
            trec_free(e, t);
            CINC(C_TYES);
            ctrl_reply(e, src, MPI_EMUL_CT_CANCELYES, p->req_id, p->seq, NA_SUCCESS);
        } else {
            CINC(C_TNO);
            ctrl_reply(e, src, MPI_EMUL_CT_CANCELNO, p->req_id, p->seq, NA_SUCCESS);
        }
        return;
    }
    if (p->seq != 0 && p->seq <= e->maxseq[src]) {
        /* Arrived and already finished (or refused): its outcome stands. */
        CINC(C_TNO);
        ctrl_reply(e, src, MPI_EMUL_CT_CANCELNO, p->req_id, p->seq, NA_SUCCESS);
        return;
    }
    /* Never arrived: answer YES and make sure it is dropped if it ever does. */
    tomb_add(e, src, p->seq);
    CINC(C_TYES);
    ctrl_reply(e, src, MPI_EMUL_CT_CANCELYES, p->req_id, p->seq, NA_SUCCESS);
}

static void target_abort(struct mpi_emul *e, int src, const struct mpi_emul_ctrl *p)
{
    struct trec *t = p->req_id < MPI_EMUL_NSLOTS ? tindex_find(e, src, p->req_id) : NULL;
    if (!t || t->pkt.seq != p->seq || !t->put || t->state == HGX_EMUL_T_ABORTED)
        return; /* finished meanwhile */
    CINC(C_ABORT);
    if (t->state == HGX_EMUL_T_RECEIVED) {
        pend_remove(e, t);
        trec_free(e, t);
        return;
    }
    /* No ACK. The chunks the origin could not recall still come: they are
     * taken and dropped (the origin's sends complete only then), until all
     * came or the zombie life passed (those MPI cancelled never come). */
    trec_set_state(t, HGX_EMUL_T_ABORTED);
    t->expire_at = now_us() + e->zombie_life_us;
    t->anext = e->aborted;
    e->aborted = t;
    trec_check(t);
}

static void aborted_expire(struct mpi_emul *e, uint64_t now)
{
    for (struct trec *t = e->aborted, *next; t; t = next) {
        next = t->anext;
        if (now >= t->expire_at && t->rx.on) {
            HGX_LOG_DEBUG(MPI_EMUL,
                          "aborted put %u from rank %d: %u chunks never came, released",
                          t->pkt.req_id, t->src, t->n - t->next);
            rx_del(e, &t->rx);
            trec_check(t);
        }
    }
}

/* Target bound: a put that got no chunk for idle_us after CTS (or its last
 * chunk) while none waits in MPI is dropped: its origin died or stopped
 * sending. Its ACK carries NA_TIMEOUT (an origin that is still there
 * completes with it); its region is never written afterwards, chunks that
 * still come are strays. Scanned every idle_us / 8. */
static int put_idle_expire(struct mpi_emul *e, uint64_t now)
{
    uint64_t every = e->idle_us / 8;
    e->idle_check_at = now + (every < 1000 ? 1000 : every);
    int n = 0;
    for (unsigned i = 0; i < TBUCKETS; i++)
        for (struct trec *t = e->index[i], *next; t; t = next) {
            next = t->hnext;
            if (!t->put || t->state != HGX_EMUL_T_APPLYING || !t->rx.on ||
                t->outstanding || now - t->last_us < e->idle_us)
                continue;
            int flag = 0;
            if (MPI_Iprobe(t->src, t->dtag, e->dcomm, &flag, MPI_STATUS_IGNORE) !=
                    MPI_SUCCESS ||
                flag)
                continue; /* a chunk waits: taken by the next pass */
            CINC(C_TEXPIRED);
            HGX_LOG_WARNING(MPI_EMUL,
                            "put %u from rank %d: no chunk for %llu ms after CTS (%u of "
                            "%u came), dropped; its region is not written any more",
                            t->pkt.req_id, t->src,
                            (unsigned long long)(e->idle_us / 1000), t->next, t->n);
            if (t->result == NA_SUCCESS)
                t->result = NA_TIMEOUT;
            rx_del(e, &t->rx);
            trec_check(t); /* ACK (the error) and free */
            n++;
        }
    return n;
}

/*------------------------------------------------------------ control receive */

static void ctrl_dispatch(struct mpi_emul *e, int src, const struct mpi_emul_ctrl *p)
{
    switch (p->type) {
    case MPI_EMUL_CT_PUT:
    case MPI_EMUL_CT_GET:
        target_request(e, src, p);
        break;
    case MPI_EMUL_CT_CANCEL:
        target_cancel(e, src, p);
        break;
    case MPI_EMUL_CT_ABORT:
        target_abort(e, src, p);
        break;
    case MPI_EMUL_CT_ACK:
    case MPI_EMUL_CT_ERR:
    case MPI_EMUL_CT_CTS:
    case MPI_EMUL_CT_CANCELYES:
    case MPI_EMUL_CT_CANCELNO:
        origin_packet(e, src, p);
        break;
    default:
        e->stats.bad_packets++;
        HGX_LOG_WARNING(MPI_EMUL,
                        "dropped a control packet of unknown type %u from rank %d",
                        p->type, src);
    }
}

/* Receive and handle the control packet msg (matched on the control tag;
 * the size is known before receiving, so an oversized packet is read whole
 * and dropped, never truncated: MPICH raises truncation on MPI_COMM_WORLD). */
static void ctrl_recv(struct mpi_emul *e, MPI_Message *msg, const MPI_Status *st)
{
    int count = 0;
    MPI_Get_count(st, MPI_BYTE, &count);
    struct mpi_emul_ctrl p;
    if (count == (int)sizeof(p)) {
        int rc = MPI_Mrecv(&p, count, MPI_BYTE, msg, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            mpi_err_log("MPI_Mrecv (control)", rc);
            return;
        }
        if (p.magic == MPI_EMUL_CTRL_MAGIC && st->MPI_SOURCE >= 0 &&
            st->MPI_SOURCE < e->size) {
            ctrl_dispatch(e, st->MPI_SOURCE, &p);
            return;
        }
    } else {
        hgx_mpi_mrecv_drop(msg, st);
    }
    e->stats.bad_packets++;
    HGX_LOG_WARNING(MPI_EMUL,
                    "dropped a malformed control packet (%d bytes) from rank %d", count,
                    st->MPI_SOURCE);
}

void mpi_emul_ctrl_msg(struct mpi_emul *e, MPI_Message *msg, const MPI_Status *st)
{
    ctrl_recv(e, msg, st);
    e->batch_open = true;
}

/* Take one control packet with MPI_Improbe. Returns 1 if a packet was taken,
 * 0 if none, -1 on MPI error. */
static int ctrl_take_one(struct mpi_emul *e)
{
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    int rc = MPI_Improbe(MPI_ANY_SOURCE, e->tag_ctrl, e->comm, &flag, &msg, &st);
    if (rc != MPI_SUCCESS) {
        mpi_err_log("MPI_Improbe (control)", rc);
        return -1;
    }
    if (!flag)
        return 0;
    ctrl_recv(e, &msg, &st);
    return 1;
}

/*------------------------------------------------------------ data receive */

/* A data message matched by a probe: attributed by tag (which transfer and
 * which use of its id) and source, then checked against the chunk it would
 * be before anything is received (origin_data, target_data); other tags are
 * strays. */
static void data_msg(struct mpi_emul *e, MPI_Message *msg, const MPI_Status *st)
{
    int count = MPI_UNDEFINED; /* stays so above INT_MAX bytes */
    MPI_Get_count(st, MPI_BYTE, &count);
    uint32_t id;
    int dir = data_tag_decode(e, st->MPI_TAG, &id);
    if (st->MPI_SOURCE >= 0 && st->MPI_SOURCE < e->size && dir >= 0) {
        if (dir)
            target_data(e, msg, st, count, id);
        else
            origin_data(e, msg, st, count, id);
        return;
    }
    data_drop(e, msg, st, count, false, "not a data tag");
}

void mpi_emul_data_msg(struct mpi_emul *e, MPI_Message *msg, const MPI_Status *st)
{
    data_msg(e, msg, st);
}

/* Separate data communicator: one MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG)
 * finds the next data message whatever the number of transfers; with none
 * receiving, only every DATA_IDLE_EVERY-th call looks (for strays). */
static int data_take_any(struct mpi_emul *e)
{
    if (!e->nrx && ++e->data_idle < DATA_IDLE_EVERY)
        return 0;
    e->data_idle = 0;
    int n = 0;
    while (n < DATA_BATCH) {
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        int rc = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, e->dcomm, &flag, &msg, &st);
        if (rc != MPI_SUCCESS) {
            mpi_err_log("MPI_Improbe (data)", rc);
            break;
        }
        if (!flag)
            break;
        data_msg(e, &msg, &st);
        n++;
    }
    return n;
}

/* Data on the control communicator (mpi+dynamic connections): a wildcard
 * probe would claim the caller's messages, so the tag of each receiving
 * transfer is probed, from any source (a chunk from another rank is dropped).
 * A message on a tag no transfer receives on stays queued in MPI. */
static int data_take_tags(struct mpi_emul *e)
{
    if (!e->nrx)
        return 0;
    if (e->nrx > e->rx_cap) {
        int *tags = realloc(e->rx_tags, sizeof(int) * e->nrx);
        if (!tags)
            return 0; /* out of memory: tried again next call */
        e->rx_tags = tags;
        e->rx_cap = e->nrx;
    }
    /* Copied first: taking a chunk can end transfers (unlink them). */
    unsigned ntags = 0;
    for (struct rxlink *l = e->rx_head.next; l != &e->rx_head; l = l->next)
        e->rx_tags[ntags++] = l->tag;
    int n = 0;
    for (unsigned i = 0; i < ntags && n < DATA_BATCH; i++) {
        int flag = 1;
        while (flag && n < DATA_BATCH) {
            MPI_Message msg;
            MPI_Status st;
            int rc =
                MPI_Improbe(MPI_ANY_SOURCE, e->rx_tags[i], e->dcomm, &flag, &msg, &st);
            if (rc != MPI_SUCCESS) {
                mpi_err_log("MPI_Improbe (data)", rc);
                return n;
            }
            if (flag) {
                data_msg(e, &msg, &st);
                n++;
            }
        }
    }
    return n;
}

int mpi_emul_progress(struct mpi_emul *e)
{
    return mpi_emul_progress_ex(e, true);
}

int mpi_emul_progress_ex(struct mpi_emul *e, bool take_ctrl)
{
    if (e->closing)
        return 0;
    int n = 0;
    /* 1. Take the control packets available now. Cancels act at once; requests
     *    only get RECEIVED, so a cancel found in the same batch (e.g. on resume
     *    after a stall) wins over its buffered request. */
    /* Some MPIs (MPICH) move only part of their shared-memory queue into the
     * matching queue per probe: once a packet was taken, stop after 3
     * consecutive misses, not 1, so its cancel queued right behind it joins
     * the batch. Before the first packet one miss ends it (nothing taken,
     * nothing to complete; most passes carry no control packet at all). */
    for (int k = e->batch_open, misses = 0;
         take_ctrl && k < CTRL_BATCH && misses < (k ? 3 : 1);) {
        int r = ctrl_take_one(e);
        if (r < 0)
            break;
        if (r == 0) {
            misses++;
            continue;
        }
        misses = 0;
        k++;
        n++;
    }
    e->batch_open = false;
    /* 2. Start the requests of this batch, in arrival order. */
    while (e->pend_head) {
        struct trec *t = e->pend_head;
        e->pend_head = t->pnext;
        if (!e->pend_head)
            e->pend_tail = NULL;
        t->pnext = NULL;
        target_start(e, t);
    }
    /* 3. Data chunks that arrived. */
    if (e->dcomm != e->comm)
        n += data_take_any(e);
    else if (take_ctrl)
        n += data_take_tags(e);
    /* 4. Timers. */
    if (e->ntimed)
        n += origin_timers(e);
    if (e->ntombs)
        tomb_expire(e, now_us());
    if (e->aborted)
        aborted_expire(e, now_us());
    if (e->ntrec && e->idle_us) {
        uint64_t t = now_us();
        if (t >= e->idle_check_at)
            n += put_idle_expire(e, t);
    }
    return n;
}

/*------------------------------------------------------------ life */

static uint64_t g_timeout_ms, g_zombie_ms, g_idle_ms;
static bool g_env_read;

na_return_t mpi_emul_create(struct mpi_emul **ep, MPI_Comm comm, struct hgx_mreqtab *tab,
                            int tag_ctrl, int tag_putdata_base, int tag_getdata_base)
{
    struct mpi_emul *e = calloc(1, sizeof(*e));
    if (!e)
        return NA_NOMEM;
    e->comm = comm;
    e->dcomm = comm;
    e->rx_head.next = e->rx_head.prev = &e->rx_head;
    e->tab = tab;
    e->tag_ctrl = tag_ctrl;
    e->tag_put = tag_putdata_base;
    e->tag_get = tag_getdata_base;
    MPI_Comm_rank(comm, &e->rank);
    MPI_Comm_size(comm, &e->size);
    if (!g_env_read) {
        g_timeout_ms = env_ms("HGX_MPI_CANCEL_TIMEOUT_MS", 200);
        g_zombie_ms = env_ms("HGX_MPI_CANCEL_ZOMBIE_MS", 60000);
        g_idle_ms = env_ms("HGX_MPI_TARGET_IDLE_MS", g_zombie_ms);
        g_env_read = true;
    }
    e->cancel_timeout_us = g_timeout_ms * 1000u;
    e->zombie_life_us = g_zombie_ms * 1000u;
    e->idle_us = g_idle_ms * 1000u;
    for (unsigned i = 0; i < NTOMB; i++)
        e->tombs[i].src = -1;
    e->maxseq = calloc((size_t)e->size, sizeof(uint64_t));
    if (!e->maxseq) {
        free(e);
        return NA_NOMEM;
    }
    *ep = e;
    return NA_SUCCESS;
}

void mpi_emul_close(struct mpi_emul *e)
{
    e->closing = true;
    for (uint32_t i = 0; i < MPI_EMUL_NSLOTS; i++)
        if (e->slots[i] && e->slots[i]->outstanding == 0)
            oreq_free(e->slots[i]); /* waits for an answer no table entry tracks */
    while (e->pend_head) {
        struct trec *t = e->pend_head;
        e->pend_head = t->pnext;
        trec_free(e, t);
    }
    e->pend_tail = NULL;
    for (unsigned i = 0; i < TBUCKETS; i++)
        for (struct trec *t = e->index[i]; t; t = t->hnext) {
            uint32_t left = t->put ? t->n - t->next + t->outstanding : t->outstanding;
            HGX_LOG_WARNING(MPI_EMUL,
                            "closing with a %s from rank %d still applying (id %u, "
                            "%u of %u chunks not moved%s)",
                            t->put ? "put" : "get", t->src, t->pkt.req_id, left, t->n,
                            t->state == HGX_EMUL_T_ABORTED ? ", aborted" : "");
        }
}

void mpi_emul_free(struct mpi_emul *e)
{
    if (!e)
        return;
    for (uint32_t i = 0; i < MPI_EMUL_NSLOTS; i++)
        if (e->slots[i])
            oreq_free(e->slots[i]);
    for (unsigned i = 0; i < TBUCKETS; i++)
        while (e->index[i])
            trec_free(e, e->index[i]);
    for (unsigned i = 0; i < NTOMB; i++)
        if (e->tombs[i].src >= 0)
            CDEC(G_TOMB);
    free(e->maxseq);
    free(e->reg);
    free(e->rx_tags);
    free(e);
}

void mpi_emul_set_data_comm(struct mpi_emul *e, MPI_Comm data)
{
    e->dcomm = data;
}

void mpi_emul_set_tag_gens(struct mpi_emul *e, int gen_base, unsigned bits)
{
    /* every tag stays an int (the caller keeps them within MPI_TAG_UB) */
    while (bits > 0 && (gen_base < 0 || bits > GEN_BITS_MAX ||
                        gen_base + mpi_emul_gen_span(bits) - 1 > INT_MAX))
        bits--;
    e->tag_gen = gen_base;
    e->gen_bits = bits;
}

void mpi_emul_share_registry(struct mpi_emul *e, struct mpi_emul *owner)
{
    e->regsrc = owner == e ? NULL : owner;
}

void mpi_emul_get_stats(const struct mpi_emul *e, struct mpi_emul_stats *s)
{
    *s = e->stats;
}
