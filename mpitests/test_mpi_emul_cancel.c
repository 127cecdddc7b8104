/*
 * test_mpi_emul_cancel.c -- IMPI-style remote cancel of put/get emulated over
 * MPI (src/mpi_emul, docs/mpi-emul-cancel.md). Run as
 * `mpirun -np 3 ./test_mpi_emul_cancel [trials] [seed]`: rank 0 is the target,
 * the other ranks are origins.
 *
 *  - race: random put/get (1 B - 4 MiB, skewed small) cancelled right after
 *    posting, after a few progress calls or after a random delay; every trial
 *    is checked against memory (cancelled => region unchanged, else fully
 *    transferred, never partial); CANCELYES and CANCELNO must both occur.
 *  - stall: the target stops progressing; cancel returns within the bound;
 *    on resume the target neither writes nor sends data for the request.
 *  - leaks: all requests, records, tombstones and drains are gone at the end.
 *  - latency: cancel call to callback, next to a raw MPI round trip.
 */
#include "mpi_emul.h"
#include "na.h"

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
    if (ok) {
        passes++;
        printf("[       OK ] rank %d: %s\n", rank, name);
    } else {
        failures++;
        printf("[  FAILED  ] rank %d: %s (%s)\n", rank, name, why ? why : "");
    }
    fflush(stdout);
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

static int quiet_counters(struct mpi_emul_counters *c, double timeout_s)
{
    double end = now_s() + timeout_s;
    for (;;) {
        mpi_emul_get_counters(c);
        if (!c->origin_active && !c->target_records && !c->drains)
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
        struct mpi_emul_counters c0, c1;
        mpi_emul_get_counters(&c0);
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
        mpi_emul_get_counters(&c1);
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
        mpi_emul_get_counters(&c1);
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
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs < 2) {
        if (rank == 0)
            printf("[  SKIPPED ] test_mpi_emul_cancel needs at least 2 processes (mpirun "
                   "-np 3)\n");
        MPI_Finalize();
        return 77;
    }
    unsigned long total = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 20240605u;
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
    struct mpi_emul_counters c;
    int q = quiet_counters(&c, 5);
    char why[160];
    snprintf(why, sizeof(why),
             "origin requests %lu, target records %lu, drains %lu, tombstones %lu",
             c.origin_active, c.target_records, c.drains, c.tombstones);
    result("nothing left: requests, target records, drains", q, why);
    unsigned long v[8] = {c.cancel_requested, c.cancel_yes,   c.cancel_no,
                          c.cancel_timeout,   c.late_replies, c.late_data_dropped,
                          c.partial_local,    c.target_yes},
                  s[8];
    MPI_Reduce(v, s, 8, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf(
            "COUNTERS cancel requested %lu: CANCELYES %lu, CANCELNO %lu, timed out %lu "
            "(late answers %lu, late data dropped %lu, partial %lu)\n",
            s[0], s[1], s[2], s[3], s[4], s[5], s[6]);
        printf("LATENCY raw MPI 8 B round trip (rank 0 <-> 1, MPI_Send/Recv): %.2f us\n",
               rtt);
        char w[96];
        snprintf(w, sizeof(w), "YES %lu NO %lu", s[1], s[2]);
        result("both CANCELYES and CANCELNO occurred", s[1] > 0 && s[2] > 0, w);
        result("every cancel answered or timed out",
               s[0] == s[1] + s[2] + s[3] && s[6] == 0, "");
    }
    NA_Context_destroy(cls, ctx);
    result("NA_Finalize", NA_Finalize(cls) == NA_SUCCESS, "");
    int tot[2] = {passes, failures}, sum[2] = {0, 0};
    MPI_Reduce(tot, sum, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("[==========] %d test(s) run over %d ranks.\n", sum[0] + sum[1], nprocs);
        printf("[  PASSED  ] %d test(s).\n", sum[0]);
        if (sum[1])
            printf("[  FAILED  ] %d test(s).\n", sum[1]);
    }
    MPI_Finalize();
    return sum[1] || failures ? 1 : 0;
}
