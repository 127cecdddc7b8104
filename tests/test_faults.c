/*
 * test_faults.c -- peers that die, one cmocka group per transport:
 *  - server SIGKILLed while an RPC handler sleeps, while it pulls a large
 *    region from the client, and while the client pulls from it: the client's
 *    requests (with deadlines) complete with an error or HG_TIMEOUT within
 *    5 s, everything is freed, HG_Finalize returns HG_SUCCESS, and a new
 *    server on the same address is reached by a fresh lookup;
 *  - client SIGKILLed while the server pulls from it: the server's chunk
 *    request completes once with an error (or its deadline) and the server
 *    keeps serving a second client.
 * Servers and the victim client are fork+exec'ed copies of this program
 * ("--serve INFO FD", "--victim INFO ADDR") so no child inherits HG state.
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
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define FAULT_BOUND_S 5.0

static const char *current_info;
static char self_exe[4096];

struct cl {
    hg_class_t *cls;
    hg_context_t *ctx;
    struct ft_ids ids;
    hg_addr_t addr;
};

static int exec_server_main(const char *info, int publish_fd)
{
    char fd[16];
    snprintf(fd, sizeof(fd), "%d", publish_fd);
    execl(self_exe, self_exe, "--serve", info, fd, (char *)NULL);
    perror("execl");
    return 127;
}

static bool is_tcp(const char *info)
{
    /* ucx+shm listens on a TCP sockaddr too (wire-up through the tcp cm). */
    return strstr(info, "tcp") || strstr(info, "sockets") || !strncmp(info, "ucx+", 4);
}

static void cl_open(struct cl *c, const char *info)
{
    memset(c, 0, sizeof(*c));
    c->cls = HG_Init(info, HG_FALSE);
    assert_non_null(c->cls);
    c->ctx = HG_Context_create(c->cls);
    assert_non_null(c->ctx);
    ft_register(c->cls, &c->ids, false);
}

static void cl_close(struct cl *c)
{
    if (c->addr)
        HG_Addr_free(c->cls, c->addr);
    assert_int_equal(HG_Context_destroy(c->ctx), HG_SUCCESS);
    /* Resources reclaimed: nothing still holds the class. */
    assert_int_equal(HG_Finalize(c->cls), HG_SUCCESS);
}

