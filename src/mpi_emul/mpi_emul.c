/*
 * mpi_emul.c -- one-sided put/get over two-sided MPI; see mpi_emul.h.
 */
#include "config.h"
#include "mpi_emul.h"

#include "hgx_log.h"

#include <stdlib.h>
#include <string.h>

#define NCTRL_RECV 32

/* Control packet (untrusted on receipt; exactly this size). */
#define CTRL_MAGIC 0x48434d45u /* "HCME" */
enum ctrl_type {
    CT_PUT = 1,
    CT_GET = 2,
    CT_ACK = 3, /* put applied (status) */
    CT_ERR = 4, /* request refused (status); no data follows */
    /* IMPI (later): CT_CANCEL = 5, CT_CANCELYES = 6, CT_CANCELNO = 7 */
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
};

struct drain {
    struct mpi_emul *e;
    struct mpi_emul_oreq *owner; /* origin zombie, or NULL at a target */
    int src, tag;
    uint32_t left;
    bool active;
    MPI_Request req;
    void *scratch;
};

struct mpi_emul_oreq {
    struct mpi_emul *e;
    uint32_t id;
    bool put;
    enum mpi_emul_ostate state;
    int peer;
    uint32_t nchunks, outstanding, ncancelled;
    MPI_Request *creqs;
    unsigned char *cdone;
    bool reply;        /* ACK or ERR received */
    bool err_reply;    /* ERR received: no data comes */
    na_return_t result;
    mpi_emul_done_fn done;
    void *arg;
    struct drain *drain;
};

struct txfer { /* target side of one request */
    struct mpi_emul *e;
    bool put;
    int src;
    uint32_t rid;
    uint32_t outstanding;
    na_return_t result;
};

struct ctrl_rbuf {
    struct ctrl_pkt pkt;
    char spare[24]; /* so that an oversized packet is seen as such, not truncated */
};

