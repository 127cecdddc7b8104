/*
 * na_mpi_msg.c -- the MPI NA plugin: messages: sends, unexpected and expected receives,
 * held messages. The plugin as a whole: na_mpi_priv.h.
 */
#include "na_mpi_priv.h"

/*------------------------------------------------------------ messages */

size_t nm_max_unexp(const na_class_t *c)
{
    return PC(c)->max_unexp;
}

size_t nm_max_exp(const na_class_t *c)
{
    return PC(c)->max_exp;
}

na_tag_t nm_max_tag(const na_class_t *c)
{
    return PC(c)->max_tag;
}

static void nm_send_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    na_op_id_t *op = obj;
    struct nm_op *mo = na_op_plugin(op);
    struct nm_class *pc = PC(mo->na_class);
    free(mo->bounce);
    mo->bounce = NULL;
    int cancelled = 0;
    if (err == MPI_SUCCESS)
        MPI_Test_cancelled(st, &cancelled);
    if (err != MPI_SUCCESS && err != MPI_ERR_REQUEST)
        nm_log_err("message send", err);
    nm_op_done(pc, op,
               cancelled || err == MPI_ERR_REQUEST ? NA_CANCELED
                                                   : hgx_mpi_err_to_na(err));
}

/* Communicator of an address (NULL when its connection is closed). */
static bool nm_addr_comm(struct nm_class *pc, na_addr_t *addr, MPI_Comm *comm)
{
    struct dyn_conn *k = ((struct nm_addr *)addr)->conn;
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

static na_return_t nm_post_send(na_class_t *na_class, na_op_id_t *op, const void *buf,
                                size_t size, na_addr_t *dest_addr, int tag, void *bounce)
{
    int dest = ((struct nm_addr *)dest_addr)->rank;
    struct nm_class *pc = PC(na_class);
    struct nm_op *mo = na_op_plugin(op);
    nm_op_start(mo, na_class);
    mo->bounce = bounce;
    hgx_lock(&pc->lock);
    MPI_Comm comm;
    if (!nm_addr_comm(pc, dest_addr, &comm)) {
        hgx_unlock(&pc->lock);
        free(bounce);
        mo->bounce = NULL;
        return NA_ADDRNOTAVAIL;
    }
    nm_mark_active(pc, ACT_EVENT);
    int rc = MPI_Isend(buf, (int)size, MPI_BYTE, dest, tag, comm, &mo->req);
    if (rc == MPI_SUCCESS && size <= MRECV_MAX) {
        /* Eager: usually done at once, and then no later pass has to test it. */
        int flag = 0;
        MPI_Status st;
        rc = MPI_Test(&mo->req, &flag, &st);
        if (rc != MPI_SUCCESS || flag) {
            nm_send_done(op, 0, rc, &st);
            hgx_unlock(&pc->lock);
            return NA_SUCCESS;
        }
    }
    if (rc == MPI_SUCCESS &&
        hgx_mreqtab_add(&pc->tab, mo->req, nm_send_done, op, 0) != 0) {
        MPI_Cancel(&mo->req);
        MPI_Wait(&mo->req, MPI_STATUS_IGNORE);
        rc = MPI_ERR_NO_MEM;
    }
    hgx_unlock(&pc->lock);
    if (rc != MPI_SUCCESS) {
        nm_log_err("MPI_Isend", rc);
        free(bounce);
        mo->bounce = NULL;
        return hgx_mpi_err_to_na(rc);
    }
    return NA_SUCCESS;
}

na_return_t nm_send_unexpected(na_class_t *na_class, na_context_t *context,
                               na_op_id_t *op, const void *buf, size_t buf_size,
                               void *plugin_data, na_addr_t *dest_addr, uint8_t dest_id,
                               na_tag_t tag)
{
    (void)context, (void)plugin_data, (void)dest_id;
    unsigned char *b = malloc(UNEXP_HDR_SIZE + buf_size);
    if (!b)
        return NA_NOMEM;
    uint32_t hdr[2] = {UNEXP_MAGIC, tag};
    memcpy(b, hdr, sizeof(hdr));
    memcpy(b + UNEXP_HDR_SIZE, buf, buf_size);
    return nm_post_send(na_class, op, b, UNEXP_HDR_SIZE + buf_size, dest_addr, TAG_UNEXP,
                        b);
}

na_return_t nm_send_expected(na_class_t *na_class, na_context_t *context, na_op_id_t *op,
                             const void *buf, size_t buf_size, void *plugin_data,
                             na_addr_t *dest_addr, uint8_t dest_id, na_tag_t tag)
{
    (void)context, (void)plugin_data, (void)dest_id;
    return nm_post_send(na_class, op, buf, buf_size, dest_addr, TAG_EXP_BASE + (int)tag,
                        NULL);
}

na_return_t nm_recv_unexpected(na_class_t *na_class, na_context_t *context,
                               na_op_id_t *op, void *buf, size_t buf_size,
                               void *plugin_data)
{
    (void)context, (void)plugin_data;
    struct nm_class *pc = PC(na_class);
    struct nm_op *mo = na_op_plugin(op);
    nm_op_start(mo, na_class);
    mo->buf = buf;
    mo->buf_size = buf_size;
    hgx_lock(&pc->lock);
    hgx_list_push_back(&pc->uq, &mo->link);
    hgx_unlock(&pc->lock);
    return NA_SUCCESS;
}

/* Check an unexpected message received into data (header first) and hand
 * it to its NA receive. */
static void nm_unexp_finish(na_op_id_t *op, const char *data, int err,
                            const MPI_Status *st)
{
    struct nm_op *mo = na_op_plugin(op);
    struct nm_class *pc = PC(mo->na_class);
    na_return_t ret = NA_SUCCESS;
    int count = 0;
    uint32_t hdr[2] = {0, 0};

    if (err != MPI_SUCCESS) {
        ret = err == MPI_ERR_REQUEST ? NA_CANCELED : hgx_mpi_err_to_na(err);
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
            ret = nm_addr_new(mo->na_class, mo->conn, st->MPI_SOURCE,
                              &op->info.info.recv_unexpected.source);
            op->info.info.recv_unexpected.actual_buf_size =
                (size_t)count - UNEXP_HDR_SIZE;
            op->info.info.recv_unexpected.tag = hdr[1];
        }
    }
    nm_op_done(pc, op, ret);
}

