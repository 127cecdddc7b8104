/*
 * test_na_threads.c -- a thread-safe server class with four contexts, each
 * driven by its own thread in NA_Progress with a long timeout, the way a
 * service with a thread per context runs. When idle, exactly one of the
 * threads sleeps in the transport's wait object and the three others sleep
 * as waiters (they do not all wake on every event of the shared transport).
 * Messages sent to each context in turn, after idle gaps, reach the thread
 * of their context far within the progress timeout, also while the threads
 * leave one by one: a thread that leaves while the others sleep hands the
 * transport on (else they would sleep out their timeout). Runs over every
 * transport built (ofi+tcp, ofi+shm, ucx+tcp, ucx+shm), client and server
 * in one process. Idle, the process must use under 2% of a CPU.
 */
#include "na_plugin.h"
#include "na_test_proto.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <setjmp.h>

#include <cmocka.h>

#define THR_CONTEXTS 4
#define THR_ROUNDS 6           /* messages to context i: THR_ROUNDS - i */
#define THR_PROGRESS_MS 5000   /* the server threads' NA_Progress timeout */
#define THR_LATE_S 1.0         /* a delivery this late slept out a wait */
#define THR_GAP_NS 20000000L   /* idle gap before each message: threads sleep */
#define THR_SETTLE_S 2.0       /* bound on reaching the idle roles */
#define THR_TIMEOUT_S 20.0     /* bound on any one wait */
#define THR_IDLE_NS 500000000L /* idle measured over this long */
/* ...once the server has been idle this long: the sleep steps of a class
 * without a wait fd (ofi+shm) start short after activity and reach their
 * 4 ms bound 32 ms later (na_backoff.h), so that a reply is noticed promptly;
 * that ramp is not idling. */
#define THR_IDLE_AFTER_NS 100000000L
/* CPU an idle server may use, % of one CPU; sanitized code spends several
 * times more on each of the blocker's wake-ups. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define THR_IDLE_PCT 10.0
#else
#define THR_IDLE_PCT 2.0
#endif

struct server_thread {
    na_class_t *cls;
    na_context_t *ctx;
    int id, rounds;
    atomic_int received;    /* messages received so far */
    _Atomic double last_at; /* test_now() at the last receipt */
    atomic_int bad;         /* a message with the wrong tag, or a failure */
};

static void *server_main(void *arg)
{
    struct server_thread *s = arg;
    size_t size = NA_Msg_get_max_unexpected_size(s->cls);
    char *buf = malloc(size);
    na_op_id_t *op = NA_Op_create(s->cls, NA_OP_SINGLE);
    if (!buf || !op) {
        atomic_store(&s->bad, 1);
        goto out;
    }
    for (int k = 0; k < s->rounds; k++) {
        struct na_test_done r = {0};
        if (NA_Msg_recv_unexpected(s->cls, s->ctx, na_test_cb, &r, buf, size, NULL, op) !=
            NA_SUCCESS) {
            atomic_store(&s->bad, 1);
            break;
        }
        double deadline = test_now() + THR_TIMEOUT_S;
        while (r.count == 0 && test_now() < deadline) {
            NA_Progress(s->cls, s->ctx, THR_PROGRESS_MS);
            NA_Trigger(s->ctx, 16, NULL);
        }
        if (r.count == 0) {
            atomic_store(&s->bad, 1);
            NA_Cancel(s->cls, s->ctx, op);
            na_test_wait(s->cls, s->ctx, &r, 1, 5000);
            break;
        }
        atomic_store(&s->last_at, test_now());
        if (r.ret != NA_SUCCESS || r.tag != (na_tag_t)(s->id * 100 + k))
            atomic_store(&s->bad, 1);
        if (r.source)
            NA_Addr_free(s->cls, r.source);
        atomic_fetch_add(&s->received, 1);
    }
out:
    NA_Op_destroy(s->cls, op);
    free(buf);
    return NULL;
}

/* CPU time (user + system) of the process so far, in seconds. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Wait (progressing the client) until the idle roles are reached: one
 * blocker, every other server thread asleep as a waiter. */
static bool idle_roles(na_class_t *srv, na_class_t *cli, na_context_t *cctx,
                       unsigned int threads)
{
    double deadline = test_now() + THR_SETTLE_S;
    while (test_now() < deadline) {
        if (atomic_load(&srv->lead.blocked) &&
            atomic_load(&srv->lead.asleep) == threads - 1)
            return true;
        NA_Progress(cli, cctx, 1);
    }
    return false;
}

