/*
 * test_na_mpi.c -- NA over mpi+static, run as `mpirun -np 3 ./test_na_mpi`:
 * rank 0 serves, the other ranks are clients. The application owns MPI (it
 * calls MPI_Init_thread) and does its own MPI_COMM_WORLD traffic between NA
 * operations. Prints cmocka-style result lines and a summary on rank 0.
 */
#include "hgx_emul.h"
#include "mpitest_na.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BIG ((size_t)2 * HGX_EMUL_CHUNK + 123) /* > 2 emulation chunks */
#define RO_SIZE 4096
#define SEG0 1000
#define SEG1 5000
#define SEG2 ((size_t)HGX_EMUL_CHUNK + 77) /* crosses a chunk boundary */
#define SEG_SIZE (SEG0 + SEG1 + SEG2)
#define PINGS 2000
#define NSEQ 64                /* unexpected messages a client sends back to back */
#define SEQ_BIG 6000           /* every 8th of them: above the eager size */
#define CLIENT_MAX_UNEXP 16384 /* clients' max_unexpected_size; the server's: default */
#define OVERSIZED 12000        /* sent once by each client: too big for the server */

enum { CMD_ECHO = 1, CMD_STALL, CMD_PING, CMD_DONE, CMD_SEQ };

static int rank, nprocs, failures, passes;
static na_class_t *cls;
static na_context_t *ctx;

static void result(const char *name, int ok, const char *why)
{
    mpitest_result(rank, &passes, &failures, name, ok, why);
}

/* Progress until d completes or timeout_s passes; 0 on timeout. */
static int wait_for(struct done *d, double timeout_s)
{
    return mpitest_wait(cls, ctx, d, timeout_s);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131u + seed * 7u + (i >> 9));
}

/* A barrier on MPI_COMM_WORLD that keeps NA progressing (peers may need us). */
static void progress_barrier(void)
{
    MPI_Request bar;
    int flag = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &bar);
    while (!flag) {
        NA_Progress(cls, ctx, 10);
        NA_Trigger(ctx, 64, NULL);
        MPI_Test(&bar, &flag, MPI_STATUS_IGNORE);
    }
}

struct descs { /* serialized server handles, broadcast with plain MPI */
    unsigned char rw[64], ro[64], seg[64];
    size_t len;
};

/*------------------------------------------------------------------ server */