/* Receive the matched message msg into buf (count bytes) with MPI_Imrecv for
 * op; fn runs when it landed, from the request table, or at once when the
 * table has no room. Returns the MPI error of posting it (fn has not run). */
static int nm_imrecv(struct nm_class *pc, na_op_id_t *op, void *buf, int count,
                     MPI_Message *msg, MPI_Status *st, hgx_mreq_fn fn)
{
    struct nm_op *mo = na_op_plugin(op);
    int rc = MPI_Imrecv(buf, count, MPI_BYTE, msg, &mo->req);
    if (rc == MPI_SUCCESS && hgx_mreqtab_add(&pc->tab, mo->req, fn, op, 0) != 0)
        fn(op, 0, MPI_Wait(&mo->req, st), st);
    return rc;
}

static void nm_unexp_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    na_op_id_t *op = obj;
    struct nm_op *mo = na_op_plugin(op);
    void *bounce = mo->bounce;
    mo->bounce = NULL;
    nm_unexp_finish(op, bounce, err, st);
    free(bounce);
}

/* Pop the first posted unexpected receive (uq not empty). Lock held. */
static struct nm_op *nm_uq_pop(struct nm_class *pc)
{
    return hgx_list_entry(hgx_list_pop_front(&pc->uq), struct nm_op, link);
}

/* Receive the matched unexpected message msg into the first posted NA
 * unexpected receive. Lock held, pc->uq not empty. */
