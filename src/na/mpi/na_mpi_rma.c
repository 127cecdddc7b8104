/*
 * na_mpi_rma.c -- the MPI NA plugin: memory handles and put/get over the emulation
 * (src/mpi_emul). The plugin as a whole: na_mpi_priv.h.
 */
#include "na_mpi_priv.h"

/*------------------------------------------------------------ memory */

static na_return_t nm_mem_new(na_class_t *na_class, struct na_segment *segs, size_t n,
                              unsigned long flags, na_mem_handle_t **mem_handle_p)
{
    struct nm_mem *m = calloc(1, sizeof(*m));
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

na_return_t nm_mem_handle_create(na_class_t *na_class, void *buf, size_t buf_size,
                                 unsigned long flags, na_mem_handle_t **mem_handle_p)
{
    struct na_segment s = {buf, buf_size};
    return nm_mem_new(na_class, &s, 1, flags, mem_handle_p);
}

na_return_t nm_mem_handle_create_segments(na_class_t *na_class,
                                          struct na_segment *segments,
                                          size_t segment_count, unsigned long flags,
                                          na_mem_handle_t **mem_handle_p)
{
    for (size_t i = 0; i < segment_count; i++)
        if (segments[i].len > INT_MAX) {
            HGX_LOG_ERROR(MPI, "segment %zu is larger than INT_MAX bytes", i);
            return NA_INVALID_ARG;
        }
    return nm_mem_new(na_class, segments, segment_count, flags, mem_handle_p);
}

void nm_mem_handle_free(na_class_t *na_class, na_mem_handle_t *mh)
{
    (void)na_class;
    struct nm_mem *m = (struct nm_mem *)mh;
    if (m->em.segs && m->em.segs != &m->one)
        free(m->em.segs);
    free(m);
}

size_t nm_mem_max_segments(const na_class_t *na_class)
{
    (void)na_class;
    return 65536;
}

na_return_t nm_mem_register(na_class_t *na_class, na_mem_handle_t *mh)
{
    struct nm_class *pc = PC(na_class);
    hgx_lock(&pc->lock);
    na_return_t ret = hgx_emul_mem_register(pc->emul, &((struct nm_mem *)mh)->em);
    hgx_unlock(&pc->lock);
    return ret;
}

na_return_t nm_mem_deregister(na_class_t *na_class, na_mem_handle_t *mh)
{
    struct nm_class *pc = PC(na_class);
    hgx_lock(&pc->lock);
    hgx_emul_mem_deregister(pc->emul, &((struct nm_mem *)mh)->em);
    hgx_unlock(&pc->lock);
    return NA_SUCCESS;
}

size_t nm_mem_serialize_size(na_class_t *na_class, na_mem_handle_t *mh)
{
    (void)na_class, (void)mh;
    return sizeof(struct hgx_emul_mem_wire);
}

na_return_t nm_mem_serialize(na_class_t *na_class, void *buf, size_t buf_size,
                             na_mem_handle_t *mh)
{
    (void)na_class, (void)buf_size;
    struct hgx_emul_mem_wire w;
    hgx_emul_mem_serialize(&((struct nm_mem *)mh)->em, &w);
    memcpy(buf, &w, sizeof(w));
    return NA_SUCCESS;
}

na_return_t nm_mem_deserialize(na_class_t *na_class, na_mem_handle_t **mh_p,
                               const void *buf, size_t buf_size)
{
    struct nm_mem *m = calloc(1, sizeof(*m));
    if (!m)
        return NA_NOMEM;
    na_return_t ret = hgx_emul_mem_deserialize(
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

static void nm_rma_done(void *arg, na_return_t ret)
{
    na_op_id_t *op = arg;
    struct nm_op *mo = na_op_plugin(op);
    mo->oreq = NULL;
    PC(mo->na_class)->nrma--;
    nm_op_done(PC(mo->na_class), op, ret);
}

na_return_t nm_rma(na_class_t *na_class, na_op_id_t *op, bool put, na_mem_handle_t *local,
                   na_offset_t local_offset, na_mem_handle_t *remote,
                   na_offset_t remote_offset, size_t size, na_addr_t *remote_addr)
{
    struct nm_class *pc = PC(na_class);
    struct nm_op *mo = na_op_plugin(op);
    struct nm_mem *rm = (struct nm_mem *)remote;
    int rank = ((struct nm_addr *)remote_addr)->rank;
    nm_mark_active(pc, ACT_POST);
    if (pc->dynamic) {
        /* the owner field names a rank in the owner's own job; route by connection */
        struct dyn_conn *k = ((struct nm_addr *)remote_addr)->conn;
        struct hgx_emul_mem rem = rm->em;
        rem.owner = rank;
        nm_op_start(mo, na_class);
        hgx_lock(&pc->lock);
        if (k->dead) {
            hgx_unlock(&pc->lock);
            HGX_LOG_ERROR(MPI, "mpi+dynamic: connection %d was closed by the peer",
                          k->id);
            return NA_ADDRNOTAVAIL;
        }
        struct hgx_emul_oreq *o = NULL;
        pc->nrma++; /* before: a 0-byte transfer completes inside hgx_emul_xfer */
        na_return_t ret =
            hgx_emul_xfer(k->emul, put, &((struct nm_mem *)local)->em, local_offset, &rem,
                          remote_offset, size, nm_rma_done, op, &o);
        if (ret == NA_SUCCESS) {
            mo->oreq = o;
            mo->emul = k->emul;
        } else {
            pc->nrma--;
        }
        hgx_unlock(&pc->lock);
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
    nm_op_start(mo, na_class);
    hgx_lock(&pc->lock);
    struct hgx_emul_oreq *o = NULL;
    pc->nrma++; /* before: a 0-byte transfer completes inside hgx_emul_xfer */
    na_return_t ret =
        hgx_emul_xfer(pc->emul, put, &((struct nm_mem *)local)->em, local_offset, &rm->em,
                      remote_offset, size, nm_rma_done, op, &o);
    if (ret == NA_SUCCESS) {
        mo->oreq = o;
        mo->emul = pc->emul;
    } else {
        pc->nrma--;
    }
    hgx_unlock(&pc->lock);
    return ret;
}
