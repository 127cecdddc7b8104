/*
 * emul_origin.c -- put/get over two-sided MPI: the origin side of put/get and of its
 * cancel. The emulation as a whole: hgx_emul.h, emul_int.h, docs/mpi-emul-cancel.md.
 */
#include "config.h"
#include "emul_int.h"

/*------------------------------------------------------------ origin */

void emul_oreq_free(struct hgx_emul_oreq *o)
{
    struct hgx_emul *e = o->e;
    if (e->slots[o->id] == o)
        e->slots[o->id] = NULL;
    if (o->cancel != HGX_EMUL_OC_NONE)
        e->ntimed--;
    emul_rx_del(e, &o->rx);
    CDEC(G_OACTIVE);
    free(o->creqs);
    free(o->cdone);
    free(o);
}

static void emul_oreq_complete(struct hgx_emul_oreq *o, na_return_t ret)
{
    hgx_emul_done_fn done = o->done;
    o->done = NULL;
    if (done && !o->e->closing)
        done(o->arg, ret);
}

/* put: cancel the data sends MPI still holds (it may not cancel them). */
static void emul_oreq_cancel_sends(struct hgx_emul_oreq *o)
{
    for (uint32_t i = 0; i < o->nchunks; i++)
        if (!o->cdone[i])
            MPI_Cancel(
                &o->creqs[i]); /* copy of the handle; completion comes via the table */
}

/* The single place that decides an origin request's outcome and its end.
 * Callback: once MPI holds nothing of the caller's memory for it and the
 * outcome is known. Free: once nothing more can arrive for its id. */
static void emul_oreq_step(struct hgx_emul_oreq *o)
{
    struct hgx_emul *e = o->e;
    if (e->closing) {
        if (o->outstanding == 0)
            emul_oreq_free(o);
        return;
    }
    if (o->outstanding > 0)
        return;
    if (!emul_oreq_completed(o)) {
        na_return_t r;
        if (o->put) {
            if (o->xfer == HGX_EMUL_OX_REPLIED)
                r = o->result;
            else if (emul_oreq_cancel_yes(o) || emul_oreq_zombie(o))
                r = NA_CANCELED;
            else if (o->xfer == HGX_EMUL_OX_ABORTED)
                r = o->result != NA_SUCCESS ? o->result : NA_PROTOCOL_ERROR;
            else
                return; /* waiting for CTS / ACK */
        } else {
            if (o->xfer == HGX_EMUL_OX_REPLIED || o->result != NA_SUCCESS)
                r = o->result; /* refused, a bad chunk or an MPI error */
            else if (emul_oreq_cancel_yes(o)) {
                r = NA_CANCELED;
                if (o->nmatched > 0) { /* the target broke the protocol */
                    HGX_LOG_ERROR(MPI_EMUL, "get %u: CANCELYES but data arrived", o->id);
                    r = NA_PROTOCOL_ERROR;
                }
            } else if (o->nwritten == o->nchunks)
                r = NA_SUCCESS;
            else if (emul_oreq_zombie(o)) {
                r = NA_CANCELED;
                if (o->nwritten > 0)
                    CINC(C_PARTIAL);
            } else
                return; /* waiting for data */
        }
        emul_oreq_complete(o, r);
    }
    /* Keep the id while an answer can still come for it, and for a get
     * cancelled locally but answered CANCELNO, while its chunks still come
     * (they are dropped): a new request with the id must not take them. */
    if (o->cancel == HGX_EMUL_OC_SENT || o->cancel == HGX_EMUL_OC_ZOMBIE ||
        (o->cancel == HGX_EMUL_OC_ZOMBIE_NO && emul_rx_on(&o->rx) &&
         o->xfer != HGX_EMUL_OX_REPLIED))
        return;
    emul_oreq_free(o);
}

static void emul_ochunk_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)st;
    struct hgx_emul_oreq *o = obj;
    o->cdone[aux] = 1;
    o->outstanding--;
    if (err != MPI_SUCCESS && err != MPI_ERR_REQUEST && o->result == NA_SUCCESS) {
        emul_err_log("put data send", err);
        o->result = hgx_mpi_err_to_na(err);
    }
    emul_oreq_step(o);
}

