/*
 * mpi_emul.c -- one-sided put/get over two-sided MPI; see mpi_emul.h and
 * docs/mpi-emul-cancel.md (cancel protocol and state machines).
 */
#include "config.h"
#include "mpi_emul.h"

#include "hgx_log.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CTRL_BATCH 256 /* control packets taken per progress call */
#define TBUCKETS 1024  /* target index buckets, keyed by (origin, request id) */
#define NTOMB 64       /* tombstones kept (oldest overwritten) */
#define TOMB_LIFE_US 10000000ull

/* Control packet (untrusted on receipt; exactly this size). */
#define CTRL_MAGIC 0x48434d45u /* "HCME" */
enum ctrl_type {
    CT_PUT = 1,
    CT_GET = 2,
    CT_ACK = 3,       /* put applied (status) */
    CT_ERR = 4,       /* request refused (status); no data follows */
    CT_CANCEL = 5,    /* origin -> target: cancel {req_id, seq} */
    CT_CANCELYES = 6, /* target dropped the request: nothing written, nothing sent */
    CT_CANCELNO = 7,  /* target had started: the transfer completes in full */
    CT_CTS = 8,       /* put: target posted its data receives; origin may send */
    CT_ABORT = 9, /* origin -> target: timed-out put after CTS, no (more) data comes */
};
struct ctrl_pkt {
    uint32_t magic;
    uint32_t type;
    uint32_t req_id;
    uint32_t handle_id;
    uint32_t gen;
    int32_t status;
    uint64_t offset;
    uint64_t size;
    uint64_t seq; /* origin's request sequence number (unique per origin process) */
};

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
    G_OACTIVE,
    G_TREC,
    G_TOMB,
    G_DRAIN,
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
                                    .partial_local = v[C_PARTIAL],
                                    .target_yes = v[C_TYES],
                                    .target_no = v[C_TNO],
                                    .tombstone_drops = v[C_TOMBDROP],
                                    .aborts = v[C_ABORT],
                                    .origin_active = v[G_OACTIVE],
                                    .target_records = v[G_TREC],
                                    .tombstones = v[G_TOMB],
                                    .drains = v[G_DRAIN]};
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

struct drain {
    struct mpi_emul *e;
    struct mpi_emul_oreq *owner; /* origin zombie */
    int src, tag;
    uint32_t left;
    bool active;
    MPI_Request req;
    void *scratch;
};

struct mpi_emul_oreq {
    struct mpi_emul *e;
    uint32_t id;
    uint64_t seq;
    bool put;
    enum mpi_emul_ostate state;
    int peer;
    struct mpi_emul_mem
        local; /* put: data sent after CTS (segments borrowed from the caller) */
    uint64_t local_offset;
    size_t size;
    uint32_t nchunks, outstanding, ncancelled;
    MPI_Request *creqs;
    unsigned char *cdone;
    bool cts;         /* put: CTS received */
    bool data_posted; /* put: data sends posted */
    bool aborted;     /* put: ABORT sent (no more data from us) */
    bool reply;       /* ACK or ERR received */
    bool err_reply;   /* ERR received: no data comes */
    bool cancel_sent, creply, cyes;
    bool completed; /* done() ran (or was suppressed) */
    bool expired;
    uint64_t deadline, expire_at;
    na_return_t result;
    mpi_emul_done_fn done;
    void *arg;
    struct drain *drain;
};

struct trec { /* target side of one request */
    struct mpi_emul *e;
    enum mpi_emul_tstate state;
    bool put, aborted;
    int src;
    struct ctrl_pkt pkt;
    uint32_t n, outstanding;
    MPI_Request *reqs;
    unsigned char *rdone;
    na_return_t result;
    struct trec *hnext; /* index chain, newest first */
    struct trec *pnext; /* pending (RECEIVED) FIFO of this batch */
};

struct tomb {
    int src; /* -1: free */
    uint64_t seq, expire;
};

