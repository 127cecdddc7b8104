/*
 * test_na_ucx_wait.c -- a UCX client driven from poll(2) alone, the way the
 * events API drives it (NA_Poll_try_wait, then poll on NA_Poll_get_fd, then
 * NA_Poll and NA_Trigger), sleeps rather than spins around a connection:
 * - against a forked server, the first echo (which wires the connection up)
 *   completes within the 5 s wire-up deadline, and the client then sleeps:
 *   under 5% CPU for 1 s with a receive posted that nothing answers;
 * - against a listener that never answers the wire-up, the send fails
 *   NA_HOSTUNREACH at the deadline, woken by the wait fd's timer alone (the
 *   poll timeout is longer than the deadline), under 5% CPU meanwhile.
 */
#include "na_test_proto.h"

#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define WAIT_CONNECT_S 5.0 /* the plugin's wire-up deadline (UCX_CONNECT_MS) */
#define WAIT_POLL_MS 10000 /* longer than the deadline: only an event wakes us */
#define WAIT_IDLE_S 1.0    /* how long an idle client is watched */
#define WAIT_CPU_PCT 5.0   /* a sleeping client stays under this */
#define WAIT_SILENT_MAX_S 8.0

static const char *current_info;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Drive ctx from poll(2) alone until done->count >= n or for at most
 * seconds; true if reached. */
static bool events_wait(na_class_t *cls, na_context_t *ctx, struct na_test_done *done,
                        int n, double seconds)
{
    int fd = NA_Poll_get_fd(cls, ctx);
    assert_true(fd >= 0);
    double end = test_now() + seconds;
    while (done->count < n && test_now() < end) {
        if (NA_Poll_try_wait(cls, ctx)) {
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            double left_ms = (end - test_now()) * 1000.0;
            int ms = left_ms < WAIT_POLL_MS ? (int)left_ms + 1 : WAIT_POLL_MS;
            assert_true(poll(&pfd, 1, ms) >= 0);
        }
        NA_Poll(cls, ctx, NULL);
        NA_Trigger(ctx, UINT32_MAX, NULL);
    }
    return done->count >= n;
}

/* Percent of wall time the process spent on a CPU since (cpu0, t0). */
static double cpu_pct(double cpu0, double t0)
{
    return 100.0 * (cpu_now() - cpu0) / (test_now() - t0);
}

struct client {
    struct test_server srv;
    na_class_t *cls;
    na_context_t *ctx;
    na_addr_t *server;
};

static void client_start(struct client *c)
{
    char info[TEST_ADDR_MAX];
    assert_true(test_server_start(&c->srv, current_info, na_test_server_main));
    test_client_info(c->srv.addr, info, sizeof(info));
    c->cls = NA_Initialize(info, false);
    assert_non_null(c->cls);
    c->ctx = NA_Context_create(c->cls);
    assert_non_null(c->ctx);
    assert_int_equal(NA_Addr_lookup(c->cls, c->srv.addr, &c->server), NA_SUCCESS);
}

/* Send the server a command (tag: the tag of its reply) from buf. */
static void send_cmd(struct client *c, na_addr_t *to, uint32_t op, uint32_t tag,
                     char *buf, struct na_test_done *done, na_op_id_t *id)
{
    size_t h = NA_Msg_get_unexpected_header_size(c->cls);
    struct na_test_cmd cmd = {.op = op, .tag = tag};
    assert_int_equal(NA_Msg_init_unexpected(c->cls, buf, h + sizeof(cmd)), NA_SUCCESS);
    memcpy(buf + h, &cmd, sizeof(cmd));
    assert_int_equal(NA_Msg_send_unexpected(c->cls, c->ctx, na_test_cb, done, buf,
                                            h + sizeof(cmd), NULL, to, 0, 0, id),
                     NA_SUCCESS);
}

