/*
 * fuzz_mpi_emul_packet.c -- libFuzzer target for mpi_emul control packets
 * (src/mpi_emul/hgx_emul.c: hgx_emul_progress -> ctrl_take_one -> ctrl_dispatch).
 *
 * The real hgx_emul.c and hgx_mreqtab.c run over a tiny in-process MPI stub
 * defined here (MPICH header ABI: integer handles; no MPI library is linked),
 * so untrusted packets take the exact path they take in production: they are
 * probed (MPI_Improbe) and received (MPI_Mrecv) by hgx_emul_progress() and
 * handled there, then data/ack completions run from hgx_mreqtab_poll().
 *
 * Setup per input: rank 0 of 4 registers four regions (read-write, read-only
 * with three segments, write-only, and one deregistered = freed), and starts a
 * put to rank 1 and a get from rank 2 so that replies have requests to match.
 * Input: records [ctl][len bytes]: ctl bits 0-1 = source rank, bits 2-7 =
 * length (0 -> 48, the packet size; 63 -> a truncated oversized packet).
 *
 * Oracles: every data transfer mpi_emul posts (Isend on a data tag) lies
 * inside one registered buffer and has its permission (send = read), and its
 * tag is one of the instance's data tags (2 tag-generation bits; a request
 * announcing more is refused); the stub aborts otherwise. Data chunks are received only
 * after a probe matched them (MPI_Imrecv / MPI_Mrecv), and this stub delivers control
 * packets only, so the data receive path is exercised by mpitests/test_mpi_emul_cancel.c,
 * not here. At the end every request and datatype was released, and ASan/UBSan/ LSan
 * report nothing.
 */
#include "hgx_emul.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_TAG_CTRL 7
#define FZ_TAG_PUT 1000
#define FZ_TAG_GET 3000
#define FZ_TAG_GEN 5000 /* tag generations 1..3 (2 bits): 5000 .. 5000 + 3 * 2048 - 1 */
#define FZ_GEN_BITS 2
#define FZ_NRANKS 4

/* ---- buffers data may touch --------------------------------------------- */
struct fz_buf {
    unsigned char *p;
    size_t len;
    bool r, w;
};
static struct fz_buf fz_bufs[8];
static int fz_nbufs;

static void fz_check_block(const void *p, size_t len, bool write)
{
    const unsigned char *c = p;
    for (int i = 0; i < fz_nbufs; i++) {
        struct fz_buf *b = &fz_bufs[i];
        if (c >= b->p && c < b->p + b->len) {
            if (len > (size_t)(b->p + b->len - c)) {
                fprintf(stderr, "mpi_emul touched %zu bytes past a region of %zu\n",
                        len - (size_t)(b->p + b->len - c), b->len);
                abort();
            }
            if ((write && !b->w) || (!write && !b->r)) {
                fprintf(stderr, "mpi_emul %s a region without permission\n",
                        write ? "wrote" : "read");
                abort();
            }
            return;
        }
    }
    fprintf(stderr, "mpi_emul %s %zu bytes outside every region\n",
            write ? "wrote" : "read", len);
    abort();
}

/* ---- datatypes ----------------------------------------------------------- */
#define FZ_DT_BASE 0x100000
struct fz_type {
    bool used;
    int n;
    int *bl;
    MPI_Aint *disp;
};
static struct fz_type fz_types[64];

static void fz_check_data(const void *buf, int count, MPI_Datatype dt, bool write)
{
    if (dt == MPI_BYTE) {
        if (count < 0)
            abort();
        if (count > 0)
            fz_check_block(buf, (size_t)count, write);
        return;
    }
    int i = dt - FZ_DT_BASE;
    if (i < 0 || i >= 64 || !fz_types[i].used || buf != MPI_BOTTOM || count != 1)
        abort();
    for (int k = 0; k < fz_types[i].n; k++)
        fz_check_block((const void *)fz_types[i].disp[k], (size_t)fz_types[i].bl[k],
                       write);
}

/* ---- requests ---------------------------------------------------------------- */
struct fz_req {
    bool used, send, cancelled, delivered;
    int tag, src, count;
    void *buf;
};
static struct fz_req fz_reqs[4096];

