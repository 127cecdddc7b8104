/*
 * emul_registry.c -- put/get over two-sided MPI: memory registry and how a region is
 * described to MPI. The emulation as a whole: hgx_emul.h, emul_int.h,
 * docs/mpi-emul-cancel.md.
 */
#include "config.h"
#include "emul_int.h"

/*------------------------------------------------------------ memory */

na_return_t hgx_emul_mem_register(struct hgx_emul *e, struct hgx_emul_mem *m)
{
    uint32_t id;
    for (id = 1; id < e->reg_cap; id++)
        if (!e->reg[id])
            break;
    if (id >= e->reg_cap) {
        uint32_t cap = e->reg_cap ? e->reg_cap * 2 : 64;
        struct hgx_emul_mem **r = realloc(e->reg, sizeof(*r) * cap);
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

void hgx_emul_mem_deregister(struct hgx_emul *e, struct hgx_emul_mem *m)
{
    if (m->id && m->id < e->reg_cap && e->reg[m->id] == m)
        e->reg[m->id] = NULL;
    m->id = 0;
    m->gen = 0;
}

/* Describe bytes [off, off+len) of a local region for MPI (no copy). */
int emul_mem_chunk(const struct hgx_emul_mem *m, uint64_t off, size_t len, void **ptr,
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

void emul_type_release(MPI_Datatype *dt)
{
    if (*dt != MPI_BYTE)
        MPI_Type_free(dt); /* pending communication still completes normally */
}

size_t emul_chunk_len(size_t size, uint32_t i)
{
    size_t off = (size_t)i * HGX_EMUL_CHUNK;
    return size - off < HGX_EMUL_CHUNK ? size - off : HGX_EMUL_CHUNK;
}

uint32_t emul_nchunks_of(uint64_t size)
{
    return (uint32_t)((size + HGX_EMUL_CHUNK - 1) / HGX_EMUL_CHUNK);
}
