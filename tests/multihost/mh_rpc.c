/*
 * mh_rpc.c -- a client of the fault/load server (tests/fault_server.c, started
 * with `test_load --serve INFO`) for the multi-host tests. It reaches the
 * server by the address string the server printed, as a user's program would.
 *
 *   mh_rpc check INFO ADDR ID     RPCs without bulk; the server pulls 1 B .. 64 MiB
 *                                 from us and checks them; we pull, push and pull
 *                                 back its exposed region (1 B .. 64 MiB) and check;
 *                                 a deadline fires on a slow RPC; hgx_cancel of
 *                                 one, then the handle forwards again
 *   mh_rpc loop INFO ADDR ID SEC  1 MiB pulls by the server, one after the other,
 *                                 for SEC seconds; every one must succeed
 *   mh_rpc stats INFO ADDR        print the server's transfer counters
 *   mh_rpc quit INFO ADDR         stop the server
 * INFO is this client's info string. Exit 0 when every check held, 1 otherwise,
 * 2 when the server could not be reached at all.
 */
#define _POSIX_C_SOURCE 200809L
#include "fault_rpc.h"
#include "hgx.h"
#include "test_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RPC_DEADLINE_MS 30000u

static hg_class_t *cls;
static hg_context_t *ctx;
static hg_addr_t srv;
static struct ft_ids ids;
static int failures;

static void check(bool ok, const char *what, double t0)
{
    printf("%s %s (%.0f ms)\n", ok ? "ok:  " : "FAIL:", what, (test_now() - t0) * 1e3);
    fflush(stdout);
    failures += !ok;
}

/* Forward in on a new handle with a deadline; the status error, the output
 * in out (freed by the caller with HG_Free_output(*hp)) when hp is given. */
static hg_return_t call(hg_id_t id, void *in, void *out, unsigned int ms, hg_handle_t *hp)
{
    hg_handle_t h;
    hgx_request_t r;
    hgx_status_t st = {.error = HG_SUCCESS};
    hg_return_t ret = HG_Create(ctx, srv, id, &h);
    if (ret != HG_SUCCESS)
        return ret;
    ret = hgx_iforward(h, in, &r);
    if (ret == HG_SUCCESS) {
        hgx_request_set_timeout(r, ms);
        hgx_wait(&r, &st);
        ret = st.error;
    }
    if (ret == HG_SUCCESS && out)
        ret = HG_Get_output(h, out);
    if (ret == HG_SUCCESS && hp)
        *hp = h;
    else
        HG_Destroy(h);
    return ret;
}

/* The server pulls size bytes from us (pattern seed) and checks them. */
static hg_return_t server_pulls(uint64_t size, uint32_t client, uint32_t seq)
{
    void *buf = malloc(size ? size : 1);
    hg_size_t bsize = size;
    hg_bulk_t bulk;
    uint32_t seed = client * 7919u + seq + 1;
    test_fill(buf, size, seed);
    hg_return_t ret = HG_Bulk_create(cls, 1, &buf, &bsize, HG_BULK_READ_ONLY, &bulk);
    if (ret == HG_SUCCESS) {
        ft_pull_in_t in = {
            .bulk = bulk, .size = size, .client = client, .seq = seq, .seed = seed};
        ft_pull_out_t out;
        hg_handle_t h;
        ret = call(ids.pull, &in, &out, RPC_DEADLINE_MS, &h);
        if (ret == HG_SUCCESS) {
            ret = (hg_return_t)out.ret;
            HG_Free_output(h, &out);
            HG_Destroy(h);
        }
        HG_Bulk_free(bulk);
    }
    free(buf);
    return ret;
}

static hg_return_t transfer(hg_bulk_op_t op, hg_bulk_t remote, hg_bulk_t local,
                            size_t size)
{
    hgx_request_t r;
    hgx_status_t st;
    hg_return_t ret = hgx_ibulk_transfer(ctx, op, srv, remote, 0, local, 0, size, &r);
    if (ret != HG_SUCCESS)
        return ret;
    hgx_request_set_timeout(r, RPC_DEADLINE_MS);
    hgx_wait(&r, &st);
    return st.error;
}