static int fz_req_new(bool send, void *buf, int count, int peer, int tag, MPI_Request *r)
{
    for (int i = 0; i < 4096; i++)
        if (!fz_reqs[i].used) {
            fz_reqs[i] = (struct fz_req){.used = true,
                                         .send = send,
                                         .tag = tag,
                                         .src = peer,
                                         .count = count,
                                         .buf = buf};
            *r = i + 1;
            return MPI_SUCCESS;
        }
    return MPI_ERR_NO_MEM;
}

static struct fz_req *fz_req_get(MPI_Request *r)
{
    if (!r || *r < 1 || *r > 4096 || !fz_reqs[*r - 1].used)
        abort(); /* use of a freed or invalid request */
    return &fz_reqs[*r - 1];
}

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    (void)comm;
    *rank = 0;
    return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
    (void)comm;
    *size = FZ_NRANKS;
    return MPI_SUCCESS;
}

int MPI_Error_class(int errorcode, int *errorclass)
{
    *errorclass = errorcode;
    return MPI_SUCCESS;
}

int MPI_Error_string(int errorcode, char *string, int *resultlen)
{
    *resultlen = snprintf(string, MPI_MAX_ERROR_STRING, "stub error %d", errorcode);
    return MPI_SUCCESS;
}

int MPI_Get_address(const void *location, MPI_Aint *address)
{
    *address = (MPI_Aint)location;
    return MPI_SUCCESS;
}

int MPI_Type_create_hindexed(int count, const int bl[], const MPI_Aint disp[],
                             MPI_Datatype old, MPI_Datatype *newtype)
{
    if (old != MPI_BYTE || count <= 0)
        abort();
    for (int i = 0; i < 64; i++)
        if (!fz_types[i].used) {
            struct fz_type *t = &fz_types[i];
            t->bl = malloc(sizeof(int) * (size_t)count);
            t->disp = malloc(sizeof(MPI_Aint) * (size_t)count);
            if (!t->bl || !t->disp)
                abort();
            memcpy(t->bl, bl, sizeof(int) * (size_t)count);
            memcpy(t->disp, disp, sizeof(MPI_Aint) * (size_t)count);
            t->n = count;
            t->used = true;
            *newtype = FZ_DT_BASE + i;
            return MPI_SUCCESS;
        }
    return MPI_ERR_NO_MEM;
}

int MPI_Type_commit(MPI_Datatype *dt)
{
    (void)dt;
    return MPI_SUCCESS;
}

int MPI_Type_free(MPI_Datatype *dt)
{
    int i = *dt - FZ_DT_BASE;
    if (i < 0 || i >= 64 || !fz_types[i].used)
        abort();
    free(fz_types[i].bl);
    free(fz_types[i].disp);
    fz_types[i].used = false;
    *dt = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
              MPI_Request *r)
{
    (void)comm;
    if (tag != FZ_TAG_CTRL)
        fz_check_data(buf, count, dt, true);
    return fz_req_new(false, buf, count, source, tag, r);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
              MPI_Comm comm, MPI_Request *r)
{
    (void)comm;
    if (dest < 0 || dest >= FZ_NRANKS)
        return MPI_ERR_RANK;
    if (tag != FZ_TAG_CTRL) {
        bool in_put = tag >= FZ_TAG_PUT && tag < FZ_TAG_PUT + HGX_EMUL_NSLOTS,
             in_get = tag >= FZ_TAG_GET && tag < FZ_TAG_GET + HGX_EMUL_NSLOTS,
             in_gen = tag >= FZ_TAG_GEN &&
                      tag < FZ_TAG_GEN + (int)hgx_emul_gen_span(FZ_GEN_BITS);
        if (!in_put && !in_get && !in_gen) {
            fprintf(stderr, "mpi_emul sent data on tag %d, outside its data tags\n", tag);
            abort();
        }
        fz_check_data(buf, count, dt, false);
    }
    return fz_req_new(true, (void *)buf, count, dest, tag, r);
}

int MPI_Cancel(MPI_Request *r)
{
    fz_req_get(r)->cancelled = true;
    return MPI_SUCCESS;
}

