/*
 * test_mpi_emul_cancel.c -- IMPI-style remote cancel of put/get emulated over
 * MPI (src/hgx_emul, docs/mpi-emul-cancel.md). Run as
 * `mpirun -np 3 ./test_mpi_emul_cancel [trials] [seed]`: rank 0 is the target,
 * the other ranks are origins.
 *
 *  - race: random put/get (1 B - 4 MiB, skewed small) cancelled right after
 *    posting, after a few progress calls or after a random delay; every trial
 *    is checked against memory (cancelled => region unchanged, else fully
 *    transferred, never partial); CANCELYES and CANCELNO must both occur.
 *  - stall: the target stops progressing; cancel returns within the bound;
 *    on resume the target neither writes nor sends data for the request.
 *  - leaks: all requests and records are gone at the end.
 *  - latency: cancel call to callback, next to a raw MPI round trip.
 *  - misbehaving data peer (needs 3 ranks): data chunks oversized (also over
 *    2 GiB), from the wrong rank or on tags of no transfer, into a get's
 *    origin and a put's target: dropped and counted, the transfer fails (or
 *    is untouched), guard bytes past the region intact, then normal
 *    transfers work; with and without a separate data communicator.
 *  - tag generations (same phase): a chunk on the tag of an older use of a
 *    reused request id (put: after an aborted and after a completed put; get)
 *    is never taken by the new transfer, whose data lands intact.
 *  - target bound (same phase): a put whose origin sends nothing after CTS is
 *    dropped after HGX_MPI_TARGET_IDLE_MS (set to 2000 here unless set), its
 *    origin gets an NA_TIMEOUT ACK, a chunk after that is a stray, not written.
 */
#include "hgx_emul.h"
#include "hgx_test_hooks.h"
#include "na.h"
#include "mpitest_report.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REGION ((size_t)4 << 20)
#define TAG_CMD 77
#define RTT_ITER 2000

enum { CMD_STALL = 1 };

static int rank, nprocs, failures, passes;
static na_class_t *cls;
static na_context_t *ctx;

static void result(const char *name, int ok, const char *why)
{
    mpitest_result(rank, &passes, &failures, name, ok, why);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct done {
    volatile int flag;
    na_return_t ret;
    double t;
};

static void cb(const struct na_cb_info *info)
{
    struct done *d = info->arg;
    d->ret = info->ret;
    d->t = now_s();
    d->flag = 1;
}

static void progress_once(unsigned ms)
{
    NA_Progress(cls, ctx, ms);
    NA_Trigger(ctx, 64, NULL);
}

static int wait_for(struct done *d, double timeout_s)
{
    double end = now_s() + timeout_s;
    while (!d->flag) {
        progress_once(1);
        if (now_s() > end)
            return 0;
    }
    return 1;
}

/* xorshift64* */
static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        if ((i & 7) == 0)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (unsigned char)(x >> ((i & 7) * 8));
    }
}

/* Target: progress, obey STALL commands, until every rank entered the barrier. */
static void serve_barrier(void)
{
    MPI_Request bar;
    int flag = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &bar);
    while (!flag) {
        progress_once(0);
        int cmdflag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_CMD, MPI_COMM_WORLD, &cmdflag, &st);
        if (cmdflag) {
            int cmd[2];
            MPI_Recv(cmd, 2, MPI_INT, st.MPI_SOURCE, TAG_CMD, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            if (cmd[0] == CMD_STALL) {
                MPI_Send(cmd, 2, MPI_INT, st.MPI_SOURCE, TAG_CMD,
                         MPI_COMM_WORLD);          /* stalling now */
                usleep((useconds_t)cmd[1] * 1000); /* no NA progress at all */
            }
        }
        MPI_Test(&bar, &flag, MPI_STATUS_IGNORE);
    }
}

static void progress_barrier(void)
{
    MPI_Request bar;
    int flag = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &bar);
    while (!flag) {
        progress_once(0);
        MPI_Test(&bar, &flag, MPI_STATUS_IGNORE);
    }
}

