/*
 * test_na_idle.c -- an idle listener must sleep in the transport's wait object:
 * CPU time under 5% of wall time while it waits 2 s for a message that never comes.
 * An NA_NO_BLOCK class does the opposite: no wait fd, progress busy-polls, and
 * messages still flow.
 */
#include "na_test_proto.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <cmocka.h>

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

static void test_idle(void **state)
{
    const char *info = *state;
    na_class_t *cls = NA_Initialize(info, true);
    assert_non_null(cls);
    na_context_t *ctx = NA_Context_create(cls);
    size_t size = NA_Msg_get_max_unexpected_size(cls);
    void *buf = malloc(size);
    na_op_id_t *op = NA_Op_create(cls, NA_OP_SINGLE);
    struct na_test_done done = {0};
    assert_int_equal(
        NA_Msg_recv_unexpected(cls, ctx, na_test_cb, &done, buf, size, NULL, op),
        NA_SUCCESS);

    double c0 = cpu_seconds(), t0 = test_now();
    while (test_now() - t0 < 2.0)
        NA_Progress(cls, ctx, 500);
    double cpu = cpu_seconds() - c0, wall = test_now() - t0;
    double pct = 100.0 * cpu / wall;
    print_message("# idle listener %s: %.3f s CPU over %.3f s wall = %.2f%%\n", info, cpu,
                  wall, pct);
    assert_true(pct < 5.0);

    assert_int_equal(NA_Cancel(cls, ctx, op), NA_SUCCESS);
    assert_true(na_test_wait(cls, ctx, &done, 1, 5000));
    assert_int_equal(done.ret, NA_CANCELED);
    NA_Op_destroy(cls, op);
    free(buf);
    assert_int_equal(NA_Context_destroy(cls, ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(cls), NA_SUCCESS);
}

/* NA_NO_BLOCK: no wait fd, NA_Progress spins through its timeout (CPU close
 * to wall time), and a message to ourselves still arrives. */
static void test_no_block(void **state)
{
    const char *info = *state;
    struct na_init_info opt = NA_INIT_INFO_INITIALIZER;
    opt.progress_mode = NA_NO_BLOCK;
    na_class_t *cls = NA_Initialize_opt(info, true, &opt);
    assert_non_null(cls);
    na_context_t *ctx = NA_Context_create(cls);
    assert_non_null(ctx);
    assert_int_equal(NA_Poll_get_fd(cls, ctx), -1);

    double c0 = cpu_seconds(), t0 = test_now();
    assert_int_equal(NA_Progress(cls, ctx, 200), NA_TIMEOUT);
    double cpu = cpu_seconds() - c0, wall = test_now() - t0;
    print_message("# NA_NO_BLOCK %s: %.3f s CPU over %.3f s wall\n", info, cpu, wall);
    assert_true(wall >= 0.19);
    assert_true(cpu > 0.2 * wall); /* a sleeping wait stays under 5% */

    na_addr_t *self = NULL;
    assert_int_equal(NA_Addr_self(cls, &self), NA_SUCCESS);
    na_op_id_t *rop = NA_Op_create(cls, NA_OP_SINGLE),
               *sop = NA_Op_create(cls, NA_OP_SINGLE);
    assert_true(na_test_self_message(cls, ctx, self, rop, sop, 42, 3));
    NA_Addr_free(cls, self);
    NA_Op_destroy(cls, rop);
    NA_Op_destroy(cls, sop);
    assert_int_equal(NA_Context_destroy(cls, ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(cls), NA_SUCCESS);
}

int main(void)
{
    const char *const *transports;
    size_t n = test_transports(&transports);
    struct CMUnitTest *tests = calloc(2 * n, sizeof(*tests));
    char(*names)[64] = calloc(2 * n, 64);
    for (size_t i = 0; i < n; i++) {
        snprintf(names[2 * i], 64, "idle_cpu/%s", transports[i]);
        snprintf(names[2 * i + 1], 64, "no_block/%s", transports[i]);
        tests[2 * i] = (struct CMUnitTest){names[2 * i], test_idle, NULL, NULL,
                                           (void *)transports[i]};
        tests[2 * i + 1] = (struct CMUnitTest){names[2 * i + 1], test_no_block, NULL,
                                               NULL, (void *)transports[i]};
    }
    int failed = _cmocka_run_group_tests("na_idle", tests, 2 * n, NULL, NULL);
    free(tests);
    free(names);
    return failed ? 1 : 0;
}