/* The server exposes size bytes (pattern seed); we pull and check them, push
 * our own pattern over them and pull that back. */
static bool pull_push(size_t size, uint32_t seed)
{
    ft_expose_in_t in = {.size = size, .seed = seed};
    ft_expose_out_t out;
    hg_handle_t h;
    if (call(ids.expose, &in, &out, RPC_DEADLINE_MS, &h) != HG_SUCCESS)
        return false;
    void *buf = malloc(size);
    hg_size_t bsize = size;
    hg_bulk_t local;
    bool ok =
        HG_Bulk_create(cls, 1, &buf, &bsize, HG_BULK_READWRITE, &local) == HG_SUCCESS;
    if (ok) {
        ok = transfer(HG_BULK_PULL, out.bulk, local, size) == HG_SUCCESS &&
             test_check(buf, size, seed);
        test_fill(buf, size, seed + 1);
        ok = ok && transfer(HG_BULK_PUSH, out.bulk, local, size) == HG_SUCCESS;
        memset(buf, 0, size);
        ok = ok && transfer(HG_BULK_PULL, out.bulk, local, size) == HG_SUCCESS &&
             test_check(buf, size, seed + 1);
        HG_Bulk_free(local);
    }
    free(buf);
    HG_Free_output(h, &out);
    HG_Destroy(h);
    return ok;
}

static void check_all(uint32_t client)
{
    static const size_t sizes[] = {1, 4096, 1u << 20, 64u << 20};
    char what[96];
    double t0 = test_now();
    bool ok = true;
    for (int i = 0; i < 20 && ok; i++) {
        ft_sleep_in_t in = {.ms = 0};
        ok = call(ids.sleep, &in, NULL, RPC_DEADLINE_MS, NULL) == HG_SUCCESS;
    }
    check(ok, "20 RPCs without bulk", t0);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        t0 = test_now();
        snprintf(what, sizeof(what), "server pulls %zu B from us, data checked",
                 sizes[i]);
        check(server_pulls(sizes[i], client, (uint32_t)i) == HG_SUCCESS, what, t0);
        t0 = test_now();
        snprintf(what, sizeof(what), "we pull, push, pull back %zu B, data checked",
                 sizes[i]);
        check(pull_push(sizes[i], client * 31u + (uint32_t)i), what, t0);
    }

    /* A 1.5 s RPC with a 300 ms deadline: cancelled by the deadline. */
    hg_handle_t h;
    hgx_request_t r;
    hgx_status_t st;
    int cancelled = 0;
    ft_sleep_in_t slow = {.ms = 1500};
    t0 = test_now();
    ok = HG_Create(ctx, srv, ids.sleep, &h) == HG_SUCCESS &&
         hgx_iforward(h, &slow, &r) == HG_SUCCESS &&
         hgx_request_set_timeout(r, 300) == HG_SUCCESS &&
         hgx_wait_timeout(&r, 5000, &st) == HG_SUCCESS;
    hgx_test_cancelled(&st, &cancelled);
    check(ok && st.error == HG_TIMEOUT && cancelled && test_now() - t0 < 1.2,
          "deadline 300 ms on a 1.5 s RPC: HG_TIMEOUT, cancelled", t0);

    /* hgx_cancel 100 ms into a 1 s RPC: either cancelled or done, within a bound;
     * then the same handle forwards again. */
    slow.ms = 1000;
    t0 = test_now();
    ok = hgx_iforward(h, &slow, &r) == HG_SUCCESS;
    while (ok && test_now() - t0 < 0.1)
        HG_Progress(ctx, 10);
    ok = ok && hgx_cancel(&r) == HG_SUCCESS &&
         hgx_wait_timeout(&r, 5000, &st) == HG_SUCCESS;
    hgx_test_cancelled(&st, &cancelled);
    check(ok && (cancelled || st.error == HG_SUCCESS), "hgx_cancel of a 1 s RPC", t0);
    t0 = test_now();
    slow.ms = 0;
    ok = hgx_iforward(h, &slow, &r) == HG_SUCCESS &&
         hgx_request_set_timeout(r, RPC_DEADLINE_MS) == HG_SUCCESS &&
         hgx_wait(&r, &st) == HG_SUCCESS && st.error == HG_SUCCESS;
    check(ok, "the cancelled handle forwards again", t0);
    HG_Destroy(h);
}

