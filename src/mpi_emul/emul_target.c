/*
 * emul_target.c -- put/get over two-sided MPI: the target side of put/get and of cancel.
 * The emulation as a whole: hgx_emul.h, emul_int.h, docs/mpi-emul-cancel.md.
 */
#include "config.h"
#include "emul_int.h"

/*------------------------------------------------------------ target */

static unsigned emul_tkey(int src, uint32_t rid)
{
    return ((unsigned)src * 2654435761u + rid) % TBUCKETS;
}

/* The newest record of (src, rid), or NULL. */
static struct trec *emul_tindex_find(struct hgx_emul *e, int src, uint32_t rid)
{
    struct hgx_list *it;
    hgx_list_for_each(it, &e->index[emul_tkey(src, rid)])
    {
        struct trec *t = hgx_list_entry(it, struct trec, hlink);
        if (t->src == src && t->pkt.req_id == rid)
            return t;
    }
    return NULL;
}

/* Unlink t from every list it is on (index, pend, aborted, rx) and free it. */
void emul_trec_free(struct hgx_emul *e, struct trec *t)
{
    hgx_list_remove(&t->alink);
    hgx_list_remove(&t->hlink);
    hgx_list_remove(&t->plink);
    emul_rx_del(e, &t->rx);
    emul_trec_set_state(t, HGX_EMUL_T_DONE);
    CDEC(G_TREC);
    e->ntrec--;
    free(t);
}

void emul_tomb_expire(struct hgx_emul *e, uint64_t t)
{
    for (unsigned i = 0; i < NTOMB && e->ntombs; i++)
        if (e->tombs[i].src >= 0 && e->tombs[i].expire <= t) {
            e->tombs[i].src = -1;
            e->ntombs--;
            CDEC(G_TOMB);
        }
}

static void emul_tomb_add(struct hgx_emul *e, int src, uint64_t seq)
{
    emul_tomb_expire(e, hgx_clock_now_us());
    struct tomb *tb = &e->tombs[e->tomb_next];
    e->tomb_next = (e->tomb_next + 1) % NTOMB;
    if (tb->src < 0) {
        e->ntombs++;
        CINC(G_TOMB);
    }
    *tb = (struct tomb){src, seq, hgx_clock_now_us() + TOMB_LIFE_US};
}

static bool emul_tomb_take(struct hgx_emul *e, int src, uint64_t seq)
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
static void emul_trec_check(struct trec *t)
{
    struct hgx_emul *e = t->e;
    if (t->outstanding > 0 || (emul_rx_on(&t->rx) && !e->closing))
        return;
    if (t->put && t->state != HGX_EMUL_T_ABORTED && !e->closing)
        emul_ctrl_reply(e, t->src, HGX_EMUL_CT_ACK, t->pkt.req_id, t->pkt.seq, t->result);
    emul_trec_free(e, t);
}

static void emul_trec_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    struct trec *t = obj;
    int cancelled = 0;
    if (err == MPI_SUCCESS && st)
        MPI_Test_cancelled(st, &cancelled);
    if (!cancelled && err != MPI_SUCCESS && err != MPI_ERR_REQUEST &&
        t->result == NA_SUCCESS) {
        emul_err_log(t->put ? "put: receiving data" : "get: sending data", err);
        t->result = hgx_mpi_err_to_na(err);
    }
    t->outstanding--;
    if (t->put)
        t->last_us = hgx_clock_now_us();
    emul_trec_check(t);
}

/* A request whose control packet arrived: RECEIVED until the end of this batch. */
void emul_target_request(struct hgx_emul *e, int src, const struct hgx_emul_ctrl *p)
{
    if (p->req_id >= HGX_EMUL_NSLOTS || p->seq == 0) {
        e->stats.bad_packets++;
        HGX_LOG_WARNING(MPI_EMUL, "dropped a request with bad id %u from rank %d",
                        p->req_id, src);
        return; /* no valid reply tag exists */
    }
    if (p->seq > e->maxseq[src])
        e->maxseq[src] = p->seq;
    if (emul_tomb_take(e, src, p->seq)) {
        CINC(C_TOMBDROP); /* cancelled before it arrived: already answered CANCELYES */
        return;
    }
    struct trec *t = calloc(1, sizeof(*t));
    if (!t) {
        emul_ctrl_reply(e, src, HGX_EMUL_CT_ERR, p->req_id, p->seq, NA_NOMEM);
        return;
    }
    CINC(G_TREC);
    e->ntrec++;
    t->e = e;
    t->state = HGX_EMUL_T_RECEIVED;
    t->put = p->type == HGX_EMUL_CT_PUT;
    t->src = src;
    t->pkt = *p;
    t->result = NA_SUCCESS;
    emul_rx_init(&t->rx);
    hgx_list_init(&t->alink);
    hgx_list_push_front(&e->index[emul_tkey(src, p->req_id)], &t->hlink);
    hgx_list_push_back(&e->pend, &t->plink);
}

/* The registered region request p names, checked: handle and generation,
 * bounds, permission (put: write, get: read); and tags for the generation
 * bits it announces (p->status). */