static int quiet_counters(struct hgx_emul_counters *c, double timeout_s)
{
    double end = now_s() + timeout_s;
    for (;;) {
        hgx_emul_get_counters(c);
        if (!c->origin_active && !c->target_records)
            return 1;
        if (now_s() > end)
            return 0;
        progress_once(1);
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/*------------------------------------------------------------------ origin */

static na_addr_t *tgt;
static na_op_id_t *op, *vop;
static na_mem_handle_t *remote, *lh, *vh;
static unsigned char *lbuf, *vbuf,
    *shadow;         /* local buffer, verify buffer, target region copy */
static size_t roff0; /* this origin's part of the target region */

static na_return_t plain_get(size_t off, size_t size)
{
    struct done d = {0};
    na_return_t ret =
        NA_Get(cls, ctx, cb, &d, vh, 0, remote, roff0 + off, size, tgt, 0, vop);
    if (ret != NA_SUCCESS)
        return ret;
    if (!wait_for(&d, 60))
        return NA_TIMEOUT;
    return d.ret;
}

static double *lat_yes, *lat_no;
static size_t nlat_yes, nlat_no;
static unsigned long n_cancelled, n_completed, n_bad;

/* One trial; 1 if memory matches the outcome. */
static int trial(unsigned long i, char *why, size_t whylen)
{
    int put = (int)(rnd() & 1);
    unsigned e = (unsigned)(rnd() % 23); /* size 2^e .. 2^(e+1): skewed small */
    size_t size = ((size_t)1 << e) + (size_t)(rnd() % ((uint64_t)1 << e));
    if (size > REGION)
        size = REGION;
    size_t off = (size_t)(rnd() % (REGION - size + 1));
    unsigned mode = (unsigned)(rnd() % 3);
    uint64_t pat = ((uint64_t)rank << 40) ^ i;
    if (put)
        fill(lbuf + off, size, pat); /* new data for the target */
    else
        fill(lbuf + off, size, ~pat); /* sentinel the get must not touch if cancelled */
    struct done d = {0};
    na_return_t ret = (put ? NA_Put : NA_Get)(cls, ctx, cb, &d, lh, off, remote,
                                              roff0 + off, size, tgt, 0, op);
    if (ret != NA_SUCCESS) {
        snprintf(why, whylen, "post failed: %d", (int)ret);
        return 0;
    }
    if (mode == 1) {
        unsigned k = 1 + (unsigned)(rnd() % 6);
        for (unsigned j = 0; j < k && !d.flag; j++)
            progress_once(0);
    } else if (mode == 2) {
        double until = now_s() + (double)(rnd() % 300) * 1e-6;
        while (!d.flag && now_s() < until)
            progress_once(0);
    }
    double t0 = now_s();
    int cancelled_call = 0;
    if (!d.flag) {
        NA_Cancel(cls, ctx, op);
        cancelled_call = 1;
    }
    if (!wait_for(&d, 30)) {
        snprintf(why, whylen, "trial %lu: no callback", i);
        return 0;
    }
    if (cancelled_call) {
        double l = (d.t - t0) * 1e6;
        if (d.ret == NA_CANCELED)
            lat_yes[nlat_yes++] = l;
        else
            lat_no[nlat_no++] = l;
    }
    if (d.ret != NA_SUCCESS && d.ret != NA_CANCELED) {
        snprintf(why, whylen, "trial %lu: %s of %zu B ended with %d", i,
                 put ? "put" : "get", size, (int)d.ret);
        return 0;
    }
    int canc = d.ret == NA_CANCELED;
    canc ? n_cancelled++ : n_completed++;
    int ok;
    if (put) {
        /* Read the target region back with an uncancelled get. */
        if (plain_get(off, size) != NA_SUCCESS) {
            snprintf(why, whylen, "trial %lu: verify get failed", i);
            return 0;
        }
        ok = memcmp(vbuf, canc ? shadow + off : lbuf + off, size) == 0;
        if (ok && !canc)
            memcpy(shadow + off, lbuf + off, size);
    } else {
        if (canc) {
            fill(vbuf, size, ~pat);
            ok = memcmp(lbuf + off, vbuf, size) == 0;
        } else {
            ok = memcmp(lbuf + off, shadow + off, size) == 0;
        }
    }
    if (!ok) {
        n_bad++;
        snprintf(why, whylen,
                 "trial %lu: %s of %zu B at %zu (mode %u) %s but memory disagrees", i,
                 put ? "put" : "get", size, off, mode, canc ? "CANCELED" : "SUCCESS");
    }
    return ok;
}

static void origin(unsigned long trials, uint64_t seed, const unsigned char *desc,
                   size_t dlen)
{
    char why[256] = "";
    NA_Addr_lookup(cls, "mpi+static://0", &tgt);
    op = NA_Op_create(cls, 0);
    vop = NA_Op_create(cls, 0);
    NA_Mem_handle_deserialize(cls, &remote, desc, dlen);
    lbuf = malloc(REGION);
    vbuf = malloc(REGION);
    shadow = malloc(REGION);
    roff0 = (size_t)(rank - 1) * REGION;
    NA_Mem_handle_create(cls, lbuf, REGION, NA_MEM_READWRITE, &lh);
    NA_Mem_handle_create(cls, vbuf, REGION, NA_MEM_READWRITE, &vh);
    NA_Mem_register(cls, lh, NA_MEM_TYPE_HOST, 0);
    NA_Mem_register(cls, vh, NA_MEM_TYPE_HOST, 0);
    rng_state = seed * 0x2545f4914f6cdd1dull + (uint64_t)rank * 7919u + 1;
    lat_yes = malloc(sizeof(double) * trials);
    lat_no = malloc(sizeof(double) * trials);

    /* Initial target content of our part (known pattern) via a plain put. */
    fill(shadow, REGION, 1000u + (uint64_t)rank);
    memcpy(lbuf, shadow, REGION);
    {
        struct done d = {0};
        NA_Put(cls, ctx, cb, &d, lh, 0, remote, roff0, REGION, tgt, 0, op);
        result("initial put of the target region",
               wait_for(&d, 60) && d.ret == NA_SUCCESS, "");
    }

    /* race */
    double t0 = now_s();
    int ok = 1;
    for (unsigned long i = 0; i < trials && ok; i++)
        ok = trial(i, why, sizeof(why));
    double dt = now_s() - t0;
    char name[200];
    snprintf(name, sizeof(name),
             "race: %lu put/get trials cancelled at random moments, memory "
             "checked (%lu cancelled, %lu completed, %.1f s)",
             trials, n_cancelled, n_completed, dt);
    result(name, ok && n_bad == 0, why);
    if (nlat_yes)
        qsort(lat_yes, nlat_yes, sizeof(double), cmp_d);
    if (nlat_no)
        qsort(lat_no, nlat_no, sizeof(double), cmp_d);
    double lat[4] = {nlat_yes ? lat_yes[nlat_yes / 2] : -1,
                     nlat_yes ? lat_yes[nlat_yes * 9 / 10] : -1,
                     nlat_no ? lat_no[nlat_no / 2] : -1, (double)nlat_yes};
    progress_barrier(); /* B1 */
    if (rank == 1)
        MPI_Send(lat, 4, MPI_DOUBLE, 0, TAG_CMD + 1, MPI_COMM_WORLD);

    /* stall (rank 1 only) */
    if (rank == 1) {
        struct hgx_emul_counters c0, c1;
        hgx_emul_get_counters(&c0);
        int cmd[2] = {CMD_STALL, 1200};
        MPI_Send(cmd, 2, MPI_INT, 0, TAG_CMD, MPI_COMM_WORLD);
        MPI_Recv(cmd, 2, MPI_INT, 0, TAG_CMD, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE); /* stalling */
        size_t psz = 100000, gsz = 3u << 20, poff = 4096, goff = 0;
        fill(lbuf + poff, psz, 4242);
        struct done dp = {0}, dg = {0};
        unsigned char *gl = malloc(gsz);
        na_mem_handle_t *gh;
        fill(gl, gsz, 777);
        NA_Mem_handle_create(cls, gl, gsz, NA_MEM_READWRITE, &gh);
        NA_Mem_register(cls, gh, NA_MEM_TYPE_HOST, 0);
        na_op_id_t *gop = NA_Op_create(cls, 0);
        NA_Put(cls, ctx, cb, &dp, lh, poff, remote, roff0 + poff, psz, tgt, 0, op);
        NA_Get(cls, ctx, cb, &dg, gh, 0, remote, roff0 + goff, gsz, tgt, 0, gop);
        for (int k = 0; k < 3; k++)
            progress_once(0);
        double tc = now_s();
        NA_Cancel(cls, ctx, op);
        NA_Cancel(cls, ctx, gop);
        int got = wait_for(&dp, 5) && wait_for(&dg, 5);
        double tp = (dp.t - tc) * 1e3, tg = (dg.t - tc) * 1e3;
        snprintf(why, sizeof(why), "put %d after %.1f ms, get %d after %.1f ms",
                 (int)dp.ret, tp, (int)dg.ret, tg);
        char nm[200];
        snprintf(nm, sizeof(nm),
                 "stall: cancels return NA_CANCELED within the bound (put %.1f ms, "
                 "get %.1f ms, bound 200 ms)",
                 tp, tg);
        result(nm,
               got && dp.ret == NA_CANCELED && dg.ret == NA_CANCELED && tp < 400 &&
                   tg < 400,
               why);
        hgx_emul_get_counters(&c1);
        result("stall: both counted as timed out",
               c1.cancel_timeout - c0.cancel_timeout == 2, "");
        unsigned char *chk = malloc(gsz);
        fill(chk, gsz, 777);
        result("stall: local get buffer untouched at cancel", memcmp(chk, gl, gsz) == 0,
               "");
        /* Let the target resume (it stalls 1.2 s) and answer. */
        double until = now_s() + 1.6;
        while (now_s() < until)
            progress_once(1);
        hgx_emul_get_counters(&c1);
        snprintf(why, sizeof(why), "late answers %lu, late data %lu, active %lu",
                 c1.late_replies - c0.late_replies,
                 c1.late_data_dropped - c0.late_data_dropped, c1.origin_active);
        result("stall: after resume the target answered (CANCELYES, consumed by the "
               "zombies), "
               "sent no data, ids released",
               c1.late_replies - c0.late_replies == 2 &&
                   c1.late_data_dropped == c0.late_data_dropped && c1.origin_active == 0,
               why);
        result("stall: local get buffer still untouched after resume",
               memcmp(chk, gl, gsz) == 0, "");
        result("stall: target region unchanged after resume (put dropped)",
               plain_get(poff, psz) == NA_SUCCESS &&
                   memcmp(vbuf, shadow + poff, psz) == 0,
               "");
        /* after the stall, the same ops work normally */
        struct done d2 = {0};
        NA_Put(cls, ctx, cb, &d2, lh, poff, remote, roff0 + poff, psz, tgt, 0, op);
        int ok2 = wait_for(&d2, 10) && d2.ret == NA_SUCCESS &&
                  plain_get(poff, psz) == NA_SUCCESS &&
                  memcmp(vbuf, lbuf + poff, psz) == 0;
        result("stall: a new put after resume is applied", ok2, "");
        if (ok2)
            memcpy(shadow + poff, lbuf + poff, psz);
        NA_Mem_deregister(cls, gh);
        NA_Mem_handle_free(cls, gh);
        NA_Op_destroy(cls, gop);
        free(gl), free(chk);
    }
    progress_barrier(); /* B2 */

    /* whole region still consistent */
    result("final: target region equals the origin's shadow",
           plain_get(0, REGION) == NA_SUCCESS && memcmp(vbuf, shadow, REGION) == 0, "");
    progress_barrier(); /* B3 */
    NA_Mem_deregister(cls, lh);
    NA_Mem_deregister(cls, vh);
    NA_Mem_handle_free(cls, lh);
    NA_Mem_handle_free(cls, vh);
    NA_Mem_handle_free(cls, remote);
    NA_Addr_free(cls, tgt);
    NA_Op_destroy(cls, op);
    NA_Op_destroy(cls, vop);
    free(lbuf), free(vbuf), free(shadow), free(lat_yes), free(lat_no);
}

/*------------------------------------------------------------------ target */

static void target(void)
{
    size_t norig = (size_t)nprocs - 1;
    unsigned char *region = calloc(norig, REGION), desc[64];
    na_mem_handle_t *h;
    NA_Mem_handle_create(cls, region, REGION * norig, NA_MEM_READWRITE, &h);
    NA_Mem_register(cls, h, NA_MEM_TYPE_HOST, 0);
    size_t dlen = NA_Mem_handle_get_serialize_size(cls, h);
    NA_Mem_handle_serialize(cls, desc, sizeof(desc), h);
    MPI_Bcast(&dlen, (int)sizeof(dlen), MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Bcast(desc, (int)dlen, MPI_BYTE, 0, MPI_COMM_WORLD);
    serve_barrier(); /* B1 */
    double lat[4];
    MPI_Recv(lat, 4, MPI_DOUBLE, 1, TAG_CMD + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf(
        "LATENCY cancel call -> callback (rank 1): CANCELED median %.1f us, p90 %.1f us "
        "(n=%.0f); CANCELNO (transfer completed) median %.1f us\n",
        lat[0], lat[1], lat[3], lat[2]);
    serve_barrier(); /* B2 */
    serve_barrier(); /* B3 */
    NA_Mem_deregister(cls, h);
    NA_Mem_handle_free(cls, h);
    free(region);
}

/*------------------------------------------------------- misbehaving data peer */

/* Rank 0 runs a real emulation instance (the victim V) on communicators of
 * this test; rank 1 (A) speaks the wire protocol by hand and sends data
 * chunks of the wrong size or on tags of no transfer; rank 2 (W) sends chunks
 * that are right in size but come from the wrong rank. Run with a separate
 * data communicator (as mpi+static) and with data on the control
 * communicator (as mpi+dynamic connections). */
#define B_CTRL 1
#define B_PUT 2
#define B_GET (B_PUT + HGX_EMUL_NSLOTS)
#define B_GEN (B_GET + HGX_EMUL_NSLOTS) /* tag generations >= 1 */
#define B_IDLE_MS "2000"                /* target bound of this test */
#define B_TAG 90 /* MPI_COMM_WORLD: coordination of this phase, 90..96 */
#define B_GUARD 4096
#define B_REGION ((size_t)HGX_EMUL_CHUNK + 4200) /* 2 chunks, the 2nd one 4200 B */
#define B_SMALL ((size_t)65536 + 100)            /* 1 chunk, above usual eager limits */
#define B_HUGE_BLOCKS 32769                      /* x 64 KiB: above INT_MAX bytes */

static MPI_Comm b_comm, b_data;
static struct hgx_emul *b_emul;
static struct hgx_mreqtab b_tab;
static unsigned b_bits; /* tag-generation bits of both instances */
static bool b_sep;

/* The data tag of generation g of request id (hgx_emul_set_tag_gens). */
static int b_tag_gen(bool put, uint32_t id, uint64_t g)
{
    if (g == 0)
        return (put ? B_PUT : B_GET) + (int)id;
    return (int)(B_GEN + (long long)(g - 1) * 2 * HGX_EMUL_NSLOTS +
                 (put ? 0 : HGX_EMUL_NSLOTS) + id);
}

/* The data tag of request id with sequence number seq announcing bits. */
static int b_tag_seq(bool put, uint32_t id, uint64_t seq, int bits)
{
    return b_tag_gen(put, id, bits > 0 ? seq & ((1ull << bits) - 1) : 0);
}

/* The data tag of request p (PUT/GET packet), from the bits it announces. */
static int b_tag(const struct hgx_emul_ctrl *p, bool put)
{
    return b_tag_seq(put, p->req_id, p->seq, p->status);
}

/* Without a data communicator, V's caller (as na_mpi.c for a connection)
 * hands the oldest message on a tag other than the control tag to the
 * emulation, so strays are dropped. */
static void b_progress(void)
{
    int nd;
    if (!b_sep) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, b_comm, &flag, &st);
        if (flag && st.MPI_TAG != B_CTRL) {
            MPI_Message msg;
            MPI_Improbe(st.MPI_SOURCE, st.MPI_TAG, b_comm, &flag, &msg, &st);
            if (flag)
                hgx_emul_data_msg(b_emul, &msg, &st);
        }
    }
    hgx_emul_progress(b_emul);
    hgx_mreqtab_poll(&b_tab, &nd);
}

static void b_done(void *arg, na_return_t ret)
{
    struct done *d = arg;
    d->ret = ret;
    d->flag = 1;
}

/* V: receive from MPI_COMM_WORLD while progressing. */
static int b_recv(void *buf, int n, int src, int tag)
{
    MPI_Request r;
    int flag = 0;
    double end = now_s() + 30;
    MPI_Irecv(buf, n, MPI_BYTE, src, tag, MPI_COMM_WORLD, &r);
    while (!flag && now_s() < end) {
        b_progress();
        MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    }
    if (!flag) {
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    return flag;
}

static int b_wait(struct done *d)
{
    double end = now_s() + 30;
    while (!d->flag && now_s() < end)
        b_progress();
    return d->flag;
}

/* V: progress until n more data messages were dropped as bad (or 10 s). */
static unsigned long b_bad_since(unsigned long base, unsigned long n)
{
    struct hgx_emul_counters c;
    double end = now_s() + 10;
    for (;;) {
        hgx_emul_get_counters(&c);
        if (c.bad_data - base >= n || now_s() > end)
            return c.bad_data - base;
        b_progress();
    }
}

/* V: a get of size bytes from remote into lm's region lb (reset to 0x5a
 * first, guard included) that one bad data message accompanies: *ok when the
 * get completed; returns the data messages dropped as bad meanwhile. */
static unsigned long b_get_one_bad(const struct hgx_emul_mem *lm, unsigned char *lb,
                                   const struct hgx_emul_mem *remote, size_t size,
                                   struct done *d, int *ok)
{
    struct hgx_emul_counters c0;
    struct hgx_emul_oreq *o;
    memset(lb, 0x5a, B_REGION + B_GUARD);
    hgx_emul_get_counters(&c0);
    memset(d, 0, sizeof(*d));
    hgx_emul_xfer(b_emul, false, lm, 0, remote, 0, size, b_done, d, &o);
    *ok = b_wait(d);
    return b_bad_since(c0.bad_data, 1);
}

static int all_bytes(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

/* A: a control packet from V, of the expected type. */
static struct hgx_emul_ctrl a_ctrl(uint32_t type)
{
    struct hgx_emul_ctrl p;
    memset(&p, 0, sizeof(p));
    MPI_Recv(&p, (int)sizeof(p), MPI_BYTE, 0, B_CTRL, b_comm, MPI_STATUS_IGNORE);
    if (p.magic != HGX_EMUL_CTRL_MAGIC || p.type != type)
        result("attacker: expected control packet", 0, "wrong type");
    return p;
}

static void a_put_request_bits(uint32_t id, const struct hgx_emul_mem_wire *w,
                               uint64_t off, uint64_t size, uint64_t seq, unsigned bits)
{
    struct hgx_emul_ctrl p = {.magic = HGX_EMUL_CTRL_MAGIC,
                              .type = HGX_EMUL_CT_PUT,
                              .req_id = id,
                              .handle_id = w->id,
                              .gen = w->gen,
                              .offset = off,
                              .size = size,
                              .seq = seq,
                              .status = (int32_t)bits};
    MPI_Send(&p, (int)sizeof(p), MPI_BYTE, 0, B_CTRL, b_comm);
}

static void a_put_request(uint32_t id, const struct hgx_emul_mem_wire *w, uint64_t off,
                          uint64_t size, uint64_t seq)
{
    a_put_request_bits(id, w, off, size, seq, 0); /* one generation: tag base + id */
}

static void a_data(unsigned char v, size_t n, int tag)
{
    unsigned char *b = malloc(n);
    memset(b, v, n);
    MPI_Send(b, (int)n, MPI_BYTE, 0, tag, b_data);
    free(b);
}

/* A: one message of B_HUGE_BLOCKS x 64 KiB (over 2 GiB) from a 64 KiB buffer. */
static void a_huge(int tag)
{
    int *bl = malloc(sizeof(int) * B_HUGE_BLOCKS);
    MPI_Aint *disp = calloc(B_HUGE_BLOCKS, sizeof(MPI_Aint));
    unsigned char *b = calloc(1, 65536);
    MPI_Datatype t;
    for (int i = 0; i < B_HUGE_BLOCKS; i++)
        bl[i] = 65536;
    MPI_Type_create_hindexed(B_HUGE_BLOCKS, bl, disp, MPI_BYTE, &t);
    MPI_Type_commit(&t);
    MPI_Send(b, 1, t, 0, tag, b_data);
    MPI_Type_free(&t);
    free(bl), free(disp), free(b);
}

/* W: a chunk of the right size from the wrong rank, on the tag A names. */
static void w_chunk(size_t n)
{
    int tag;
    MPI_Recv(&tag, 1, MPI_INT, 1, B_TAG + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    a_data(0xee, n, tag); /* rendezvous: returns once V took it (either order is fine) */
    MPI_Send(&tag, 1, MPI_INT, 1, B_TAG + 2, MPI_COMM_WORLD);
}

/* A: have W send its chunk on tag, and wait until V took it. */
static void a_via_w(int tag)
{
    MPI_Send(&tag, 1, MPI_INT, 2, B_TAG + 1, MPI_COMM_WORLD);
    MPI_Recv(&tag, 1, MPI_INT, 2, B_TAG + 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void bad_victim(bool sep)
{
    const char *mode = sep ? "separate data comm" : "data on the control comm";
    char nm[200], why[200];
    struct hgx_emul_counters c0, c1;
    unsigned char *lb = malloc(B_REGION + B_GUARD), *tb = malloc(B_REGION + B_GUARD);
    struct na_segment lseg = {lb, B_REGION}, tseg = {tb, B_REGION};
    struct hgx_emul_mem
        lm = {.flags = NA_MEM_READWRITE, .len = B_REGION, .nseg = 1, .segs = &lseg},
        tm = {.flags = NA_MEM_READWRITE, .len = B_REGION, .nseg = 1, .segs = &tseg},
        fake = {
            .id = 1, .gen = 1, .flags = NA_MEM_READWRITE, .len = B_REGION, .owner = 1};
    struct hgx_emul_mem_wire w;
    hgx_emul_mem_register(b_emul, &tm);
    hgx_emul_mem_serialize(&tm, &w);
    MPI_Send(&w, (int)sizeof(w), MPI_BYTE, 1, B_TAG, MPI_COMM_WORLD);
    struct hgx_emul_oreq *o;

    /* get, 2nd chunk oversized: 5000 B where its chunk is 4200 B */
    struct done d;
    int ok;
    unsigned long bad = b_get_one_bad(&lm, lb, &fake, B_REGION, &d, &ok);
    snprintf(why, sizeof(why), "ret %d, bad data %lu", (int)d.ret, bad);
    snprintf(nm, sizeof(nm),
             "%s: get whose last chunk comes oversized (5000 B for 4200) fails, "
             "nothing written past the region, dropped and counted",
             mode);
    result(
        nm,
        ok && d.ret != NA_SUCCESS && d.ret != NA_CANCELED &&
            all_bytes(lb + HGX_EMUL_CHUNK, B_REGION - HGX_EMUL_CHUNK + B_GUARD, 0x5a) &&
            bad == 1,
        why);

    /* get of one 4200 B chunk answered with a message of over 2 GiB */
    bad = b_get_one_bad(&lm, lb, &fake, 4200, &d, &ok);
    snprintf(why, sizeof(why), "ret %d, bad data %lu", (int)d.ret, bad);
    snprintf(nm, sizeof(nm),
             "%s: get answered with a data message over 2 GiB fails, region and guard "
             "untouched",
             mode);
    result(nm,
           ok && d.ret != NA_SUCCESS && d.ret != NA_CANCELED &&
               all_bytes(lb, B_REGION + B_GUARD, 0x5a) && bad == 1,
           why);

    /* get: a chunk of the right size from another rank is dropped, the real one lands */
    bad = b_get_one_bad(&lm, lb, &fake, B_SMALL, &d, &ok);
    snprintf(why, sizeof(why), "ret %d, bad data %lu", (int)d.ret, bad);
    snprintf(nm, sizeof(nm),
             "%s: get chunk from the wrong rank dropped and counted, the get completes "
             "with its target's data",
             mode);
    result(nm,
           ok && d.ret == NA_SUCCESS && all_bytes(lb, B_SMALL, 0x44) &&
               all_bytes(lb + B_SMALL, B_REGION - B_SMALL + B_GUARD, 0x5a) && bad == 1,
           why);

    /* put, 2nd chunk oversized: the put fails (ACK with an error), the chunk is
     * not written, nothing past the region */
    memset(tb, 0x33, B_REGION + B_GUARD);
    hgx_emul_get_counters(&c0);
    int32_t st = -1;
    ok = b_recv(&st, (int)sizeof(st), 1, B_TAG + 3);
    bad = b_bad_since(c0.bad_data, 1);
    hgx_emul_get_counters(&c1);
    snprintf(why, sizeof(why), "ACK status %d, bad data %lu, target records %lu", st, bad,
             c1.target_records);
    snprintf(nm, sizeof(nm),
             "%s: put whose last chunk comes oversized (5000 B for 4200) fails, the "
             "chunk is not written, nothing past the region, record freed",
             mode);
    result(
        nm,
        ok && st != NA_SUCCESS && st >= 0 &&
            all_bytes(tb + HGX_EMUL_CHUNK, B_REGION - HGX_EMUL_CHUNK + B_GUARD, 0x33) &&
            bad == 1 && c1.target_records == 0,
        why);
    MPI_Send(&ok, 1, MPI_INT, 1, B_TAG + 6, MPI_COMM_WORLD); /* A goes on */

    /* put: a chunk of the right size from another rank is dropped, the real one lands */
    memset(tb, 0x33, B_REGION + B_GUARD);
    hgx_emul_get_counters(&c0);
    st = -1;
    ok = b_recv(&st, (int)sizeof(st), 1, B_TAG + 3);
    bad = b_bad_since(c0.bad_data, 1);
    snprintf(why, sizeof(why), "ACK status %d, bad data %lu", st, bad);
    snprintf(nm, sizeof(nm),
             "%s: put chunk from the wrong rank dropped and counted, the put applies the "
             "origin's data",
             mode);
    result(nm,
           ok && st == NA_SUCCESS && all_bytes(tb, B_REGION - B_SMALL, 0x33) &&
               all_bytes(tb + B_REGION - B_SMALL, B_SMALL, 0x44) &&
               all_bytes(tb + B_REGION, B_GUARD, 0x33) && bad == 1,
           why);

    /* get cancelled while its target stalls: local cancel (zombie); the target
     * then answers CANCELNO and sends both chunks: the id stays taken until
     * they came, they are dropped as late data, nothing is written */
    memset(lb, 0x5a, B_REGION + B_GUARD);
    memset(&d, 0, sizeof(d));
    hgx_emul_xfer(b_emul, false, &lm, 0, &fake, 0, B_REGION, b_done, &d, &o);
    hgx_emul_cancel(b_emul, o);
    ok = b_wait(&d) && d.ret == NA_CANCELED && all_bytes(lb, B_REGION + B_GUARD, 0x5a);
    hgx_emul_get_counters(&c0);
    MPI_Send(&ok, 1, MPI_INT, 1, B_TAG + 4, MPI_COMM_WORLD); /* answer now */
    ok = b_recv(&st, (int)sizeof(st), 1, B_TAG + 4) && ok;
    double until = now_s() + 5;
    do {
        b_progress();
        hgx_emul_get_counters(&c1);
    } while (c1.late_replies == c0.late_replies && now_s() < until);
    int held = c1.origin_active == 1 && c1.late_replies == c0.late_replies + 1;
    MPI_Send(&ok, 1, MPI_INT, 1, B_TAG + 4, MPI_COMM_WORLD); /* chunks now */
    until = now_s() + 10;
    do {
        b_progress();
        hgx_emul_get_counters(&c1);
    } while ((c1.late_data_dropped - c0.late_data_dropped < 2 || c1.origin_active) &&
             now_s() < until);
    snprintf(why, sizeof(why), "held %d, late data %lu, bad data %lu, active %lu", held,
             c1.late_data_dropped - c0.late_data_dropped, c1.bad_data - c0.bad_data,
             c1.origin_active);
    snprintf(nm, sizeof(nm),
             "%s: get cancelled locally then answered CANCELNO: its id is held until "
             "both chunks came, they are dropped as late data, nothing is written",
             mode);
    result(nm,
           ok && held && c1.late_data_dropped - c0.late_data_dropped == 2 &&
               c1.bad_data == c0.bad_data && !c1.origin_active &&
               all_bytes(lb, B_REGION + B_GUARD, 0x5a),
           why);

    /* put aborted after CTS and its first chunk: the target sends no ACK and
     * takes the chunk that still comes (its sender waits for that) as late
     * data, not written; then the record is freed */
    memset(tb, 0x33, B_REGION + B_GUARD);
    hgx_emul_get_counters(&c0);
    ok = b_recv(&st, (int)sizeof(st), 1, B_TAG + 5); /* ABORT sent */
    until = now_s() + 5;
    do { /* ABORT and data use two communicators: wait until it was handled */
        b_progress();
        hgx_emul_get_counters(&c1);
    } while (c1.aborts == c0.aborts && now_s() < until);
    MPI_Send(&ok, 1, MPI_INT, 1, B_TAG + 5, MPI_COMM_WORLD); /* the next chunk now */
    st = -1;
    ok = b_recv(&st, (int)sizeof(st), 1, B_TAG + 3) && ok;
    until = now_s() + 5;
    do {
        b_progress();
        hgx_emul_get_counters(&c1);
    } while (c1.target_records && now_s() < until);
    snprintf(why, sizeof(why),
             "no ACK %d, aborts %lu, late data %lu, bad data %lu, target records %lu", st,
             c1.aborts - c0.aborts, c1.late_data_dropped - c0.late_data_dropped,
             c1.bad_data - c0.bad_data, c1.target_records);
    snprintf(nm, sizeof(nm),
             "%s: put aborted after its first chunk: no ACK, the chunk after ABORT "
             "dropped as late data and not written, record freed",
             mode);
    result(nm,
           ok && st == 1 && c1.aborts == c0.aborts + 1 &&
               c1.late_data_dropped == c0.late_data_dropped + 1 &&
               c1.bad_data == c0.bad_data && !c1.target_records &&
               all_bytes(tb + HGX_EMUL_CHUNK, B_REGION - HGX_EMUL_CHUNK + B_GUARD, 0x33),
           why);
    MPI_Send(&ok, 1, MPI_INT, 1, B_TAG + 6, MPI_COMM_WORLD); /* A goes on */

    /* tag generations, put: the old put (generation 0) aborted after CTS (its
     * record still takes its chunks) or completed, then a put reusing its id
     * (generation 1); a chunk on the old put's tag comes first: late data of
     * the aborted record, or a stray; the new put applies its own chunk */
    for (int k = 0; k < 2; k++) {
        memset(tb, 0x33, B_REGION + B_GUARD);
        hgx_emul_get_counters(&c0);
        if (k == 0) { /* old put aborted: wait until the ABORT was handled */
            ok = b_recv(&st, (int)sizeof(st), 1, B_TAG + 5);
            until = now_s() + 5;
            do {
                b_progress();
                hgx_emul_get_counters(&c1);
            } while (c1.aborts == c0.aborts && now_s() < until);
            MPI_Send(&ok, 1, MPI_INT, 1, B_TAG + 5, MPI_COMM_WORLD);
        }
        st = -1;
        ok = b_recv(&st, (int)sizeof(st), 1, B_TAG + 3);
        if (k == 1)
            b_bad_since(c0.bad_data, 1);
        until = now_s() + 5;
        do {
            b_progress();
            hgx_emul_get_counters(&c1);
        } while (c1.target_records && now_s() < until);
        unsigned long late = c1.late_data_dropped - c0.late_data_dropped;
        bad = c1.bad_data - c0.bad_data;
        snprintf(why, sizeof(why),
                 "ACK status %d, late data %lu, bad data %lu, records %lu, new data "
                 "%s (first byte 0x%02x)",
                 st, late, bad, c1.target_records,
                 all_bytes(tb, 4000, 0x44) ? "intact" : "overwritten", tb[0]);
        snprintf(nm, sizeof(nm),
                 "%s: put reusing the id of a %s put: a chunk on the old put's tag "
                 "is %s, the new put's data lands intact",
                 mode, k ? "completed" : "aborted",
                 k ? "a stray (dropped, counted)" : "dropped as its late data");
        result(nm,
               ok && st == NA_SUCCESS && all_bytes(tb, 4000, 0x44) &&
                   all_bytes(tb + 4000, B_REGION - 4000 + B_GUARD, 0x33) &&
                   late == (k ? 0u : 1u) && bad == (k ? 1u : 0u) && !c1.target_records,
               why);
        MPI_Send(&ok, 1, MPI_INT, 1, B_TAG + 6, MPI_COMM_WORLD); /* A goes on */
    }

    /* tag generations, get: a chunk on the tag of another generation of the
     * get's id comes first: a stray; the get completes with its own chunk */
    bad = b_get_one_bad(&lm, lb, &fake, 4000, &d, &ok);
    snprintf(why, sizeof(why), "ret %d, bad data %lu, data %s", (int)d.ret, bad,
             all_bytes(lb, 4000, 0x44) ? "intact" : "overwritten");
    snprintf(nm, sizeof(nm),
             "%s: get: a chunk on the tag of an older use of its id is a stray, the "
             "get completes with its own data",
             mode);
    result(nm,
           ok && d.ret == NA_SUCCESS && all_bytes(lb, 4000, 0x44) &&
               all_bytes(lb + 4000, B_REGION - 4000 + B_GUARD, 0x5a) && bad == 1,
           why);

    /* target bound: PUT, CTS, then the origin sends nothing */
    memset(tb, 0x33, B_REGION + B_GUARD);
    hgx_emul_get_counters(&c0);
    until = now_s() + atoi(getenv("HGX_MPI_TARGET_IDLE_MS")) / 1000.0 + 10;
    double t0 = now_s();
    int seen = 0;
    do {
        b_progress();
        hgx_emul_get_counters(&c1);
        seen |= c1.target_records > 0;
    } while ((!seen || c1.target_records) && now_s() < until);
    double waited = now_s() - t0;
    st = -1;
    ok = b_recv(&st, (int)sizeof(st), 1, B_TAG + 3); /* its ACK, then a late chunk */
    bad = b_bad_since(c0.bad_data, 1);
    hgx_emul_get_counters(&c1);
    snprintf(why, sizeof(why),
             "record seen %d, gone after %.1f s, expired %lu, ACK status %d, bad data "
             "%lu, region %s",
             seen, waited, c1.target_expired - c0.target_expired, st, bad,
             all_bytes(tb, B_REGION + B_GUARD, 0x33) ? "untouched" : "written");
    snprintf(nm, sizeof(nm),
             "%s: put whose origin sends nothing after CTS is dropped after the target "
             "bound (NA_TIMEOUT ACK), a chunk after that is a stray, nothing written",
             mode);
    result(nm,
           ok && seen && !c1.target_records &&
               c1.target_expired == c0.target_expired + 1 && st == NA_TIMEOUT &&
               bad == 1 && all_bytes(tb, B_REGION + B_GUARD, 0x33),
           why);

    /* strays: with a data communicator its wildcard probe finds them; without
     * one, the caller hands the emulation what heads its queue */
    memset(lb, 0x5a, B_REGION + B_GUARD);
    memset(tb, 0x33, B_REGION + B_GUARD);
    hgx_emul_get_counters(&c0);
    MPI_Send(&ok, 1, MPI_INT, 1, B_TAG + 4, MPI_COMM_WORLD); /* send them now */
    ok = b_recv(&st, (int)sizeof(st), 1, B_TAG + 3);
    bad = b_bad_since(c0.bad_data, 5);
    snprintf(why, sizeof(why), "bad data %lu of 5", bad);
    snprintf(nm, sizeof(nm),
             "%s: messages on get/put tags of no transfer (also of another tag "
             "generation), on a non-data tag and one over 2 GiB are dropped and counted",
             mode);
    result(nm,
           ok && bad == 5 && all_bytes(tb, B_REGION + B_GUARD, 0x33) &&
               all_bytes(lb, B_REGION + B_GUARD, 0x5a),
           why);

    /* afterwards, normal transfers with a well-behaved peer (A's own instance) */
    MPI_Recv(&w, (int)sizeof(w), MPI_BYTE, 1, B_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    struct hgx_emul_mem rem;
    hgx_emul_mem_deserialize(&rem, &w, sizeof(w), nprocs);
    memset(lb, 0x5a, B_REGION + B_GUARD);
    memset(&d, 0, sizeof(d));
    hgx_emul_xfer(b_emul, false, &lm, 0, &rem, 0, B_REGION, b_done, &d, &o);
    ok = b_wait(&d) && d.ret == NA_SUCCESS && all_bytes(lb, B_REGION, 0x77) &&
         all_bytes(lb + B_REGION, B_GUARD, 0x5a);
    memset(lb, 0x99, B_SMALL);
    memset(&d, 0, sizeof(d));
    hgx_emul_xfer(b_emul, true, &lm, 0, &rem, 100, B_SMALL, b_done, &d, &o);
    ok = ok && b_wait(&d) && d.ret == NA_SUCCESS;
    memset(lb, 0, B_REGION);
    memset(&d, 0, sizeof(d));
    hgx_emul_xfer(b_emul, false, &lm, 0, &rem, 0, B_REGION, b_done, &d, &o);
    ok = ok && b_wait(&d) && d.ret == NA_SUCCESS && all_bytes(lb, 100, 0x77) &&
         all_bytes(lb + 100, B_SMALL, 0x99) &&
         all_bytes(lb + 100 + B_SMALL, B_REGION - 100 - B_SMALL, 0x77);
    snprintf(nm, sizeof(nm), "%s: afterwards a normal get, put and get back work", mode);
    result(nm, ok, "");
    MPI_Send(&ok, 1, MPI_INT, 1, B_TAG, MPI_COMM_WORLD);
    hgx_emul_mem_deregister(b_emul, &tm);
    free(lb), free(tb);
}

static void bad_attacker(bool sep)
{
    struct hgx_emul_mem_wire w;
    MPI_Recv(&w, (int)sizeof(w), MPI_BYTE, 0, B_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    struct hgx_emul_ctrl p = a_ctrl(HGX_EMUL_CT_GET); /* 2 chunks, 2nd oversized */
    a_data(0x44, HGX_EMUL_CHUNK, b_tag(&p, false));
    a_data(0x44, 5000, b_tag(&p, false));
    p = a_ctrl(HGX_EMUL_CT_GET); /* 4200 B, answered with over 2 GiB */
    a_huge(b_tag(&p, false));
    p = a_ctrl(HGX_EMUL_CT_GET); /* W first, then the real chunk */
    a_via_w(b_tag(&p, false));
    a_data(0x44, B_SMALL, b_tag(&p, false));

    a_put_request(5, &w, 0, B_REGION, 1); /* 2 chunks, 2nd oversized */
    p = a_ctrl(HGX_EMUL_CT_CTS);
    a_data(0x44, HGX_EMUL_CHUNK, B_PUT + 5);
    a_data(0x44, 5000, B_PUT + 5);
    p = a_ctrl(HGX_EMUL_CT_ACK);
    MPI_Send(&p.status, (int)sizeof(p.status), MPI_BYTE, 0, B_TAG + 3, MPI_COMM_WORLD);
    int go;
    MPI_Recv(&go, 1, MPI_INT, 0, B_TAG + 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    /* W first, then the real chunk */
    a_put_request(6, &w, B_REGION - B_SMALL, B_SMALL, 2);
    p = a_ctrl(HGX_EMUL_CT_CTS);
    a_via_w(B_PUT + 6);
    a_data(0x44, B_SMALL, B_PUT + 6);
    p = a_ctrl(HGX_EMUL_CT_ACK);
    MPI_Send(&p.status, (int)sizeof(p.status), MPI_BYTE, 0, B_TAG + 3, MPI_COMM_WORLD);

    p = a_ctrl(HGX_EMUL_CT_GET); /* cancelled, answered late with CANCELNO */
    struct hgx_emul_ctrl cp = a_ctrl(HGX_EMUL_CT_CANCEL);
    MPI_Recv(&go, 1, MPI_INT, 0, B_TAG + 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    cp.type = HGX_EMUL_CT_CANCELNO;
    MPI_Send(&cp, (int)sizeof(cp), MPI_BYTE, 0, B_CTRL, b_comm);
    MPI_Send(&cp.status, (int)sizeof(cp.status), MPI_BYTE, 0, B_TAG + 4, MPI_COMM_WORLD);
    MPI_Recv(&go, 1, MPI_INT, 0, B_TAG + 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    a_data(0x44, HGX_EMUL_CHUNK, b_tag(&p, false));
    a_data(0x44, B_REGION - HGX_EMUL_CHUNK, b_tag(&p, false));

    a_put_request(7, &w, 0, B_REGION, 3); /* aborted after the first chunk */
    p = a_ctrl(HGX_EMUL_CT_CTS);
    a_data(0x44, HGX_EMUL_CHUNK, B_PUT + 7);
    p.type = HGX_EMUL_CT_ABORT;
    MPI_Send(&p, (int)sizeof(p), MPI_BYTE, 0, B_CTRL, b_comm);
    MPI_Send(&go, 1, MPI_INT, 0, B_TAG + 5, MPI_COMM_WORLD);
    MPI_Recv(&go, 1, MPI_INT, 0, B_TAG + 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    a_data(0x44, B_REGION - HGX_EMUL_CHUNK, B_PUT + 7);
    double until = now_s() + 0.2; /* no ACK may come */
    int noack = 1;
    while (now_s() < until && noack) {
        int flag = 0;
        MPI_Iprobe(0, B_CTRL, b_comm, &flag, MPI_STATUS_IGNORE);
        noack = !flag;
    }
    MPI_Send(&noack, (int)sizeof(noack), MPI_BYTE, 0, B_TAG + 3, MPI_COMM_WORLD);
    MPI_Recv(&go, 1, MPI_INT, 0, B_TAG + 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    /* puts reusing an id: old one generation 0 (tag base + id), new one 1 */
    for (int k = 0; k < 2; k++) {
        uint64_t seq0 = (uint64_t)(k + 1) << b_bits;
        a_put_request_bits(8, &w, 0, 4000, seq0, b_bits);
        p = a_ctrl(HGX_EMUL_CT_CTS);
        if (k == 0) { /* aborted before its chunk left */
            p.type = HGX_EMUL_CT_ABORT;
            MPI_Send(&p, (int)sizeof(p), MPI_BYTE, 0, B_CTRL, b_comm);
            MPI_Send(&go, 1, MPI_INT, 0, B_TAG + 5, MPI_COMM_WORLD);
            MPI_Recv(&go, 1, MPI_INT, 0, B_TAG + 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else { /* completed */
            a_data(0x55, 4000, b_tag_gen(true, 8, 0));
            a_ctrl(HGX_EMUL_CT_ACK);
        }
        a_put_request_bits(8, &w, 0, 4000, seq0 + 1, b_bits);
        p = a_ctrl(HGX_EMUL_CT_CTS);
        a_data(0xee, 4000, b_tag_gen(true, 8, 0)); /* the old put's late chunk */
        a_data(0x44, 4000, b_tag_seq(true, 8, seq0 + 1, (int)b_bits));
        p = a_ctrl(HGX_EMUL_CT_ACK);
        MPI_Send(&p.status, (int)sizeof(p.status), MPI_BYTE, 0, B_TAG + 3,
                 MPI_COMM_WORLD);
        MPI_Recv(&go, 1, MPI_INT, 0, B_TAG + 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }

    /* get: a chunk on its id's generation-0 tag, then its own (generation >= 1) */
    p = a_ctrl(HGX_EMUL_CT_GET);
    if (b_tag(&p, false) == b_tag_gen(false, p.req_id, 0))
        result("attacker: the get's tag generation is not 0", 0, "");
    a_data(0xee, 4000, b_tag_gen(false, p.req_id, 0));
    a_data(0x44, 4000, b_tag(&p, false));

    /* target bound: PUT, CTS, nothing; then the ACK (NA_TIMEOUT) and a late chunk */
    a_put_request(12, &w, 0, 4000, 5);
    p = a_ctrl(HGX_EMUL_CT_CTS);
    {
        MPI_Request r;
        int flag = 0;
        double end = now_s() + atoi(getenv("HGX_MPI_TARGET_IDLE_MS")) / 1000.0 + 15;
        memset(&p, 0, sizeof(p));
        p.status = -1;
        MPI_Irecv(&p, (int)sizeof(p), MPI_BYTE, 0, B_CTRL, b_comm, &r);
        while (!flag && now_s() < end)
            MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
        if (!flag) {
            MPI_Cancel(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        if (p.type != HGX_EMUL_CT_ACK)
            p.status = -1;
        MPI_Send(&p.status, (int)sizeof(p.status), MPI_BYTE, 0, B_TAG + 3,
                 MPI_COMM_WORLD);
        a_data(0x44, 4000, B_PUT + 12);
    }

    MPI_Recv(&go, 1, MPI_INT, 0, B_TAG + 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    a_data(0x44, 3000, B_GET + 1000);
    a_data(0x44, 3000, B_PUT + 1000);
    a_data(0x44, 3000, b_tag_gen(true, 1000, 3));
    a_data(0x44, 3000, 0);
    a_huge(B_PUT + 999);
    MPI_Send(&p.status, (int)sizeof(p.status), MPI_BYTE, 0, B_TAG + 3, MPI_COMM_WORLD);

    /* a well-behaved instance for the normal transfers */
    struct hgx_mreqtab tab;
    struct hgx_emul *e;
    hgx_mreqtab_init(&tab);
    hgx_emul_create(&e, b_comm, &tab, B_CTRL, B_PUT, B_GET);
    if (sep)
        hgx_emul_set_data_comm(e, b_data);
    hgx_emul_set_tag_gens(e, B_GEN, b_bits);
    unsigned char *ab = malloc(B_REGION);
    memset(ab, 0x77, B_REGION);
    struct na_segment seg = {ab, B_REGION};
    struct hgx_emul_mem m = {
        .flags = NA_MEM_READWRITE, .len = B_REGION, .nseg = 1, .segs = &seg};
    hgx_emul_mem_register(e, &m);
    hgx_emul_mem_serialize(&m, &w);
    MPI_Send(&w, (int)sizeof(w), MPI_BYTE, 0, B_TAG, MPI_COMM_WORLD);
    MPI_Request r;
    int flag = 0, ok;
    MPI_Irecv(&ok, 1, MPI_INT, 0, B_TAG, MPI_COMM_WORLD, &r);
    while (!flag) {
        int nd;
        hgx_emul_progress(e);
        hgx_mreqtab_poll(&tab, &nd);
        MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    }
    hgx_emul_mem_deregister(e, &m);
    hgx_emul_close(e);
    hgx_mreqtab_destroy(&tab, 1000);
    hgx_emul_free(e);
    free(ab);
}

static void bad_peer_phase(bool sep)
{
    MPI_Comm_dup(MPI_COMM_WORLD, &b_comm);
    MPI_Comm_set_errhandler(b_comm, MPI_ERRORS_RETURN);
    b_data = b_comm;
    b_sep = sep;
    if (sep)
        MPI_Comm_dup(b_comm, &b_data);
    int *tag_ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    b_bits = hgx_emul_gen_bits(flag ? (long long)*tag_ub - B_GEN + 1 : 0);
    if (b_bits < 2 && rank == 0)
        result("MPI_TAG_UB leaves room for tag generations", 0, "");
    if (rank == 0) {
        hgx_mreqtab_init(&b_tab);
        hgx_emul_create(&b_emul, b_comm, &b_tab, B_CTRL, B_PUT, B_GET);
        if (sep)
            hgx_emul_set_data_comm(b_emul, b_data);
        hgx_emul_set_tag_gens(b_emul, B_GEN, b_bits);
        bad_victim(sep);
        struct hgx_emul_counters c;
        double end = now_s() + 5;
        do {
            b_progress();
            hgx_emul_get_counters(&c);
        } while ((c.origin_active || c.target_records) && now_s() < end);
        char why[100];
        snprintf(why, sizeof(why), "origin requests %lu, target records %lu",
                 c.origin_active, c.target_records);
        result(sep ? "separate data comm: nothing left on the victim"
                   : "data on the control comm: nothing left on the victim",
               !c.origin_active && !c.target_records, why);
        hgx_emul_close(b_emul);
        hgx_mreqtab_destroy(&b_tab, 1000);
        hgx_emul_free(b_emul);
    } else if (rank == 1) {
        bad_attacker(sep);
    } else if (rank == 2) {
        w_chunk(B_SMALL);
        w_chunk(B_SMALL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (sep)
        MPI_Comm_free(&b_data);
    MPI_Comm_free(&b_comm);
}

static double raw_rtt_us(void)
{
    char buf[8] = {0};
    double t0 = 0;
    for (int i = -100; i < RTT_ITER; i++) {
        if (i == 0)
            t0 = now_s();
        if (rank == 1) {
            MPI_Send(buf, 8, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
            MPI_Recv(buf, 8, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 0) {
            MPI_Recv(buf, 8, MPI_BYTE, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 8, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
        }
    }
    return (now_s() - t0) * 1e6 / RTT_ITER;
}

int main(int argc, char **argv)
{
    mpitest_init(&argc, &argv, &rank, &nprocs);
    if (nprocs < 2)
        return mpitest_skip(
            rank, "test_mpi_emul_cancel needs at least 2 processes (mpirun -np 3)");
    unsigned long total = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 20240605u;
    setenv("HGX_MPI_TARGET_IDLE_MS", B_IDLE_MS, 0); /* read once, by NA_Initialize */
    unsigned long per = (total + (unsigned long)nprocs - 2) / (unsigned long)(nprocs - 1);
    if (rank == 0)
        printf(
            "[----------] seed %llu, %lu trials (%lu per origin), cancel bound %s ms\n",
            (unsigned long long)seed, per * (unsigned long)(nprocs - 1), per,
            getenv("HGX_MPI_CANCEL_TIMEOUT_MS") ? getenv("HGX_MPI_CANCEL_TIMEOUT_MS")
                                                : "200");
    double rtt = raw_rtt_us();
    cls = NA_Initialize("mpi+static", rank == 0);
    if (!cls) {
        result("NA_Initialize", 0, "");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    ctx = NA_Context_create(cls);
    if (rank == 0) {
        target();
    } else {
        size_t dlen;
        unsigned char desc[64];
        MPI_Bcast(&dlen, (int)sizeof(dlen), MPI_BYTE, 0, MPI_COMM_WORLD);
        MPI_Bcast(desc, (int)dlen, MPI_BYTE, 0, MPI_COMM_WORLD);
        origin(per, seed, desc, dlen);
    }
    /* leaks: everything released on every rank */
    struct hgx_emul_counters c;
    int q = quiet_counters(&c, 5);
    char why[160];
    snprintf(why, sizeof(why), "origin requests %lu, target records %lu, tombstones %lu",
             c.origin_active, c.target_records, c.tombstones);
    result("nothing left: requests, target records", q, why);
    unsigned long v[9] = {c.cancel_requested, c.cancel_yes,   c.cancel_no,
                          c.cancel_timeout,   c.late_replies, c.late_data_dropped,
                          c.partial_local,    c.target_yes,   c.bad_data},
                  s[9];
    MPI_Reduce(v, s, 9, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf(
            "COUNTERS cancel requested %lu: CANCELYES %lu, CANCELNO %lu, timed out %lu "
            "(late answers %lu, late data dropped %lu, partial %lu), bad data %lu\n",
            s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[8]);
        printf("LATENCY raw MPI 8 B round trip (rank 0 <-> 1, MPI_Send/Recv): %.2f us\n",
               rtt);
        char w[96];
        snprintf(w, sizeof(w), "YES %lu NO %lu", s[1], s[2]);
        result("both CANCELYES and CANCELNO occurred", s[1] > 0 && s[2] > 0, w);
        result("every cancel answered or timed out",
               s[0] == s[1] + s[2] + s[3] && s[6] == 0, "");
        /* Only chunks a timed-out put could not recall (its target stalled after
         * CTS, beyond the stall test's 2) can arrive for no transfer. */
        result("no data message dropped as bad in well-behaved traffic",
               s[8] == 0 || s[3] > 2, "");
    }
    NA_Context_destroy(cls, ctx);
    result("NA_Finalize", NA_Finalize(cls) == NA_SUCCESS, "");
    if (nprocs >= 3) {
        bad_peer_phase(true);
        bad_peer_phase(false);
    } else if (rank == 0) {
        printf("[  SKIPPED ] misbehaving data peer: needs 3 processes (mpirun -np 3)\n");
    }
    return mpitest_finish(passes, failures);
}