/* get: a chunk landed in the caller's memory (or failed). */
static void emul_gchunk_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux, (void)st;
    struct hgx_emul_oreq *o = obj;
    o->outstanding--;
    if (err != MPI_SUCCESS && o->result == NA_SUCCESS) {
        if (err != MPI_ERR_REQUEST)
            emul_err_log("get data receive", err);
        o->result = hgx_mpi_err_to_na(err);
    }
    emul_oreq_step(o);
}

/* get: more chunks may be received into the caller's memory. */
static bool emul_get_accepting(const struct hgx_emul_oreq *o)
{
    return !emul_oreq_completed(o) && o->xfer != HGX_EMUL_OX_REPLIED &&
           !emul_oreq_cancel_yes(o) && !emul_oreq_zombie(o) && o->result == NA_SUCCESS;
}

/* A message on a get-data tag of request id: the next chunk of that get if
 * it is on the get's own tag (not that of an older use of the id), comes
 * from the get's target and has exactly that chunk's size. */
void emul_origin_data(struct hgx_emul *e, MPI_Message *msg, const MPI_Status *st,
                      int count, uint32_t id)
{
    struct hgx_emul_oreq *o = e->slots[id];
    if (!o || o->put || o->dtag != st->MPI_TAG || !emul_rx_on(&o->rx) ||
        o->peer != st->MPI_SOURCE) {
        emul_data_drop(e, msg, st, count, false,
                       !o || o->put ? "no get in progress on this tag"
                       : o->dtag != st->MPI_TAG
                           ? "a chunk of an older use of the get's id"
                       : !emul_rx_on(&o->rx) ? "more chunks than the get has"
                                             : "not from the get's target");
        return;
    }
    uint32_t k = o->nmatched++;
    if (o->nmatched == o->nchunks)
        emul_rx_del(e, &o->rx);
    size_t len = emul_chunk_len(o->size, k);
    if (!emul_chunk_admit(e, msg, st, count, len, emul_get_accepting(o),
                          "its get was cancelled locally or failed",
                          "not the size of its chunk; the get fails", &o->result)) {
        emul_oreq_step(o);
        return;
    }
    void *ptr;
    int n;
    MPI_Datatype dt;
    int rc = emul_mem_chunk(&o->local, o->local_offset + (uint64_t)k * HGX_EMUL_CHUNK,
                            len, &ptr, &n, &dt);
    if (rc != MPI_SUCCESS) {
        emul_err_log("get: describing a chunk", rc);
        emul_data_drop(e, msg, st, count, true, "its chunk could not be described");
        o->result = hgx_mpi_err_to_na(rc);
        emul_oreq_step(o);
        return;
    }
    o->nwritten++;
    o->outstanding++;
    emul_chunk_recv(e, msg, ptr, n, dt, len, emul_gchunk_done, o, k);
}

static void emul_send_abort(struct hgx_emul_oreq *o)
{
    if (o->xfer == HGX_EMUL_OX_ABORTED)
        return;
    emul_oreq_set_xfer(o, HGX_EMUL_OX_ABORTED);
    emul_ctrl_reply(o->e, o->peer, HGX_EMUL_CT_ABORT, o->id, o->seq, NA_CANCELED);
}

/* put: CTS arrived, send the data (pipelined chunks). */
static void emul_put_post_data(struct hgx_emul_oreq *o)
{
    struct hgx_emul *e = o->e;
    emul_oreq_set_xfer(o, HGX_EMUL_OX_SENDING);
    for (uint32_t i = 0; i < o->nchunks; i++) {
        void *ptr;
        int count;
        MPI_Datatype dt;
        int rc = emul_mem_chunk(&o->local, o->local_offset + (uint64_t)i * HGX_EMUL_CHUNK,
                                emul_chunk_len(o->size, i), &ptr, &count, &dt);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Isend(ptr, count, dt, o->peer, o->dtag, e->dcomm, &o->creqs[i]);
            emul_type_release(&dt);
        }
        if (rc == MPI_SUCCESS &&
            hgx_mreqtab_add(e->tab, o->creqs[i], emul_ochunk_done, o, i) != 0) {
            MPI_Wait(&o->creqs[i], MPI_STATUS_IGNORE);
            o->cdone[i] = 1;
            continue;
        }
        if (rc != MPI_SUCCESS) {
            emul_err_log("put: sending data", rc);
            for (uint32_t k = i; k < o->nchunks; k++)
                o->cdone[k] = 1;
            if (o->result == NA_SUCCESS)
                o->result = hgx_mpi_err_to_na(rc);
            emul_send_abort(o); /* the target stops taking chunks */
            break;
        }
        o->outstanding++;
    }
}