struct mpi_emul {
    MPI_Comm comm;
    int rank, size;
    struct hgx_mreqtab *tab;
    int tag_ctrl, tag_put, tag_get;
    struct ctrl_rbuf rbufs[NCTRL_RECV];
    struct mpi_emul_mem **reg;
    uint32_t reg_cap, gen_counter;
    struct mpi_emul_oreq *slots[MPI_EMUL_NSLOTS];
    uint32_t next_slot;
    bool closing;
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

na_return_t mpi_emul_mem_deserialize(struct mpi_emul_mem *m, const void *buf, size_t size, int comm_size)
{
    struct mpi_emul_mem_wire w;
    if (size < sizeof(w))
        return NA_INVALID_ARG;
    memcpy(&w, buf, sizeof(w));
    if (w.magic != MPI_EMUL_MEM_MAGIC || w.owner < 0 || w.owner >= comm_size || w.id == 0 ||
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
static int mem_chunk(const struct mpi_emul_mem *m, uint64_t off, size_t len, void **ptr, int *count,
    MPI_Datatype *dt)
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
        MPI_Wait(&r, MPI_STATUS_IGNORE); /* 40 bytes, eager */
        free(c);
    }
    return MPI_SUCCESS;
}

/*------------------------------------------------------------ drains */

static void oreq_free(struct mpi_emul_oreq *o);

static void drain_finish(struct drain *d)
{
    if (d->owner) {
        d->owner->drain = NULL;
        oreq_free(d->owner);
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
    int rc = MPI_Irecv(d->scratch, (int)MPI_EMUL_CHUNK, MPI_BYTE, d->src, d->tag, e->comm, &d->req);
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
        HGX_LOG_DEBUG(MPI_EMUL, "dropped a late data chunk from rank %d (tag %d)", d->src, d->tag);
        if (d->left > 0)
            d->left--;
    } else {
        d->left = 0;
    }
    drain_post(d);
}

static struct drain *drain_start(struct mpi_emul *e, struct mpi_emul_oreq *owner, int src, int tag,
    uint32_t n)
{
    struct drain *d = calloc(1, sizeof(*d));
    if (!d || !(d->scratch = malloc(MPI_EMUL_CHUNK))) {
        free(d);
        HGX_LOG_ERROR(MPI_EMUL, "out of memory for a drain; late data may stay queued in MPI");
        return NULL;
    }
    d->e = e;
    d->owner = owner;
    d->src = src;
    d->tag = tag;
    d->left = n;
    if (owner)
        owner->drain = d;
    drain_post(d);
    return d;
}

/*------------------------------------------------------------ origin */

static void oreq_free(struct mpi_emul_oreq *o)
{
    if (o->e->slots[o->id] == o)
        o->e->slots[o->id] = NULL;
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

/* Decide what an origin request does next, once MPI has nothing outstanding for it. */
static void oreq_check(struct mpi_emul_oreq *o)
{
    struct mpi_emul *e = o->e;
    if (o->outstanding > 0 || o->state == MPI_EMUL_O_ZOMBIE)
        return;
    if (e->closing) {
        oreq_free(o);
        return;
    }
    if (o->put) {
        if (o->reply) {
            oreq_complete(o, o->result);
            oreq_free(o);
        } else if (o->state == MPI_EMUL_O_CANCELING) {
            /* Data left (or was cancelled); the ack is not awaited. The id stays
             * reserved until the target answers, so nothing can match it. */
            oreq_complete(o, NA_CANCELED);
            o->state = MPI_EMUL_O_ZOMBIE;
        }
        return;
    }
    if (o->ncancelled > 0 && !o->err_reply) {
        /* Local cancel won for some chunks: they will still arrive; drop them. */
        oreq_complete(o, NA_CANCELED);
        o->state = MPI_EMUL_O_ZOMBIE;
        drain_start(e, o, o->peer, e->tag_get + (int)o->id, o->ncancelled);
        /* drain_start frees o when done (or at once on failure) */
        return;
    }
    if (o->state == MPI_EMUL_O_CANCELING && o->ncancelled > 0)
        oreq_complete(o, NA_CANCELED);
    else
        oreq_complete(o, o->result);
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
    oreq_check(o);
}

static void oreq_cancel_chunks(struct mpi_emul_oreq *o)
{
    for (uint32_t i = 0; i < o->nchunks; i++)
        if (!o->cdone[i])
            MPI_Cancel(&o->creqs[i]); /* copy of the handle; completion comes via the table */
}

static void origin_reply(struct mpi_emul *e, int src, const struct ctrl_pkt *p)
{
    struct mpi_emul_oreq *o = p->req_id < MPI_EMUL_NSLOTS ? e->slots[p->req_id] : NULL;
    if (!o || o->peer != src || o->reply || (p->type == CT_ACK && !o->put)) {
        e->stats.bad_packets++;
        HGX_LOG_WARNING(MPI_EMUL, "dropped a reply for unknown request %u from rank %d",
            p->req_id, src);
        return;
    }
    na_return_t st = (p->status >= 0 && p->status < NA_RETURN_MAX) ? (na_return_t)p->status
                                                                   : NA_PROTOCOL_ERROR;
    o->reply = true;
    if (p->type == CT_ERR) {
        o->err_reply = true;
        if (st == NA_SUCCESS)
            st = NA_PROTOCOL_ERROR;
    }
    if (o->result == NA_SUCCESS)
        o->result = st;
    if (o->state == MPI_EMUL_O_ZOMBIE) {
        if (o->drain) { /* refused get: no data will come, stop draining */
            o->drain->left = 0;
            if (o->drain->active)
                MPI_Cancel(&o->drain->req);
        } else {
            oreq_free(o);
        }
        return;
    }
    if (o->err_reply && !o->put)
        oreq_cancel_chunks(o); /* get refused: the posted data receives will never match */
    oreq_check(o);
}

na_return_t mpi_emul_xfer(struct mpi_emul *e, bool put, const struct mpi_emul_mem *local,
    uint64_t local_offset, const struct mpi_emul_mem *remote, uint64_t remote_offset, size_t size,
    mpi_emul_done_fn done, void *arg, struct mpi_emul_oreq **oreq_p)
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
    if (!o || !(o->creqs = calloc(n, sizeof(MPI_Request))) || !(o->cdone = calloc(n, 1))) {
        if (o)
            free(o->creqs);
        free(o);
        return NA_NOMEM;
    }
    o->e = e;
    o->id = id;
    o->put = put;
    o->state = MPI_EMUL_O_ACTIVE;
    o->peer = remote->owner;
    o->nchunks = n;
    o->result = NA_SUCCESS;
    o->done = done;
    o->arg = arg;

    struct ctrl_pkt p = {.type = put ? CT_PUT : CT_GET, .req_id = id, .handle_id = remote->id,
        .gen = remote->gen, .offset = remote_offset, .size = size};
    int rc;
    if (!put) { /* post data receives before asking, so data never waits unmatched */
        for (uint32_t i = 0; i < n; i++) {
            void *ptr;
            int count;
            MPI_Datatype dt;
            rc = mem_chunk(local, local_offset + (uint64_t)i * MPI_EMUL_CHUNK, chunk_len(size, i),
                &ptr, &count, &dt);
            if (rc == MPI_SUCCESS) {
                rc = MPI_Irecv(ptr, count, dt, o->peer, e->tag_get + (int)id, e->comm, &o->creqs[i]);
                type_release(&dt);
            }
            if (rc != MPI_SUCCESS || hgx_mreqtab_add(e->tab, o->creqs[i], ochunk_done, o, i) != 0) {
                mpi_err_log("get: posting data receive", rc);
                if (rc == MPI_SUCCESS) {
                    MPI_Cancel(&o->creqs[i]);
                    MPI_Wait(&o->creqs[i], MPI_STATUS_IGNORE);
                }
                /* Earlier chunks are in the table: cancel them and let them drain. */
                o->result = mpi_err_to_na(rc == MPI_SUCCESS ? MPI_ERR_NO_MEM : rc);
                for (uint32_t k = i; k < n; k++)
                    o->cdone[k] = 1;
                if (i == 0) {
                    na_return_t r0 = o->result;
                    oreq_free(o);
                    return r0;
                }
                e->slots[id] = o;
                o->done = NULL; /* report the error synchronously instead */
                o->err_reply = true;
                oreq_cancel_chunks(o);
                return NA_PROTOCOL_ERROR;
            }
            o->outstanding++;
        }
    }
    e->slots[id] = o;
    rc = ctrl_send(e, o->peer, &p);
    if (rc != MPI_SUCCESS) {
        mpi_err_log("sending put/get request", rc);
        o->done = NULL;
        o->err_reply = true;
        if (o->outstanding)
            oreq_cancel_chunks(o);
        else
            oreq_free(o);
        return mpi_err_to_na(rc);
    }
    if (put) {
        for (uint32_t i = 0; i < n; i++) {
            void *ptr;
            int count;
            MPI_Datatype dt;
            rc = mem_chunk(local, local_offset + (uint64_t)i * MPI_EMUL_CHUNK, chunk_len(size, i),
                &ptr, &count, &dt);
            if (rc == MPI_SUCCESS) {
                rc = MPI_Isend(ptr, count, dt, o->peer, e->tag_put + (int)id, e->comm, &o->creqs[i]);
                type_release(&dt);
            }
            if (rc == MPI_SUCCESS && hgx_mreqtab_add(e->tab, o->creqs[i], ochunk_done, o, i) != 0) {
                MPI_Wait(&o->creqs[i], MPI_STATUS_IGNORE);
                o->cdone[i] = 1;
                continue;
            }
            if (rc != MPI_SUCCESS) {
                /* The target waits for this data; we cannot recover the stream. */
                mpi_err_log("put: sending data", rc);
                for (uint32_t k = i; k < n; k++)
                    o->cdone[k] = 1;
                o->result = mpi_err_to_na(rc);
                o->state = MPI_EMUL_O_CANCELING;
                break;
            }
            o->outstanding++;
        }
    }
    *oreq_p = o;
    return NA_SUCCESS;
}

void mpi_emul_cancel(struct mpi_emul *e, struct mpi_emul_oreq *o)
{
    (void)e;
    if (!o || o->state != MPI_EMUL_O_ACTIVE)
        return;
    /* IMPI (later): send CT_CANCEL and enter MPI_EMUL_O_CANCEL_SENT here. */
    o->state = MPI_EMUL_O_CANCELING;
    oreq_cancel_chunks(o);
    oreq_check(o); /* a put with all data gone completes at once */
}

/*------------------------------------------------------------ target */

static void txfer_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux, (void)st;
    struct txfer *t = obj;
    if (err != MPI_SUCCESS && err != MPI_ERR_REQUEST && t->result == NA_SUCCESS) {
        mpi_err_log(t->put ? "put: receiving data" : "get: sending data", err);
        t->result = mpi_err_to_na(err);
    }
    if (--t->outstanding > 0)
        return;
    if (t->put && !t->e->closing) {
        struct ctrl_pkt a = {.type = CT_ACK, .req_id = t->rid, .status = (int32_t)t->result};
        int rc = ctrl_send(t->e, t->src, &a);
        if (rc != MPI_SUCCESS)
            mpi_err_log("sending put ack", rc);
    }
    free(t);
}

