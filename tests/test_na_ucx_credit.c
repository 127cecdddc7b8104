/*
 * test_na_ucx_credit.c -- the UCX plugin's per-peer credits for unexpected
 * messages bound what a receiver keeps even while its worker must run.
 *
 * A forked server keeps an expected receive posted that nothing answers, so
 * the class-wide stall on a full backlog (HGX_NA_UNEXPECTED_MAX) cannot
 * apply, and posts no unexpected receive for a second. Meanwhile a client
 * sends ten times the credits of unexpected messages of 8 KiB: the server
 * must keep exactly one peer's credits of them, and the client's other sends
 * must wait in its queue. Then the server posts receives one at a time and
 * must get every message, in order, intact, and then an end message.
 * Under NA_NO_RETRY the client's send past its credits must fail at once with
 * NA_AGAIN, and once the server consumed the others (returning their
 * credits), a send must succeed again. Neither side may count a dropped
 * message or credit return.
 */
#include "hgx_test_hooks.h"
#include "na_test_proto.h"

#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define CREDIT_TAG 9
#define CREDIT_END UINT32_MAX   /* seq of the end message */
#define CREDIT_FLOOD 10         /* flood: times the credits sent */
#define CREDIT_HOLD_S 1.0       /* progress with no receive posted */
#define CREDIT_STUCK_TAG 0xfffu /* the server's expected receive: never answered */

struct credit_params {
    const char *info;
    bool no_retry;
};

/* The running test's parameters, for the forked server too. */
static const struct credit_params *credit_cur;

/* The server finalizes once the client has (end of file on [0]). */
static int credit_release[2];

/* Messages the client sends before the end message: the flood, or with
 * NA_NO_RETRY as many as its credits allow. */
static uint32_t credit_count(void)
{
    struct na_ucx_credit_counts c;
    na_ucx_credit_counts(&c);
    return (uint32_t)c.credits * (credit_cur->no_retry ? 1 : CREDIT_FLOOD);
}

/* No message or credit return was dropped in this process. */
static bool credit_nothing_dropped(void)
{
    struct na_ucx_credit_counts c;
    na_ucx_credit_counts(&c);
    if (c.dropped || c.bad_returns)
        fprintf(stderr, "# %ld messages and %ld credit returns dropped\n", c.dropped,
                c.bad_returns);
    return !c.dropped && !c.bad_returns;
}

/* Progress with no unexpected receive posted: exactly one peer's credits of
 * messages must be kept, however long the worker runs. */
static bool credit_hold(na_class_t *cls, na_context_t *ctx)
{
    struct na_ucx_credit_counts c;
    na_ucx_credit_counts(&c);
    for (double end = test_now() + CREDIT_HOLD_S; test_now() < end;)
        NA_Progress(cls, ctx, 10);
    long peak = 0, now = na_ucx_held_count(&peak);
    fprintf(stderr, "# %ld messages kept (at most %ld) for credits of %ld\n", now, peak,
            c.credits);
    return now == c.credits && peak == c.credits;
}

/* Receive the messages in order, then the end message; 1 if all were
 * intact. *src_p: the client. */
static uint8_t credit_receive(na_class_t *cls, na_context_t *ctx, na_addr_t **src_p)
{
    size_t size = NA_Msg_get_max_unexpected_size(cls),
           h = NA_Msg_get_unexpected_header_size(cls);
    char *buf = malloc(size);
    na_op_id_t *op = NA_Op_create(cls, NA_OP_SINGLE);
    uint8_t ok = buf != NULL;
    for (uint32_t i = 0; ok && i <= credit_count(); i++) {
        struct na_test_done done = {0};
        uint32_t seq = 0;
        bool end = i == credit_count();
        ok = NA_Msg_recv_unexpected(cls, ctx, na_test_cb, &done, buf, size, NULL, op) ==
                 NA_SUCCESS &&
             na_test_wait(cls, ctx, &done, 1, 10000) && done.ret == NA_SUCCESS &&
             done.tag == CREDIT_TAG && done.size == (end ? h + sizeof(seq) : size);
        if (ok)
            memcpy(&seq, buf + h, sizeof(seq));
        ok = ok && (end ? seq == CREDIT_END
                        : seq == i && test_check(buf + h + sizeof(seq),
                                                 size - h - sizeof(seq), seq));
        if (!ok)
            fprintf(stderr, "# message %u: %s, seq %u, %zu bytes\n", i,
                    NA_Error_to_string(done.ret), seq, done.size);
        if (done.source && !*src_p)
            *src_p = done.source;
        else if (done.source)
            NA_Addr_free(cls, done.source);
    }
    NA_Op_destroy(cls, op);
    free(buf);
    return ok;
}