static void server(void)
{
    size_t nclients = (size_t)nprocs - 1;
    unsigned char *rw = malloc(BIG * nclients), *ro = malloc(RO_SIZE), ro_copy[RO_SIZE];
    unsigned char *s0 = malloc(SEG0 * nclients), *s1 = malloc(SEG1 * nclients),
                  *s2 = malloc(SEG2 * nclients);
    fill(ro, RO_SIZE, 99);
    memcpy(ro_copy, ro, RO_SIZE);
    memset(rw, 0, BIG * nclients);
    na_mem_handle_t *hrw, *hro, *hseg;
    struct na_segment segs[3] = {
        {s0, SEG0 * nclients}, {s1, SEG1 * nclients}, {s2, SEG2 * nclients}};
    struct descs d;
    memset(&d, 0, sizeof(d));
    NA_Mem_handle_create(cls, rw, BIG * nclients, NA_MEM_READWRITE, &hrw);
    NA_Mem_handle_create(cls, ro, RO_SIZE, NA_MEM_READ_ONLY, &hro);
    NA_Mem_handle_create_segments(cls, segs, 3, NA_MEM_READWRITE, &hseg);
    NA_Mem_register(cls, hrw, NA_MEM_TYPE_HOST, 0);
    NA_Mem_register(cls, hro, NA_MEM_TYPE_HOST, 0);
    NA_Mem_register(cls, hseg, NA_MEM_TYPE_HOST, 0);
    d.len = NA_Mem_handle_get_serialize_size(cls, hrw);
    NA_Mem_handle_serialize(cls, d.rw, sizeof(d.rw), hrw);
    NA_Mem_handle_serialize(cls, d.ro, sizeof(d.ro), hro);
    NA_Mem_handle_serialize(cls, d.seg, sizeof(d.seg), hseg);
    MPI_Bcast(&d, (int)sizeof(d), MPI_BYTE, 0, MPI_COMM_WORLD);

    size_t max = NA_Msg_get_max_unexpected_size(cls);
    unsigned char *in = malloc(max), *out = malloc(max);
    na_op_id_t *rop = NA_Op_create(cls, 0), *sop = NA_Op_create(cls, 0);
    size_t done_clients = 0;
    int app_msgs = 0, oversized = 0, seq_bad = 0;
    uint32_t *next_seq = calloc((size_t)nprocs, sizeof(*next_seq));
    while (done_clients < nclients) {
        struct done r = {0};
        NA_Msg_recv_unexpected(cls, ctx, mpitest_cb, &r, in, max, NULL, rop);
        if (!wait_for(&r, 120)) {
            result("server: receive commands", 0, "timeout");
            break;
        }
        if (r.ret == NA_MSGSIZE) { /* each client's OVERSIZED message */
            oversized++;
            continue;
        }
        if (r.ret != NA_SUCCESS || r.size < 1) {
            result("server: receive commands", 0, NA_Error_to_string(r.ret));
            NA_Addr_free(cls, r.src);
            continue;
        }
        switch (in[0]) {
        case CMD_ECHO:
        case CMD_PING: {
            for (size_t i = 1; i < r.size; i++)
                out[i] = (unsigned char)~in[i];
            out[0] = in[0];
            struct done s = {0};
            NA_Msg_send_expected(cls, ctx, mpitest_cb, &s, out, r.size, NULL, r.src, 0,
                                 r.tag, sop);
            wait_for(&s, 10);
            if (in[0] == CMD_ECHO) {
                /* the client also sent an application message on MPI_COMM_WORLD tag 0 */
                int v = -1;
                MPI_Status st;
                MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &st);
                app_msgs += v == 1000 + st.MPI_SOURCE;
            }
            break;
        }
        case CMD_STALL: {
            unsigned ms;
            memcpy(&ms, in + 1, sizeof(ms));
            struct done s = {0};
            NA_Msg_send_expected(cls, ctx, mpitest_cb, &s, in, 1, NULL, r.src, 0, r.tag,
                                 sop);
            /* no NA progress while asleep (progressing for the ack could already
             * serve the client's get): requests pile up in MPI */
            usleep(ms * 1000u);
            wait_for(&s, 10);
            break;
        }
        case CMD_DONE:
            done_clients++;
            break;
        case CMD_SEQ: { /* rank, sequence number, then filled with the latter */
            uint32_t src = 0, seq = 0;
            unsigned char exp[SEQ_BIG];
            memcpy(&src, in + 1, sizeof(src));
            memcpy(&seq, in + 5, sizeof(seq));
            if (r.size < 9 || src >= (uint32_t)nprocs || seq != next_seq[src]) {
                seq_bad++;
                break;
            }
            next_seq[src]++;
            fill(exp, r.size - 9, seq);
            seq_bad += memcmp(in + 9, exp, r.size - 9) != 0;
            break;
        }
        }
        NA_Addr_free(cls, r.src);
    }
    result("server: application MPI_COMM_WORLD messages interleaved",
           app_msgs == 3 * (int)nclients, "count");
    int seq_ok = !seq_bad;
    for (int i = 1; i < nprocs; i++)
        seq_ok &= next_seq[i] == NSEQ;
    result("server: unexpected messages sent back to back arrive in sending order, "
           "data intact",
           seq_ok, "order or data");
    result("server: unexpected messages above its buffer size reported NA_MSGSIZE",
           oversized == (int)nclients, "count");
    free(next_seq);
    progress_barrier(); /* A: every client sent DONE */
    result("server: read-only region unchanged by refused puts",
           !memcmp(ro, ro_copy, RO_SIZE), "");
    int ok = 1;
    for (size_t c = 0; c < nclients; c++) {
        unsigned char *exp = malloc(BIG);
        fill(exp, BIG, (unsigned)c + 1);
        ok &= !memcmp(rw + c * BIG, exp, BIG);
        free(exp);
    }
    result("server: put data landed in the registered region", ok, "mismatch");
    NA_Op_destroy(cls, rop);
    NA_Op_destroy(cls, sop);
    NA_Mem_deregister(cls, hrw);
    NA_Mem_deregister(cls, hro);
    NA_Mem_deregister(cls, hseg);
    NA_Mem_handle_free(cls, hrw);
    NA_Mem_handle_free(cls, hro);
    NA_Mem_handle_free(cls, hseg);
    free(rw), free(ro), free(s0), free(s1), free(s2), free(in), free(out);
}