struct mpi_emul {
    MPI_Comm comm;  /* control packets */
    MPI_Comm dcomm; /* data chunks (comm unless mpi_emul_set_data_comm) */
    int rank, size;
    struct hgx_mreqtab *tab;
    int tag_ctrl, tag_put, tag_get;
    struct mpi_emul_mem **reg;
    uint32_t reg_cap, gen_counter;
    struct mpi_emul *regsrc; /* registry owner when shared (mpi+dynamic), else NULL */
    struct mpi_emul_oreq *slots[MPI_EMUL_NSLOTS];
    uint32_t next_slot;
    uint64_t next_seq;
    unsigned ntimed; /* origin requests with a cancel timer or expiry running */
    uint64_t cancel_timeout_us, zombie_life_us;
    /* target */
    struct trec *index[TBUCKETS];
    struct trec *pend_head, *pend_tail;
    uint64_t *maxseq; /* per origin rank: highest request seq received (0: none) */
    struct tomb tombs[NTOMB];
    unsigned ntombs, tomb_next;
    bool closing;
    bool batch_open; /* the caller took this batch's first control packet */
    struct mpi_emul_stats stats;
};

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

/*------------------------------------------------------------ control sends */

static void ctrl_sent(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux, (void)st;
    if (err != MPI_SUCCESS && err != MPI_ERR_REQUEST)
        mpi_err_log("control packet send", err);
    free(obj);
}

static int ctrl_send(struct mpi_emul *e, int dest, const struct ctrl_pkt *p)
{
    struct ctrl_pkt *c = malloc(sizeof(*c));
    if (!c)
        return MPI_ERR_NO_MEM;
    *c = *p;
    c->magic = CTRL_MAGIC;
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
    struct ctrl_pkt r = {
        .type = type, .req_id = rid, .seq = seq, .status = (int32_t)status};
    int rc = ctrl_send(e, dest, &r);
    if (rc != MPI_SUCCESS)
        mpi_err_log("sending a control reply", rc);
}

/*------------------------------------------------------------ drains */

static void oreq_step(struct mpi_emul_oreq *o);

static void drain_finish(struct drain *d)
{
    CDEC(G_DRAIN);
    if (d->owner) {
        d->owner->drain = NULL;
        oreq_step(d->owner);
    }
    free(d->scratch);
    free(d);
}

static void drain_done(void *obj, uintptr_t aux, int err, const MPI_Status *st);

static void drain_post(struct drain *d)
{
    struct mpi_emul *e = d->e;
    if (d->left == 0 || e->closing) {
        drain_finish(d);
        return;
    }
    int rc = MPI_Irecv(d->scratch, (int)MPI_EMUL_CHUNK, MPI_BYTE, d->src, d->tag,
                       e->dcomm, &d->req);
    if (rc != MPI_SUCCESS) {
        mpi_err_log("MPI_Irecv (drain)", rc);
        drain_finish(d);
        return;
    }
    if (hgx_mreqtab_add(e->tab, d->req, drain_done, d, 0) != 0) {
        MPI_Cancel(&d->req);
        MPI_Wait(&d->req, MPI_STATUS_IGNORE);
        drain_finish(d);
        return;
    }
    d->active = true;
}

static void drain_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    struct drain *d = obj;
    d->active = false;
    if (d->e->closing || err == MPI_ERR_REQUEST) {
        drain_finish(d);
        return;
    }
    int cancelled = 0;
    if (err == MPI_SUCCESS)
        MPI_Test_cancelled(st, &cancelled);
    if (!cancelled) {
        d->e->stats.late_dropped++;
        CINC(C_LATE_DATA);
        HGX_LOG_DEBUG(MPI_EMUL, "dropped a late data chunk from rank %d (tag %d)", d->src,
                      d->tag);
        if (d->left > 0)
            d->left--;
    } else {
        d->left = 0;
    }
    drain_post(d);
}