static void run(const char *plugin, const char *proto)
{
    char info[64];
    snprintf(info, sizeof(info), "%s+%s://127.0.0.1", plugin, proto);
    struct na_init_info si = {.max_contexts = THR_CONTEXTS},
                        ci = {.max_contexts = THR_CONTEXTS};
    na_class_t *srv = NA_Initialize_opt(info, true, &si);
    assert_non_null(srv);
    snprintf(info, sizeof(info), "%s+%s", plugin, proto);
    na_class_t *cli = NA_Initialize_opt(info, false, &ci);
    assert_non_null(cli);
    na_context_t *cctx = NA_Context_create(cli);
    assert_non_null(cctx);

    na_addr_t *self = NULL, *server = NULL;
    char addr[TEST_ADDR_MAX];
    size_t addr_len = sizeof(addr);
    assert_int_equal(NA_Addr_self(srv, &self), NA_SUCCESS);
    assert_int_equal(NA_Addr_to_string(srv, addr, &addr_len, self), NA_SUCCESS);
    NA_Addr_free(srv, self);
    assert_int_equal(NA_Addr_lookup(cli, addr, &server), NA_SUCCESS);

    struct server_thread st[THR_CONTEXTS];
    pthread_t tid[THR_CONTEXTS];
    for (int i = 0; i < THR_CONTEXTS; i++) {
        st[i] = (struct server_thread){.cls = srv, .id = i, .rounds = THR_ROUNDS - i};
        st[i].ctx = NA_Context_create_id(srv, (uint8_t)i);
        assert_non_null(st[i].ctx);
    }
    for (int i = 0; i < THR_CONTEXTS; i++)
        assert_int_equal(pthread_create(&tid[i], NULL, server_main, &st[i]), 0);

    size_t h = NA_Msg_get_unexpected_header_size(cli);
    void *spd = NULL;
    char *sbuf = NA_Msg_buf_alloc(cli, h + 16, NA_SEND, &spd);
    assert_non_null(sbuf);
    na_op_id_t *sop = NA_Op_create(cli, NA_OP_SINGLE);
    assert_non_null(sop);

    /* Idle, the four server threads must sleep: the process (the client's
     * thread asleep too) uses under THR_IDLE_PCT of one CPU. */
    assert_true(idle_roles(srv, cli, cctx, THR_CONTEXTS));
    struct timespec settle = {0, THR_IDLE_AFTER_NS};
    nanosleep(&settle, NULL);
    double wall0 = test_now(), cpu0 = cpu_s();
    struct timespec idle = {0, THR_IDLE_NS};
    nanosleep(&idle, NULL);
    double idle_pct = 100 * (cpu_s() - cpu0) / (test_now() - wall0);
    print_message("%s: idle with %d threads: %.2f%% CPU\n", info, THR_CONTEXTS, idle_pct);
    if (idle_pct >= THR_IDLE_PCT)
        fail_msg("%s: idle server used %.2f%% CPU", info, idle_pct);

    double worst = 0;
    for (int k = 0; k < THR_ROUNDS; k++) {
        for (int i = 0; i < THR_CONTEXTS; i++) {
            if (k >= st[i].rounds)
                continue; /* thread i has left */
            struct timespec gap = {0, THR_GAP_NS};
            nanosleep(&gap, NULL);
            unsigned int alive = 0;
            for (int j = 0; j < THR_CONTEXTS; j++)
                alive += k < st[j].rounds;
            if (i == 0 && !idle_roles(srv, cli, cctx, alive))
                fail_msg(
                    "%s: %u threads idle, not one blocker and %u waiters (blocker %d, "
                    "waiters %u)",
                    info, alive, alive - 1, (int)atomic_load(&srv->lead.blocked),
                    atomic_load(&srv->lead.asleep));
            struct na_test_done sent = {0};
            memset(sbuf + h, k, 16);
            NA_Msg_init_unexpected(cli, sbuf, h + 16);
            double t0 = test_now();
            assert_int_equal(NA_Msg_send_unexpected(cli, cctx, na_test_cb, &sent, sbuf,
                                                    h + 16, spd, server, (uint8_t)i,
                                                    (na_tag_t)(i * 100 + k), sop),
                             NA_SUCCESS);
            assert_true(na_test_wait(cli, cctx, &sent, 1, 10000));
            assert_int_equal(sent.ret, NA_SUCCESS);
            double deadline = t0 + THR_TIMEOUT_S;
            while (atomic_load(&st[i].received) <= k && test_now() < deadline)
                NA_Progress(cli, cctx, 1);
            assert_int_equal(atomic_load(&st[i].received), k + 1);
            double late = atomic_load(&st[i].last_at) - t0;
            if (late > worst)
                worst = late;
            if (late > THR_LATE_S)
                fail_msg("%s: message %d to context %d took %.3f s", info, k, i, late);
        }
    }
    print_message("%s: %d messages, the slowest took %.1f ms\n", info,
                  THR_ROUNDS * THR_CONTEXTS - (THR_CONTEXTS - 1) * THR_CONTEXTS / 2,
                  worst * 1e3);
    for (int i = 0; i < THR_CONTEXTS; i++) {
        pthread_join(tid[i], NULL);
        assert_int_equal(atomic_load(&st[i].bad), 0);
        assert_int_equal(NA_Context_destroy(srv, st[i].ctx), NA_SUCCESS);
    }
    assert_int_equal(atomic_load(&srv->lead.awake), 0);
    assert_int_equal(atomic_load(&srv->lead.asleep), 0);
    NA_Op_destroy(cli, sop);
    NA_Msg_buf_free(cli, sbuf, spd);
    NA_Addr_free(cli, server);
    assert_int_equal(NA_Context_destroy(cli, cctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(cli), NA_SUCCESS);
    assert_int_equal(NA_Finalize(srv), NA_SUCCESS);
}

#if HGX_HAVE_OFI
static void test_ofi_tcp(void **state)
{
    (void)state;
    run("ofi", "tcp");
}

static void test_ofi_shm(void **state)
{
    (void)state;
    run("ofi", "shm");
}
#endif

#if HGX_HAVE_UCX
static void test_ucx_tcp(void **state)
{
    (void)state;
    run("ucx", "tcp");
}

static void test_ucx_shm(void **state)
{
    (void)state;
    run("ucx", "shm");
}
#endif

#if HGX_HAVE_OFI || HGX_HAVE_UCX
int main(void)
{
    const struct CMUnitTest tests[] = {
#if HGX_HAVE_OFI
        cmocka_unit_test(test_ofi_tcp),
        cmocka_unit_test(test_ofi_shm),
#endif
#if HGX_HAVE_UCX
        cmocka_unit_test(test_ucx_tcp),
        cmocka_unit_test(test_ucx_shm),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void)
{
    printf("SKIP: built without libfabric and UCX\n");
    return 77;
}
#endif
