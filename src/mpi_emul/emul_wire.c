/*
 * emul_wire.c -- put/get over two-sided MPI: wire formats (memory handles, control
 * packets) and data tags. The emulation as a whole: hgx_emul.h, emul_int.h,
 * docs/mpi-emul-cancel.md.
 */
#include "config.h"
#include "emul_int.h"

#include "hgx_wire.h"

/* Memory handle on the wire: the fields of struct hgx_emul_mem_wire in their
 * order, little-endian. */
_Static_assert(sizeof(struct hgx_emul_mem_wire) == 32,
               "struct hgx_emul_mem_wire has the size of its wire format");

void hgx_emul_mem_serialize(const struct hgx_emul_mem *m, struct hgx_emul_mem_wire *w)
{
    unsigned char *b = (unsigned char *)w;
    hgx_put_u32(b, HGX_EMUL_MEM_MAGIC);
    hgx_put_u32(b + 4, (uint32_t)m->owner);
    hgx_put_u32(b + 8, m->id);
    hgx_put_u32(b + 12, m->gen);
    hgx_put_u32(b + 16, (uint32_t)m->flags);
    hgx_put_u32(b + 20, 0);
    hgx_put_u64(b + 24, m->len);
}

na_return_t hgx_emul_mem_deserialize(struct hgx_emul_mem *m, const void *buf, size_t size,
                                     int comm_size)
{
    const unsigned char *b = buf;
    if (size < sizeof(struct hgx_emul_mem_wire))
        return NA_INVALID_ARG;
    int32_t owner = (int32_t)hgx_get_u32(b + 4);
    uint32_t flags = hgx_get_u32(b + 16);
    uint64_t len = hgx_get_u64(b + 24);
    if (hgx_get_u32(b) != HGX_EMUL_MEM_MAGIC || owner < 0 || owner >= comm_size ||
        hgx_get_u32(b + 8) == 0 ||
        (flags != NA_MEM_READ_ONLY && flags != NA_MEM_WRITE_ONLY &&
         flags != NA_MEM_READWRITE) ||
        len == 0 || len > SIZE_MAX)
        return NA_INVALID_ARG;
    memset(m, 0, sizeof(*m));
    m->owner = owner;
    m->id = hgx_get_u32(b + 8);
    m->gen = hgx_get_u32(b + 12);
    m->flags = flags;
    m->len = (size_t)len;
    return NA_SUCCESS;
}

/*------------------------------------------------------------ data tags */

#define GEN_STRIDE (2 * (long long)HGX_EMUL_NSLOTS) /* tags per generation >= 1 */

long long hgx_emul_gen_span(unsigned bits)
{
    return bits ? ((1ll << bits) - 1) * GEN_STRIDE : 0;
}

unsigned hgx_emul_gen_bits(long long room)
{
    unsigned b = 0;
    while (b < GEN_BITS_MAX && hgx_emul_gen_span(b + 1) <= room)
        b++;
    return b;
}

/* The data tag of request id with sequence number seq whose origin uses
 * bits generation bits (put: origin -> target; get: target -> origin). */
int emul_data_tag(const struct hgx_emul *e, bool put, uint32_t id, uint64_t seq,
                  unsigned bits)
{
    uint64_t g = bits ? seq & ((1ull << bits) - 1) : 0;
    if (g == 0)
        return (put ? e->tag_put : e->tag_get) + (int)id;
    return (int)(e->tag_gen + (long long)(g - 1) * GEN_STRIDE +
                 (put ? 0 : HGX_EMUL_NSLOTS) + id);
}

/* Which request a data tag names: 1 put, 0 get, -1 no data tag; *id. Any
 * generation this side has tags for; the transfer's own tag is checked by
 * the caller. */
int emul_data_tag_decode(const struct hgx_emul *e, int tag, uint32_t *id)
{
    if (tag >= e->tag_put && tag < e->tag_put + HGX_EMUL_NSLOTS) {
        *id = (uint32_t)(tag - e->tag_put);
        return 1;
    }
    if (tag >= e->tag_get && tag < e->tag_get + HGX_EMUL_NSLOTS) {
        *id = (uint32_t)(tag - e->tag_get);
        return 0;
    }
    long long off = (long long)tag - e->tag_gen;
    if (!e->gen_bits || off < 0 || off >= hgx_emul_gen_span(e->gen_bits))
        return -1;
    *id = (uint32_t)(off % HGX_EMUL_NSLOTS);
    return (off / HGX_EMUL_NSLOTS) % 2 == 0;
}

/*------------------------------------------------------------ control sends */

static void emul_ctrl_sent(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux, (void)st;
    if (err != MPI_SUCCESS && err != MPI_ERR_REQUEST)
        emul_err_log("control packet send", err);
    free(obj);
}

/* Control packet on the wire: CTRL_WIRE_SIZE bytes, the fields of struct
 * hgx_emul_ctrl in their order, little-endian. */
_Static_assert(sizeof(struct hgx_emul_ctrl) == CTRL_WIRE_SIZE,
               "struct hgx_emul_ctrl has the size of its wire format");

static void emul_ctrl_encode(const struct hgx_emul_ctrl *p, unsigned char *b)
{
    hgx_put_u32(b, HGX_EMUL_CTRL_MAGIC);
    hgx_put_u32(b + 4, p->type);
    hgx_put_u32(b + 8, p->req_id);
    hgx_put_u32(b + 12, p->handle_id);
    hgx_put_u32(b + 16, p->gen);
    hgx_put_u32(b + 20, (uint32_t)p->status);
    hgx_put_u64(b + 24, p->offset);
    hgx_put_u64(b + 32, p->size);
    hgx_put_u64(b + 40, p->seq);
}

bool emul_ctrl_decode(const unsigned char *b, struct hgx_emul_ctrl *p)
{
    p->magic = hgx_get_u32(b);
    p->type = hgx_get_u32(b + 4);
    p->req_id = hgx_get_u32(b + 8);
    p->handle_id = hgx_get_u32(b + 12);
    p->gen = hgx_get_u32(b + 16);
    p->status = (int32_t)hgx_get_u32(b + 20);
    p->offset = hgx_get_u64(b + 24);
    p->size = hgx_get_u64(b + 32);
    p->seq = hgx_get_u64(b + 40);
    return p->magic == HGX_EMUL_CTRL_MAGIC;
}

int emul_ctrl_send(struct hgx_emul *e, int dest, const struct hgx_emul_ctrl *p)
{
    unsigned char *c = malloc(CTRL_WIRE_SIZE);
    if (!c)
        return MPI_ERR_NO_MEM;
    emul_ctrl_encode(p, c);
    MPI_Request r;
    int rc = MPI_Isend(c, CTRL_WIRE_SIZE, MPI_BYTE, dest, e->tag_ctrl, e->comm, &r);
    if (rc != MPI_SUCCESS) {
        free(c);
        return rc;
    }
    if (hgx_mreqtab_add(e->tab, r, emul_ctrl_sent, c, 0) != 0) {
        MPI_Wait(&r, MPI_STATUS_IGNORE); /* small, eager */
        free(c);
    }
    return MPI_SUCCESS;
}

void emul_ctrl_reply(struct hgx_emul *e, int dest, uint32_t type, uint32_t rid,
                     uint64_t seq, na_return_t status)
{
    struct hgx_emul_ctrl r = {
        .type = type, .req_id = rid, .seq = seq, .status = (int32_t)status};
    int rc = emul_ctrl_send(e, dest, &r);
    if (rc != MPI_SUCCESS)
        emul_err_log("sending a control reply", rc);
}