static void drain_start(struct mpi_emul *e, struct mpi_emul_oreq *owner, int src, int tag,
                        uint32_t n)
{
    struct drain *d = calloc(1, sizeof(*d));
    if (!d || !(d->scratch = malloc(MPI_EMUL_CHUNK))) {
        free(d);
        HGX_LOG_ERROR(MPI_EMUL,
                      "out of memory for a drain; late data may stay queued in MPI");
        return;
    }
    CINC(G_DRAIN);
    d->e = e;
    d->owner = owner;
    d->src = src;
    d->tag = tag;
    d->left = n;
    owner->drain = d;
    drain_post(d);
}

/*------------------------------------------------------------ origin */

static void oreq_free(struct mpi_emul_oreq *o)
{
    struct mpi_emul *e = o->e;
    if (e->slots[o->id] == o)
        e->slots[o->id] = NULL;
    if (o->cancel_sent)
        e->ntimed--;
    CDEC(G_OACTIVE);
    free(o->creqs);
    free(o->cdone);
    free(o);
}

static void oreq_complete(struct mpi_emul_oreq *o, na_return_t ret)
{
    mpi_emul_done_fn done = o->done;
    o->done = NULL;
    o->completed = true;
    if (done && !o->e->closing)
        done(o->arg, ret);
}

static void oreq_cancel_chunks(struct mpi_emul_oreq *o)
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
        if (o->outstanding == 0 && !o->drain)
            oreq_free(o);
        return;
    }
    if (o->outstanding > 0 || o->drain)
        return;
    if (!o->completed) {
        na_return_t r;
        if (o->put) {
            if (o->reply)
                r = o->result;
            else if (o->cyes || o->state == MPI_EMUL_O_ZOMBIE)
                r = NA_CANCELED;
            else if (o->aborted)
                r = o->result != NA_SUCCESS ? o->result : NA_PROTOCOL_ERROR;
            else
                return; /* waiting for CTS / ACK */
        } else {
            if (o->err_reply)
                r = o->result;
            else if (o->cyes) {
                r = NA_CANCELED;
                if (o->ncancelled != o->nchunks) { /* the target broke the protocol */
                    HGX_LOG_ERROR(MPI_EMUL, "get %u: CANCELYES but data arrived", o->id);
                    r = NA_PROTOCOL_ERROR;
                }
            } else if (o->ncancelled == 0)
                r = o->result; /* all data landed (or an MPI error) */
            else if (o->state == MPI_EMUL_O_ZOMBIE) {
                r = NA_CANCELED;
                if (o->ncancelled < o->nchunks)
                    CINC(C_PARTIAL);
            } else
                r = o->result != NA_SUCCESS ? o->result : NA_PROTOCOL_ERROR;
        }
        oreq_complete(o, r);
    }
    /* Keep the id while an answer or late data can still come for it. */
    if (o->cancel_sent && !o->creply && !o->expired)
        return;
    oreq_free(o);
}

static void ochunk_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    struct mpi_emul_oreq *o = obj;
    o->cdone[aux] = 1;
    o->outstanding--;
    if (err == MPI_ERR_REQUEST) {
        o->ncancelled++;
    } else if (err == MPI_SUCCESS) {
        int cancelled = 0;
        MPI_Test_cancelled(st, &cancelled);
        if (cancelled)
            o->ncancelled++;
    } else if (o->result == NA_SUCCESS) {
        mpi_err_log(o->put ? "put data send" : "get data receive", err);
        o->result = mpi_err_to_na(err);
    }
    oreq_step(o);
}

static void send_abort(struct mpi_emul_oreq *o)
{
    if (o->aborted)
        return;
    o->aborted = true;
    ctrl_reply(o->e, o->peer, CT_ABORT, o->id, o->seq, NA_CANCELED);
}