static na_return_t emul_target_region(const struct hgx_emul *e,
                                      const struct hgx_emul_ctrl *p, bool put,
                                      struct hgx_emul_mem **mp)
{
    unsigned long need = put ? NA_MEM_WRITE_ONLY : NA_MEM_READ_ONLY;
    const struct hgx_emul *r = e->regsrc ? e->regsrc : e;
    struct hgx_emul_mem *m;
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
void emul_target_start(struct hgx_emul *e, struct trec *t)
{
    const struct hgx_emul_ctrl *p = &t->pkt;
    struct hgx_emul_mem *m = NULL;
    na_return_t ret = emul_target_region(e, p, t->put, &m);
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
        emul_ctrl_reply(e, t->src, HGX_EMUL_CT_ERR, p->req_id, p->seq, ret);
        emul_trec_free(e, t);
        return;
    }
    t->n = emul_nchunks_of(p->size);
    emul_trec_set_state(t, HGX_EMUL_T_APPLYING);
    t->dtag = emul_data_tag(e, t->put, p->req_id, p->seq, (unsigned)p->status);
    if (t->put) { /* chunks are taken as they arrive (emul_target_data), nothing is posted
                   */
        t->last_us = hgx_clock_now_us();
        emul_rx_add(e, &t->rx, t->dtag);
        emul_ctrl_reply(e, t->src, HGX_EMUL_CT_CTS, p->req_id, p->seq, NA_SUCCESS);
        return;
    }
    t->outstanding = 1; /* guard while posting */
    for (uint32_t i = 0; i < t->n; i++) {
        void *ptr;
        int count;
        MPI_Datatype dt;
        MPI_Request r;
        int rc = emul_mem_chunk(m, p->offset + (uint64_t)i * HGX_EMUL_CHUNK,
                                emul_chunk_len((size_t)p->size, i), &ptr, &count, &dt);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Isend(ptr, count, dt, t->src, t->dtag, e->dcomm, &r);
            emul_type_release(&dt);
        }
        /* no room in the table: sent now */
        if (rc == MPI_SUCCESS && hgx_mreqtab_add(e->tab, r, emul_trec_done, t, i) != 0 &&
            (rc = MPI_Wait(&r, MPI_STATUS_IGNORE)) == MPI_SUCCESS)
            continue;
        if (rc != MPI_SUCCESS) { /* the origin's cancel or timeout recovers the rest */
            emul_err_log("get: sending data", rc);
            t->result = hgx_mpi_err_to_na(rc);
            break;
        }
        t->outstanding++;
    }
    emul_trec_done(t, UINTPTR_MAX, MPI_SUCCESS, NULL); /* drop the guard */
}

/* The put whose next chunk a message from src on the put-data tag of rid
 * is: the newest record of (src, rid) still taking chunks on that tag (the
 * tag generation tells an aborted put's late chunk from one of the put that
 * reused its id). *older: a record of (src, rid) takes chunks on another tag. */
static struct trec *emul_tfind_put(struct hgx_emul *e, int src, uint32_t rid, int tag,
                                   bool *older)
{
    *older = false;
    struct hgx_list *it;
    hgx_list_for_each(it, &e->index[emul_tkey(src, rid)])
    {
        struct trec *t = hgx_list_entry(it, struct trec, hlink);
        if (t->src == src && t->pkt.req_id == rid && emul_rx_on(&t->rx)) {
            if (t->dtag == tag)
                return t;
            *older = true;
        }
    }
    return NULL;
}

/* A message on the put-data tag of request rid: the next chunk of the put
 * of (source, rid) if it has exactly that chunk's size. Once the put failed
 * (also when its region was deregistered meanwhile) or was aborted, the rest
 * of its chunks is dropped; a failed put's ACK carries the error. */
void emul_target_data(struct hgx_emul *e, MPI_Message *msg, const MPI_Status *st,
                      int count, uint32_t rid)
{
    bool older;
    struct trec *t = emul_tfind_put(e, st->MPI_SOURCE, rid, st->MPI_TAG, &older);
    if (!t) {
        emul_data_drop(e, msg, st, count, false,
                       older ? "a chunk of another use of the put's id (tag generation)"
                             : "no put from that rank in progress on this tag");
        return;
    }
    t->last_us = hgx_clock_now_us();
    uint32_t k = t->next++;
    if (t->next == t->n)
        emul_rx_del(e, &t->rx);
    size_t len = emul_chunk_len((size_t)t->pkt.size, k);
    if (!emul_chunk_admit(e, msg, st, count, len,
                          t->result == NA_SUCCESS && t->state != HGX_EMUL_T_ABORTED,
                          "its put failed or was aborted",
                          "not the size of its chunk; the put fails", &t->result)) {
        emul_trec_check(t);
        return;
    }
    struct hgx_emul_mem *m = NULL;
    void *ptr;
    int n;
    MPI_Datatype dt;
    na_return_t ret = emul_target_region(e, &t->pkt, true, &m);
    int rc = ret == NA_SUCCESS
                 ? emul_mem_chunk(m, t->pkt.offset + (uint64_t)k * HGX_EMUL_CHUNK, len,
                                  &ptr, &n, &dt)
                 : MPI_SUCCESS;
    if (ret != NA_SUCCESS || rc != MPI_SUCCESS) {
        if (rc != MPI_SUCCESS)
            emul_err_log("put: describing a chunk", rc);
        else
            HGX_LOG_WARNING(MPI_EMUL,
                            "put %u from rank %d: its region was deregistered while "
                            "it applied; it fails",
                            rid, st->MPI_SOURCE);
        emul_data_drop(e, msg, st, count, true, "its put failed");
        t->result = rc != MPI_SUCCESS ? hgx_mpi_err_to_na(rc) : ret;
        emul_trec_check(t);
        return;
    }
    t->outstanding++;
    emul_chunk_recv(e, msg, ptr, n, dt, len, emul_trec_done, t, k);
}