/*------------------------------------------------------------------ client */

static na_addr_t *srv;
static na_op_id_t *op1, *op2;

static void send_cmd(unsigned char cmd, const void *payload, size_t n, na_tag_t tag)
{
    unsigned char buf[64];
    buf[0] = cmd;
    memcpy(buf + 1, payload, n);
    struct done s = {0};
    NA_Msg_send_unexpected(cls, ctx, mpitest_cb, &s, buf, n + 1, NULL, srv, 0, tag, op1);
    wait_for(&s, 10);
}

static na_return_t rma(int put, na_mem_handle_t *local, size_t loff,
                       na_mem_handle_t *remote, size_t roff, size_t size)
{
    struct done d = {0};
    na_return_t ret = (put ? NA_Put : NA_Get)(cls, ctx, mpitest_cb, &d, local, loff,
                                              remote, roff, size, srv, 0, op2);
    if (ret != NA_SUCCESS)
        return ret;
    if (!wait_for(&d, 30))
        return NA_TIMEOUT;
    return d.ret;
}

static void client(void)
{
    struct descs d;
    char why[128];
    MPI_Bcast(&d, (int)sizeof(d), MPI_BYTE, 0, MPI_COMM_WORLD);
    unsigned c = (unsigned)rank - 1;

    NA_Addr_lookup(cls, "mpi+static://0", &srv);
    op1 = NA_Op_create(cls, 0);
    op2 = NA_Op_create(cls, 0);

    /* address checks */
    {
        na_addr_t *a = NULL;
        int ok = NA_Addr_lookup(cls, "mpi+static://99999", &a) != NA_SUCCESS &&
                 NA_Addr_lookup(cls, "mpi+static://1x", &a) != NA_SUCCESS &&
                 NA_Addr_lookup(cls, "mpi+static://-1", &a) != NA_SUCCESS &&
                 NA_Addr_lookup(cls, "mpi+static://", &a) != NA_SUCCESS;
        char s[64];
        size_t n = sizeof(s);
        na_addr_t *self;
        NA_Addr_self(cls, &self);
        NA_Addr_to_string(cls, s, &n, self);
        char exp[64];
        snprintf(exp, sizeof(exp), "mpi+static://%d", rank);
        ok &= !strcmp(s, exp) && NA_Addr_is_self(cls, self) && !NA_Addr_is_self(cls, srv);
        NA_Addr_free(cls, self);
        result("address lookup validation and self address", ok, s);
    }

    /* unexpected + expected messages, with application MPI traffic in between */
    {
        unsigned char msg[512], reply[512];
        fill(msg, sizeof(msg), c);
        msg[0] = CMD_ECHO;
        struct done r = {0}, s = {0};
        NA_Msg_recv_expected(cls, ctx, mpitest_cb, &r, reply, sizeof(reply), NULL, srv, 0,
                             7 + c, op2);
        NA_Msg_send_unexpected(cls, ctx, mpitest_cb, &s, msg, sizeof(msg), NULL, srv, 0,
                               7 + c, op1);
        int v = 1000 + rank;
        MPI_Send(&v, 1, MPI_INT, 0, 0,
                 MPI_COMM_WORLD); /* tag 0: also our unexpected MPI tag */
        int ok = wait_for(&s, 10) && wait_for(&r, 10) && s.ret == NA_SUCCESS &&
                 r.ret == NA_SUCCESS && r.size == sizeof(msg);
        for (size_t i = 1; ok && i < sizeof(msg); i++)
            ok = reply[i] == (unsigned char)~msg[i];
        result("unexpected + expected messages, data verified (app MPI_Send interleaved)",
               ok, NA_Error_to_string(r.ret));
    }

    /* expected message larger than the receive buffer: NA_MSGSIZE, not truncated */
    {
        unsigned char msg[300], reply[100];
        memset(msg, 0, sizeof(msg));
        msg[0] = CMD_ECHO;
        struct done r = {0}, s = {0};
        NA_Msg_recv_expected(cls, ctx, mpitest_cb, &r, reply, sizeof(reply), NULL, srv, 0,
                             500 + c, op2);
        NA_Msg_send_unexpected(cls, ctx, mpitest_cb, &s, msg, sizeof(msg), NULL, srv, 0,
                               500 + c, op1);
        int v = 1000 + rank;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        wait_for(&s, 10);
        wait_for(&r, 10);
        result("oversized expected message reported NA_MSGSIZE", r.ret == NA_MSGSIZE,
               NA_Error_to_string(r.ret));
        /* above the eager size (a rendezvous): nothing written past the buffer */
        enum { BIGMSG = 6000, SMALLBUF = 100 };
        static unsigned char big[BIGMSG];
        unsigned char *guarded = calloc(1, BIGMSG);
        memset(big, 0x5A, sizeof(big));
        big[0] = CMD_PING;
        struct done r2 = {0}, s2 = {0};
        NA_Msg_recv_expected(cls, ctx, mpitest_cb, &r2, guarded, SMALLBUF, NULL, srv, 0,
                             550 + c, op2);
        NA_Msg_send_unexpected(cls, ctx, mpitest_cb, &s2, big, sizeof(big), NULL, srv, 0,
                               550 + c, op1);
        int ok = wait_for(&s2, 10) && wait_for(&r2, 10) && r2.ret == NA_MSGSIZE;
        for (size_t i = SMALLBUF; i < BIGMSG; i++)
            ok &= guarded[i] == 0;
        free(guarded);
        result(
            "oversized expected rendezvous message: NA_MSGSIZE, memory past the buffer "
            "untouched",
            ok, NA_Error_to_string(r2.ret));
    }

    /* unexpected messages sent back to back, more than the server has receives
     * posted and some above the eager size: the server checks their order */
    {
        static unsigned char bufs[NSEQ][SEQ_BIG];
        na_op_id_t *sops[NSEQ];
        struct done s[NSEQ] = {{0}};
        uint32_t rk = (uint32_t)rank;
        int ok = 1;
        for (uint32_t i = 0; i < NSEQ; i++) {
            size_t n = i % 8 == 5 ? SEQ_BIG : 9 + i * 7;
            bufs[i][0] = CMD_SEQ;
            memcpy(bufs[i] + 1, &rk, sizeof(rk));
            memcpy(bufs[i] + 5, &i, sizeof(i));
            fill(bufs[i] + 9, n - 9, i);
            sops[i] = NA_Op_create(cls, 0);
            ok &= NA_Msg_send_unexpected(cls, ctx, mpitest_cb, &s[i], bufs[i], n, NULL,
                                         srv, 0, 0, sops[i]) == NA_SUCCESS;
        }
        for (int i = 0; i < NSEQ; i++) {
            ok &= wait_for(&s[i], 10) && s[i].ret == NA_SUCCESS;
            NA_Op_destroy(cls, sops[i]);
        }
        result("unexpected messages sent back to back", ok, "");
    }

    /* an unexpected message above the server's receive buffers (its
     * max_unexpected_size is the default, ours is larger): dropped there
     * (NA_MSGSIZE), and the next one arrives intact */
    {
        static unsigned char big[OVERSIZED];
        unsigned char ping[40], reply[40];
        memset(big, 0xA5, sizeof(big));
        big[0] = CMD_ECHO;
        fill(ping, sizeof(ping), 3);
        ping[0] = CMD_PING;
        struct done s = {0}, s2 = {0}, r = {0};
        int ok = NA_Msg_send_unexpected(cls, ctx, mpitest_cb, &s, big, sizeof(big), NULL,
                                        srv, 0, 0, op1) == NA_SUCCESS &&
                 wait_for(&s, 10) && s.ret == NA_SUCCESS;
        na_op_id_t *sop = NA_Op_create(cls, 0);
        NA_Msg_recv_expected(cls, ctx, mpitest_cb, &r, reply, sizeof(reply), NULL, srv, 0,
                             600 + c, op2);
        NA_Msg_send_unexpected(cls, ctx, mpitest_cb, &s2, ping, sizeof(ping), NULL, srv,
                               0, 600 + c, sop);
        ok &= wait_for(&s2, 10) && wait_for(&r, 10) && r.ret == NA_SUCCESS &&
              r.size == sizeof(ping) && reply[0] == CMD_PING;
        for (size_t i = 1; ok && i < sizeof(ping); i++)
            ok = reply[i] == (unsigned char)~ping[i];
        NA_Op_destroy(cls, sop);
        result("oversized unexpected message sent, the next one answered intact", ok,
               NA_Error_to_string(r.ret));
    }

    /* expected messages that arrive (and are claimed by progress) before their
     * receives are posted: per tag in sending order, small and large */
    {
        enum { NMSG = 5 };
        static const size_t sizes[NMSG] = {16, 6000, 1, 5000, 32};
        static const na_tag_t tags[NMSG] = {900, 900, 901, 900, 901};
        static unsigned char out[NMSG][6000], in[NMSG][6000];
        na_addr_t *self;
        NA_Addr_self(cls, &self);
        na_op_id_t *sops[NMSG];
        struct done s[NMSG] = {{0}}, r[NMSG] = {{0}};
        int ok = 1;
        for (int i = 0; i < NMSG; i++) {
            fill(out[i], sizes[i], (unsigned)(i + 40));
            sops[i] = NA_Op_create(cls, 0);
            ok &= NA_Msg_send_expected(cls, ctx, mpitest_cb, &s[i], out[i], sizes[i],
                                       NULL, self, 0, tags[i], sops[i]) == NA_SUCCESS;
        }
        for (int k = 0; k < 20; k++) { /* large sends complete only once received */
            NA_Progress(cls, ctx, 1);
            NA_Trigger(ctx, 64, NULL);
        }
        /* tag 901 first, then tag 900: each tag's messages in their sending order */
        static const int order[NMSG] = {2, 4, 0, 1, 3};
        for (int j = 0; j < NMSG; j++) {
            int i = order[j];
            ok &= NA_Msg_recv_expected(cls, ctx, mpitest_cb, &r[i], in[j], sizeof(in[j]),
                                       NULL, self, 0, tags[i], op2) == NA_SUCCESS &&
                  wait_for(&r[i], 10) && r[i].ret == NA_SUCCESS &&
                  r[i].size == sizes[i] && !memcmp(in[j], out[i], sizes[i]);
        }
        for (int i = 0; i < NMSG; i++) {
            ok &= wait_for(&s[i], 10) && s[i].ret == NA_SUCCESS;
            NA_Op_destroy(cls, sops[i]);
        }
        NA_Addr_free(cls, self);
        result(
            "expected messages received before their receives were posted: per-tag order "
            "and data",
            ok, "");
    }

    na_mem_handle_t *rrw, *rro, *rseg, *lbig, *lget, *lseg;
    NA_Mem_handle_deserialize(cls, &rrw, d.rw, d.len);
    NA_Mem_handle_deserialize(cls, &rro, d.ro, d.len);
    NA_Mem_handle_deserialize(cls, &rseg, d.seg, d.len);
    unsigned char *big = malloc(BIG), *back = malloc(BIG);
    fill(big, BIG, c + 1);
    NA_Mem_handle_create(cls, big, BIG, NA_MEM_READWRITE, &lbig);
    NA_Mem_handle_create(cls, back, BIG, NA_MEM_READWRITE, &lget);
    NA_Mem_register(cls, lbig, NA_MEM_TYPE_HOST, 0);
    NA_Mem_register(cls, lget, NA_MEM_TYPE_HOST, 0);

    /* contiguous put then get */
    {
        na_return_t p = rma(1, lbig, 0, rrw, c * BIG, BIG);
        memset(back, 0, BIG);
        na_return_t g = rma(0, lget, 0, rrw, c * BIG, BIG);
        snprintf(why, sizeof(why), "put %s get %s", NA_Error_to_string(p),
                 NA_Error_to_string(g));
        result("put/get contiguous 2 chunks+123 B, data verified",
               p == NA_SUCCESS && g == NA_SUCCESS && !memcmp(big, back, BIG), why);
    }

    /* segmented on both sides: local 3 segments -> remote 3 segments (per-client slice)
     */
    {
        size_t n = SEG_SIZE;
        unsigned char *a = malloc(700), *b = malloc(n - 700 - 3000), *e = malloc(3000);
        unsigned char *src = malloc(n), *got = malloc(n);
        fill(src, n, c + 50);
        memcpy(a, src, 700);
        memcpy(b, src + 700, n - 3700);
        memcpy(e, src + n - 3000, 3000);
        struct na_segment ls[3] = {{a, 700}, {b, n - 3700}, {e, 3000}};
        NA_Mem_handle_create_segments(cls, ls, 3, NA_MEM_READWRITE, &lseg);
        NA_Mem_register(cls, lseg, NA_MEM_TYPE_HOST, 0);
        /* remote: this client's data spans the 3 server segments' boundaries only for
         * client 0; use an offset that crosses a segment boundary for everyone */
        size_t nclients = (size_t)nprocs - 1;
        size_t len = 200000;
        size_t roff =
            SEG0 * nclients - 300 + c * len; /* client 0 crosses both remote boundaries */
        na_return_t p = rma(1, lseg, 100, rseg, roff, len);
        memset(back, 0, BIG);
        na_return_t g = rma(0, lget, 0, rseg, roff, len);
        memcpy(got, back, len);
        snprintf(why, sizeof(why), "put %s get %s", NA_Error_to_string(p),
                 NA_Error_to_string(g));
        int ok = p == NA_SUCCESS && g == NA_SUCCESS && !memcmp(src + 100, got, len);
        /* and segmented local get */
        memset(a, 0, 700), memset(b, 0, n - 3700), memset(e, 0, 3000);
        na_return_t g2 = rma(0, lseg, 100, rseg, roff, len);
        memcpy(got, a, 700), memcpy(got + 700, b, n - 3700),
            memcpy(got + n - 3000, e, 3000);
        ok &= g2 == NA_SUCCESS && !memcmp(src + 100, got + 100, len);
        (void)nclients;
        result(
            "put/get segmented (both sides, crossing segment boundaries), data verified",
            ok, why);
        NA_Mem_deregister(cls, lseg);
        NA_Mem_handle_free(cls, lseg);
        free(a), free(b), free(e), free(src), free(got);
    }

    /* forged descriptors: the target must refuse, memory unchanged */
    {
        unsigned char forged[64];
        na_mem_handle_t *h;
        uint32_t v;
        /* read-only region claimed read-write */
        memcpy(forged, d.ro, d.len);
        v = NA_MEM_READWRITE;
        memcpy(forged + 16, &v, 4);
        NA_Mem_handle_deserialize(cls, &h, forged, d.len);
        na_return_t p = rma(1, lbig, 0, h, 0, 100);
        NA_Mem_handle_free(cls, h);
        result("put into a read-only region refused by the target (NA_PERMISSION)",
               p == NA_PERMISSION, NA_Error_to_string(p));
        /* length inflated: beyond the real bounds */
        memcpy(forged, d.ro, d.len);
        uint64_t len = 1u << 30;
        memcpy(forged + 24, &len, 8);
        NA_Mem_handle_deserialize(cls, &h, forged, d.len);
        memset(back, 0xAB, 64);
        na_return_t g = rma(0, lget, 0, h, RO_SIZE - 10, 64);
        NA_Mem_handle_free(cls, h);
        int untouched = 1;
        for (int i = 0; i < 64; i++)
            untouched &= back[i] == 0xAB;
        result("get beyond the region's bounds refused (NA_INVALID_ARG), local memory "
               "untouched",
               g == NA_INVALID_ARG && untouched, NA_Error_to_string(g));
        /* stale generation */
        memcpy(forged, d.rw, d.len);
        memcpy(&v, forged + 12, 4);
        v += 1000;
        memcpy(forged + 12, &v, 4);
        NA_Mem_handle_deserialize(cls, &h, forged, d.len);
        p = rma(1, lbig, 0, h, c * BIG, 100);
        NA_Mem_handle_free(cls, h);
        result("put with a stale handle generation refused (NA_ACCESS)", p == NA_ACCESS,
               NA_Error_to_string(p));
        /* garbage descriptor */
        memset(forged, 0x5a, sizeof(forged));
        result("malformed descriptor rejected at deserialize",
               NA_Mem_handle_deserialize(cls, &h, forged, d.len) != NA_SUCCESS, "");
    }

    /* cancel of a posted receive */
    {
        unsigned char buf[64];
        struct done r = {0};
        NA_Msg_recv_expected(cls, ctx, mpitest_cb, &r, buf, sizeof(buf), NULL, srv, 0,
                             9999, op2);
        NA_Progress(cls, ctx, 1);
        NA_Cancel(cls, ctx, op2);
        int ok = wait_for(&r, 5);
        result("cancel of a posted expected receive -> NA_CANCELED",
               ok && r.ret == NA_CANCELED, NA_Error_to_string(r.ret));
        struct done u = {0};
        NA_Msg_recv_unexpected(cls, ctx, mpitest_cb, &u, buf, sizeof(buf), NULL, op2);
        NA_Cancel(cls, ctx, op2);
        ok = wait_for(&u, 5);
        result("cancel of a posted unexpected receive -> NA_CANCELED",
               ok && u.ret == NA_CANCELED, NA_Error_to_string(u.ret));
        /* after a progress pass (Open MPI: then an MPI_Irecv, cancelled in MPI) */
        struct done u2 = {0};
        NA_Msg_recv_unexpected(cls, ctx, mpitest_cb, &u2, buf, sizeof(buf), NULL, op2);
        NA_Progress(cls, ctx, 1);
        NA_Cancel(cls, ctx, op2);
        ok = wait_for(&u2, 5);
        result("cancel of an unexpected receive after progress -> NA_CANCELED",
               ok && u2.ret == NA_CANCELED, NA_Error_to_string(u2.ret));
    }

    /* cancel of an emulated get while the server stalls */
    {
        unsigned ms = 1500;
        unsigned char ack[8];
        struct done sa = {0};
        NA_Msg_recv_expected(cls, ctx, mpitest_cb, &sa, ack, sizeof(ack), NULL, srv, 0,
                             4000 + c, op2);
        send_cmd(CMD_STALL, &ms, sizeof(ms), 4000 + c);
        wait_for(&sa, 10); /* the server is now asleep */
        memset(back, 0xEE, BIG);
        struct done g = {0};
        double t0 = mpitest_now();
        NA_Get(cls, ctx, mpitest_cb, &g, lget, 0, rrw, c * BIG, BIG, srv, 0, op2);
        double end = mpitest_now() + 0.2;
        while (mpitest_now() < end && !g.flag) {
            NA_Progress(cls, ctx, 10);
            NA_Trigger(ctx, 64, NULL);
        }
        NA_Cancel(cls, ctx, op2);
        int ok = wait_for(&g, 5);
        double dt = mpitest_now() - t0;
        int untouched = 1;
        for (size_t i = 0; i < BIG; i++)
            untouched &= back[i] == 0xEE;
        snprintf(why, sizeof(why), "%s after %.3f s, untouched %d",
                 NA_Error_to_string(g.ret), dt, untouched);
        result("cancel of an emulated get against a stalled server: local, NA_CANCELED, "
               "memory untouched",
               ok && g.ret == NA_CANCELED && dt < 1.0 && untouched, why);
        /* Later traffic works, and the late data is dropped, not written. */
        unsigned char small[8];
        struct done r = {0};
        NA_Msg_recv_expected(cls, ctx, mpitest_cb, &r, small, sizeof(small), NULL, srv, 0,
                             3000 + c, op2);
        unsigned char e8[8] = {CMD_ECHO};
        struct done s = {0};
        NA_Msg_send_unexpected(cls, ctx, mpitest_cb, &s, e8, 8, NULL, srv, 0, 3000 + c,
                               op1);
        int v = 1000 + rank;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        wait_for(&s, 10);
        ok = wait_for(&r, 10) && r.ret == NA_SUCCESS;
        /* give the late chunks time to arrive and be drained */
        double e2 = mpitest_now() + 0.3;
        while (mpitest_now() < e2) {
            NA_Progress(cls, ctx, 10);
            NA_Trigger(ctx, 64, NULL);
        }
        untouched = 1;
        for (size_t i = 0; i < BIG; i++)
            untouched &= back[i] == 0xEE;
        result(
            "after the stall: traffic resumes, late get data dropped (memory untouched)",
            ok && untouched, "");
        na_return_t g2 = rma(0, lget, 0, rrw, c * BIG, BIG);
        result("a new get after the cancelled one returns correct data",
               g2 == NA_SUCCESS && !memcmp(big, back, BIG), NA_Error_to_string(g2));
    }

    /* ping-pong timing (client 1 only): raw MPI vs NA messages */
    if (rank == 1) {
        char pbuf[8] = {CMD_PING}, rbuf[8];
        double t0 = mpitest_now();
        for (int i = 0; i < PINGS; i++) {
            struct done r = {0}, s = {0};
            NA_Msg_recv_expected(cls, ctx, mpitest_cb, &r, rbuf, sizeof(rbuf), NULL, srv,
                                 0, 77, op2);
            NA_Msg_send_unexpected(cls, ctx, mpitest_cb, &s, pbuf, sizeof(pbuf), NULL,
                                   srv, 0, 77, op1);
            while (!r.flag || !s.flag) {
                NA_Progress(cls, ctx, 100);
                NA_Trigger(ctx, 64, NULL);
            }
        }
        double na_us = (mpitest_now() - t0) / PINGS * 1e6;
        send_cmd(CMD_DONE, "", 0, 0);
        progress_barrier();
        /* raw MPI ping-pong against rank 0, which runs it after its NA loop */
        t0 = mpitest_now();
        for (int i = 0; i < PINGS; i++) {
            MPI_Request rq[2];
            MPI_Irecv(rbuf, 8, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &rq[0]);
            MPI_Isend(pbuf, 8, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &rq[1]);
            MPI_Status sts[2];
            MPI_Waitall(2, rq, sts);
        }
        double mpi_us = (mpitest_now() - t0) / PINGS * 1e6;
        printf("PINGPONG 8 B round trip: raw MPI_Isend/Irecv %.2f us, NA "
               "unexpected+expected "
               "%.2f us, ratio %.2f\n",
               mpi_us, na_us, na_us / mpi_us);
    } else {
        send_cmd(CMD_DONE, "", 0, 0);
        progress_barrier();
    }

    NA_Mem_deregister(cls, lbig);
    NA_Mem_deregister(cls, lget);
    NA_Mem_handle_free(cls, lbig);
    NA_Mem_handle_free(cls, lget);
    NA_Mem_handle_free(cls, rrw);
    NA_Mem_handle_free(cls, rro);
    NA_Mem_handle_free(cls, rseg);
    free(big), free(back);
    progress_barrier(); /* B */
    NA_Addr_free(cls, srv);
    NA_Op_destroy(cls, op1);
    NA_Op_destroy(cls, op2);
}