/* put: CTS arrived, send the data (pipelined chunks). */
static void put_post_data(struct mpi_emul_oreq *o)
{
    struct mpi_emul *e = o->e;
    o->data_posted = true;
    for (uint32_t i = 0; i < o->nchunks; i++) {
        void *ptr;
        int count;
        MPI_Datatype dt;
        int rc = mem_chunk(&o->local, o->local_offset + (uint64_t)i * MPI_EMUL_CHUNK,
                           chunk_len(o->size, i), &ptr, &count, &dt);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Isend(ptr, count, dt, o->peer, e->tag_put + (int)o->id, e->dcomm,
                           &o->creqs[i]);
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
            send_abort(o); /* the target cancels its unmatched receives */
            break;
        }
        o->outstanding++;
    }
}

/* Cancel answer did not come in time: turn the cancel local. */
static void oreq_timeout(struct mpi_emul_oreq *o)
{
    o->state = MPI_EMUL_O_ZOMBIE;
    o->expire_at = now_us() + o->e->zombie_life_us;
    if (o->completed)
        return; /* outcome already delivered; just wait for the answer */
    CINC(C_TIMEOUT);
    HGX_LOG_WARNING(MPI_EMUL,
                    "%s %u: no cancel answer from rank %d in time; cancelling locally",
                    o->put ? "put" : "get", o->id, o->peer);
    if (o->put) {
        if (o->data_posted) {
            oreq_cancel_chunks(o); /* sends MPI may or may not cancel */
            send_abort(o);
        }
    } else {
        oreq_cancel_chunks(o);
    }
    oreq_step(o);
}