void emul_target_cancel(struct hgx_emul *e, int src, const struct hgx_emul_ctrl *p)
{
    struct trec *t =
        p->req_id < HGX_EMUL_NSLOTS ? emul_tindex_find(e, src, p->req_id) : NULL;
    if (t && t->pkt.seq == p->seq) {
        if (t->state == HGX_EMUL_T_RECEIVED) { /* nothing written or sent: drop it */
            emul_trec_free(e, t);
            CINC(C_TYES);
            emul_ctrl_reply(e, src, HGX_EMUL_CT_CANCELYES, p->req_id, p->seq, NA_SUCCESS);
        } else {
            CINC(C_TNO);
            emul_ctrl_reply(e, src, HGX_EMUL_CT_CANCELNO, p->req_id, p->seq, NA_SUCCESS);
        }
        return;
    }
    if (p->seq != 0 && p->seq <= e->maxseq[src]) {
        /* Arrived and already finished (or refused): its outcome stands. */
        CINC(C_TNO);
        emul_ctrl_reply(e, src, HGX_EMUL_CT_CANCELNO, p->req_id, p->seq, NA_SUCCESS);
        return;
    }
    /* Never arrived: answer YES and make sure it is dropped if it ever does. */
    emul_tomb_add(e, src, p->seq);
    CINC(C_TYES);
    emul_ctrl_reply(e, src, HGX_EMUL_CT_CANCELYES, p->req_id, p->seq, NA_SUCCESS);
}

void emul_target_abort(struct hgx_emul *e, int src, const struct hgx_emul_ctrl *p)
{
    struct trec *t =
        p->req_id < HGX_EMUL_NSLOTS ? emul_tindex_find(e, src, p->req_id) : NULL;
    if (!t || t->pkt.seq != p->seq || !t->put || t->state == HGX_EMUL_T_ABORTED)
        return; /* finished meanwhile */
    CINC(C_ABORT);
    if (t->state == HGX_EMUL_T_RECEIVED) {
        emul_trec_free(e, t);
        return;
    }
    /* No ACK. The chunks the origin could not recall still come: they are
     * taken and dropped (the origin's sends complete only then), until all
     * came or the zombie life passed (those MPI cancelled never come). */
    emul_trec_set_state(t, HGX_EMUL_T_ABORTED);
    t->expire_at = hgx_clock_now_us() + e->zombie_life_us;
    hgx_list_push_front(&e->aborted, &t->alink);
    emul_trec_check(t);
}

void emul_aborted_expire(struct hgx_emul *e, uint64_t now)
{
    struct hgx_list *it, *tmp;
    hgx_list_for_each_safe(it, tmp, &e->aborted)
    {
        struct trec *t = hgx_list_entry(it, struct trec, alink);
        if (now >= t->expire_at && emul_rx_on(&t->rx)) {
            HGX_LOG_DEBUG(MPI_EMUL,
                          "aborted put %u from rank %d: %u chunks never came, released",
                          t->pkt.req_id, t->src, t->n - t->next);
            emul_rx_del(e, &t->rx);
            emul_trec_check(t);
        }
    }
}

/* Target bound: a put that got no chunk for idle_us after CTS (or its last
 * chunk) while none waits in MPI is dropped: its origin died or stopped
 * sending. Its ACK carries NA_TIMEOUT (an origin that is still there
 * completes with it); its region is never written afterwards, chunks that
 * still come are strays. Scanned every idle_us / 8. */
int emul_put_idle_expire(struct hgx_emul *e, uint64_t now)
{
    uint64_t every = e->idle_us / 8;
    e->idle_check_at = now + (every < 1000 ? 1000 : every);
    int n = 0;
    for (unsigned i = 0; i < TBUCKETS; i++) {
        struct hgx_list *it, *tmp;
        hgx_list_for_each_safe(it, tmp, &e->index[i])
        {
            struct trec *t = hgx_list_entry(it, struct trec, hlink);
            if (!t->put || t->state != HGX_EMUL_T_APPLYING || !emul_rx_on(&t->rx) ||
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
            emul_rx_del(e, &t->rx);
            emul_trec_check(t); /* ACK (the error) and free */
            n++;
        }
    }
    return n;
}
