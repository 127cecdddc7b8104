/*
 * hgx_emul.c -- put/get over two-sided MPI: counters, control receive, progress, life.
 * The emulation as a whole: hgx_emul.h, emul_int.h, docs/mpi-emul-cancel.md.
 */
#include "config.h"
#include "emul_int.h"

atomic_ulong hgx_emul_ctr[C_N];

void hgx_emul_get_counters(struct hgx_emul_counters *c)
{
    unsigned long v[C_N];
    for (int i = 0; i < C_N; i++)
        v[i] = atomic_load(&hgx_emul_ctr[i]);
    *c = (struct hgx_emul_counters){.cancel_requested = v[C_REQ],
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

void emul_err_log(const char *what, int rc)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
        strcpy(s, "?");
    HGX_LOG_ERROR(MPI_EMUL, "%s failed: %s", what, s);
}

/*------------------------------------------------------------ control receive */

static void emul_ctrl_dispatch(struct hgx_emul *e, int src, const struct hgx_emul_ctrl *p)
{
    switch (p->type) {
    case HGX_EMUL_CT_PUT:
    case HGX_EMUL_CT_GET:
        emul_target_request(e, src, p);
        break;
    case HGX_EMUL_CT_CANCEL:
        emul_target_cancel(e, src, p);
        break;
    case HGX_EMUL_CT_ABORT:
        emul_target_abort(e, src, p);
        break;
    case HGX_EMUL_CT_ACK:
    case HGX_EMUL_CT_ERR:
    case HGX_EMUL_CT_CTS:
    case HGX_EMUL_CT_CANCELYES:
    case HGX_EMUL_CT_CANCELNO:
        emul_origin_packet(e, src, p);
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
static void emul_ctrl_recv(struct hgx_emul *e, MPI_Message *msg, const MPI_Status *st)
{
    int count = 0;
    MPI_Get_count(st, MPI_BYTE, &count);
    if (count == CTRL_WIRE_SIZE) {
        unsigned char b[CTRL_WIRE_SIZE];
        struct hgx_emul_ctrl p;
        int rc = MPI_Mrecv(b, count, MPI_BYTE, msg, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            emul_err_log("MPI_Mrecv (control)", rc);
            return;
        }
        if (emul_ctrl_decode(b, &p) && st->MPI_SOURCE >= 0 && st->MPI_SOURCE < e->size) {
            emul_ctrl_dispatch(e, st->MPI_SOURCE, &p);
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

void hgx_emul_ctrl_msg(struct hgx_emul *e, MPI_Message *msg, const MPI_Status *st)
{
    emul_ctrl_recv(e, msg, st);
    e->batch_open = true;
}

/* Take one control packet with MPI_Improbe. Returns 1 if a packet was taken,
 * 0 if none, -1 on MPI error. */
static int emul_ctrl_take_one(struct hgx_emul *e)
{
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    int rc = MPI_Improbe(MPI_ANY_SOURCE, e->tag_ctrl, e->comm, &flag, &msg, &st);
    if (rc != MPI_SUCCESS) {
        emul_err_log("MPI_Improbe (control)", rc);
        return -1;
    }
    if (!flag)
        return 0;
    emul_ctrl_recv(e, &msg, &st);
    return 1;
}

int hgx_emul_progress(struct hgx_emul *e)
{
    return hgx_emul_progress_ex(e, true);
}

int hgx_emul_progress_ex(struct hgx_emul *e, bool take_ctrl)
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
        int r = emul_ctrl_take_one(e);
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
    struct hgx_list *it;
    while ((it = hgx_list_pop_front(&e->pend)))
        emul_target_start(e, hgx_list_entry(it, struct trec, plink));
    /* 3. Data chunks that arrived. */
    if (e->dcomm != e->comm)
        n += emul_data_take_any(e);
    else if (take_ctrl)
        n += emul_data_take_tags(e);
    /* 4. Timers. */
    if (e->ntimed)
        n += emul_origin_timers(e);
    if (e->ntombs)
        emul_tomb_expire(e, hgx_clock_now_us());
    if (!hgx_list_empty(&e->aborted))
        emul_aborted_expire(e, hgx_clock_now_us());
    if (e->ntrec && e->idle_us) {
        uint64_t t = hgx_clock_now_us();
        if (t >= e->idle_check_at)
            n += emul_put_idle_expire(e, t);
    }
    return n;
}

/*------------------------------------------------------------ life */

/* Bounds of the cancel protocol (docs/mpi-emul-cancel.md): at most a day each. */
#define EMUL_PARAM_MAX_MS 86400000

const struct hgx_param hgx_emul_param_cancel_timeout_ms = {
    .name = "HGX_MPI_CANCEL_TIMEOUT_MS",
    .type = HGX_PARAM_INT,
    .def = 200,
    .min = 0,
    .max = EMUL_PARAM_MAX_MS,
    .help = "milliseconds an MPI put/get cancel waits for the target's answer before "
            "it completes the operation locally",
};

const struct hgx_param hgx_emul_param_zombie_ms = {
    .name = "HGX_MPI_CANCEL_ZOMBIE_MS",
    .type = HGX_PARAM_INT,
    .def = 60000,
    .min = 0,
    .max = EMUL_PARAM_MAX_MS,
    .help = "milliseconds the id of a locally completed MPI put/get stays reserved for "
            "a late answer",
};

const struct hgx_param hgx_emul_param_target_idle_ms = {
    .name = "HGX_MPI_TARGET_IDLE_MS",
    .type = HGX_PARAM_INT,
    .def = -1,
    .min = -1,
    .max = EMUL_PARAM_MAX_MS,
    .help = "milliseconds a target keeps a put whose origin went silent (0: forever; "
            "-1: HGX_MPI_CANCEL_ZOMBIE_MS)",
};

na_return_t hgx_emul_create(struct hgx_emul **ep, MPI_Comm comm, struct hgx_mreqtab *tab,
                            int tag_ctrl, int tag_putdata_base, int tag_getdata_base)
{
    struct hgx_emul *e = calloc(1, sizeof(*e));
    if (!e)
        return NA_NOMEM;
    e->comm = comm;
    e->dcomm = comm;
    hgx_list_init(&e->rx);
    hgx_list_init(&e->pend);
    hgx_list_init(&e->aborted);
    for (unsigned i = 0; i < TBUCKETS; i++)
        hgx_list_init(&e->index[i]);
    e->tab = tab;
    e->tag_ctrl = tag_ctrl;
    e->tag_put = tag_putdata_base;
    e->tag_get = tag_getdata_base;
    MPI_Comm_rank(comm, &e->rank);
    MPI_Comm_size(comm, &e->size);
    uint64_t zombie_ms = (uint64_t)hgx_param_get_int(&hgx_emul_param_zombie_ms);
    int64_t idle_ms = hgx_param_get_int(&hgx_emul_param_target_idle_ms);
    e->cancel_timeout_us =
        (uint64_t)hgx_param_get_int(&hgx_emul_param_cancel_timeout_ms) * 1000u;
    e->zombie_life_us = zombie_ms * 1000u;
    e->idle_us = (idle_ms < 0 ? zombie_ms : (uint64_t)idle_ms) * 1000u;
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

void hgx_emul_close(struct hgx_emul *e)
{
    e->closing = true;
    for (uint32_t i = 0; i < HGX_EMUL_NSLOTS; i++)
        if (e->slots[i] && e->slots[i]->outstanding == 0)
            emul_oreq_free(e->slots[i]); /* waits for an answer no table entry tracks */
    struct hgx_list *it;
    while ((it = hgx_list_first(&e->pend)))
        emul_trec_free(e, hgx_list_entry(it, struct trec, plink));
    for (unsigned i = 0; i < TBUCKETS; i++)
        hgx_list_for_each(it, &e->index[i])
        {
            const struct trec *t = hgx_list_entry(it, struct trec, hlink);
            uint32_t left = t->put ? t->n - t->next + t->outstanding : t->outstanding;
            HGX_LOG_WARNING(MPI_EMUL,
                            "closing with a %s from rank %d still applying (id %u, "
                            "%u of %u chunks not moved%s)",
                            t->put ? "put" : "get", t->src, t->pkt.req_id, left, t->n,
                            t->state == HGX_EMUL_T_ABORTED ? ", aborted" : "");
        }
}

void hgx_emul_free(struct hgx_emul *e)
{
    if (!e)
        return;
    for (uint32_t i = 0; i < HGX_EMUL_NSLOTS; i++)
        if (e->slots[i])
            emul_oreq_free(e->slots[i]);
    for (unsigned i = 0; i < TBUCKETS; i++)
        while (!hgx_list_empty(&e->index[i]))
            emul_trec_free(
                e, hgx_list_entry(hgx_list_first(&e->index[i]), struct trec, hlink));
    for (unsigned i = 0; i < NTOMB; i++)
        if (e->tombs[i].src >= 0)
            CDEC(G_TOMB);
    free(e->maxseq);
    free(e->reg);
    free(e->rx_tags);
    free(e);
}

void hgx_emul_set_data_comm(struct hgx_emul *e, MPI_Comm data)
{
    e->dcomm = data;
}

void hgx_emul_set_tag_gens(struct hgx_emul *e, int gen_base, unsigned bits)
{
    /* every tag stays an int (the caller keeps them within MPI_TAG_UB) */
    while (bits > 0 && (gen_base < 0 || bits > GEN_BITS_MAX ||
                        gen_base + hgx_emul_gen_span(bits) - 1 > INT_MAX))
        bits--;
    e->tag_gen = gen_base;
    e->gen_bits = bits;
}

void hgx_emul_share_registry(struct hgx_emul *e, struct hgx_emul *owner)
{
    e->regsrc = owner == e ? NULL : owner;
}

void hgx_emul_get_stats(const struct hgx_emul *e, struct hgx_emul_stats *s)
{
    *s = e->stats;
}
