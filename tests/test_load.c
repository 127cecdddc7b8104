/*
 * test_load.c -- N forked clients x M RPCs, each RPC carrying a bulk payload
 * (64 KiB) that the server pulls and checks, against one server, per
 * transport (default ofi+tcp and ucx+tcp; HGX_TEST_TRANSPORTS overrides).
 * Checks: every RPC answered exactly once (client side: one completion per
 * RPC with the right seq; server side: per-client counts, no duplicate seq),
 * the server's RSS after warm-up (a quarter of the RPCs: libfabric shm's pools
 * still grow by ~5% after a tenth) flat within +-5%, server
 * fds the same at warm-up and at the end, client fds the same before
 * HG_Init and after HG_Finalize.
 * HGX_LOAD_CLIENTS / HGX_LOAD_RPCS: defaults 4 x 2000 (full run: 8 x 100000).
 *
 * Modes for tests/netns-cut.sh:
 *   test_load --serve INFO          print the address, serve until quit/killed
 *   test_load --call ADDR SIZE MS [CLIENT_INFO]  one pull RPC of SIZE bytes (slow chunks
 * of 1 MiB every 20 ms when SIZE > 1 MiB) with a deadline of MS; exit 0 ok, 2 timeout or
 *                                   error, prints the outcome and duration
 */
#define _POSIX_C_SOURCE 200809L
#include "fault_rpc.h"
#include "hgx.h"
#include "test_common.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define PAYLOAD (64u << 10)

static const char *current_info;
static char self_exe[4096];
static unsigned int nclients = 4, nrpcs = 2000;

static int exec_server_main(const char *info, int publish_fd)
{
    char fd[16];
    snprintf(fd, sizeof(fd), "%d", publish_fd);
    execl(self_exe, self_exe, "--serve", info, fd, (char *)NULL);
    return 127;
}

static hg_return_t call(hg_context_t *ctx, hg_addr_t addr, hg_id_t id, void *in,
                        void *out, unsigned int ms)
{
    hg_handle_t h;
    hgx_request_t r;
    hgx_status_t st;
    hg_return_t ret = HG_Create(ctx, addr, id, &h);
    if (ret != HG_SUCCESS)
        return ret;
    ret = hgx_iforward(h, in, &r);
    if (ret == HG_SUCCESS) {
        if (ms)
            hgx_request_set_timeout(r, ms);
        hgx_wait(&r, &st);
        ret = st.error;
        if (ret == HG_SUCCESS && out)
            ret = HG_Get_output(h, out);
    }
    if (ret == HG_SUCCESS && out)
        HG_Free_output(h, out);
    HG_Destroy(h);
    return ret;
}

/* One client process: M pull RPCs on one handle, one at a time. Exit code 0
 * when all M were answered once with the right seq and no fd leaked. */
static int client_main(const char *info, const char *addr_str, unsigned int id,
                       unsigned int m)
{
    long fds0 = ft_count_fds();
    hg_class_t *cls = HG_Init(info, HG_FALSE);
    hg_context_t *ctx = cls ? HG_Context_create(cls) : NULL;
    struct ft_ids ids;
    hg_addr_t addr;
    hg_handle_t h;
    if (!ctx)
        return 2;
    ft_register(cls, &ids, false);
    if (HG_Addr_lookup2(cls, addr_str, &addr) != HG_SUCCESS ||
        HG_Create(ctx, addr, ids.pull, &h) != HG_SUCCESS)
        return 3;
    void *buf = malloc(PAYLOAD);
    hg_size_t size = PAYLOAD;
    hg_bulk_t bulk;
    HG_Bulk_create(cls, 1, &buf, &size, HG_BULK_READ_ONLY, &bulk);
    unsigned int answered = 0, errors = 0;
    for (unsigned int seq = 0; seq < m; seq++) {
        ft_pull_in_t in = {.bulk = bulk,
                           .size = PAYLOAD,
                           .client = id,
                           .seq = seq,
                           .seed = id * 1000003u + seq + 1};
        ft_pull_out_t out;
        hgx_request_t r;
        hgx_status_t st;
        test_fill(buf, PAYLOAD, in.seed);
        if (hgx_iforward(h, &in, &r) != HG_SUCCESS) {
            errors++;
            break;
        }
        hgx_request_set_timeout(r, 30000);
        hgx_wait(&r, &st);
        if (st.error != HG_SUCCESS || HG_Get_output(h, &out) != HG_SUCCESS) {
            fprintf(stderr, "# client %u: rpc %u failed: %s\n", id, seq,
                    HG_Error_to_string(st.error));
            errors++;
            break;
        }
        if (out.seq == seq && out.ret == HG_SUCCESS)
            answered++;
        else
            errors++;
        HG_Free_output(h, &out);
        if (id == 0 && seq == m / 4) {
            ft_stats_in_t sin = {.client = id, .mark = 1};
            ft_stats_out_t sout;
            call(ctx, addr, ids.stats, &sin, &sout, 10000);
        }
    }
    HG_Bulk_free(bulk);
    free(buf);
    HG_Destroy(h);
    HG_Addr_free(cls, addr);
    HG_Context_destroy(ctx);
    hg_return_t fret = HG_Finalize(cls);
    long fds1 = ft_count_fds();
    printf(
        "# client %u: %u/%u RPCs answered, %u errors, fds %ld -> %ld, HG_Finalize %s\n",
        id, answered, m, errors, fds0, fds1, HG_Error_to_string(fret));
    fflush(stdout);
    return answered == m && errors == 0 && fds0 == fds1 && fret == HG_SUCCESS ? 0 : 1;
}