static void origin_packet(struct mpi_emul *e, int src, const struct ctrl_pkt *p)
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
    case CT_CTS:
        if (!o->put || o->cts || o->reply || o->cyes) {
            e->stats.bad_packets++;
            return;
        }
        o->cts = true;
        if (o->state == MPI_EMUL_O_ZOMBIE)
            send_abort(
                o); /* we reported NA_CANCELED: send nothing, let the target drop it */
        else
            put_post_data(o);
        break;
    case CT_ACK:
    case CT_ERR: {
        if (o->reply || (p->type == CT_ACK && !o->put)) {
            e->stats.bad_packets++;
            return;
        }
        na_return_t st = (p->status >= 0 && p->status < NA_RETURN_MAX)
                             ? (na_return_t)p->status
                             : NA_PROTOCOL_ERROR;
        o->reply = true;
        if (p->type == CT_ERR) {
            o->err_reply = true;
            if (st == NA_SUCCESS)
                st = NA_PROTOCOL_ERROR;
            if (!o->put)
                oreq_cancel_chunks(o); /* refused get: the posted receives never match */
        }
        if (o->result == NA_SUCCESS)
            o->result = st;
        break;
    }
    case CT_CANCELYES:
    case CT_CANCELNO:
        if (!o->cancel_sent || o->creply) {
            e->stats.bad_packets++;
            return;
        }
        o->creply = true;
        o->cyes = p->type == CT_CANCELYES;
        if (o->state == MPI_EMUL_O_ZOMBIE) {
            CINC(C_LATE_REPLY);
            /* get answered NO after our local cancel: the target sent all data; the
             * chunks MPI cancelled here will arrive, drain them into scratch. */
            if (!o->put && !o->cyes && !o->err_reply && o->ncancelled > 0)
                drain_start(e, o, o->peer, e->tag_get + (int)o->id, o->ncancelled);
        } else {
            CINC(o->cyes ? C_YES : C_NO);
            o->state = MPI_EMUL_O_ACTIVE;
            if (o->cyes && !o->put)
                oreq_cancel_chunks(o); /* target sent nothing: all cancel */
        }
        break;
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
    if (!o || !(o->creqs = calloc(n, sizeof(MPI_Request))) ||
        !(o->cdone = calloc(n, 1))) {
        if (o)
            free(o->creqs);
        free(o);
        return NA_NOMEM;
    }
    CINC(G_OACTIVE);
    o->e = e;
    o->id = id;
    o->seq = ++e->next_seq;
    o->put = put;
    o->state = MPI_EMUL_O_ACTIVE;
    o->peer = remote->owner;
    o->local = *local;
    o->local_offset = local_offset;
    o->size = size;
    o->nchunks = n;
    o->result = NA_SUCCESS;
    o->done = done;
    o->arg = arg;
    e->slots[id] = o;

    struct ctrl_pkt p = {.type = put ? CT_PUT : CT_GET,
                         .req_id = id,
                         .handle_id = remote->id,
                         .gen = remote->gen,
                         .offset = remote_offset,
                         .size = size,
                         .seq = o->seq};
    int rc;
    if (!put) { /* post data receives before asking, so data never waits unmatched */
        for (uint32_t i = 0; i < n; i++) {
            void *ptr;
            int count;
            MPI_Datatype dt;
            rc = mem_chunk(local, local_offset + (uint64_t)i * MPI_EMUL_CHUNK,
                           chunk_len(size, i), &ptr, &count, &dt);
            if (rc == MPI_SUCCESS) {
                rc = MPI_Irecv(ptr, count, dt, o->peer, e->tag_get + (int)id, e->dcomm,
                               &o->creqs[i]);
                type_release(&dt);
            }
            if (rc != MPI_SUCCESS ||
                hgx_mreqtab_add(e->tab, o->creqs[i], ochunk_done, o, i) != 0) {
                mpi_err_log("get: posting data receive", rc);
                if (rc == MPI_SUCCESS) {
                    MPI_Cancel(&o->creqs[i]);
                    MPI_Wait(&o->creqs[i], MPI_STATUS_IGNORE);
                }
                na_return_t r0 = mpi_err_to_na(rc == MPI_SUCCESS ? MPI_ERR_NO_MEM : rc);
                for (uint32_t k = i; k < n; k++)
                    o->cdone[k] = 1;
                /* Earlier chunks are in the table: cancel them; freed once they are back.
                 */
                o->done = NULL;
                o->completed = true;
                oreq_cancel_chunks(o);
                oreq_step(o);
                return r0;
            }
            o->outstanding++;
        }
    }
    rc = ctrl_send(e, o->peer, &p);
    if (rc != MPI_SUCCESS) {
        mpi_err_log("sending put/get request", rc);
        o->done = NULL;
        o->completed = true;
        oreq_cancel_chunks(o);
        oreq_step(o);
        return mpi_err_to_na(rc);
    }
    *oreq_p = o;
    return NA_SUCCESS;
}

void mpi_emul_cancel(struct mpi_emul *e, struct mpi_emul_oreq *o)
{
    if (!o || o->state != MPI_EMUL_O_ACTIVE || o->completed || o->cancel_sent ||
        e->closing)
        return;
    CINC(C_REQ);
    ctrl_reply(e, o->peer, CT_CANCEL, o->id, o->seq, NA_CANCELED);
    o->cancel_sent = true;
    o->state = MPI_EMUL_O_CANCEL_SENT;
    o->deadline = now_us() + e->cancel_timeout_us;
    e->ntimed++;
}