/* Cancel answer did not come in time: turn the cancel local. */
static void emul_oreq_timeout(struct hgx_emul_oreq *o)
{
    emul_oreq_set_cancel(o, HGX_EMUL_OC_ZOMBIE);
    o->expire_at = hgx_clock_now_us() + o->e->zombie_life_us;
    if (emul_oreq_completed(o))
        return; /* outcome already delivered; just wait for the answer */
    CINC(C_TIMEOUT);
    HGX_LOG_WARNING(MPI_EMUL,
                    "%s %u: no cancel answer from rank %d in time; cancelling locally",
                    o->put ? "put" : "get", o->id, o->peer);
    if (o->put && o->outstanding > 0)
        emul_oreq_cancel_sends(o); /* sends MPI may or may not cancel */
    if (o->xfer == HGX_EMUL_OX_SENDING)
        emul_send_abort(o);
    /* get: chunks arriving from now on are dropped (emul_get_accepting) */
    emul_oreq_step(o);
}

void emul_origin_packet(struct hgx_emul *e, int src, const struct hgx_emul_ctrl *p)
{
    struct hgx_emul_oreq *o = p->req_id < HGX_EMUL_NSLOTS ? e->slots[p->req_id] : NULL;
    if (!o || o->peer != src || o->seq != p->seq) {
        CINC(C_LATE_REPLY);
        HGX_LOG_DEBUG(MPI_EMUL,
                      "dropped a reply (type %u) for a finished request %u from rank %d",
                      p->type, p->req_id, src);
        return;
    }
    switch (p->type) {
    case HGX_EMUL_CT_CTS:
        if (!o->put || o->xfer != HGX_EMUL_OX_WAIT_CTS || emul_oreq_cancel_yes(o)) {
            e->stats.bad_packets++;
            return;
        }
        if (emul_oreq_zombie(o))
            emul_send_abort(
                o); /* we reported NA_CANCELED: send nothing, let the target drop it */
        else
            emul_put_post_data(o);
        break;
    case HGX_EMUL_CT_ACK:
    case HGX_EMUL_CT_ERR: {
        if (o->xfer == HGX_EMUL_OX_REPLIED || (p->type == HGX_EMUL_CT_ACK && !o->put)) {
            e->stats.bad_packets++;
            return;
        }
        na_return_t st = (p->status >= 0 && p->status < NA_RETURN_MAX)
                             ? (na_return_t)p->status
                             : NA_PROTOCOL_ERROR;
        emul_oreq_set_xfer(o, HGX_EMUL_OX_REPLIED);
        if (p->type == HGX_EMUL_CT_ERR) { /* refused: no data comes */
            if (st == NA_SUCCESS)
                st = NA_PROTOCOL_ERROR;
        }
        if (o->result == NA_SUCCESS)
            o->result = st;
        break;
    }
    case HGX_EMUL_CT_CANCELYES:
    case HGX_EMUL_CT_CANCELNO: {
        bool yes = p->type == HGX_EMUL_CT_CANCELYES;
        if (o->cancel == HGX_EMUL_OC_SENT) {
            CINC(yes ? C_YES : C_NO);
            emul_oreq_set_cancel(o, yes ? HGX_EMUL_OC_YES : HGX_EMUL_OC_NO);
        } else if (o->cancel == HGX_EMUL_OC_ZOMBIE) {
            /* A get answered NO after our local cancel: the target sends all its
             * chunks; the id stays taken until they arrived (emul_oreq_step). */
            CINC(C_LATE_REPLY);
            emul_oreq_set_cancel(o, yes ? HGX_EMUL_OC_ZOMBIE_YES : HGX_EMUL_OC_ZOMBIE_NO);
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
    emul_oreq_step(o);
}

na_return_t hgx_emul_xfer(struct hgx_emul *e, bool put, const struct hgx_emul_mem *local,
                          uint64_t local_offset, const struct hgx_emul_mem *remote,
                          uint64_t remote_offset, size_t size, hgx_emul_done_fn done,
                          void *arg, struct hgx_emul_oreq **oreq_p)
{
    *oreq_p = NULL;
    if (size == 0) {
        done(arg, NA_SUCCESS);
        return NA_SUCCESS;
    }
    uint32_t n = emul_nchunks_of(size);
    if (n > HGX_EMUL_MAX_CHUNKS)
        return NA_MSGSIZE;
    uint32_t id = HGX_EMUL_NSLOTS;
    for (uint32_t k = 0; k < HGX_EMUL_NSLOTS; k++) {
        uint32_t s = (e->next_slot + k) % HGX_EMUL_NSLOTS;
        if (!e->slots[s]) {
            id = s;
            break;
        }
    }
    if (id == HGX_EMUL_NSLOTS) {
        HGX_LOG_ERROR(MPI_EMUL, "%u emulated transfers already active", HGX_EMUL_NSLOTS);
        return NA_AGAIN;
    }
    e->next_slot = (id + 1) % HGX_EMUL_NSLOTS;

    struct hgx_emul_oreq *o = calloc(1, sizeof(*o));
    if (!o || (put && (!(o->creqs = calloc(n, sizeof(MPI_Request))) ||
                       !(o->cdone = calloc(n, 1))))) {
        if (o)
            free(o->creqs);
        free(o);
        return NA_NOMEM;
    }
    CINC(G_OACTIVE);
    emul_rx_init(&o->rx);
    o->e = e;
    o->id = id;
    o->seq = ++e->next_seq;
    o->dtag = emul_data_tag(e, put, id, o->seq, e->gen_bits);
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
    if (!put) /* chunks are taken as they arrive (emul_origin_data), nothing is posted */
        emul_rx_add(e, &o->rx, o->dtag);

    struct hgx_emul_ctrl p = {.type = put ? HGX_EMUL_CT_PUT : HGX_EMUL_CT_GET,
                              .req_id = id,
                              .handle_id = remote->id,
                              .gen = remote->gen,
                              .offset = remote_offset,
                              .size = size,
                              .seq = o->seq,
                              .status = (int32_t)e->gen_bits};
    int rc = emul_ctrl_send(e, o->peer, &p);
    if (rc != MPI_SUCCESS) {
        emul_err_log("sending put/get request", rc);
        o->done = NULL;
        emul_oreq_step(o);
        return hgx_mpi_err_to_na(rc);
    }
    *oreq_p = o;
    return NA_SUCCESS;
}

void hgx_emul_cancel(struct hgx_emul *e, struct hgx_emul_oreq *o)
{
    if (!o || o->cancel != HGX_EMUL_OC_NONE || emul_oreq_completed(o) || e->closing)
        return;
    CINC(C_REQ);
    emul_ctrl_reply(e, o->peer, HGX_EMUL_CT_CANCEL, o->id, o->seq, NA_CANCELED);
    emul_oreq_set_cancel(o, HGX_EMUL_OC_SENT);
    o->deadline = hgx_clock_now_us() + e->cancel_timeout_us;
    e->ntimed++;
}

int emul_origin_timers(struct hgx_emul *e)
{
    int n = 0;
    uint64_t t = hgx_clock_now_us();
    for (uint32_t i = 0; i < HGX_EMUL_NSLOTS; i++) {
        struct hgx_emul_oreq *o = e->slots[i];
        if (!o || o->cancel == HGX_EMUL_OC_NONE)
            continue;
        if (o->cancel == HGX_EMUL_OC_SENT && t >= o->deadline) {
            emul_oreq_timeout(o);
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
            emul_oreq_set_cancel(o, HGX_EMUL_OC_EXPIRED);
            emul_oreq_step(o);
            n++;
        }
    }
    return n;
}