/* Server: hold, receive, answer 1 (as expected) or 0 with an expected message. */
static int credit_server(const char *info, int publish_fd)
{
    na_class_t *cls = NA_Initialize(info, true);
    na_context_t *ctx = cls ? NA_Context_create(cls) : NULL;
    na_addr_t *self = NULL, *src = NULL;
    char addr[TEST_ADDR_MAX], stuck[64];
    size_t addr_len = sizeof(addr);
    if (!ctx || NA_Addr_self(cls, &self) != NA_SUCCESS ||
        NA_Addr_to_string(cls, addr, &addr_len, self) != NA_SUCCESS) {
        test_server_publish(publish_fd, "");
        return 1;
    }
    /* An op outstanding: the worker must keep running for it. */
    struct na_test_done never = {0};
    na_op_id_t *sop = NA_Op_create(cls, NA_OP_SINGLE);
    if (NA_Msg_recv_expected(cls, ctx, na_test_cb, &never, stuck, sizeof(stuck), NULL,
                             self, 0, CREDIT_STUCK_TAG, sop) != NA_SUCCESS) {
        test_server_publish(publish_fd, "");
        return 1;
    }
    test_server_publish(publish_fd, addr);
    close(credit_release[1]);

    uint8_t ok = credit_hold(cls, ctx) && credit_receive(cls, ctx, &src) &&
                 na_ucx_held_count(NULL) == 0 && credit_nothing_dropped();
    int rc = 1;
    if (src) {
        struct na_test_done done = {0};
        size_t eh = NA_Msg_get_expected_header_size(cls);
        char reply[64] = {0};
        reply[eh] = (char)ok;
        na_op_id_t *op = NA_Op_create(cls, NA_OP_SINGLE);
        if (NA_Msg_send_expected(cls, ctx, na_test_cb, &done, reply, eh + 1, NULL, src, 0,
                                 1, op) == NA_SUCCESS &&
            na_test_wait(cls, ctx, &done, 1, 10000) && done.ret == NA_SUCCESS)
            rc = ok ? 0 : 1;
        NA_Op_destroy(cls, op);
        NA_Addr_free(cls, src);
    }
    struct pollfd pfd = {.fd = credit_release[0], .events = POLLIN};
    poll(&pfd, 1, 10000);
    NA_Cancel(cls, ctx, sop);
    na_test_wait(cls, ctx, &never, 1, 1000);
    NA_Op_destroy(cls, sop);
    NA_Addr_free(cls, self);
    NA_Context_destroy(cls, ctx);
    NA_Finalize(cls);
    return rc;
}

/* The end message. Under NA_NO_RETRY it meets NA_AGAIN until the server's
 * credit returns arrive: it is sent once the server's hold is over, and tried
 * again after progress (each refusal is logged). */
static void credit_end(na_class_t *cls, na_context_t *ctx, na_addr_t *server, char *buf,
                       na_op_id_t *op)
{
    size_t h = NA_Msg_get_unexpected_header_size(cls);
    uint32_t end = CREDIT_END;
    NA_Msg_init_unexpected(cls, buf, h + sizeof(end));
    memcpy(buf + h, &end, sizeof(end));
    struct na_test_done sent = {0};
    double deadline = test_now() + 10;
    na_return_t ret;
    NA_Progress(cls, ctx, (unsigned int)(CREDIT_HOLD_S * 1e3) + 500);
    while (
        (ret = NA_Msg_send_unexpected(cls, ctx, na_test_cb, &sent, buf, h + sizeof(end),
                                      NULL, server, 0, CREDIT_TAG, op)) == NA_AGAIN &&
        test_now() < deadline)
        NA_Progress(cls, ctx, 100);
    assert_int_equal(ret, NA_SUCCESS);
    assert_true(na_test_wait(cls, ctx, &sent, 1, 10000));
    assert_int_equal(sent.ret, NA_SUCCESS);
}