static int origin_timers(struct mpi_emul *e)
{
    int n = 0;
    uint64_t t = now_us();
    for (uint32_t i = 0; i < MPI_EMUL_NSLOTS; i++) {
        struct mpi_emul_oreq *o = e->slots[i];
        if (!o || !o->cancel_sent || o->creply)
            continue;
        if (o->state == MPI_EMUL_O_CANCEL_SENT && t >= o->deadline) {
            oreq_timeout(o);
            n++;
        } else if (o->state == MPI_EMUL_O_ZOMBIE && !o->expired && t >= o->expire_at) {
            HGX_LOG_WARNING(MPI_EMUL,
                            "request %u to rank %d: no cancel answer for %llu ms, "
                            "releasing its id",
                            o->id, o->peer,
                            (unsigned long long)(e->zombie_life_us / 1000));
            o->expired = true;
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
    tindex_remove(e, t);
    CDEC(G_TREC);
    free(t->reqs);
    free(t->rdone);
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

static void trec_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    struct trec *t = obj;
    if (t->rdone && aux < t->n)
        t->rdone[aux] = 1;
    int cancelled = 0;
    if (err == MPI_SUCCESS && st)
        MPI_Test_cancelled(st, &cancelled);
    if (!cancelled && err != MPI_SUCCESS && err != MPI_ERR_REQUEST &&
        t->result == NA_SUCCESS) {
        mpi_err_log(t->put ? "put: receiving data" : "get: sending data", err);
        t->result = mpi_err_to_na(err);
    }
    if (--t->outstanding > 0)
        return;
    if (t->put && !t->aborted && !t->e->closing)
        ctrl_reply(t->e, t->src, CT_ACK, t->pkt.req_id, t->pkt.seq, t->result);
    trec_free(t->e, t);
}

/* A request whose control packet arrived: RECEIVED until the end of this batch. */
static void target_request(struct mpi_emul *e, int src, const struct ctrl_pkt *p)
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
        ctrl_reply(e, src, CT_ERR, p->req_id, p->seq, NA_NOMEM);
        return;
    }
    CINC(G_TREC);
    t->e = e;
    t->state = MPI_EMUL_T_RECEIVED;
    t->put = p->type == CT_PUT;
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

/* RECEIVED -> APPLYING (or refused). */
static void target_start(struct mpi_emul *e, struct trec *t)
{
    const struct ctrl_pkt *p = &t->pkt;
    bool put = t->put;
    int src = t->src;
    unsigned long need = put ? NA_MEM_WRITE_ONLY : NA_MEM_READ_ONLY;
    struct mpi_emul_mem *m = NULL;
    na_return_t ret = NA_SUCCESS;
    const struct mpi_emul *r = e->regsrc ? e->regsrc : e;
    if (p->handle_id == 0 || p->handle_id >= r->reg_cap || !(m = r->reg[p->handle_id]) ||
        m->gen != p->gen)
        ret = NA_ACCESS;
    else if (p->offset > m->len || p->size > m->len - p->offset || p->size == 0)
        ret = NA_INVALID_ARG;
    else if ((m->flags & need) != need)
        ret = NA_PERMISSION;
    uint32_t n = ret == NA_SUCCESS ? nchunks_of(p->size) : 0;
    if (ret == NA_SUCCESS &&
        (!(t->reqs = calloc(n, sizeof(MPI_Request))) || !(t->rdone = calloc(n, 1))))
        ret = NA_NOMEM;
    if (ret != NA_SUCCESS) {
        e->stats.refused++;
        HGX_LOG_WARNING(
            MPI_EMUL, "refused %s from rank %d (handle %u gen %u off %llu size %llu): %s",
            put ? "put" : "get", src, p->handle_id, p->gen, (unsigned long long)p->offset,
            (unsigned long long)p->size,
            ret == NA_ACCESS       ? "unknown or freed handle"
            : ret == NA_PERMISSION ? "permission"
            : ret == NA_NOMEM      ? "out of memory"
                                   : "out of bounds");
        ctrl_reply(e, src, CT_ERR, p->req_id, p->seq, ret);
        trec_free(e, t);
        return;
    }
    t->n = n;
    t->state = MPI_EMUL_T_APPLYING;
    t->outstanding = 1; /* guard while posting */
    for (uint32_t i = 0; i < n; i++) {
        void *ptr;
        int count;
        MPI_Datatype dt;
        size_t len = chunk_len((size_t)p->size, i);
        int rc = mem_chunk(m, p->offset + (uint64_t)i * MPI_EMUL_CHUNK, len, &ptr, &count,
                           &dt);
        if (rc == MPI_SUCCESS) {
            rc = put ? MPI_Irecv(ptr, count, dt, src, e->tag_put + (int)p->req_id,
                                 e->dcomm, &t->reqs[i])
                     : MPI_Isend(ptr, count, dt, src, e->tag_get + (int)p->req_id,
                                 e->dcomm, &t->reqs[i]);
            type_release(&dt);
        }
        if (rc == MPI_SUCCESS &&
            hgx_mreqtab_add(e->tab, t->reqs[i], trec_done, t, i) != 0) {
            if (put)
                MPI_Cancel(&t->reqs[i]);
            MPI_Wait(&t->reqs[i], MPI_STATUS_IGNORE);
            rc = MPI_ERR_NO_MEM;
        }
        if (rc != MPI_SUCCESS) {
            mpi_err_log(put ? "put: posting data receive" : "get: sending data", rc);
            t->result = mpi_err_to_na(rc);
            for (uint32_t k = i; k < n; k++)
                t->rdone[k] = 1;
            if (put) { /* no CTS: the origin sends nothing; take back what we posted */
                t->aborted = true;
                for (uint32_t k = 0; k < i; k++)
                    MPI_Cancel(&t->reqs[k]);
                ctrl_reply(e, src, CT_ERR, p->req_id, p->seq, t->result);
            }
            break; /* get: the origin's cancel/timeout recovers the rest */
        }
        t->outstanding++;
    }
    if (put && !t->aborted)
        ctrl_reply(e, src, CT_CTS, p->req_id, p->seq, NA_SUCCESS);
    trec_done(t, UINTPTR_MAX, MPI_SUCCESS, NULL); /* drop the guard */
}

static void target_cancel(struct mpi_emul *e, int src, const struct ctrl_pkt *p)
{
    struct trec *t = p->req_id < MPI_EMUL_NSLOTS ? tindex_find(e, src, p->req_id) : NULL;
    if (t && t->pkt.seq == p->seq) {
        if (t->state ==
            MPI_EMUL_T_RECEIVED) { /* nothing written or sent: drop it atomically */
            pend_remove(e, t);
            trec_free(e, t);
            CINC(C_TYES);
            ctrl_reply(e, src, CT_CANCELYES, p->req_id, p->seq, NA_SUCCESS);
        } else {
            CINC(C_TNO);
            ctrl_reply(e, src, CT_CANCELNO, p->req_id, p->seq, NA_SUCCESS);
        }
        return;
    }
    if (p->seq != 0 && p->seq <= e->maxseq[src]) {
        /* Arrived and already finished (or refused): its outcome stands. */
        CINC(C_TNO);
        ctrl_reply(e, src, CT_CANCELNO, p->req_id, p->seq, NA_SUCCESS);
        return;
    }
    /* Never arrived: answer YES and make sure it is dropped if it ever does. */
    tomb_add(e, src, p->seq);
    CINC(C_TYES);
    ctrl_reply(e, src, CT_CANCELYES, p->req_id, p->seq, NA_SUCCESS);
}

static void target_abort(struct mpi_emul *e, int src, const struct ctrl_pkt *p)
{
    struct trec *t = p->req_id < MPI_EMUL_NSLOTS ? tindex_find(e, src, p->req_id) : NULL;
    if (!t || t->pkt.seq != p->seq || !t->put || t->aborted)
        return; /* finished meanwhile */
    CINC(C_ABORT);
    if (t->state == MPI_EMUL_T_RECEIVED) {
        pend_remove(e, t);
        trec_free(e, t);
        return;
    }
    t->aborted = true; /* no ACK; unmatched receives are cancelled */
    for (uint32_t i = 0; i < t->n; i++)
        if (!t->rdone[i])
            MPI_Cancel(&t->reqs[i]);
}

/*------------------------------------------------------------ control receive */

static void ctrl_dispatch(struct mpi_emul *e, int src, const struct ctrl_pkt *p)
{
    switch (p->type) {
    case CT_PUT:
    case CT_GET:
        target_request(e, src, p);
        break;
    case CT_CANCEL:
        target_cancel(e, src, p);
        break;
    case CT_ABORT:
        target_abort(e, src, p);
        break;
    case CT_ACK:
    case CT_ERR:
    case CT_CTS:
    case CT_CANCELYES:
    case CT_CANCELNO:
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
    struct ctrl_pkt p;
    if (count == (int)sizeof(p)) {
        int rc = MPI_Mrecv(&p, count, MPI_BYTE, msg, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            mpi_err_log("MPI_Mrecv (control)", rc);
            return;
        }
        if (p.magic == CTRL_MAGIC && st->MPI_SOURCE >= 0 && st->MPI_SOURCE < e->size) {
            ctrl_dispatch(e, st->MPI_SOURCE, &p);
            return;
        }
    } else {
        hgx_mpi_mrecv_drop(msg, count);
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
    /* 3. Timers. */
    if (e->ntimed)
        n += origin_timers(e);
    if (e->ntombs)
        tomb_expire(e, now_us());
    return n;
}

/*------------------------------------------------------------ life */

static uint64_t g_timeout_ms, g_zombie_ms;
static bool g_env_read;

na_return_t mpi_emul_create(struct mpi_emul **ep, MPI_Comm comm, struct hgx_mreqtab *tab,
                            int tag_ctrl, int tag_putdata_base, int tag_getdata_base)
{
    struct mpi_emul *e = calloc(1, sizeof(*e));
    if (!e)
        return NA_NOMEM;
    e->comm = comm;
    e->dcomm = comm;
    e->tab = tab;
    e->tag_ctrl = tag_ctrl;
    e->tag_put = tag_putdata_base;
    e->tag_get = tag_getdata_base;
    MPI_Comm_rank(comm, &e->rank);
    MPI_Comm_size(comm, &e->size);
    if (!g_env_read) {
        g_timeout_ms = env_ms("HGX_MPI_CANCEL_TIMEOUT_MS", 200);
        g_zombie_ms = env_ms("HGX_MPI_CANCEL_ZOMBIE_MS", 60000);
        g_env_read = true;
    }
    e->cancel_timeout_us = g_timeout_ms * 1000u;
    e->zombie_life_us = g_zombie_ms * 1000u;
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
        if (e->slots[i] && e->slots[i]->outstanding == 0 && !e->slots[i]->drain)
            oreq_free(e->slots[i]); /* waits for an answer no table entry tracks */
    while (e->pend_head) {
        struct trec *t = e->pend_head;
        e->pend_head = t->pnext;
        trec_free(e, t);
    }
    e->pend_tail = NULL;
    for (unsigned i = 0; i < TBUCKETS; i++)
        for (struct trec *t = e->index[i]; t; t = t->hnext) {
            uint32_t left = 0;
            for (uint32_t k = 0; k < t->n; k++)
                left += !t->rdone[k];
            HGX_LOG_WARNING(MPI_EMUL,
                            "closing with a %s from rank %d still applying (id %u, "
                            "%u of %u chunks outstanding%s)",
                            t->put ? "put" : "get", t->src, t->pkt.req_id, left, t->n,
                            t->aborted ? ", aborted" : "");
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
    free(e);
}

void mpi_emul_set_data_comm(struct mpi_emul *e, MPI_Comm data)
{
    e->dcomm = data;
}

void mpi_emul_share_registry(struct mpi_emul *e, struct mpi_emul *owner)
{
    e->regsrc = owner == e ? NULL : owner;
}

void mpi_emul_get_stats(const struct mpi_emul *e, struct mpi_emul_stats *s)
{
    *s = e->stats;
}