static void server_pingpong(void)
{
    char buf[8];
    for (int i = 0; i < PINGS; i++) {
        MPI_Request rq;
        MPI_Irecv(buf, 8, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        MPI_Isend(buf, 8, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    }
}

int main(int argc, char **argv)
{
    mpitest_init(&argc, &argv, &rank, &nprocs);
    if (nprocs < 2)
        return mpitest_skip(rank,
                            "test_na_mpi needs at least 2 processes (mpirun -np 3)");
    struct na_init_info info = NA_INIT_INFO_INITIALIZER;
    if (rank != 0) /* can send a message larger than the server takes */
        info.max_unexpected_size = CLIENT_MAX_UNEXP;
    /* "single": the same test on a class that one thread alone uses, which
     * takes no class lock. */
    if (argc > 1 && strcmp(argv[1], "single") == 0)
        info.thread_mode = NA_THREAD_MODE_SINGLE;
    cls = NA_Initialize_opt("mpi+static", rank == 0, &info);
    result("NA_Initialize(\"mpi+static\") on an application-initialized MPI", cls != NULL,
           "");
    if (!cls) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    result("bad info string mpi+static://host refused",
           NA_Initialize("mpi+static://host", false) == NULL, "");
    ctx = NA_Context_create(cls);
    if (rank == 0) {
        server();
        server_pingpong();
        progress_barrier(); /* B */
    } else {
        client();
    }
    NA_Context_destroy(cls, ctx);
    result("NA_Finalize", NA_Finalize(cls) == NA_SUCCESS, "");
    int flag = 0;
    MPI_Finalized(&flag);
    result("MPI still usable after NA_Finalize (application owns it)", !flag, "");
    return mpitest_finish(passes, failures);
}