static void nm_unexp_recv(struct nm_class *pc, MPI_Message *msg, MPI_Status *st,
                          struct dyn_conn *conn)
{
    int count = 0, rc;
    struct nm_op *mo = nm_uq_pop(pc);
    mo->conn = conn;
    na_op_id_t *op = na_op_from_plugin(mo);
    MPI_Get_count(st, MPI_BYTE, &count); /* MPI_UNDEFINED (< 0) above INT_MAX bytes */
    if (count >= 0 && count <= MRECV_MAX) {
        rc = MPI_Mrecv(pc->small, count, MPI_BYTE, msg, st);
        nm_unexp_finish(op, pc->small, rc, st);
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
            nm_log_err("MPI_Mrecv (dropping an unexpected message)", rc);
        pc->ndropped++;
        nm_op_done(pc, op, NA_MSGSIZE);
        return;
    }
    mo->bounce = malloc((size_t)count);
    if (!mo->bounce) {
        HGX_LOG_ERROR(MPI, "out of memory: dropped an unexpected message from rank %d",
                      st->MPI_SOURCE);
        hgx_mpi_mrecv_drop(msg, st);
        pc->ndropped++;
        nm_op_done(pc, op, NA_NOMEM);
        return;
    }
    rc = nm_imrecv(pc, op, mo->bounce, count, msg, st, nm_unexp_done);
    if (rc != MPI_SUCCESS) {
        nm_log_err("MPI_Imrecv", rc);
        free(mo->bounce);
        mo->bounce = NULL;
        nm_op_done(pc, op, hgx_mpi_err_to_na(rc));
    }
}

/* Hand the oldest unexpected message MPI holds on comm to the first posted NA
 * receive (per-kind probing: connections, or pc->comm with the held list
 * full). One per pass: probing again for a second one would delay the
 * completion of the first. Lock held. */
static int nm_match_unexpected_on(struct nm_class *pc, MPI_Comm comm,
                                  struct dyn_conn *conn)
{
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    if (hgx_list_empty(&pc->uq) || pc->upost)
        return MPI_SUCCESS;
    int rc = MPI_Improbe(MPI_ANY_SOURCE, TAG_UNEXP, comm, &flag, &msg, &st);
    if (rc == MPI_SUCCESS && flag)
        nm_unexp_recv(pc, &msg, &st, conn);
    return rc;
}

int nm_match_unexpected(struct nm_class *pc)
{
    int rc =
        pc->waiting ? nm_match_unexpected_on(pc, pc->comm, pc->self_conn) : MPI_SUCCESS;
    struct hgx_list *it;
    hgx_list_for_each(it, &pc->conns)
    {
        if (rc != MPI_SUCCESS || hgx_list_empty(&pc->uq))
            break;
        struct dyn_conn *k = hgx_list_entry(it, struct dyn_conn, link);
        if (!k->dead && k->waiting)
            rc = nm_match_unexpected_on(pc, k->comm, k);
    }
    return rc;
}

#ifdef OPEN_MPI
/* Post mo's receive as an MPI_Irecv into a sink, recorded with fn; false if
 * it could not be (nothing received). Lock held. */
static bool nm_sink_irecv(struct nm_class *pc, struct nm_op *mo, int src, int tag,
                          MPI_Comm comm, hgx_mreq_fn fn)
{
    char *sink = nm_sink_get(pc);
    if (!sink)
        return false;
    int rc = MPI_Irecv(sink, INT_MAX, MPI_BYTE, src, tag, comm, &mo->req);
    if (rc != MPI_SUCCESS) {
        nm_log_err("MPI_Irecv", rc);
        nm_sink_put(pc, sink, MPI_SUCCESS, 0);
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
    nm_sink_put(pc, sink, rc, 0);
    return false;
}

/* Take mo's sink after its MPI_Irecv completed; *count: bytes received (0 if
 * cancelled or failed), *cancelled. Lock held. */
static char *nm_sink_take(struct nm_op *mo, int err, const MPI_Status *st, int *count,
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
        nm_log_err("receive", err);
    }
    return sink;
}

static void nm_unexp_sink_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    na_op_id_t *op = obj;
    struct nm_op *mo = na_op_plugin(op);
    struct nm_class *pc = PC(mo->na_class);
    int count, cancelled;
    char *sink = nm_sink_take(mo, err, st, &count, &cancelled);
    pc->upost = NULL;
    if (cancelled)
        nm_op_done(pc, op, NA_CANCELED);
    else
        nm_unexp_finish(op, sink, err, st);
    nm_sink_put(pc, sink, err, (size_t)count);
}
#endif