static void client_stop(struct client *c)
{
    char buf[256];
    struct na_test_done sent = {0};
    na_op_id_t *op = NA_Op_create(c->cls, NA_OP_SINGLE);
    send_cmd(c, c->server, CMD_QUIT, 0, buf, &sent, op);
    assert_true(events_wait(c->cls, c->ctx, &sent, 1, 10.0));
    NA_Op_destroy(c->cls, op);
    assert_int_equal(test_server_wait(&c->srv, 10000), 0);
    NA_Addr_free(c->cls, c->server);
    assert_int_equal(NA_Context_destroy(c->cls, c->ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(c->cls), NA_SUCCESS);
}

/* The first echo wires up and completes within the deadline (a send goes
 * out only once its connection is up); then the client sleeps. */
static void test_wireup_then_idle(void **state)
{
    (void)state;
    struct client c = {0};
    client_start(&c);
    char in[512], out[256];
    struct na_test_done got = {0}, sent = {0}, never = {0};
    na_op_id_t *rop = NA_Op_create(c.cls, NA_OP_SINGLE),
               *sop = NA_Op_create(c.cls, NA_OP_SINGLE),
               *idle = NA_Op_create(c.cls, NA_OP_SINGLE);

    double t0 = test_now();
    assert_int_equal(NA_Msg_recv_expected(c.cls, c.ctx, na_test_cb, &got, in, sizeof(in),
                                          NULL, c.server, 0, 1, rop),
                     NA_SUCCESS);
    send_cmd(&c, c.server, CMD_ECHO, 1, out, &sent, sop);
    assert_true(events_wait(c.cls, c.ctx, &sent, 1, WAIT_CONNECT_S));
    assert_true(events_wait(c.cls, c.ctx, &got, 1, WAIT_CONNECT_S));
    double wired = test_now() - t0;
    assert_int_equal(sent.ret, NA_SUCCESS);
    assert_int_equal(got.ret, NA_SUCCESS);

    /* A reply that never comes: the client waits on the fd alone. */
    assert_int_equal(NA_Msg_recv_expected(c.cls, c.ctx, na_test_cb, &never, in,
                                          sizeof(in), NULL, c.server, 0, 99, idle),
                     NA_SUCCESS);
    double cpu0 = cpu_now(), t1 = test_now();
    assert_false(events_wait(c.cls, c.ctx, &never, 1, WAIT_IDLE_S));
    double pct = cpu_pct(cpu0, t1);
    print_message("# %s: first echo (wire-up) %.3f s; then idle at %.2f%% CPU\n",
                  current_info, wired, pct);
    assert_true(pct < WAIT_CPU_PCT);

    assert_int_equal(NA_Cancel(c.cls, c.ctx, idle), NA_SUCCESS);
    assert_true(events_wait(c.cls, c.ctx, &never, 1, 5.0));
    assert_int_equal(never.ret, NA_CANCELED);
    NA_Op_destroy(c.cls, rop);
    NA_Op_destroy(c.cls, sop);
    NA_Op_destroy(c.cls, idle);
    client_stop(&c);
}

/* Nothing but the wire-up deadline can end this send: the wait fd's timer
 * wakes the client for it. */
static void test_silent_deadline(void **state)
{
    (void)state;
    char name[64], buf[256];
    unsigned port = 0;
    /* Listening but never accepting: UCX's wire-up waits for an answer that
     * never comes. */
    int lfd = test_loopback_socket(true, &port);
    assert_true(lfd >= 0);
    test_loopback_addr(current_info, port, name, sizeof(name));
    na_class_t *cls = NA_Initialize(current_info, false);
    assert_non_null(cls);
    na_context_t *ctx = NA_Context_create(cls);
    assert_non_null(ctx);
    struct client c = {.cls = cls, .ctx = ctx};
    na_addr_t *silent = NULL;
    assert_int_equal(NA_Addr_lookup(cls, name, &silent), NA_SUCCESS);
    struct na_test_done sent = {0};
    na_op_id_t *op = NA_Op_create(cls, NA_OP_SINGLE);

    double cpu0 = cpu_now(), t0 = test_now();
    send_cmd(&c, silent, 0, 0, buf, &sent, op);
    assert_true(events_wait(cls, ctx, &sent, 1, WAIT_SILENT_MAX_S));
    double took = test_now() - t0, pct = cpu_pct(cpu0, t0);
    print_message("# %s: send to a silent listener failed after %.2f s at %.2f%% CPU\n",
                  current_info, took, pct);
    assert_int_equal(sent.ret, NA_HOSTUNREACH);
    assert_true(took >= WAIT_CONNECT_S - 0.5);
    assert_true(pct < WAIT_CPU_PCT);

    NA_Op_destroy(cls, op);
    NA_Addr_free(cls, silent);
    assert_int_equal(NA_Context_destroy(cls, ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(cls), NA_SUCCESS);
    close(lfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wireup_then_idle),
        cmocka_unit_test(test_silent_deadline),
    };
    return test_run_per_transport("na_ucx_wait", "ucx+", &current_info, tests,
                                  sizeof(tests) / sizeof(*tests), NULL, NULL);
}