static void target_request(struct mpi_emul *e, int src, const struct ctrl_pkt *p)
{
    bool put = p->type == CT_PUT;
    unsigned long need = put ? NA_MEM_WRITE_ONLY : NA_MEM_READ_ONLY;
    struct mpi_emul_mem *m = NULL;
    na_return_t ret = NA_SUCCESS;

    if (p->req_id >= MPI_EMUL_NSLOTS) {
        e->stats.bad_packets++;
        HGX_LOG_WARNING(MPI_EMUL, "dropped a request with bad id %u from rank %d", p->req_id, src);
        return; /* no valid reply tag exists */
    }
    if (p->handle_id == 0 || p->handle_id >= e->reg_cap || !(m = e->reg[p->handle_id]) ||
        m->gen != p->gen)
        ret = NA_ACCESS;
    else if (p->offset > m->len || p->size > m->len - p->offset || p->size == 0)
        ret = NA_INVALID_ARG;
    else if ((m->flags & need) != need)
        ret = NA_PERMISSION;
    if (ret != NA_SUCCESS) {
        e->stats.refused++;
        HGX_LOG_WARNING(MPI_EMUL,
            "refused %s from rank %d (handle %u gen %u off %llu size %llu): %s", put ? "put" : "get",
            src, p->handle_id, p->gen, (unsigned long long)p->offset,
            (unsigned long long)p->size, ret == NA_ACCESS ? "unknown or freed handle"
                                         : ret == NA_PERMISSION ? "permission" : "out of bounds");
        struct ctrl_pkt r = {.type = CT_ERR, .req_id = p->req_id, .status = (int32_t)ret};
        int rc = ctrl_send(e, src, &r);
        if (rc != MPI_SUCCESS)
            mpi_err_log("sending error reply", rc);
        if (put && p->size > 0 && nchunks_of(p->size) <= MPI_EMUL_MAX_CHUNKS)
            drain_start(e, NULL, src, e->tag_put + (int)p->req_id, nchunks_of(p->size));
        return;
    }
    uint32_t n = nchunks_of(p->size);
    struct txfer *t = calloc(1, sizeof(*t));
    if (!t) {
        struct ctrl_pkt r = {.type = CT_ERR, .req_id = p->req_id, .status = NA_NOMEM};
        ctrl_send(e, src, &r);
        if (put)
            drain_start(e, NULL, src, e->tag_put + (int)p->req_id, n);
        return;
    }
    t->e = e;
    t->put = put;
    t->src = src;
    t->rid = p->req_id;
    t->result = NA_SUCCESS;
    t->outstanding = 1; /* guard while posting */
    for (uint32_t i = 0; i < n; i++) {
        void *ptr;
        int count;
        MPI_Datatype dt;
        MPI_Request r;
        size_t len = chunk_len((size_t)p->size, i);
        int rc = mem_chunk(m, p->offset + (uint64_t)i * MPI_EMUL_CHUNK, len, &ptr, &count, &dt);
        if (rc == MPI_SUCCESS) {
            rc = put ? MPI_Irecv(ptr, count, dt, src, e->tag_put + (int)p->req_id, e->comm, &r)
                     : MPI_Isend(ptr, count, dt, src, e->tag_get + (int)p->req_id, e->comm, &r);
            type_release(&dt);
        }
        if (rc != MPI_SUCCESS) {
            mpi_err_log(put ? "put: posting data receive" : "get: sending data", rc);
            t->result = mpi_err_to_na(rc);
            break; /* the origin's cancel/timeout has to recover the rest */
        }
        if (hgx_mreqtab_add(e->tab, r, txfer_done, t, i) != 0) {
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            continue;
        }
        t->outstanding++;
    }
    MPI_Status st;
    st.MPI_ERROR = MPI_SUCCESS;
    txfer_done(t, 0, MPI_SUCCESS, &st); /* drop the guard */
}