/*
 * Open MPI, mpi+static: the first posted NA unexpected receive is also
 * posted as an MPI_Irecv(MPI_ANY_SOURCE, TAG_UNEXP) into a sink (see
 * nm_sink_get), so a request is matched inside MPI's progress and reported by
 * the request table's MPI_Testsome, instead of an MPI_Improbe hit and an
 * MPI_Mrecv. One at a time and only while no unexpected message is held: MPI
 * gives it the oldest message not claimed yet, so arrival order holds; a
 * message claimed while it is posted is newer than the one it may hold, and
 * is held until it completed (deliver). MPICH keeps the probed path. Lock
 * held.
 */
void nm_unexp_arm(struct nm_class *pc)
{
#ifdef OPEN_MPI
    if (pc->upost || hgx_list_empty(&pc->uq) || pc->nheld_unexp || pc->dynamic)
        return;
    struct nm_op *mo = nm_uq_pop(pc);
    pc->upost = mo;
    if (nm_sink_irecv(pc, mo, MPI_ANY_SOURCE, TAG_UNEXP, pc->comm, nm_unexp_sink_done))
        return;
    pc->upost = NULL; /* back to the head of the list: the probed path serves it */
    hgx_list_push_front(&pc->uq, &mo->link);
#else
    (void)pc;
#endif
}

/* An expected receive probed and received with its size known (nm_exp_recv). */
void nm_recv_exp_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    na_op_id_t *op = obj;
    struct nm_op *mo = na_op_plugin(op);
    struct nm_class *pc = PC(mo->na_class);
    int count = 0;
    na_return_t ret;
    if (err == MPI_ERR_REQUEST) {
        ret = NA_CANCELED;
    } else if (err != MPI_SUCCESS) {
        ret = hgx_mpi_err_to_na(err);
        nm_log_err("expected receive", err);
    } else {
        MPI_Get_count(st, MPI_BYTE, &count);
        op->info.info.recv_expected.actual_buf_size = (size_t)count;
        ret = NA_SUCCESS;
    }
    nm_op_done(pc, op, ret);
}

#ifdef OPEN_MPI
static void nm_exp_sink_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    na_op_id_t *op = obj;
    struct nm_op *mo = na_op_plugin(op);
    struct nm_class *pc = PC(mo->na_class);
    int count, cancelled;
    char *sink = nm_sink_take(mo, err, st, &count, &cancelled);
    na_return_t ret;
    if (cancelled || err == MPI_ERR_REQUEST) {
        ret = NA_CANCELED;
        nm_late_expect(pc, mo->src, mo->tag, mo->comm); /* its message may still come */
    } else if (err != MPI_SUCCESS) {
        ret = hgx_mpi_err_to_na(err);
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
    nm_sink_put(pc, sink, err, (size_t)count);
    nm_op_done(pc, op, ret);
}

/* Whether a message for mo is held or an earlier posted receive for the same
 * source and tag still waits in the list: mo must then queue behind them. */