int MPI_Request_free(MPI_Request *r)
{
    fz_req_get(r)->used = false;
    *r = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

/* Sends, cancelled requests, data receives and delivered control receives complete. */
int MPI_Test(MPI_Request *r, int *flag, MPI_Status *st)
{
    struct fz_req *q = fz_req_get(r);
    bool ctrl_recv = !q->send && q->tag == FZ_TAG_CTRL;
    *flag = 0;
    if (ctrl_recv && !q->delivered && !q->cancelled)
        return MPI_SUCCESS;
    int err = MPI_SUCCESS;
    if (st && st != MPI_STATUS_IGNORE) {
        memset(st, 0, sizeof(*st));
        st->MPI_SOURCE = q->src;
        st->MPI_TAG = q->tag;
        st->count_lo = q->cancelled ? 0 : q->count;
        st->count_hi_and_cancelled = q->cancelled ? 1 : 0;
        if (q->delivered && q->count < 0) { /* oversized packet */
            st->count_lo = 64;
            err = MPI_ERR_TRUNCATE;
        }
        st->MPI_ERROR = err;
    }
    q->used = false;
    *r = MPI_REQUEST_NULL;
    *flag = 1;
    return err;
}

int MPI_Wait(MPI_Request *r, MPI_Status *st)
{
    int flag;
    fz_req_get(r)->cancelled = true;
    return MPI_Test(r, &flag, st);
}

int MPI_Test_cancelled(const MPI_Status *st, int *flag)
{
    *flag = st->count_hi_and_cancelled & 1;
    return MPI_SUCCESS;
}

int MPI_Get_count(const MPI_Status *st, MPI_Datatype dt, int *count)
{
    (void)dt;
    *count = st->count_lo;
    return MPI_SUCCESS;
}

/* The control packet waiting to be probed (mpi_emul takes control packets
 * with MPI_Improbe + MPI_Mrecv). */
static unsigned char fz_msg[128];
static int fz_msg_len, fz_msg_src;
static bool fz_msg_pending, fz_msg_probed;

int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                MPI_Status *st)
{
    (void)comm;
    *flag = 0;
    if (!fz_msg_pending || fz_msg_probed || tag != FZ_TAG_CTRL ||
        (source != MPI_ANY_SOURCE && source != fz_msg_src))
        return MPI_SUCCESS;
    fz_msg_probed = true;
    *flag = 1;
    *message = 1;
    memset(st, 0, sizeof(*st));
    st->MPI_SOURCE = fz_msg_src;
    st->MPI_TAG = tag;
    st->count_lo = fz_msg_len;
    return MPI_SUCCESS;
}

/* Non-claiming probe (the target bound looks for a waiting chunk): only
 * control packets ever wait here. */
int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *st)
{
    (void)comm;
    *flag = fz_msg_pending && !fz_msg_probed && tag == FZ_TAG_CTRL &&
            (source == MPI_ANY_SOURCE || source == fz_msg_src);
    if (*flag && st != MPI_STATUS_IGNORE) {
        memset(st, 0, sizeof(*st));
        st->MPI_SOURCE = fz_msg_src;
        st->MPI_TAG = tag;
        st->count_lo = fz_msg_len;
    }
    return MPI_SUCCESS;
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *message, MPI_Status *st)
{
    if (!fz_msg_probed || *message != 1 || dt != MPI_BYTE || count < 0)
        abort(); /* receive of a message that was not probed */
    memcpy(buf, fz_msg, (size_t)(count < fz_msg_len ? count : fz_msg_len));
    fz_msg_pending = fz_msg_probed = false;
    *message = MPI_MESSAGE_NULL;
    if (st && st != MPI_STATUS_IGNORE) {
        memset(st, 0, sizeof(*st));
        st->MPI_SOURCE = fz_msg_src;
        st->count_lo = count < fz_msg_len ? count : fz_msg_len;
    }
    return count < fz_msg_len ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
}

int MPI_Imrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *message,
               MPI_Request *r)
{
    (void)buf, (void)count, (void)dt, (void)message, (void)r;
    abort(); /* the stub never matches a data message */
}

int MPI_Get_elements_x(const MPI_Status *st, MPI_Datatype dt, MPI_Count *count)
{
    (void)dt;
    *count = st->count_lo;
    return MPI_SUCCESS;
}

static void fz_deliver(const unsigned char *pkt, int len, int src)
{
    memcpy(fz_msg, pkt, (size_t)len);
    fz_msg_len = len;
    fz_msg_src = src;
    fz_msg_pending = true;
    fz_msg_probed = false;
}

/* ---- the target ----------------------------------------------------------- */
static void fz_done(void *arg, na_return_t ret)
{
    (void)ret;
    (*(int *)arg)++;
}