static void test_credit(void **state)
{
    credit_cur = *state;
    struct test_server srv;
    assert_int_equal(pipe(credit_release), 0);
    assert_true(test_server_start(&srv, credit_cur->info, credit_server));
    close(credit_release[0]);
    struct na_init_info init = NA_INIT_INFO_INITIALIZER;
    init.progress_mode = credit_cur->no_retry ? NA_NO_RETRY : 0;
    na_class_t *cls = NA_Initialize_opt(credit_cur->info, false, &init);
    assert_non_null(cls);
    na_context_t *ctx = NA_Context_create(cls);
    na_addr_t *server = NULL;
    assert_int_equal(NA_Addr_lookup(cls, srv.addr, &server), NA_SUCCESS);

    size_t size = NA_Msg_get_max_unexpected_size(cls),
           h = NA_Msg_get_unexpected_header_size(cls),
           eh = NA_Msg_get_expected_header_size(cls);
    uint32_t n = credit_count();
    struct na_ucx_credit_counts cc;
    na_ucx_credit_counts(&cc);
    /* One message more than the flood: NA_NO_RETRY's refused one. */
    char *bufs = malloc((size_t)(n + 1) * size);
    na_op_id_t **ops = calloc(n + 1, sizeof(*ops));
    struct na_test_done all = {0}, got = {0};
    assert_true(bufs && ops);
    for (uint32_t i = 0; i <= n; i++) {
        char *b = bufs + (size_t)i * size;
        ops[i] = NA_Op_create(cls, NA_OP_SINGLE);
        NA_Msg_init_unexpected(cls, b, size);
        memcpy(b + h, &i, sizeof(i));
        test_fill(b + h + sizeof(i), size - h - sizeof(i), i);
    }
    char reply[64] = {0};
    na_op_id_t *rop = NA_Op_create(cls, NA_OP_SINGLE);
    assert_int_equal(NA_Msg_recv_expected(cls, ctx, na_test_cb, &got, reply,
                                          sizeof(reply), NULL, server, 0, 1, rop),
                     NA_SUCCESS);
    uint32_t last = credit_cur->no_retry ? n + 1 : n;
    na_return_t ret = NA_SUCCESS;
    for (uint32_t i = 0; i < last; i++) {
        ret = NA_Msg_send_unexpected(cls, ctx, na_test_cb, &all, bufs + (size_t)i * size,
                                     size, NULL, server, 0, CREDIT_TAG, ops[i]);
        if (i == n) /* credits spent, none returned yet: refused at once */
            break;
        assert_int_equal(ret, NA_SUCCESS);
        /* The first send opens the connection; the others then run back to
         * back, without progress: the credits cannot come back meanwhile. */
        if (i == 0)
            assert_true(na_test_wait(cls, ctx, &all, 1, 10000));
    }
    long queued = na_ucx_pending_count();
    print_message("# %s: %u sends posted for %ld credits, %ld queued%s%s\n",
                  credit_cur->info, n, cc.credits, queued,
                  credit_cur->no_retry ? ", the next one: " : "",
                  credit_cur->no_retry ? NA_Error_to_string(ret) : "");
    if (credit_cur->no_retry)
        assert_int_equal(ret, NA_AGAIN);
    assert_int_equal(queued, (long)n - cc.credits);
    assert_true(na_test_wait(cls, ctx, &all, (int)n, 60000));
    assert_int_equal(all.ret, NA_SUCCESS);
    assert_int_equal(na_ucx_pending_count(), 0);
    credit_end(cls, ctx, server, bufs, ops[0]);
    assert_true(na_test_wait(cls, ctx, &got, 1, 60000));
    assert_int_equal(got.ret, NA_SUCCESS);
    assert_int_equal(reply[eh], 1);
    assert_true(credit_nothing_dropped());

    NA_Op_destroy(cls, rop);
    for (uint32_t i = 0; i <= n; i++)
        NA_Op_destroy(cls, ops[i]);
    free(ops);
    free(bufs);
    NA_Addr_free(cls, server);
    assert_int_equal(NA_Context_destroy(cls, ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(cls), NA_SUCCESS);
    close(credit_release[1]);
    assert_int_equal(test_server_wait(&srv, 10000), 0);
}

int main(void)
{
    static const struct credit_params p[] = {
        {"ucx+tcp://127.0.0.1", false},
        {"ucx+shm", false},
        {"ucx+tcp://127.0.0.1", true},
        {"ucx+shm", true},
    };
    struct CMUnitTest tests[sizeof(p) / sizeof(*p)];
    char name[sizeof(p) / sizeof(*p)][64];
    for (size_t i = 0; i < sizeof(p) / sizeof(*p); i++) {
        snprintf(name[i], sizeof(name[i]), "credit/%s/%s", p[i].info,
                 p[i].no_retry ? "no_retry" : "flood");
        tests[i] = (struct CMUnitTest){name[i], test_credit, NULL, NULL, (void *)&p[i]};
    }
    return _cmocka_run_group_tests("na_ucx_credit", tests, sizeof(tests) / sizeof(*tests),
                                   NULL, NULL)
               ? 1
               : 0;
}