/* One RPC with a deadline; returns the status error (or the hgx call's). */
static hg_return_t call(struct cl *c, hg_id_t id, void *in, void *out, unsigned int ms)
{
    hg_handle_t h;
    hgx_request_t r;
    hgx_status_t st;
    hg_return_t ret = HG_Create(c->ctx, c->addr, id, &h);
    if (ret != HG_SUCCESS)
        return ret;
    ret = hgx_iforward(h, in, &r);
    if (ret == HG_SUCCESS) {
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

static void quit_server(struct cl *c, struct test_server *srv)
{
    hg_handle_t h;
    hgx_request_t r;
    assert_int_equal(HG_Create(c->ctx, c->addr, c->ids.quit, &h), HG_SUCCESS);
    if (hgx_iforward(h, NULL, &r) == HG_SUCCESS) {
        hgx_request_set_timeout(r, 5000);
        hgx_wait(&r, HGX_STATUS_IGNORE);
    }
    HG_Destroy(h);
    assert_int_equal(test_server_wait(srv, 10000), 0);
}

static void kill_server(struct test_server *srv)
{
    int status;
    kill(srv->pid, SIGKILL);
    waitpid(srv->pid, &status, 0);
    srv->pid = 0;
}

/* After the server died: forget its address, start a new server on the same
 * address (tcp: same port; shm addresses embed the pid, so a new address),
 * look it up and call it. */
static void restart_and_call(struct cl *c, const char *old_addr)
{
    struct test_server srv2;
    const char *info = current_info;
    assert_int_equal(HG_Addr_set_remove(c->cls, c->addr), HG_SUCCESS);
    HG_Addr_free(c->cls, c->addr);
    c->addr = HG_ADDR_NULL;
    if (is_tcp(current_info))
        info = old_addr;
    else
        print_message("# %s: shared-memory addresses name the server process, so the new "
                      "server cannot take the old address; it gets a new one\n",
                      current_info);
    bool started = false;
    for (int attempt = 0; attempt < 20 && !started; attempt++) {
        started = test_server_start(&srv2, info, exec_server_main);
        if (!started)
            usleep(250000);
    }
    assert_true(started);
    if (is_tcp(current_info))
        assert_string_equal(srv2.addr, old_addr);
    double t0 = test_now();
    assert_int_equal(HG_Addr_lookup2(c->cls, srv2.addr, &c->addr), HG_SUCCESS);
    ft_sleep_in_t in = {.ms = 0};
    ft_sleep_out_t out;
    hg_return_t ret = call(c, c->ids.sleep, &in, &out, 5000);
    if (ret != HG_SUCCESS) {
        /* Library bug (reported): a fresh lookup of a removed address still
         * uses the failed connection. Show whether a retry recovers. */
        print_message("# %s: BUG: first RPC to the new server failed: %s\n", current_info,
                      HG_Error_to_string(ret));
        for (int i = 0; i < 5 && ret != HG_SUCCESS; i++) {
            usleep(200000);
            ret = call(c, c->ids.sleep, &in, &out, 5000);
            print_message("# %s: retry %d: %s\n", current_info, i + 1,
                          HG_Error_to_string(ret));
        }
    }
    if (ret != HG_SUCCESS && !strcmp(current_info, "ofi+shm")) {
        /* libfabric 1.17 shm: a sender holds a spinlock in the receiver's
         * shared-memory region while it posts. A server killed at that
         * moment leaves our region locked for good, and every later sender
         * (the new server, answering us) spins in fi_tsend. This class
         * cannot receive over shm any more; the next test opens a new one.
         * What hgx owes (the cut request completed, bounded) was checked
         * before the restart. */
        print_message(
            "# %s: KNOWN LIMIT (libfabric 1.17 shm, docs/na-ofi.md): the killed "
            "server held the lock of our shared-memory region; the new server "
            "cannot answer. Stopping it.\n",
            current_info);
        kill_server(&srv2);
        return;
    }
    assert_int_equal(ret, HG_SUCCESS);
    print_message("# %s: new server at %s reached, RPC ok in %.0f ms\n", current_info,
                  srv2.addr, (test_now() - t0) * 1e3);
    quit_server(c, &srv2);
}

/* Server killed while the handler of our RPC sleeps. */
static void test_server_killed_rpc(void **state)
{
    (void)state;
    struct test_server srv;
    struct cl c;
    assert_true(test_server_start(&srv, current_info, exec_server_main));
    cl_open(&c, current_info);
    assert_int_equal(HG_Addr_lookup2(c.cls, srv.addr, &c.addr), HG_SUCCESS);

    hg_handle_t h;
    hgx_request_t r;
    hgx_status_t st;
    ft_sleep_in_t in = {.ms = 30000};
    int cancelled;
    assert_int_equal(HG_Create(c.ctx, c.addr, c.ids.sleep, &h), HG_SUCCESS);
    assert_int_equal(hgx_iforward(h, &in, &r), HG_SUCCESS);
    assert_int_equal(hgx_request_set_timeout(r, 2000), HG_SUCCESS);
    assert_int_equal(hgx_wait_timeout(&r, 300, &st), HG_TIMEOUT); /* handler sleeping */
    double t0 = test_now();
    kill_server(&srv);
    assert_int_equal(hgx_wait(&r, &st), HG_SUCCESS);
    double dt = test_now() - t0;
    hgx_test_cancelled(&st, &cancelled);
    print_message("# %s: server killed mid-RPC: request completed after %.0f ms: %s%s\n",
                  current_info, dt * 1e3, HG_Error_to_string(st.error),
                  cancelled ? " (cancelled)" : "");
    assert_null(r);
    assert_int_not_equal(st.error, HG_SUCCESS);
    assert_true(dt < FAULT_BOUND_S);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
    restart_and_call(&c, srv.addr);
    cl_close(&c);
}

/* Server killed while it pulls 32 MiB from us in 1 MiB chunks. */
static void test_server_killed_server_pull(void **state)
{
    (void)state;
    struct test_server srv;
    struct cl c;
    const size_t size = 32u << 20;
    assert_true(test_server_start(&srv, current_info, exec_server_main));
    cl_open(&c, current_info);
    assert_int_equal(HG_Addr_lookup2(c.cls, srv.addr, &c.addr), HG_SUCCESS);

    void *buf = malloc(size);
    test_fill(buf, size, 7);
    hg_size_t bsize = size;
    hg_bulk_t bulk;
    assert_int_equal(HG_Bulk_create(c.cls, 1, &buf, &bsize, HG_BULK_READ_ONLY, &bulk),
                     HG_SUCCESS);
    ft_pull_in_t in = {
        .bulk = bulk, .size = size, .chunk = 1u << 20, .delay_ms = 30, .seed = 7};
    hg_handle_t h;
    hgx_request_t r;
    hgx_status_t st;
    int cancelled;
    assert_int_equal(HG_Create(c.ctx, c.addr, c.ids.pull, &h), HG_SUCCESS);
    assert_int_equal(hgx_iforward(h, &in, &r), HG_SUCCESS);
    assert_int_equal(hgx_request_set_timeout(r, 3000), HG_SUCCESS);
    assert_int_equal(hgx_wait_timeout(&r, 300, &st), HG_TIMEOUT); /* pull under way */
    double t0 = test_now();
    kill_server(&srv);
    assert_int_equal(hgx_wait(&r, &st), HG_SUCCESS);
    double dt = test_now() - t0;
    hgx_test_cancelled(&st, &cancelled);
    print_message(
        "# %s: server killed mid-pull (server pulling 32 MiB): RPC completed after "
        "%.0f ms: %s%s\n",
        current_info, dt * 1e3, HG_Error_to_string(st.error),
        cancelled ? " (cancelled)" : "");
    assert_int_not_equal(st.error, HG_SUCCESS);
    assert_true(dt < FAULT_BOUND_S);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
    assert_int_equal(HG_Bulk_free(bulk), HG_SUCCESS);
    free(buf);
    restart_and_call(&c, srv.addr);
    cl_close(&c);
}

/* Server killed while we pull 64 MiB from it in 16 requests of 4 MiB. */
static void test_server_killed_client_pull(void **state)
{
    (void)state;
    enum { N = 16 };
    struct test_server srv;
    struct cl c;
    const size_t size = 64u << 20, part = size / N;
    assert_true(test_server_start(&srv, current_info, exec_server_main));
    cl_open(&c, current_info);
    assert_int_equal(HG_Addr_lookup2(c.cls, srv.addr, &c.addr), HG_SUCCESS);

    hg_handle_t h;
    hgx_request_t r[N];
    hgx_status_t st[N];
    ft_expose_in_t ein = {.size = size, .seed = 9};
    ft_expose_out_t eout;
    assert_int_equal(HG_Create(c.ctx, c.addr, c.ids.expose, &h), HG_SUCCESS);
    assert_int_equal(hgx_iforward(h, &ein, &r[0]), HG_SUCCESS);
    assert_int_equal(hgx_wait(&r[0], &st[0]), HG_SUCCESS);
    assert_int_equal(st[0].error, HG_SUCCESS);
    assert_int_equal(HG_Get_output(h, &eout), HG_SUCCESS);

    void *buf = calloc(1, size), *expect = malloc(size);
    test_fill(expect, size, 9);
    hg_size_t bsize = size;
    hg_bulk_t local;
    assert_int_equal(HG_Bulk_create(c.cls, 1, &buf, &bsize, HG_BULK_WRITE_ONLY, &local),
                     HG_SUCCESS);
    for (int i = 0; i < N; i++) {
        assert_int_equal(hgx_ibulk_transfer(c.ctx, HG_BULK_PULL, c.addr, eout.bulk,
                                            i * part, local, i * part, part, &r[i]),
                         HG_SUCCESS);
        assert_int_equal(hgx_request_set_timeout(r[i], 3000), HG_SUCCESS);
    }
    int flag = 0;
    hgx_status_t st0;
    hgx_test(&r[0], &flag, &st0); /* get the first under way */
    double t0 = test_now();
    kill_server(&srv);
    assert_int_equal(hgx_waitall(N, r, st), HG_SUCCESS);
    if (flag)
        st[0] = st0; /* completed by the hgx_test above */
    double dt = test_now() - t0;
    int ok = 0, failed = 0, timedout = 0, bad = 0;
    for (int i = 0; i < N; i++) {
        assert_null(r[i]);
        if (st[i].error == HG_SUCCESS) {
            ok++;
            /* Success means every byte moved (docs/hgx-requests.md). */
            if (st[i].count != part ||
                memcmp((char *)buf + i * part, (char *)expect + i * part, part))
                bad++;
        } else if (st[i].error == HG_TIMEOUT)
            timedout++;
        else
            failed++;
    }
    print_message(
        "# %s: server killed mid client pull (16 x 4 MiB): all completed after %.0f "
        "ms: %d ok, %d failed, %d timed out\n",
        current_info, dt * 1e3, ok, failed, timedout);
    if (bad)
        fail_msg("%s: BUG: %d pulls report HG_SUCCESS without moving their bytes",
                 current_info, bad);
    if (ok == N)
        print_message("# %s: note: the whole pull finished before the kill took effect\n",
                      current_info);
    assert_true(dt < FAULT_BOUND_S);
    assert_int_equal(HG_Bulk_free(local), HG_SUCCESS);
    free(buf);
    free(expect);
    HG_Free_output(h, &eout);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
    restart_and_call(&c, srv.addr);
    cl_close(&c);
}

/* --victim: a client that has the server pull 64 MiB slowly, then waits. */
static int victim_main(const char *info, const char *addr)
{
    hg_class_t *cls = HG_Init(info, HG_FALSE);
    hg_context_t *ctx = cls ? HG_Context_create(cls) : NULL;
    struct ft_ids ids;
    hg_addr_t a;
    if (!ctx)
        return 2;
    ft_register(cls, &ids, false);
    if (HG_Addr_lookup2(cls, addr, &a) != HG_SUCCESS)
        return 3;
    const size_t size = 64u << 20;
    void *buf = malloc(size);
    memset(buf, 1, size);
    hg_size_t bsize = size;
    hg_bulk_t bulk;
    hg_handle_t h;
    hgx_request_t r;
    HG_Bulk_create(cls, 1, &buf, &bsize, HG_BULK_READ_ONLY, &bulk);
    ft_pull_in_t in = {.bulk = bulk,
                       .size = size,
                       .chunk = 1u << 20,
                       .delay_ms = 30,
                       .client = 1,
                       .seed = 0};
    HG_Create(ctx, a, ids.pull, &h);
    if (hgx_iforward(h, &in, &r) != HG_SUCCESS)
        return 4;
    hgx_wait(&r, HGX_STATUS_IGNORE); /* killed long before the pull ends */
    return 5;
}

static bool stats(struct cl *c, ft_stats_out_t *out)
{
    ft_stats_in_t in = {.client = 0};
    return call(c, c->ids.stats, &in, out, 3000) == HG_SUCCESS;
}

/* Client killed while the server pulls from it; the server serves on. */
static void test_client_killed_mid_pull(void **state)
{
    (void)state;
    struct test_server srv;
    struct cl c;
    ft_stats_out_t s0, s;
    assert_true(test_server_start(&srv, current_info, exec_server_main));
    fflush(NULL);
    pid_t victim = fork();
    assert_true(victim >= 0);
    if (victim == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) /* killed with us if we fail first */
            _exit(127);
        execl(self_exe, self_exe, "--victim", current_info, srv.addr, (char *)NULL);
        _exit(127);
    }
    cl_open(&c, current_info);
    assert_int_equal(HG_Addr_lookup2(c.cls, srv.addr, &c.addr), HG_SUCCESS);
    /* Wait until the server's pull from the victim is under way. */
    double t0 = test_now();
    do {
        assert_true(stats(&c, &s0));
        assert_true(test_now() - t0 < 20);
        usleep(20000);
    } while (s0.xfer_done < 3);
    int status;
    kill(victim, SIGKILL);
    waitpid(victim, &status, 0);
    double tk = test_now();
    /* The job fails (error or chunk deadline) and every chunk completed once. */
    do {
        assert_true(stats(&c, &s));
        if (test_now() - tk > 10)
            fail_msg("server pull from the dead client still running after 10 s "
                     "(issued %llu, done %llu)",
                     (unsigned long long)s.xfer_issued, (unsigned long long)s.xfer_done);
        usleep(20000);
    } while (s.jobs_failed + s.jobs_ok < 1);
    double dt = test_now() - tk;
    print_message(
        "# %s: client killed mid-pull after %llu chunks: server job failed after %.0f "
        "ms; chunks issued %llu, completed %llu (failed %llu)\n",
        current_info, (unsigned long long)s0.xfer_done, dt * 1e3,
        (unsigned long long)s.xfer_issued, (unsigned long long)s.xfer_done,
        (unsigned long long)s.xfer_failed);
    assert_int_equal(s.jobs_failed, 1);
    assert_int_equal(s.jobs_ok, 0);
    assert_int_equal(s.xfer_issued, s.xfer_done);
    assert_int_equal(s.xfer_failed, 1);

    /* A second client is still served, bulk included. */
    const size_t size = 1u << 20;
    void *buf = malloc(size);
    test_fill(buf, size, 11);
    hg_size_t bsize = size;
    hg_bulk_t bulk;
    assert_int_equal(HG_Bulk_create(c.cls, 1, &buf, &bsize, HG_BULK_READ_ONLY, &bulk),
                     HG_SUCCESS);
    ft_pull_in_t in = {.bulk = bulk, .size = size, .seed = 11, .client = 2};
    ft_pull_out_t out;
    assert_int_equal(call(&c, c.ids.pull, &in, &out, 5000), HG_SUCCESS);
    assert_int_equal(out.ret, HG_SUCCESS);
    assert_true(stats(&c, &s));
    assert_int_equal(s.jobs_ok, 1);
    assert_int_equal(s.xfer_issued, s.xfer_done);
    HG_Bulk_free(bulk);
    free(buf);
    quit_server(&c, &srv);
    cl_close(&c);
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--serve"))
        return ft_server_main(argv[2], atoi(argv[3]));
    if (argc == 4 && !strcmp(argv[1], "--victim"))
        return victim_main(argv[2], argv[3]);
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
    if (n <= 0)
        return 99;
    self_exe[n] = '\0';
    signal(SIGPIPE, SIG_IGN);
    if (!getenv("UCX_TCP_CM_REUSEADDR")) {
        /* na_ucx leaves it at UCX's default (n): a restarted server then
         * cannot bind the port while the dead one's sockets sit in TIME_WAIT. */
        setenv("UCX_TCP_CM_REUSEADDR", "y", 0);
        print_message(
            "# ucx: UCX_TCP_CM_REUSEADDR=y set so a new server can take the old port\n");
    }

    const char *const *transports;
    size_t nt = test_transports(&transports);
    int failed = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_killed_rpc),
        cmocka_unit_test(test_server_killed_server_pull),
        cmocka_unit_test(test_server_killed_client_pull),
        cmocka_unit_test(test_client_killed_mid_pull),
    };
    const char *chosen = getenv("HGX_TEST_TRANSPORTS");
    for (size_t i = 0; i < nt; i++) {
        char name[64];
        current_info = transports[i];
        /* Known gap, run only when asked for by name: UCX 1.13 fails the
         * requests of a dead peer's endpoint only after flushing its lanes,
         * and its shared-memory flush keeps answering NO_RESOURCE while the
         * dead peer's queue is full, so gets to it never complete. */
        if (!strcmp(current_info, "ucx+shm") && !(chosen && *chosen)) {
            print_message("# faults/ucx+shm: NOT RUN: UCX 1.13 never fails operations "
                          "queued to a dead shared-memory peer (its mm flush stays "
                          "NO_RESOURCE); HGX_TEST_TRANSPORTS=ucx+shm runs it\n");
            continue;
        }
        snprintf(name, sizeof(name), "faults/%s", transports[i]);
        failed += _cmocka_run_group_tests(name, tests, sizeof(tests) / sizeof(*tests),
                                          NULL, NULL);
    }
    return failed ? 1 : 0;
}