/*------------------------------------------------------------ control receive */

static void ctrl_recv_done(void *obj, uintptr_t aux, int err, const MPI_Status *st);

static int ctrl_post(struct mpi_emul *e, uintptr_t i)
{
    MPI_Request r;
    int rc = MPI_Irecv(&e->rbufs[i], (int)sizeof(e->rbufs[i]), MPI_BYTE, MPI_ANY_SOURCE,
        e->tag_ctrl, e->comm, &r);
    if (rc != MPI_SUCCESS)
        return rc;
    if (hgx_mreqtab_add(e->tab, r, ctrl_recv_done, e, i) != 0) {
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        return MPI_ERR_NO_MEM;
    }
    return MPI_SUCCESS;
}

static void ctrl_recv_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    struct mpi_emul *e = obj;
    if (e->closing || err == MPI_ERR_REQUEST)
        return;
    int cancelled = 0, count = 0;
    if (err == MPI_SUCCESS)
        MPI_Test_cancelled(st, &cancelled);
    if (cancelled)
        return;
    struct ctrl_pkt p;
    memcpy(&p, &e->rbufs[aux].pkt, sizeof(p));
    if (err == MPI_SUCCESS)
        MPI_Get_count(st, MPI_BYTE, &count);
    if (err != MPI_SUCCESS || count != (int)sizeof(p) || p.magic != CTRL_MAGIC) {
        e->stats.bad_packets++;
        HGX_LOG_WARNING(MPI_EMUL, "dropped a malformed control packet (%d bytes) from rank %d",
            count, st->MPI_SOURCE);
    } else {
        switch (p.type) {
        case CT_PUT:
        case CT_GET:
            target_request(e, st->MPI_SOURCE, &p);
            break;
        case CT_ACK:
        case CT_ERR:
            origin_reply(e, st->MPI_SOURCE, &p);
            break;
        default:
            e->stats.bad_packets++;
            HGX_LOG_WARNING(MPI_EMUL, "dropped a control packet of unknown type %u from rank %d",
                p.type, st->MPI_SOURCE);
        }
    }
    int rc = ctrl_post(e, aux);
    if (rc != MPI_SUCCESS)
        mpi_err_log("reposting a control receive", rc);
}

