/*
 * test_na_ucx_pending.c -- flood a slow UCX server with max-size unexpected
 * messages posted back to back: every one must arrive, in order, and the
 * plugin's resource queue (seed 003) must be drained at the end.
 */
#include "na_test_proto.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define FLOOD_COUNT 10000
#define FLOOD_TAG 5

/* Sends queued for resources in the UCX plugin (na_ucx.c). */
long na_ucx_pending_count(void);

/* Server: receive one message at a time, pausing now and then, check the
 * sequence numbers and answer 1 (all in order) or 0 with an expected message. */
static int flood_server(const char *info, int publish_fd)
{
    na_class_t *cls = NA_Initialize(info, true);
    na_context_t *ctx = cls ? NA_Context_create(cls) : NULL;
    na_addr_t *self = NULL, *src = NULL;
    char addr[TEST_ADDR_MAX];
    size_t addr_len = sizeof(addr);
    if (!ctx || NA_Addr_self(cls, &self) != NA_SUCCESS ||
        NA_Addr_to_string(cls, addr, &addr_len, self) != NA_SUCCESS) {
        test_server_publish(publish_fd, "");
        return 1;
    }
    NA_Addr_free(cls, self);
    test_server_publish(publish_fd, addr);

    size_t size = NA_Msg_get_max_unexpected_size(cls),
           h = NA_Msg_get_unexpected_header_size(cls);
    char *buf = malloc(size);
    na_op_id_t *op = NA_Op_create(cls, NA_OP_SINGLE);
    uint8_t ok = 1;
    for (uint32_t i = 0; i < FLOOD_COUNT && ok; i++) {
        struct na_test_done done = {0};
        uint32_t seq = UINT32_MAX;
        if (NA_Msg_recv_unexpected(cls, ctx, na_test_cb, &done, buf, size, NULL, op) !=
                NA_SUCCESS ||
            !na_test_wait(cls, ctx, &done, 1, 30000) || done.ret != NA_SUCCESS) {
            ok = 0;
            break;
        }
        memcpy(&seq, buf + h, sizeof(seq));
        if (seq != i || done.size != size || done.tag != FLOOD_TAG ||
            !test_check(buf + h + sizeof(seq), size - h - sizeof(seq), i)) {
            fprintf(stderr, "# message %u: got seq %u, %zu bytes, tag %u\n", i, seq,
                    done.size, (unsigned)done.tag);
            ok = 0;
        }
        if (src)
            NA_Addr_free(cls, done.source);
        else
            src = done.source;
        if (i % 500 == 0)
            usleep(10000); /* slow receiver: let the sender run ahead */
    }
    int rc = 1;
    if (src) {
        struct na_test_done done = {0};
        size_t eh = NA_Msg_get_expected_header_size(cls);
        char reply[64] = {0};
        reply[eh] = (char)ok;
        if (NA_Msg_send_expected(cls, ctx, na_test_cb, &done, reply, eh + 1, NULL, src, 0,
                                 1, op) == NA_SUCCESS &&
            na_test_wait(cls, ctx, &done, 1, 10000) && done.ret == NA_SUCCESS)
            rc = ok ? 0 : 1;
        NA_Addr_free(cls, src);
    }
    NA_Op_destroy(cls, op);
    free(buf);
    NA_Context_destroy(cls, ctx);
    NA_Finalize(cls);
    return rc;
}

static void test_flood(void **state)
{
    const char *info = *state;
    struct test_server srv;
    assert_true(test_server_start(&srv, info, flood_server));
    na_class_t *cls = NA_Initialize(info, false);
    assert_non_null(cls);
    na_context_t *ctx = NA_Context_create(cls);
    na_addr_t *server = NULL;
    assert_int_equal(NA_Addr_lookup(cls, srv.addr, &server), NA_SUCCESS);

    size_t size = NA_Msg_get_max_unexpected_size(cls),
           h = NA_Msg_get_unexpected_header_size(cls);
    size_t eh = NA_Msg_get_expected_header_size(cls);
    char *bufs = malloc((size_t)FLOOD_COUNT * size);
    na_op_id_t **ops = calloc(FLOOD_COUNT, sizeof(*ops));
    struct na_test_done sent = {0}, got = {0};
    char reply[64] = {0};
    na_op_id_t *rop = NA_Op_create(cls, NA_OP_SINGLE);
    assert_non_null(bufs);

    assert_int_equal(NA_Msg_recv_expected(cls, ctx, na_test_cb, &got, reply,
                                          sizeof(reply), NULL, server, 0, 1, rop),
                     NA_SUCCESS);
    long max_queued = 0;
    for (uint32_t i = 0; i < FLOOD_COUNT; i++) {
        char *b = bufs + (size_t)i * size;
        ops[i] = NA_Op_create(cls, NA_OP_SINGLE);
        NA_Msg_init_unexpected(cls, b, size);
        memcpy(b + h, &i, sizeof(i));
        test_fill(b + h + sizeof(i), size - h - sizeof(i), i);
        assert_int_equal(NA_Msg_send_unexpected(cls, ctx, na_test_cb, &sent, b, size,
                                                NULL, server, 0, FLOOD_TAG, ops[i]),
                         NA_SUCCESS);
        if (na_ucx_pending_count() > max_queued)
            max_queued = na_ucx_pending_count();
    }
    assert_true(na_test_wait(cls, ctx, &sent, FLOOD_COUNT, 60000));
    assert_int_equal(sent.ret, NA_SUCCESS);
    assert_true(na_test_wait(cls, ctx, &got, 1, 60000));
    assert_int_equal(got.ret, NA_SUCCESS);
    assert_int_equal(reply[eh], 1);
    print_message("# %s: %d messages in order; at most %ld queued for resources\n", info,
                  FLOOD_COUNT, max_queued);
    assert_int_equal(na_ucx_pending_count(), 0);
    assert_int_equal(test_server_wait(&srv, 10000), 0);

    for (uint32_t i = 0; i < FLOOD_COUNT; i++)
        NA_Op_destroy(cls, ops[i]);
    NA_Op_destroy(cls, rop);
    free(ops);
    free(bufs);
    NA_Addr_free(cls, server);
    assert_int_equal(NA_Context_destroy(cls, ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(cls), NA_SUCCESS);
}

int main(void)
{
    static const char *transports[] = {"ucx+tcp", "ucx+shm"};
    const struct CMUnitTest tests[] = {
        {"flood/ucx+tcp", test_flood, NULL, NULL, (void *)transports[0]},
        {"flood/ucx+shm", test_flood, NULL, NULL, (void *)transports[1]},
    };
    return _cmocka_run_group_tests("na_ucx_pending", tests, 2, NULL, NULL) ? 1 : 0;
}