static void test_load(void **state)
{
    (void)state;
    struct test_server srv;
    assert_true(test_server_start(&srv, current_info, exec_server_main));
    pid_t pids[FT_MAX_CLIENTS];
    double t0 = test_now();
    for (unsigned int i = 0; i < nclients; i++) {
        char id[16], m[16];
        snprintf(id, sizeof(id), "%u", i);
        snprintf(m, sizeof(m), "%u", nrpcs);
        fflush(NULL);
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            execl(self_exe, self_exe, "--client", current_info, srv.addr, id, m,
                  (char *)NULL);
            _exit(127);
        }
    }
    int bad = 0;
    for (unsigned int i = 0; i < nclients; i++) {
        int status;
        waitpid(pids[i], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            bad++;
    }
    double dt = test_now() - t0;
    assert_int_equal(bad, 0);

    /* Server side: counts, transfers, memory, fds. */
    hg_class_t *cls = HG_Init(current_info, HG_FALSE);
    assert_non_null(cls);
    hg_context_t *ctx = HG_Context_create(cls);
    struct ft_ids ids;
    hg_addr_t addr;
    ft_register(cls, &ids, false);
    assert_int_equal(HG_Addr_lookup2(cls, srv.addr, &addr), HG_SUCCESS);
    ft_stats_out_t s;
    for (unsigned int i = 0; i < nclients; i++) {
        ft_stats_in_t in = {.client = i};
        assert_int_equal(call(ctx, addr, ids.stats, &in, &s, 10000), HG_SUCCESS);
        if (s.client_rpcs != nrpcs)
            fail_msg("client %u: server saw %llu RPCs, expected %u", i,
                     (unsigned long long)s.client_rpcs, nrpcs);
    }
    uint64_t total = (uint64_t)nclients * nrpcs;
    double drss =
        100.0 * ((double)s.rss_kb - (double)s.rss_mark_kb) / (double)s.rss_mark_kb;
    print_message(
        "# %s: %u clients x %u RPCs (64 KiB pulled each) = %llu RPCs in %.1f s "
        "(%.0f RPC/s); server: %llu RPCs, %llu dup, %llu pulls ok, %llu failed; "
        "RSS after warm-up %llu kB -> end %llu kB (%+.2f%%); fds %lld -> %lld\n",
        current_info, nclients, nrpcs, (unsigned long long)total, dt, (double)total / dt,
        (unsigned long long)s.rpcs, (unsigned long long)s.dup_seq,
        (unsigned long long)s.jobs_ok, (unsigned long long)s.jobs_failed,
        (unsigned long long)s.rss_mark_kb, (unsigned long long)s.rss_kb, drss,
        (long long)s.fds_mark, (long long)s.fds);
    assert_int_equal(s.rpcs, total);
    assert_int_equal(s.dup_seq, 0);
    assert_int_equal(s.jobs_ok, total);
    assert_int_equal(s.jobs_failed, 0);
    assert_int_equal(s.xfer_issued, s.xfer_done);
    assert_true(s.rss_mark_kb > 0);
    assert_true(drss <= 5.0 && drss >= -5.0);
    /* The clients have exited; their connections may be closed by now, but
     * none may have been added per RPC. */
    assert_true(s.fds <= s.fds_mark);

    hg_handle_t h;
    hgx_request_t r;
    HG_Create(ctx, addr, ids.quit, &h);
    if (hgx_iforward(h, NULL, &r) == HG_SUCCESS) {
        hgx_request_set_timeout(r, 5000);
        hgx_wait(&r, HGX_STATUS_IGNORE);
    }
    HG_Destroy(h);
    HG_Addr_free(cls, addr);
    assert_int_equal(HG_Context_destroy(ctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(cls), HG_SUCCESS);
    assert_int_equal(test_server_wait(&srv, 10000), 0);
}

static int serve_stdout(const char *info)
{
    int fds[2];
    if (pipe(fds) != 0)
        return 1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        _exit(ft_server_main(info, fds[1]));
    }
    close(fds[1]);
    char addr[TEST_ADDR_MAX];
    ssize_t got = 0, n;
    while (got < TEST_ADDR_MAX &&
           (n = read(fds[0], addr + got, sizeof(addr) - (size_t)got)) > 0)
        got += n;
    addr[TEST_ADDR_MAX - 1] = '\0';
    printf("%s\n", got == TEST_ADDR_MAX ? addr : "");
    fflush(stdout);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static int call_main(const char *addr_str, unsigned long long size, unsigned int ms,
                     const char *client_info)
{
    char info[TEST_ADDR_MAX];
    if (client_info)
        snprintf(info, sizeof(info), "%s", client_info);
    else
        test_client_info(addr_str, info, sizeof(info));
    hg_class_t *cls = HG_Init(info, HG_FALSE);
    hg_context_t *ctx = cls ? HG_Context_create(cls) : NULL;
    struct ft_ids ids;
    hg_addr_t addr;
    if (!ctx)
        return 3;
    ft_register(cls, &ids, false);
    if (HG_Addr_lookup2(cls, addr_str, &addr) != HG_SUCCESS)
        return 3;
    void *buf = malloc(size);
    test_fill(buf, size, 5);
    hg_size_t bsize = size;
    hg_bulk_t bulk;
    HG_Bulk_create(cls, 1, &buf, &bsize, HG_BULK_READ_ONLY, &bulk);
    ft_pull_in_t in = {.bulk = bulk,
                       .size = size,
                       .seed = 5,
                       .chunk = size > (1u << 20) ? 1u << 20 : 0,
                       .delay_ms = size > (1u << 20) ? 20 : 0};
    ft_pull_out_t out;
    double t0 = test_now();
    hg_return_t ret = call(ctx, addr, ids.pull, &in, &out, ms);
    double dt = test_now() - t0;
    if (ret == HG_SUCCESS && out.ret != HG_SUCCESS)
        ret = (hg_return_t)out.ret;
    printf("call: %s after %.0f ms (deadline %u ms)\n", HG_Error_to_string(ret), dt * 1e3,
           ms);
    fflush(stdout);
    HG_Bulk_free(bulk);
    free(buf);
    HG_Addr_free(cls, addr);
    HG_Context_destroy(ctx);
    hg_return_t fret = HG_Finalize(cls);
    if (fret != HG_SUCCESS)
        printf("call: HG_Finalize %s\n", HG_Error_to_string(fret));
    return ret == HG_SUCCESS ? 0 : 2;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc == 4 && !strcmp(argv[1], "--serve"))
        return ft_server_main(argv[2], atoi(argv[3]));
    if (argc == 3 && !strcmp(argv[1], "--serve"))
        return serve_stdout(argv[2]);
    if (argc == 6 && !strcmp(argv[1], "--client"))
        return client_main(argv[2], argv[3], (unsigned)atoi(argv[4]),
                           (unsigned)atoi(argv[5]));
    if ((argc == 5 || argc == 6) && !strcmp(argv[1], "--call"))
        return call_main(argv[2], strtoull(argv[3], NULL, 0), (unsigned)atoi(argv[4]),
                         argc == 6 ? argv[5] : NULL);
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
    if (n <= 0)
        return 99;
    self_exe[n] = '\0';
    if (getenv("HGX_LOAD_CLIENTS"))
        nclients = (unsigned)atoi(getenv("HGX_LOAD_CLIENTS"));
    if (getenv("HGX_LOAD_RPCS"))
        nrpcs = (unsigned)atoi(getenv("HGX_LOAD_RPCS"));
    if (nclients < 1 || nclients > FT_MAX_CLIENTS || nrpcs < 10) {
        fprintf(stderr, "HGX_LOAD_CLIENTS must be 1..%d, HGX_LOAD_RPCS >= 10\n",
                FT_MAX_CLIENTS);
        return 99;
    }
    static const char *defaults[] = {"ofi+tcp://127.0.0.1", "ucx+tcp://127.0.0.1"};
    const char *const *transports;
    size_t nt;
    if (getenv("HGX_TEST_TRANSPORTS") && *getenv("HGX_TEST_TRANSPORTS"))
        nt = test_transports(&transports);
    else {
        /* ofi+tcp and ucx+tcp, whichever are built in. */
        const char *const *all;
        size_t na = test_transports(&all);
        static const char *pick[2];
        nt = 0;
        for (size_t i = 0; i < na; i++)
            for (size_t k = 0; k < 2; k++)
                if (!strcmp(all[i], defaults[k]))
                    pick[nt++] = all[i];
        transports = pick;
    }
    int failed = 0;
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_load)};
    for (size_t i = 0; i < nt; i++) {
        char name[64];
        current_info = transports[i];
        snprintf(name, sizeof(name), "load/%s", transports[i]);
        failed += _cmocka_run_group_tests(name, tests, 1, NULL, NULL);
    }
    return failed ? 1 : 0;
}