/*------------------------------------------------------------ life */

na_return_t mpi_emul_create(struct mpi_emul **ep, MPI_Comm comm, struct hgx_mreqtab *tab,
    int tag_ctrl, int tag_putdata_base, int tag_getdata_base)
{
    struct mpi_emul *e = calloc(1, sizeof(*e));
    if (!e)
        return NA_NOMEM;
    e->comm = comm;
    e->tab = tab;
    e->tag_ctrl = tag_ctrl;
    e->tag_put = tag_putdata_base;
    e->tag_get = tag_getdata_base;
    MPI_Comm_rank(comm, &e->rank);
    MPI_Comm_size(comm, &e->size);
    for (uintptr_t i = 0; i < NCTRL_RECV; i++) {
        int rc = ctrl_post(e, i);
        if (rc != MPI_SUCCESS) {
            mpi_err_log("posting control receives", rc);
            e->closing = true; /* posted ones are cancelled when the table is destroyed */
            *ep = e;
            return mpi_err_to_na(rc);
        }
    }
    *ep = e;
    return NA_SUCCESS;
}

void mpi_emul_close(struct mpi_emul *e)
{
    e->closing = true;
    for (uint32_t i = 0; i < MPI_EMUL_NSLOTS; i++)
        if (e->slots[i] && e->slots[i]->state == MPI_EMUL_O_ZOMBIE && !e->slots[i]->drain)
            oreq_free(e->slots[i]); /* waits for an ack that no table entry tracks */
}

void mpi_emul_free(struct mpi_emul *e)
{
    if (!e)
        return;
    for (uint32_t i = 0; i < MPI_EMUL_NSLOTS; i++)
        if (e->slots[i])
            oreq_free(e->slots[i]);
    free(e->reg);
    free(e);
}

void mpi_emul_get_stats(const struct mpi_emul *e, struct mpi_emul_stats *s)
{
    *s = e->stats;
}