static void fz_add_buf(unsigned char *p, size_t len, bool r, bool w)
{
    fz_bufs[fz_nbufs++] = (struct fz_buf){p, len, r, w};
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("HG_LOG_LEVEL", "none", 0);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hgx_mreqtab tab;
    struct hgx_emul *e = NULL;
    static unsigned char a[100], b0[7], b1[50], b2[13], c[30], d[16], l[64];
    struct na_segment bsegs[3] = {{b0, sizeof(b0)}, {b1, sizeof(b1)}, {b2, sizeof(b2)}};
    struct na_segment aseg = {a, sizeof(a)}, cseg = {c, sizeof(c)}, dseg = {d, sizeof(d)},
                      lseg = {l, sizeof(l)};
    struct hgx_emul_mem
        ma = {.flags = NA_MEM_READWRITE, .len = sizeof(a), .nseg = 1, .segs = &aseg},
        mb = {.flags = NA_MEM_READ_ONLY, .len = 70, .nseg = 3, .segs = bsegs},
        mc = {.flags = NA_MEM_WRITE_ONLY, .len = sizeof(c), .nseg = 1, .segs = &cseg},
        md = {.flags = NA_MEM_READWRITE, .len = sizeof(d), .nseg = 1, .segs = &dseg},
        ml = {.flags = NA_MEM_READWRITE, .len = sizeof(l), .nseg = 1, .segs = &lseg};

    fz_nbufs = 0;
    fz_add_buf(a, sizeof(a), true, true);
    fz_add_buf(b0, sizeof(b0), true, false);
    fz_add_buf(b1, sizeof(b1), true, false);
    fz_add_buf(b2, sizeof(b2), true, false);
    fz_add_buf(c, sizeof(c), false, true);
    fz_add_buf(l, sizeof(l), true, true);
    /* d is deregistered: no access at all */

    hgx_mreqtab_init(&tab);
    if (hgx_emul_create(&e, MPI_COMM_WORLD, &tab, FZ_TAG_CTRL, FZ_TAG_PUT, FZ_TAG_GET) !=
        NA_SUCCESS)
        abort();
    hgx_emul_set_tag_gens(e, FZ_TAG_GEN, FZ_GEN_BITS);
    if (hgx_emul_mem_register(e, &ma) || hgx_emul_mem_register(e, &mb) ||
        hgx_emul_mem_register(e, &mc) || hgx_emul_mem_register(e, &md))
        abort();
    hgx_emul_mem_deregister(e, &md);
    if (hgx_emul_mem_register(e, &ml))
        abort();

    /* Two origin requests for replies to match (ids 0 and 1). */
    struct hgx_emul_mem r1 = {
        .id = 5, .gen = 9, .flags = NA_MEM_READWRITE, .len = 64, .owner = 1};
    struct hgx_emul_mem r2 = {
        .id = 6, .gen = 3, .flags = NA_MEM_READWRITE, .len = 64, .owner = 2};
    struct hgx_emul_oreq *o1, *o2;
    int done = 0;
    if (hgx_emul_xfer(e, true, &ml, 0, &r1, 0, 32, fz_done, &done, &o1) != NA_SUCCESS ||
        hgx_emul_xfer(e, false, &ml, 32, &r2, 8, 32, fz_done, &done, &o2) != NA_SUCCESS)
        abort();

    size_t pos = 0;
    while (pos < size) {
        unsigned char ctl = data[pos++];
        int len = (ctl >> 2) == 0 ? 48 : (ctl >> 2); /* 48: sizeof(struct ctrl_pkt) */
        if (len == 63)
            len = 80; /* oversized */
        unsigned char pkt[80] = {0};
        size_t take = size - pos < (size_t)len ? size - pos : (size_t)len;
        memcpy(pkt, data + pos, take);
        pos += take;
        fz_deliver(pkt, len, ctl & 3);
        int nd;
        for (int k = 0; k < 3; k++) {
            hgx_emul_progress(e);
            if (hgx_mreqtab_poll(&tab, &nd) != MPI_SUCCESS)
                abort();
        }
        fz_msg_pending = false; /* a packet mpi_emul did not take is dropped */
    }
    hgx_emul_close(e);
    hgx_mreqtab_destroy(&tab, 0);
    hgx_emul_free(e);
    for (int i = 0; i < 4096; i++)
        if (fz_reqs[i].used) {
            fprintf(stderr, "request %d (tag %d) never released\n", i + 1,
                    fz_reqs[i].tag);
            abort();
        }
    for (int i = 0; i < 64; i++)
        if (fz_types[i].used)
            abort();
    return 0;
}