static void loop(uint32_t client, double seconds)
{
    double t0 = test_now();
    unsigned int n = 0, bad = 0;
    while (test_now() - t0 < seconds) {
        double t1 = test_now();
        hg_return_t ret = server_pulls(1u << 20, client, n);
        if (ret != HG_SUCCESS) {
            printf("rpc %u: %s after %.0f ms\n", n, HG_Error_to_string(ret),
                   (test_now() - t1) * 1e3);
            bad++;
        }
        n++;
    }
    char what[64];
    snprintf(what, sizeof(what), "%u of %u 1 MiB RPCs succeeded", n - bad, n);
    check(n > 0 && bad == 0, what, t0);
}

static void stats(void)
{
    ft_stats_in_t in = {.client = 0};
    ft_stats_out_t out;
    hg_handle_t h;
    double t0 = test_now();
    bool ok = call(ids.stats, &in, &out, RPC_DEADLINE_MS, &h) == HG_SUCCESS;
    if (ok) {
        printf("server: %llu RPCs, %llu pulls ok, %llu failed; transfers %llu issued, "
               "%llu done, %llu failed\n",
               (unsigned long long)out.rpcs, (unsigned long long)out.jobs_ok,
               (unsigned long long)out.jobs_failed, (unsigned long long)out.xfer_issued,
               (unsigned long long)out.xfer_done, (unsigned long long)out.xfer_failed);
        HG_Free_output(h, &out);
        HG_Destroy(h);
    }
    check(ok, "stats", t0);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: mh_rpc check|loop|stats|quit INFO ADDR [ID [SECONDS]]\n");
        return 2;
    }
    const char *mode = argv[1];
    double t0 = test_now();
    cls = HG_Init(argv[2], HG_FALSE);
    ctx = cls ? HG_Context_create(cls) : NULL;
    if (!ctx)
        return 2;
    ft_register(cls, &ids, false);
    hg_return_t ret = HG_Addr_lookup2(cls, argv[3], &srv);
    check(ret == HG_SUCCESS, "lookup of the address the server printed", t0);
    if (ret != HG_SUCCESS)
        return 2;
    uint32_t client = argc > 4 ? (uint32_t)atoi(argv[4]) : 0;
    if (!strcmp(mode, "check"))
        check_all(client);
    else if (!strcmp(mode, "loop") && argc > 5)
        loop(client, atof(argv[5]));
    else if (!strcmp(mode, "stats"))
        stats();
    else if (!strcmp(mode, "quit")) {
        hg_handle_t h;
        hgx_request_t r;
        if (HG_Create(ctx, srv, ids.quit, &h) == HG_SUCCESS) {
            if (hgx_iforward(h, NULL, &r) == HG_SUCCESS &&
                hgx_request_set_timeout(r, 5000) == HG_SUCCESS)
                hgx_wait(&r, HGX_STATUS_IGNORE);
            HG_Destroy(h);
        }
    } else {
        fprintf(stderr, "mh_rpc: unknown mode or missing argument\n");
        failures++;
    }
    HG_Addr_free(cls, srv);
    HG_Context_destroy(ctx);
    ret = HG_Finalize(cls);
    check(ret == HG_SUCCESS, "HG_Finalize", t0);
    return failures ? 1 : 0;
}