static bool nm_exp_queued(const struct nm_class *pc, const struct nm_op *mo)
{
    const struct hgx_list *it;
    if (mo->comm == pc->comm)
        hgx_list_for_each(it, &pc->held)
        {
            const struct held_msg *h = hgx_list_entry(it, const struct held_msg, link);
            if (h->st.MPI_SOURCE == mo->src && h->st.MPI_TAG == mo->tag)
                return true;
        }
    hgx_list_for_each(it, &pc->eq)
    {
        const struct nm_op *e = hgx_list_entry(it, const struct nm_op, link);
        if (e->comm == mo->comm && e->src == mo->src && e->tag == mo->tag)
            return true;
    }
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
static bool nm_exp_post_irecv(struct nm_class *pc, struct nm_op *mo)
{
#ifdef OPEN_MPI
    if (mo->buf_size > SINK_COPY_MAX || nm_exp_queued(pc, mo))
        return false;
    return nm_sink_irecv(pc, mo, mo->src, mo->tag, mo->comm, nm_exp_sink_done);
#else
    (void)pc, (void)mo;
    return false;
#endif
}

/*
 * Otherwise (MPICH) expected receives are matched from poll (nm_claim_any, or
 * MPI_Improbe per receive) and received with MPI_Mrecv/MPI_Imrecv: the size
 * is checked before receiving, so an oversized message is reported
 * NA_MSGSIZE without MPI raising MPI_ERR_TRUNCATE, which MPICH raises on
 * MPI_COMM_WORLD from MPI_Test/MPI_Testsome/MPI_Mrecv, aborting the job.
 */
na_return_t nm_recv_expected(na_class_t *na_class, na_context_t *context, na_op_id_t *op,
                             void *buf, size_t buf_size, void *plugin_data,
                             na_addr_t *source_addr, uint8_t source_id, na_tag_t tag)
{
    (void)context, (void)plugin_data, (void)source_id;
    struct nm_class *pc = PC(na_class);
    struct nm_op *mo = na_op_plugin(op);
    if (buf_size > INT_MAX)
        return NA_MSGSIZE;
    nm_op_start(mo, na_class);
    mo->buf = buf;
    mo->buf_size = buf_size;
    mo->src = ((struct nm_addr *)source_addr)->rank;
    mo->tag = TAG_EXP_BASE + (int)tag;
    hgx_lock(&pc->lock);
    if (!nm_addr_comm(pc, source_addr, &mo->comm)) {
        hgx_unlock(&pc->lock);
        return NA_ADDRNOTAVAIL;
    }
    nm_mark_active(pc, ACT_POST);
    if (pc->late_live)
        nm_late_forget(pc, mo->src, mo->tag, mo->comm);
    if (!nm_exp_post_irecv(pc, mo)) /* last: posting order is matching order, as in MPI */
        hgx_list_push_back(&pc->eq, &mo->link);
    hgx_unlock(&pc->lock);
    return NA_SUCCESS;
}

/* Whether the last nm_probe_waiting() saw a message waiting on comm. */
static bool nm_comm_waiting(const struct nm_class *pc, MPI_Comm comm)
{
    if (comm == pc->comm)
        return pc->waiting;
    const struct hgx_list *it;
    hgx_list_for_each(it, &pc->conns)
    {
        const struct dyn_conn *k = hgx_list_entry(it, const struct dyn_conn, link);
        if (k->comm == comm)
            return k->waiting;
    }
    return false;
}

/* Receive the matched message msg into the posted expected receive mo (already
 * unlinked). Lock held. */
static void nm_exp_recv(struct nm_class *pc, struct nm_op *mo, MPI_Message *msg,
                        MPI_Status *st)
{
    int count = 0, rc;
    na_op_id_t *op = na_op_from_plugin(mo);
    MPI_Get_count(st, MPI_BYTE, &count);
    if (count < 0 || (size_t)count > mo->buf_size) {
        rc = hgx_mpi_mrecv_drop(msg, st);
        if (rc != MPI_SUCCESS)
            nm_log_err("MPI_Mrecv (dropping an expected message)", rc);
        pc->ndropped++;
        HGX_LOG_ERROR(MPI,
                      "expected message of %d bytes from rank %d larger than the "
                      "%zu-byte buffer: dropped",
                      count, mo->src, mo->buf_size);
        nm_op_done(pc, op, NA_MSGSIZE);
        return;
    }
    if (count <= MRECV_MAX) {
        rc = MPI_Mrecv(mo->buf, count, MPI_BYTE, msg, st);
        nm_recv_exp_done(op, 0, rc, st);
        return;
    }
    rc = nm_imrecv(pc, op, mo->buf, count, msg, st, nm_recv_exp_done);
    if (rc != MPI_SUCCESS) {
        nm_log_err("MPI_Imrecv", rc);
        nm_op_done(pc, op, hgx_mpi_err_to_na(rc));
    }
}

/* Per-kind probing of the posted expected receives on the communicators
 * nm_probe_waiting marked. */
int nm_match_expected(struct nm_class *pc)
{
    struct hgx_list *it, *tmp;
    hgx_list_for_each_safe(it, tmp, &pc->eq)
    {
        struct nm_op *mo = hgx_list_entry(it, struct nm_op, link);
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        int rc = mo->comm == MPI_COMM_NULL || !nm_comm_waiting(pc, mo->comm)
                     ? MPI_SUCCESS
                     : MPI_Improbe(mo->src, mo->tag, mo->comm, &flag, &msg, &st);
        if (rc != MPI_SUCCESS)
            return rc;
        if (!flag)
            continue;
        hgx_list_remove(&mo->link);
        nm_exp_recv(pc, mo, &msg, &st);
    }
    return MPI_SUCCESS;
}

/* The first posted expected receive on pc->comm for (src, tag), unlinked; NULL
 * if none. Posting order is matching order, as for MPI receives. Lock held. */
static struct nm_op *nm_eq_take(struct nm_class *pc, int src, int tag)
{
    struct hgx_list *it;
    hgx_list_for_each(it, &pc->eq)
    {
        struct nm_op *mo = hgx_list_entry(it, struct nm_op, link);
        if (mo->comm == pc->comm && mo->tag == tag && mo->src == src) {
            hgx_list_remove(&mo->link);
            return mo;
        }
    }
    return NULL;
}

/* Hand a message claimed on pc->comm to its posted NA receive; false if none
 * is posted (the message stays claimed). Lock held. */
static bool nm_deliver(struct nm_class *pc, MPI_Message *msg, MPI_Status *st)
{
    if (st->MPI_TAG == TAG_UNEXP) {
        if (hgx_list_empty(&pc->uq) ||
            pc->upost) /* upost: its message is older than this */
            return false;
        nm_unexp_recv(pc, msg, st, pc->self_conn);
        return true;
    }
    struct nm_op *mo = nm_eq_take(pc, st->MPI_SOURCE, st->MPI_TAG);
    if (!mo)
        return false;
    nm_exp_recv(pc, mo, msg, st);
    return true;
}

/* Held messages whose NA receive is posted now, oldest first: a message held
 * for (source, tag) is older than any still in MPI, so MPI's order between
 * a pair holds. Returns the number delivered. Lock held. */
int nm_take_held(struct nm_class *pc)
{
    int n = 0;
    struct hgx_list *it, *tmp;
    hgx_list_for_each_safe(it, tmp, &pc->held)
    {
        if (hgx_list_empty(&pc->uq) && hgx_list_empty(&pc->eq))
            break;
        struct held_msg *h = hgx_list_entry(it, struct held_msg, link);
        if (!nm_deliver(pc, &h->msg, &h->st))
            continue;
        hgx_list_remove(&h->link);
        pc->nheld--;
        pc->nheld_unexp -= h->st.MPI_TAG == TAG_UNEXP;
        free(h);
        n++;
    }
    return n;
}

int na_mpi_held_count(na_class_t *na_class)
{
    struct nm_class *pc = PC(na_class);
    hgx_lock(&pc->lock);
    int n = pc->nheld;
    hgx_unlock(&pc->lock);
    return n;
}

/* Keep a claimed message for a receive posted later; on no memory drop it. */
void nm_hold(struct nm_class *pc, MPI_Message *msg, const MPI_Status *st)
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
    hgx_list_push_back(&pc->held, &h->link);
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
int nm_claim_any(struct nm_class *pc, int *rc)
{
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    *rc = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, pc->comm, &flag, &msg, &st);
    if (*rc != MPI_SUCCESS || !flag)
        return 0;
    int tag = st.MPI_TAG;
    if (tag == TAG_CTRL) {
        hgx_emul_ctrl_msg(pc->emul, &msg, &st);
        pc->take_ctrl = true;
    } else if (tag == TAG_UNEXP ||
               (tag >= TAG_EXP_BASE && tag <= TAG_EXP_BASE + (int)pc->max_tag)) {
        if (!nm_deliver(pc, &msg, &st)) {
            if (tag != TAG_UNEXP && nm_late_is(pc, &st, pc->comm))
                nm_late_drop(pc, &msg, &st, pc->comm);
            else
                nm_hold(pc, &msg, &st);
        }
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

void nm_drop_held(struct nm_class *pc)
{
    struct hgx_list *it;
    while ((it = hgx_list_pop_front(&pc->held))) {
        struct held_msg *h = hgx_list_entry(it, struct held_msg, link);
        int rc = hgx_mpi_mrecv_drop(&h->msg, &h->st);
        if (rc != MPI_SUCCESS)
            nm_log_err("MPI_Mrecv (dropping a message at finalize)", rc);
        free(h);
    }
    if (pc->nheld)
        HGX_LOG_DEBUG(MPI, "finalize: dropped %d messages no receive was posted for",
                      pc->nheld);
    pc->nheld = pc->nheld_unexp = 0;
}
