/*
 * emul_data.c -- put/get over two-sided MPI: data chunks: receiving transfers,
 * attribution, admission, receive. The emulation as a whole: hgx_emul.h, emul_int.h,
 * docs/mpi-emul-cancel.md.
 */
#include "config.h"
#include "emul_int.h"

/*------------------------------------------------------------ data messages */

void emul_rx_add(struct hgx_emul *e, struct rxlink *l, int tag)
{
    if (emul_rx_on(l))
        return;
    l->tag = tag;
    hgx_list_push_back(&e->rx, &l->link);
    e->nrx++;
}

void emul_rx_del(struct hgx_emul *e, struct rxlink *l)
{
    if (!emul_rx_on(l))
        return;
    hgx_list_remove(&l->link);
    e->nrx--;
}

/* Receive the matched data message msg whole into scratch and forget it.
 * late: the rest of a transfer cancelled locally or failed before (expected);
 * else the message failed a check (why), which is logged. */
void emul_data_drop(struct hgx_emul *e, MPI_Message *msg, const MPI_Status *st, int count,
                    bool late, const char *why)
{
    int rc = hgx_mpi_mrecv_drop(msg, st);
    if (rc != MPI_SUCCESS)
        emul_err_log("MPI_Mrecv (dropped data message)", rc);
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
bool emul_chunk_admit(struct hgx_emul *e, MPI_Message *msg, const MPI_Status *st,
                      int count, size_t len, bool open, const char *closed_why,
                      const char *size_why, na_return_t *result)
{
    bool fits = count == (int)len;
    if (!open) {
        emul_data_drop(e, msg, st, count, fits,
                       fits ? closed_why : "not the size of its chunk");
        return false;
    }
    if (!fits) {
        emul_data_drop(e, msg, st, count, false, size_why);
        *result = NA_PROTOCOL_ERROR;
        return false;
    }
    return true;
}

/* Receive the matched chunk msg, whose size was checked to be exactly len,
 * into the chunk's memory (ptr, count, dt from emul_mem_chunk; no copy). fn runs
 * when it landed: at once for a small chunk, else from the request table.
 * The caller counted it outstanding. */
void emul_chunk_recv(struct hgx_emul *e, MPI_Message *msg, void *ptr, int count,
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
            emul_type_release(&dt);
            return;
        }
        if (rc == MPI_SUCCESS && !flag)
            rc = MPI_Wait(&r, &st); /* no room in the table; matched, so it completes */
    }
    emul_type_release(&dt);
    fn(obj, aux, rc, &st);
}

/*------------------------------------------------------------ data receive */

/* A data message matched by a probe: attributed by tag (which transfer and
 * which use of its id) and source, then checked against the chunk it would
 * be before anything is received (emul_origin_data, emul_target_data); other tags are
 * strays. */
static void emul_data_msg(struct hgx_emul *e, MPI_Message *msg, const MPI_Status *st)
{
    int count = MPI_UNDEFINED; /* stays so above INT_MAX bytes */
    MPI_Get_count(st, MPI_BYTE, &count);
    uint32_t id;
    int dir = emul_data_tag_decode(e, st->MPI_TAG, &id);
    if (st->MPI_SOURCE >= 0 && st->MPI_SOURCE < e->size && dir >= 0) {
        if (dir)
            emul_target_data(e, msg, st, count, id);
        else
            emul_origin_data(e, msg, st, count, id);
        return;
    }
    emul_data_drop(e, msg, st, count, false, "not a data tag");
}

void hgx_emul_data_msg(struct hgx_emul *e, MPI_Message *msg, const MPI_Status *st)
{
    emul_data_msg(e, msg, st);
}

/* Separate data communicator: one MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG)
 * finds the next data message whatever the number of transfers; with none
 * receiving, only every DATA_IDLE_EVERY-th call looks (for strays). */
int emul_data_take_any(struct hgx_emul *e)
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
            emul_err_log("MPI_Improbe (data)", rc);
            break;
        }
        if (!flag)
            break;
        emul_data_msg(e, &msg, &st);
        n++;
    }
    return n;
}

/* Data on the control communicator (mpi+dynamic connections): a wildcard
 * probe would claim the caller's messages, so the tag of each receiving
 * transfer is probed, from any source (a chunk from another rank is dropped).
 * A message on a tag no transfer receives on stays queued in MPI. */
int emul_data_take_tags(struct hgx_emul *e)
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
    struct hgx_list *it;
    hgx_list_for_each(it, &e->rx)
    {
        e->rx_tags[ntags++] = hgx_list_entry(it, struct rxlink, link)->tag;
    }
    int n = 0;
    for (unsigned i = 0; i < ntags && n < DATA_BATCH; i++) {
        int flag = 1;
        while (flag && n < DATA_BATCH) {
            MPI_Message msg;
            MPI_Status st;
            int rc =
                MPI_Improbe(MPI_ANY_SOURCE, e->rx_tags[i], e->dcomm, &flag, &msg, &st);
            if (rc != MPI_SUCCESS) {
                emul_err_log("MPI_Improbe (data)", rc);
                return n;
            }
            if (flag) {
                emul_data_msg(e, &msg, &st);
                n++;
            }
        }
    }
    return n;
}
