/*
 * test_na.c -- NA layer over real transports: a client (this process) and a
 * forked server, plus self-addressed operations. One cmocka group per
 * transport in $HGX_TEST_TRANSPORTS (default: every built one, and na+sm).
 */
#include "na_test_proto.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

struct na_test_state {
    const char *info;
    struct test_server srv;
    na_class_t *cls;
    na_context_t *ctx;
    na_addr_t *server;
    uint32_t next_tag;
};

static const char *current_info;

static int group_setup(void **state)
{
    struct na_test_state *st = calloc(1, sizeof(*st));
    st->info = current_info;
    if (!test_server_start(&st->srv, st->info, na_test_server_main)) {
        fprintf(stderr, "# could not start a %s server\n", st->info);
        free(st);
        return -1;
    }
    st->cls = NA_Initialize(st->info, false);
    if (!st->cls)
        return -1;
    st->ctx = NA_Context_create(st->cls);
    if (!st->ctx || NA_Addr_lookup(st->cls, st->srv.addr, &st->server) != NA_SUCCESS)
        return -1;
    st->next_tag = 1;
    *state = st;
    return 0;
}

/* Send a command (plus data) as an unexpected message and wait until it left. */
static void send_cmd(struct na_test_state *st, const struct na_test_cmd *cmd,
                     const void *data, size_t len)
{
    size_t h = NA_Msg_get_unexpected_header_size(st->cls);
    void *plugin_data = NULL;
    char *out = NA_Msg_buf_alloc(st->cls, h + sizeof(*cmd) + len, NA_SEND, &plugin_data);
    struct na_test_done sent = {0};
    na_op_id_t *sop = NA_Op_create(st->cls, NA_OP_SINGLE);

    assert_int_equal(NA_Msg_init_unexpected(st->cls, out, h + sizeof(*cmd) + len),
                     NA_SUCCESS);
    memcpy(out + h, cmd, sizeof(*cmd));
    if (len)
        memcpy(out + h + sizeof(*cmd), data, len);
    assert_int_equal(NA_Msg_send_unexpected(st->cls, st->ctx, na_test_cb, &sent, out,
                                            h + sizeof(*cmd) + len, plugin_data,
                                            st->server, 0, 0, sop),
                     NA_SUCCESS);
    assert_true(na_test_wait(st->cls, st->ctx, &sent, 1, 10000));
    assert_int_equal(sent.ret, NA_SUCCESS);
    NA_Op_destroy(st->cls, sop);
    NA_Msg_buf_free(st->cls, out, plugin_data);
}

/* Send a command (plus data) and receive its expected reply into reply[reply_size]. */
static na_return_t call(struct na_test_state *st, struct na_test_cmd cmd,
                        const void *data, size_t len, void *reply, size_t reply_size,
                        size_t *reply_len)
{
    size_t eh = NA_Msg_get_expected_header_size(st->cls);
    char *in = malloc(eh + reply_size);
    struct na_test_done got = {0};
    na_op_id_t *rop = NA_Op_create(st->cls, NA_OP_SINGLE);

    cmd.tag = st->next_tag++;
    na_return_t ret = NA_SUCCESS;
    if (reply)
        ret = NA_Msg_recv_expected(st->cls, st->ctx, na_test_cb, &got, in,
                                   eh + reply_size, NULL, st->server, 0, cmd.tag, rop);
    assert_int_equal(ret, NA_SUCCESS);
    send_cmd(st, &cmd, data, len);
    if (reply) {
        assert_true(na_test_wait(st->cls, st->ctx, &got, 1, 10000));
        assert_int_equal(got.count, 1);
        ret = got.ret;
        if (ret == NA_SUCCESS) {
            memcpy(reply, in + eh, got.size - eh);
            if (reply_len)
                *reply_len = got.size - eh;
        }
    }
    NA_Op_destroy(st->cls, rop);
    free(in);
    return ret;
}

static int group_teardown(void **state)
{
    struct na_test_state *st = *state;
    if (!st)
        return 0;
    struct na_test_cmd quit = {.op = CMD_QUIT};
    call(st, quit, NULL, 0, NULL, 0, NULL);
    int rc = test_server_wait(&st->srv, 10000);
    NA_Addr_free(st->cls, st->server);
    assert_int_equal(NA_Context_destroy(st->cls, st->ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(st->cls), NA_SUCCESS);
    free(st);
    return rc == 0 ? 0 : -1;
}

/* Unexpected messages of every size up to the max, echoed back as expected messages. */
static void test_msg_sizes(void **state)
{
    struct na_test_state *st = *state;
    size_t h = NA_Msg_get_unexpected_header_size(st->cls);
    size_t max_u =
        NA_Msg_get_max_unexpected_size(st->cls) - h - sizeof(struct na_test_cmd);
    size_t max_e =
        NA_Msg_get_max_expected_size(st->cls) - NA_Msg_get_expected_header_size(st->cls);
    size_t max = max_u < max_e - sizeof(struct na_test_cmd)
                     ? max_u
                     : max_e - sizeof(struct na_test_cmd);
    size_t sizes[] = {0, 1, 7, 64, 1000, max / 2, max};
    char *data = malloc(max), *reply = malloc(max_e);

    for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
        size_t len = 0;
        test_fill(data, sizes[i], (unsigned)i);
        struct na_test_cmd cmd = {.op = CMD_ECHO};
        assert_int_equal(call(st, cmd, data, sizes[i], reply, max_e, &len), NA_SUCCESS);
        assert_int_equal(len, sizeof(cmd) + sizes[i]);
        assert_true(test_check(reply + sizeof(cmd), sizes[i], (unsigned)i));
    }
    free(data);
    free(reply);
}

/* Sending above the maximum is refused locally; nothing is truncated. */
/* Expected messages that arrive before their receives are posted are held,
 * not dropped: HG posts a forward's response receive after sending the
 * request. Replies of three sizes (two share a tag) reach this side while no
 * receive is posted; receives posted afterwards, in another order, get each
 * whole, and the two of one tag in the order they were sent. */
static void test_expected_early(void **state)
{
    struct na_test_state *st = *state;
    size_t eh = NA_Msg_get_expected_header_size(st->cls);
    size_t max = NA_Msg_get_max_expected_size(st->cls) - eh - sizeof(struct na_test_cmd);
    size_t max_u = NA_Msg_get_max_unexpected_size(st->cls) -
                   NA_Msg_get_unexpected_header_size(st->cls) -
                   sizeof(struct na_test_cmd);
    if (max_u < max)
        max = max_u;
    size_t sizes[4] = {0, 100, max, 7};
    na_tag_t base = st->next_tag;
    na_tag_t tags[4] = {base, base + 1, base + 2, base + 1};
    char *data = malloc(max);

    st->next_tag += 3;
    for (int i = 0; i < 4; i++) {
        struct na_test_cmd cmd = {.op = CMD_ECHO, .tag = tags[i]};
        test_fill(data, sizes[i], 40u + (unsigned)i);
        send_cmd(st, &cmd, data, sizes[i]);
    }
    /* Progress with nothing posted while the replies come in. */
    for (int i = 0; i < 20; i++)
        NA_Progress(st->cls, st->ctx, 10);

    int order[4] = {2, 1, 0, 3}; /* the second reply of tag base + 1 last */
    char *in[4];
    struct na_test_done got[4] = {{0}};
    na_op_id_t *rop[4];
    for (int k = 0; k < 4; k++) {
        int i = order[k];
        in[i] = malloc(eh + sizeof(struct na_test_cmd) + max);
        rop[i] = NA_Op_create(st->cls, NA_OP_SINGLE);
        assert_int_equal(NA_Msg_recv_expected(st->cls, st->ctx, na_test_cb, &got[i],
                                              in[i],
                                              eh + sizeof(struct na_test_cmd) + max, NULL,
                                              st->server, 0, tags[i], rop[i]),
                         NA_SUCCESS);
    }
    for (int i = 0; i < 4; i++) {
        assert_true(na_test_wait(st->cls, st->ctx, &got[i], 1, 10000));
        assert_int_equal(got[i].ret, NA_SUCCESS);
        assert_int_equal(got[i].size, eh + sizeof(struct na_test_cmd) + sizes[i]);
        assert_true(test_check(in[i] + eh + sizeof(struct na_test_cmd), sizes[i],
                               40u + (unsigned)i));
        NA_Op_destroy(st->cls, rop[i]);
        free(in[i]);
    }
    free(data);
}

/* Many expected messages of the maximum size held at once: 16 replies reach
 * this side before any receive is posted, and receives posted in the reverse
 * order get each whole. Over shm this needs the messages above its inject
 * size to travel by CMA: its SAR fallback stalls here, which is why a class
 * that cannot count on CMA keeps its messages at the inject size. */
static void test_expected_early_many(void **state)
{
    enum { N = 16 };
    struct na_test_state *st = *state;
    size_t eh = NA_Msg_get_expected_header_size(st->cls);
    size_t size = NA_Msg_get_max_expected_size(st->cls) - eh;
    na_tag_t base = st->next_tag;
    struct na_test_done got[N] = {{0}};
    na_op_id_t *rop[N];
    char *in[N];

    st->next_tag += N;
    for (int i = 0; i < N; i++) {
        struct na_test_cmd cmd = {
            .op = CMD_BIG_REPLY, .tag = base + (na_tag_t)i, .a = size};
        send_cmd(st, &cmd, NULL, 0);
    }
    for (int i = 0; i < 20; i++)
        NA_Progress(st->cls, st->ctx, 10);
    for (int i = N - 1; i >= 0; i--) {
        in[i] = malloc(eh + size);
        rop[i] = NA_Op_create(st->cls, NA_OP_SINGLE);
        assert_int_equal(NA_Msg_recv_expected(st->cls, st->ctx, na_test_cb, &got[i],
                                              in[i], eh + size, NULL, st->server, 0,
                                              base + (na_tag_t)i, rop[i]),
                         NA_SUCCESS);
    }
    for (int i = 0; i < N; i++) {
        assert_true(na_test_wait(st->cls, st->ctx, &got[i], 1, 10000));
        assert_int_equal(got[i].ret, NA_SUCCESS);
        assert_int_equal(got[i].size, eh + size);
        NA_Op_destroy(st->cls, rop[i]);
        free(in[i]);
    }
}

static void test_msg_too_big(void **state)
{
    struct na_test_state *st = *state;
    size_t max = NA_Msg_get_max_unexpected_size(st->cls);
    char *buf = calloc(1, max + 1);
    na_op_id_t *op = NA_Op_create(st->cls, NA_OP_SINGLE);
    struct na_test_done done = {0};

    assert_int_equal(NA_Msg_send_unexpected(st->cls, st->ctx, na_test_cb, &done, buf,
                                            max + 1, NULL, st->server, 0, 0, op),
                     NA_MSGSIZE);
    max = NA_Msg_get_max_expected_size(st->cls);
    buf = realloc(buf, max + 1);
    assert_int_equal(NA_Msg_send_expected(st->cls, st->ctx, na_test_cb, &done, buf,
                                          max + 1, NULL, st->server, 0, 0, op),
                     NA_MSGSIZE);
    assert_int_equal(done.count, 0);
    NA_Op_destroy(st->cls, op);
    free(buf);
}

/* A reply larger than the posted receive completes it with NA_MSGSIZE, not truncated. */
static void test_recv_too_small(void **state)
{
    struct na_test_state *st = *state;
    char small[16];
    struct na_test_cmd cmd = {.op = CMD_BIG_REPLY, .a = 1024};
    assert_int_equal(call(st, cmd, NULL, 0, small, sizeof(small), NULL), NA_MSGSIZE);
    /* The connection still works afterwards. */
    char reply[256];
    size_t len = 0;
    cmd = (struct na_test_cmd){.op = CMD_ECHO};
    assert_int_equal(call(st, cmd, "ok", 2, reply, sizeof(reply), &len), NA_SUCCESS);
    assert_int_equal(len, sizeof(cmd) + 2);
}

/* Ask the server to expose size bytes; returns the deserialized remote handle. */
static na_mem_handle_t *expose(struct na_test_state *st, size_t size, unsigned long flags,
                               bool seg)
{
    char ser[1024];
    size_t len = 0;
    na_mem_handle_t *remote = NULL;
    struct na_test_cmd cmd = {
        .op = CMD_EXPOSE, .a = size, .b = flags | (seg ? 1u << 8 : 0)};
    assert_int_equal(call(st, cmd, NULL, 0, ser, sizeof(ser), &len), NA_SUCCESS);
    assert_true(len > 0);
    assert_int_equal(NA_Mem_handle_deserialize(st->cls, &remote, ser, len), NA_SUCCESS);
    return remote;
}

static bool server_verify(struct na_test_state *st, unsigned int seed)
{
    uint8_t ok = 0;
    size_t len = 0;
    struct na_test_cmd cmd = {.op = CMD_VERIFY, .a = seed};
    assert_int_equal(call(st, cmd, NULL, 0, &ok, 1, &len), NA_SUCCESS);
    return len == 1 && ok == 1;
}

static na_return_t rma(struct na_test_state *st, bool put, na_mem_handle_t *local,
                       size_t loff, na_mem_handle_t *remote, size_t roff, size_t size)
{
    struct na_test_done done = {0};
    na_op_id_t *op = NA_Op_create(st->cls, NA_OP_SINGLE);
    na_return_t ret =
        (put ? NA_Put : NA_Get)(st->cls, st->ctx, na_test_cb, &done, local, loff, remote,
                                roff, size, st->server, 0, op);
    if (ret == NA_SUCCESS) {
        assert_true(na_test_wait(st->cls, st->ctx, &done, 1, 20000));
        assert_int_equal(done.count, 1);
        ret = done.ret;
    }
    NA_Op_destroy(st->cls, op);
    return ret;
}

/* Put then get a region, contiguous or segmented on either side, data verified. */
static void rma_round_trip(struct na_test_state *st, size_t size, bool local_seg,
                           bool remote_seg)
{
    char *buf = malloc(size);
    na_mem_handle_t *local = NULL;
    na_mem_handle_t *remote = expose(st, size, NA_MEM_READWRITE, remote_seg);

    if (local_seg) {
        struct na_segment segs[3] = {{buf, size / 3},
                                     {buf + size / 3, size / 3},
                                     {buf + 2 * (size / 3), size - 2 * (size / 3)}};
        assert_int_equal(
            NA_Mem_handle_create_segments(st->cls, segs, 3, NA_MEM_READWRITE, &local),
            NA_SUCCESS);
    } else {
        assert_int_equal(
            NA_Mem_handle_create(st->cls, buf, size, NA_MEM_READWRITE, &local),
            NA_SUCCESS);
    }
    assert_int_equal(NA_Mem_register(st->cls, local, NA_MEM_TYPE_HOST, 0), NA_SUCCESS);

    /* Get the server's pattern. */
    memset(buf, 0, size);
    assert_int_equal(rma(st, false, local, 0, remote, 0, size), NA_SUCCESS);
    assert_true(test_check(buf, size, NA_TEST_SEED_SERVER));
    /* Put ours and let the server check it. */
    test_fill(buf, size, 99);
    assert_int_equal(rma(st, true, local, 0, remote, 0, size), NA_SUCCESS);
    assert_true(server_verify(st, 99));
    /* A middle slice with offsets on both sides. */
    memset(buf, 0, size);
    assert_int_equal(rma(st, false, local, 5, remote, 5, size - 10), NA_SUCCESS);
    assert_true(buf[0] == 0 && buf[size - 1] == 0);
    char *expect = malloc(size);
    test_fill(expect, size, 99);
    assert_memory_equal(buf + 5, expect + 5, size - 10);
    free(expect);

    NA_Mem_deregister(st->cls, local);
    NA_Mem_handle_free(st->cls, local);
    NA_Mem_handle_free(st->cls, remote);
    free(buf);
}

static void test_rma_contiguous(void **state)
{
    rma_round_trip(*state, 64, false, false);
    rma_round_trip(*state, 1 << 20, false, false);
}

static void test_rma_segmented(void **state)
{
    rma_round_trip(*state, 4096 + 17, true, false);
    rma_round_trip(*state, 1 << 20, false, true);
    rma_round_trip(*state, (1 << 20) + 3, true, true);
}

/* Out of bounds and against permission: refused locally, nothing sent. */
static void test_rma_refused(void **state)
{
    struct na_test_state *st = *state;
    char buf[256];
    na_mem_handle_t *local = NULL;
    na_mem_handle_t *ro = expose(st, 128, NA_MEM_READ_ONLY, false);

    assert_int_equal(
        NA_Mem_handle_create(st->cls, buf, sizeof(buf), NA_MEM_READWRITE, &local),
        NA_SUCCESS);
    assert_int_equal(NA_Mem_register(st->cls, local, NA_MEM_TYPE_HOST, 0), NA_SUCCESS);
    assert_int_equal(rma(st, true, local, 0, ro, 0, 64), NA_PERMISSION);
    assert_int_equal(rma(st, false, local, 0, ro, 100, 64), NA_INVALID_ARG);
    assert_int_equal(rma(st, false, local, 250, ro, 0, 64), NA_INVALID_ARG);
    assert_int_equal(rma(st, false, local, 0, ro, 0, 128), NA_SUCCESS);
    assert_true(test_check(buf, 128, NA_TEST_SEED_SERVER));
    NA_Mem_handle_free(st->cls, ro);
    NA_Mem_deregister(st->cls, local);
    NA_Mem_handle_free(st->cls, local);
}

/* Cancel a posted expected receive: callback once with NA_CANCELED, op reusable,
 * and NA_Finalize refuses while it is pending. */
/* Post an unexpected receive on op and cancel it: it must end NA_CANCELED,
 * its callback run exactly once. */
static void recv_unexpected_cancelled(struct na_test_state *st, na_op_id_t *op, char *buf,
                                      size_t size)
{
    struct na_test_done done = {0};
    assert_int_equal(
        NA_Msg_recv_unexpected(st->cls, st->ctx, na_test_cb, &done, buf, size, NULL, op),
        NA_SUCCESS);
    assert_int_equal(NA_Cancel(st->cls, st->ctx, op), NA_SUCCESS);
    assert_true(na_test_wait(st->cls, st->ctx, &done, 1, 10000));
    assert_int_equal(done.ret, NA_CANCELED);
    assert_int_equal(done.count, 1);
}

static void test_cancel_recv(void **state)
{
    struct na_test_state *st = *state;
    char buf[64];
    struct na_test_done done = {0};
    na_op_id_t *op = NA_Op_create(st->cls, NA_OP_SINGLE);

    assert_int_equal(NA_Msg_recv_expected(st->cls, st->ctx, na_test_cb, &done, buf,
                                          sizeof(buf), NULL, st->server, 0, 4242, op),
                     NA_SUCCESS);
    assert_int_equal(NA_Finalize(st->cls), NA_BUSY);
    assert_int_equal(NA_Context_destroy(st->cls, st->ctx), NA_BUSY);
    NA_Op_destroy(st->cls, op); /* refused while pending: must not free it */
    assert_int_equal(NA_Cancel(st->cls, st->ctx, op), NA_SUCCESS);
    assert_true(na_test_wait(st->cls, st->ctx, &done, 1, 5000));
    assert_int_equal(done.ret, NA_CANCELED);
    /* Exactly once, and cancelling again is a no-op. */
    assert_int_equal(NA_Cancel(st->cls, st->ctx, op), NA_SUCCESS);
    NA_Progress(st->cls, st->ctx, 100);
    NA_Trigger(st->ctx, 16, NULL);
    assert_int_equal(done.count, 1);
    /* Reuse the op id for an unexpected receive and cancel that too. */
    recv_unexpected_cancelled(st, op, buf, sizeof(buf));
    NA_Op_destroy(st->cls, op);
}

/* Many receives canceled at once (a context of a large request_post_init
 * going away): each reports NA_CANCELED exactly once, within the cancel
 * bound, and the context can then be destroyed. libfabric 1.17's sockets
 * provider drops the error reports past about 400 of them; the receives it
 * took back end without one. */
#define MANY_RECVS 1024

static void test_cancel_many_recvs(void **state)
{
    struct na_test_state *st = *state;
    size_t size = NA_Msg_get_max_unexpected_size(st->cls);
    na_context_t *ctx = NA_Context_create(st->cls);
    static na_op_id_t *ops[MANY_RECVS];
    static void *bufs[MANY_RECVS], *pds[MANY_RECVS];
    static struct na_test_done done[MANY_RECVS];

    assert_non_null(ctx);
    for (int i = 0; i < MANY_RECVS; i++) {
        done[i] = (struct na_test_done){0};
        ops[i] = NA_Op_create(st->cls, NA_OP_SINGLE);
        bufs[i] = NA_Msg_buf_alloc(st->cls, size, NA_RECV, &pds[i]);
        assert_non_null(ops[i]);
        assert_non_null(bufs[i]);
        assert_int_equal(NA_Msg_recv_unexpected(st->cls, ctx, na_test_cb, &done[i],
                                                bufs[i], size, pds[i], ops[i]),
                         NA_SUCCESS);
    }
    double start = test_now();
    for (int i = 0; i < MANY_RECVS; i++)
        assert_int_equal(NA_Cancel(st->cls, ctx, ops[i]), NA_SUCCESS);
    int ended = 0;
    while (ended < MANY_RECVS && test_now() < start + 10) {
        NA_Progress(st->cls, ctx, 10);
        NA_Trigger(ctx, MANY_RECVS, NULL);
        ended = 0;
        for (int i = 0; i < MANY_RECVS; i++)
            ended += done[i].count > 0;
    }
    print_message("# %s: %d of %d canceled receives ended in %.3f s\n", st->info, ended,
                  MANY_RECVS, test_now() - start);
    assert_int_equal(ended, MANY_RECVS);
    for (int i = 0; i < MANY_RECVS; i++) {
        assert_int_equal(done[i].count, 1);
        assert_int_equal(done[i].ret, NA_CANCELED);
    }
    assert_int_equal(NA_Context_destroy(st->cls, ctx), NA_SUCCESS);
    for (int i = 0; i < MANY_RECVS; i++) {
        NA_Op_destroy(st->cls, ops[i]);
        NA_Msg_buf_free(st->cls, bufs[i], pds[i]);
    }
}

/* Keep progressing until a moment (seconds, test_now() clock). */
static void progress_until(struct na_test_state *st, double until)
{
    while (test_now() < until) {
        NA_Progress(st->cls, st->ctx, 50);
        NA_Trigger(st->ctx, 16, NULL);
    }
}

static bool all_zero(const char *buf, size_t size)
{
    for (size_t i = 0; i < size; i++)
        if (buf[i] != 0)
            return false;
    return true;
}

/* buf of size, registered for read and write in the client's class. */
static na_mem_handle_t *register_local(struct na_test_state *st, char *buf, size_t size)
{
    na_mem_handle_t *local = NULL;

    assert_int_equal(NA_Mem_handle_create(st->cls, buf, size, NA_MEM_READWRITE, &local),
                     NA_SUCCESS);
    assert_int_equal(NA_Mem_register(st->cls, local, NA_MEM_TYPE_HOST, 0), NA_SUCCESS);
    return local;
}

/* Cancel an in-flight get against a server that is not progressing. The
 * server is asleep before the get is posted and stays so past the plugin's
 * cancel bound, so the get cannot finish first: over tcp the cancel must
 * take its escalation path and end in NA_CANCELED, and the response that
 * arrives once the server wakes up must not reach our buffer. */
static void test_cancel_inflight(void **state)
{
    struct na_test_state *st = *state;
    const int stall_ms = 4000, settle_ms = 300;
    size_t size = 8 << 20;
    char *buf = calloc(1, size);
    na_mem_handle_t *local = register_local(st, buf, size);
    na_mem_handle_t *remote = expose(st, size, NA_MEM_READWRITE, false);
    struct na_test_done done = {0};
    na_op_id_t *op = NA_Op_create(st->cls, NA_OP_SINGLE);

    struct na_test_cmd stall = {.op = CMD_STALL, .a = stall_ms};
    double stalled = test_now();
    call(st, stall, NULL, 0, NULL, 0, NULL);
    progress_until(st, stalled + settle_ms / 1e3); /* the server is asleep now */
    assert_int_equal(NA_Get(st->cls, st->ctx, na_test_cb, &done, local, 0, remote, 0,
                            size, st->server, 0, op),
                     NA_SUCCESS);
    double t0 = test_now();
    assert_int_equal(NA_Cancel(st->cls, st->ctx, op), NA_SUCCESS);
    assert_true(na_test_wait(st->cls, st->ctx, &done, 1, 2 * stall_ms));
    double dt = test_now() - t0;
    assert_int_equal(done.count, 1);
    print_message("# %s: in-flight get cancel -> %s after %.1f ms\n", st->info,
                  NA_Error_to_string(done.ret), dt * 1e3);
    if (strncmp(st->info, "ofi+tcp:", 8) == 0) {
        /* Bounded and local: decided while the server still sleeps. */
        assert_int_equal(done.ret, NA_CANCELED);
        assert_true(test_now() < stalled + stall_ms / 1e3);
    }
    /* Either the cancel won (nothing reported as moved) or the get completed
     * in full before the plugin could stop it; never a success with partial data. */
    if (done.ret == NA_SUCCESS)
        assert_true(test_check(buf, size, NA_TEST_SEED_SERVER));
    else
        assert_int_equal(done.ret, NA_CANCELED);
    bool canceled = done.ret == NA_CANCELED;
    if (canceled)
        assert_true(all_zero(buf, size));
    /* The server wakes up and answers the get: a canceled one stays untouched,
     * and the callback does not run again. */
    progress_until(st, stalled + (stall_ms + 500) / 1e3);
    assert_int_equal(done.count, 1);
    if (canceled)
        assert_true(all_zero(buf, size));
    /* Resources are back: the op and the handles can be reused and freed. */
    assert_int_equal(rma(st, false, local, 0, remote, 0, 4096), NA_SUCCESS);
    assert_true(test_check(buf, 4096, NA_TEST_SEED_SERVER));
    if (canceled)
        assert_true(all_zero(buf + 4096, size - 4096));
    NA_Op_destroy(st->cls, op);
    NA_Mem_deregister(st->cls, local);
    NA_Mem_handle_free(st->cls, local);
    NA_Mem_handle_free(st->cls, remote);
    free(buf);
}

/* This process's sockets with TCP keepalive on, and if idle > 0 with that
 * keepalive idle time (s). */
static int keepalive_sockets(int idle)
{
    int n = 0;

    /* fails (EBADF, ENOTSOCK) on what is not an open socket */
    for (int fd = 0; fd < 4096; fd++) {
        int on = 0, t = 0;
        socklen_t len = sizeof(on), tlen = sizeof(t);
        if (getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, &len) == 0 && on &&
            (idle == 0 ||
             (getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &t, &tlen) == 0 && t == idle)))
            n++;
    }
    return n;
}

/* Keepalive on with idle time idle (s) on every connected TCP socket of the
 * process, as a provider with a keepalive of its own would set it; returns
 * how many. */
static int keepalive_set_all(int idle)
{
    int n = 0, on = 1;

    for (int fd = 0; fd < 4096; fd++) {
        struct sockaddr_storage peer;
        socklen_t len = sizeof(peer);
        int type = 0;
        socklen_t tlen = sizeof(type);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0 ||
            type != SOCK_STREAM || getpeername(fd, (struct sockaddr *)&peer, &len) != 0 ||
            (peer.ss_family != AF_INET && peer.ss_family != AF_INET6))
            continue;
        assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)), 0);
        assert_int_equal(setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)),
                         0);
        n++;
    }
    return n;
}

/* The largest of the values in a /proc/sys file (0 if unreadable). */
static size_t sysctl_max(const char *path)
{
    size_t max = 0;
    unsigned long v;
    FILE *f = fopen(path, "r");

    while (f && fscanf(f, "%lu", &v) == 1)
        if (v > max)
            max = v;
    if (f)
        fclose(f);
    return max;
}

/* Sockets counted by keepalive_sockets(idle) before, while and after a put
 * of size is kept canceled (the server sleeps meanwhile); done: its
 * completion. */
struct kept_counts {
    int before, held, after;
    bool pending;
    na_return_t ret;
};

static struct kept_counts kept_put(struct na_test_state *st, na_mem_handle_t *local,
                                   na_mem_handle_t *remote, size_t size, int idle)
{
    const int stall_ms = 3500, settle_ms = 300;
    na_op_id_t *op = NA_Op_create(st->cls, NA_OP_SINGLE);
    struct na_test_done done = {0};
    struct kept_counts c;

    c.before = keepalive_sockets(idle);
    struct na_test_cmd stall = {.op = CMD_STALL, .a = stall_ms};
    double stalled = test_now();
    call(st, stall, NULL, 0, NULL, 0, NULL);
    progress_until(st, stalled + settle_ms / 1e3);
    assert_int_equal(NA_Put(st->cls, st->ctx, na_test_cb, &done, local, 0, remote, 0,
                            size, st->server, 0, op),
                     NA_SUCCESS);
    assert_int_equal(NA_Cancel(st->cls, st->ctx, op), NA_SUCCESS);
    /* past the escalation bound (1 s), well before the server wakes */
    progress_until(st, stalled + (settle_ms + 1800) / 1e3);
    c.held = keepalive_sockets(idle);
    c.pending = done.count == 0;
    assert_true(na_test_wait(st->cls, st->ctx, &done, 1, 6 * stall_ms));
    c.after = keepalive_sockets(idle);
    c.ret = done.ret;
    NA_Op_destroy(st->cls, op);
    return c;
}

/* A canceled put that the tcp provider keeps (the server sleeps, so its
 * delivery cannot be acknowledged) holds the connections to the server under
 * TCP keepalive while it is escalated, so that a vanished host would end it
 * (docs/na-cancel.md); once it completes, they get back the settings they
 * had: the kernel's defaults, or a keepalive of the provider's own. The
 * server is alive: its kernel answers, and the put completes when it
 * wakes. */
static void test_cancel_kept_keepalive(void **state)
{
    struct na_test_state *st = *state;
    const int own_idle = 77; /* a keepalive set before the hold */
    /* more than the kernel can buffer between the two sockets, so the put
     * cannot complete while the server sleeps */
    size_t size = 2 * (sysctl_max("/proc/sys/net/ipv4/tcp_wmem") +
                       sysctl_max("/proc/sys/net/ipv4/tcp_rmem")) +
                  (8 << 20);

    /* ofi+sockets completes such a put on its own while the server sleeps,
     * and the other plugins keep no put: only ofi+tcp has one to watch. */
    if (strncmp(st->info, "ofi+tcp:", 8) != 0) {
        print_message("# %s: no put kept by the provider past the cancel bound here "
                      "(ofi+tcp only)\n",
                      st->info);
        skip();
    }
    char *buf = malloc(size);
    memset(buf, 0x5a, size);
    na_mem_handle_t *local = register_local(st, buf, size);
    na_mem_handle_t *remote = expose(st, size, NA_MEM_READWRITE, false);

    /* the connection exists before the count */
    assert_int_equal(rma(st, true, local, 0, remote, 0, 4096), NA_SUCCESS);
    struct kept_counts c = kept_put(st, local, remote, size, 0);
    print_message(
        "# %s: kept put of %zu MiB canceled -> %s; keepalive sockets %d before, "
        "%d while escalated, %d after\n",
        st->info, size >> 20, NA_Error_to_string(c.ret), c.before, c.held, c.after);
    assert_true(c.pending);
    assert_true(c.held > c.before);
    assert_int_equal(c.after, c.before);
    /* The put could not be recalled: it completed, with the server alive. */
    assert_int_equal(c.ret, NA_SUCCESS);

    /* Connections with a keepalive of their own get it back. */
    int own = keepalive_set_all(own_idle);
    c = kept_put(st, local, remote, size, own_idle);
    print_message("# %s: connections with their own keepalive (idle %d s): %d before, %d "
                  "while escalated, %d after\n",
                  st->info, own_idle, c.before, c.held, c.after);
    assert_true(own > 0);
    assert_true(c.pending);
    assert_int_equal(c.before, own);
    assert_true(c.held < own);
    assert_int_equal(c.after, own);
    assert_int_equal(c.ret, NA_SUCCESS);

    NA_Mem_deregister(st->cls, local);
    NA_Mem_handle_free(st->cls, local);
    NA_Mem_handle_free(st->cls, remote);
    free(buf);
}

/* Messages and put/get addressed to oneself. */
/* Optional features: none is advertised, and what depends on one refuses
 * cleanly instead of half working. */
static void test_optional_features(void **state)
{
    struct na_test_state *st = *state;
    char buf[256];
    na_op_id_t *op = NA_Op_create(st->cls, NA_OP_SINGLE);

    assert_false(NA_Has_opt_feature(st->cls, NA_OPT_MULTI_RECV));
    assert_true(NA_Has_opt_feature(st->cls, 0));
    assert_null(NA_Op_create(st->cls, NA_OP_MULTI));
    assert_int_equal(NA_Msg_multi_recv_unexpected(st->cls, st->ctx, na_test_cb, NULL, buf,
                                                  sizeof(buf), NULL, op),
                     NA_OPNOTSUPPORTED);
    /* the op id was not consumed: a normal receive can use it */
    recv_unexpected_cancelled(st, op, buf, sizeof(buf));
    NA_Op_destroy(st->cls, op);
}

static void test_self(void **state)
{
    struct na_test_state *st = *state;
    na_class_t *cls = NA_Initialize(st->info, true);
    assert_non_null(cls);
    na_context_t *ctx = NA_Context_create(cls);
    na_addr_t *self = NULL, *dup = NULL;
    assert_int_equal(NA_Addr_self(cls, &self), NA_SUCCESS);
    assert_true(NA_Addr_is_self(cls, self));
    assert_int_equal(NA_Addr_dup(cls, self, &dup), NA_SUCCESS);
    assert_true(NA_Addr_cmp(cls, self, dup));

    na_op_id_t *rop = NA_Op_create(cls, NA_OP_SINGLE),
               *sop = NA_Op_create(cls, NA_OP_SINGLE);
    assert_true(na_test_self_message(cls, ctx, self, rop, sop, 77, 5));

    /* put/get within one process */
    size_t len = 1 << 16;
    char *a = malloc(len), *b = calloc(1, len);
    na_mem_handle_t *ha = NULL, *hb = NULL;
    test_fill(a, len, 11);
    assert_int_equal(NA_Mem_handle_create(cls, a, len, NA_MEM_READWRITE, &ha),
                     NA_SUCCESS);
    assert_int_equal(NA_Mem_handle_create(cls, b, len, NA_MEM_READWRITE, &hb),
                     NA_SUCCESS);
    assert_int_equal(NA_Mem_register(cls, ha, NA_MEM_TYPE_HOST, 0), NA_SUCCESS);
    assert_int_equal(NA_Mem_register(cls, hb, NA_MEM_TYPE_HOST, 0), NA_SUCCESS);
    struct na_test_done g = {0};
    assert_int_equal(NA_Put(cls, ctx, na_test_cb, &g, ha, 0, hb, 0, len, self, 0, sop),
                     NA_SUCCESS);
    assert_true(na_test_wait(cls, ctx, &g, 1, 5000));
    assert_int_equal(g.ret, NA_SUCCESS);
    assert_true(test_check(b, len, 11));

    NA_Mem_deregister(cls, ha);
    NA_Mem_deregister(cls, hb);
    NA_Mem_handle_free(cls, ha);
    NA_Mem_handle_free(cls, hb);
    free(a);
    free(b);
    NA_Op_destroy(cls, rop);
    NA_Op_destroy(cls, sop);
    NA_Addr_free(cls, dup);
    NA_Addr_free(cls, self);
    assert_int_equal(NA_Context_destroy(cls, ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(cls), NA_SUCCESS);
}

/* Many more unexpected messages than posted receives, with tags spread over
 * all 32 bits: each arrives exactly once with its tag. shm 1.17 lost the
 * messages it held unmatched when receives ignored the tag bits. */
static void test_unexpected_backlog(void **state)
{
    struct na_test_state *st = *state;
    enum { N = 2000, P = 4 };
    na_class_t *cls = NA_Initialize(st->info, true);
    assert_non_null(cls);
    na_context_t *ctx = NA_Context_create(cls);
    na_addr_t *self = NULL;
    assert_int_equal(NA_Addr_self(cls, &self), NA_SUCCESS);
    size_t h = NA_Msg_get_unexpected_header_size(cls), len = h + sizeof(uint32_t);
    char *out = malloc(N * len), *in = malloc(P * len);
    na_op_id_t **sops = calloc(N, sizeof(*sops));
    struct na_test_done *sent = calloc(N, sizeof(*sent));
    struct na_test_done got[P] = {0};
    na_op_id_t *rops[P];
    unsigned char *seen = calloc(N, 1);

    for (uint32_t i = 0; i < N; i++) {
        char *msg = out + i * len;
        NA_Msg_init_unexpected(cls, msg, len);
        memcpy(msg + h, &i, sizeof(i));
        sops[i] = NA_Op_create(cls, NA_OP_SINGLE);
        assert_int_equal(NA_Msg_send_unexpected(cls, ctx, na_test_cb, &sent[i], msg, len,
                                                NULL, self, 0, i * 2654435761u, sops[i]),
                         NA_SUCCESS);
    }
    for (int k = 0; k < P; k++) {
        rops[k] = NA_Op_create(cls, NA_OP_SINGLE);
        assert_int_equal(NA_Msg_recv_unexpected(cls, ctx, na_test_cb, &got[k],
                                                in + k * len, len, NULL, rops[k]),
                         NA_SUCCESS);
    }
    int received = 0;
    double deadline = test_now() + 60;
    while (received < N && test_now() < deadline) {
        unsigned int count = 0;
        NA_Progress(cls, ctx, 10);
        NA_Trigger(ctx, 256, &count);
        for (int k = 0; k < P; k++) {
            if (!got[k].count)
                continue;
            uint32_t i;
            assert_int_equal(got[k].ret, NA_SUCCESS);
            assert_int_equal(got[k].size, len);
            memcpy(&i, in + k * len + h, sizeof(i));
            assert_true(i < N && !seen[i]);
            assert_int_equal(got[k].tag, i * 2654435761u);
            seen[i] = 1;
            received++;
            NA_Addr_free(cls, got[k].source);
            got[k] = (struct na_test_done){0};
            assert_int_equal(NA_Msg_recv_unexpected(cls, ctx, na_test_cb, &got[k],
                                                    in + k * len, len, NULL, rops[k]),
                             NA_SUCCESS);
        }
    }
    assert_int_equal(received, N);
    for (int i = 0; i < N; i++) {
        assert_true(na_test_wait(cls, ctx, &sent[i], 1, 10000));
        assert_int_equal(sent[i].ret, NA_SUCCESS);
        NA_Op_destroy(cls, sops[i]);
    }
    for (int k = 0; k < P; k++) {
        NA_Cancel(cls, ctx, rops[k]);
        assert_true(na_test_wait(cls, ctx, &got[k], 1, 10000));
        assert_int_equal(got[k].ret, NA_CANCELED);
        NA_Op_destroy(cls, rops[k]);
    }
    free(seen);
    free(sent);
    free(sops);
    free(in);
    free(out);
    NA_Addr_free(cls, self);
    assert_int_equal(NA_Context_destroy(cls, ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(cls), NA_SUCCESS);
}

/* Address strings and descriptors: round trips and malformed input. */
static void test_addresses(void **state)
{
    struct na_test_state *st = *state;
    char str[TEST_ADDR_MAX];
    size_t len = sizeof(str);
    na_addr_t *again = NULL, *des = NULL;

    assert_int_equal(NA_Addr_to_string(st->cls, str, &len, st->server), NA_SUCCESS);
    assert_string_equal(str, st->srv.addr);
    size_t need = 0;
    assert_int_equal(NA_Addr_to_string(st->cls, NULL, &need, st->server), NA_SUCCESS);
    assert_int_equal(need, strlen(str) + 1);
    len = 3;
    assert_int_equal(NA_Addr_to_string(st->cls, str, &len, st->server), NA_OVERFLOW);
    assert_int_equal(NA_Addr_lookup(st->cls, st->srv.addr, &again), NA_SUCCESS);
    assert_true(NA_Addr_cmp(st->cls, again, st->server));
    assert_false(NA_Addr_is_self(st->cls, again));

    size_t n = NA_Addr_get_serialize_size(st->cls, again);
    char *ser = malloc(n);
    assert_int_equal(NA_Addr_serialize(st->cls, ser, n, again), NA_SUCCESS);
    assert_int_equal(NA_Addr_deserialize(st->cls, &des, ser, n), NA_SUCCESS);
    assert_true(NA_Addr_cmp(st->cls, des, st->server));
    NA_Addr_free(st->cls, des);
    /* Truncated and corrupted descriptors are refused. */
    assert_int_not_equal(NA_Addr_deserialize(st->cls, &des, ser, 1), NA_SUCCESS);
    memset(ser, 0xff, n);
    assert_int_not_equal(NA_Addr_deserialize(st->cls, &des, ser, n), NA_SUCCESS);
    free(ser);
    NA_Addr_free(st->cls, again);

    static const char *bad[] = {"",
                                "ofi+",
                                "mpi+static://0",
                                "tcp",
                                "ofi+tcp://",
                                "ucx+tcp://",
                                "ofi+tcp://no-such-host.invalid:1",
                                "ucx+tcp://no-such-host.invalid:1",
                                "ofi+tcp://127.0.0.1:99999",
                                "ucx+tcp://127.0.0.1:abc"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        na_addr_t *a = (na_addr_t *)0x1;
        na_return_t ret = NA_Addr_lookup(st->cls, bad[i], &a);
        if (ret == NA_SUCCESS)
            fail_msg("lookup of bad address \"%s\" succeeded", bad[i]);
    }
    assert_int_equal(NA_Addr_lookup(st->cls, NULL, &again), NA_INVALID_ARG);
    const char *foreign = strncmp(st->info, "ofi+", 4) == 0 ? "ucx+tcp://127.0.0.1:1"
                                                            : "ofi+tcp://127.0.0.1:1";
    assert_int_equal(NA_Addr_lookup(st->cls, foreign, &again), NA_PROTONOSUPPORT);

    /* Memory handle descriptors: truncated / garbage input refused. */
    char junk[64];
    na_mem_handle_t *mh = NULL;
    memset(junk, 0xa5, sizeof(junk));
    assert_int_not_equal(NA_Mem_handle_deserialize(st->cls, &mh, junk, sizeof(junk)),
                         NA_SUCCESS);
    assert_int_not_equal(NA_Mem_handle_deserialize(st->cls, &mh, junk, 3), NA_SUCCESS);
}

/* Bad info strings: NULL class and a log line, never a crash. */
static void test_bad_info(void **state)
{
    (void)state;
    static const char *bad[] = {"",
                                "ofi",
                                "ofi+",
                                "+tcp",
                                "nope+tcp",
                                "ofi+nope",
                                "ofi+tcp://999.1.1.1:1",
                                "ofi+tcp://127.0.0.1:70000",
                                "ofi+tcp://[::1",
                                "ofi+TCP"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        na_class_t *cls = NA_Initialize(bad[i], true);
        if (cls) {
            NA_Finalize(cls);
            fail_msg("NA_Initialize(\"%s\") succeeded", bad[i]);
        }
    }
    assert_null(NA_Initialize(NULL, false));
    assert_int_equal(NA_Finalize(NULL), NA_SUCCESS);
    assert_string_equal(NA_Error_to_string(NA_CANCELED), "NA_CANCELED");
}

/* An address of this transport that no process answers: the server's with
 * a loopback port just closed, or for a shm or na+sm name a process that just
 * ended. */
static bool dead_peer_name(const char *server, char *name, size_t size)
{
    const char *rest = strstr(server, "://");
    int plen = (int)(rest - server) + 3;

    if (strchr(rest, '.')) {
        struct sockaddr_in sin = {.sin_family = AF_INET,
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(sin);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&sin, len) == 0 &&
                  getsockname(fd, (struct sockaddr *)&sin, &len) == 0;
        if (fd >= 0)
            close(fd);
        return ok && snprintf(name, size, "%.*s127.0.0.1:%u", plen, server,
                              ntohs(sin.sin_port)) < (int)size;
    }
    /* A process that ended: its shm name, or its na+sm name "PID-ID". */
    bool sm_name = !strchr(rest + 3, ':');
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    return pid > 0 && waitpid(pid, NULL, 0) == pid &&
           snprintf(name, size, sm_name ? "%.*s%d-0" : "%.*s%d:0:0", plen, server,
                    (int)pid) < (int)size;
}

enum dead_op { DEAD_SEND, DEAD_PUT, DEAD_GET, DEAD_SEND_EXPECTED, DEAD_RECV_EXPECTED };
static const char *const dead_op_name[] = {"send", "put", "get", "expected send",
                                           "expected receive"};

/* Post an operation of kind to dead: an unexpected message, or a put/get
 * with a handle of ours standing for the remote one (what dead would have
 * sent). Its completion (or the post's own refusal) in *done, within 2 s.
 * Returns what the post returned. */
static na_return_t to_dead(na_class_t *cls, na_context_t *ctx, na_addr_t *dead,
                           enum dead_op kind, struct na_test_done *done)
{
    size_t size = NA_Msg_get_unexpected_header_size(cls) + 16;
    void *plugin_data = NULL;
    char *buf = NA_Msg_buf_alloc(cls, size, NA_SEND, &plugin_data);
    na_op_id_t *op = NA_Op_create(cls, NA_OP_SINGLE);
    na_mem_handle_t *local = NULL, *remote = NULL;
    na_return_t ret;

    assert_non_null(buf);
    if (kind == DEAD_SEND) {
        NA_Msg_init_unexpected(cls, buf, size);
        ret = NA_Msg_send_unexpected(cls, ctx, na_test_cb, done, buf, size, plugin_data,
                                     dead, 0, 1, op);
    } else if (kind == DEAD_SEND_EXPECTED) {
        ret = NA_Msg_send_expected(cls, ctx, na_test_cb, done, buf, size, plugin_data,
                                   dead, 0, 1, op);
    } else if (kind == DEAD_RECV_EXPECTED) {
        ret = NA_Msg_recv_expected(cls, ctx, na_test_cb, done, buf, size, plugin_data,
                                   dead, 0, 1, op);
    } else {
        char ser[256];
        assert_int_equal(NA_Mem_handle_create(cls, buf, size, NA_MEM_READWRITE, &local),
                         NA_SUCCESS);
        assert_int_equal(NA_Mem_register(cls, local, NA_MEM_TYPE_HOST, 0), NA_SUCCESS);
        size_t n = NA_Mem_handle_get_serialize_size(cls, local);
        assert_true(n <= sizeof(ser));
        assert_int_equal(NA_Mem_handle_serialize(cls, ser, n, local), NA_SUCCESS);
        assert_int_equal(NA_Mem_handle_deserialize(cls, &remote, ser, n), NA_SUCCESS);
        ret = (kind == DEAD_PUT ? NA_Put : NA_Get)(cls, ctx, na_test_cb, done, local, 0,
                                                   remote, 0, size, dead, 0, op);
    }
    if (ret == NA_SUCCESS) {
        if (!na_test_wait(cls, ctx, done, 1, 2000))
            fail_msg("%s to a dead peer: no completion within 2 s", dead_op_name[kind]);
    } else {
        done->ret = ret;
    }
    NA_Op_destroy(cls, op);
    if (local) {
        NA_Mem_handle_free(cls, remote);
        NA_Mem_deregister(cls, local);
        NA_Mem_handle_free(cls, local);
    }
    NA_Msg_buf_free(cls, buf, plugin_data);
    return ret;
}

/* OFI providers that refuse a post to a dead peer (EAGAIN: rxm connects
 * again at each post, shm finds no region); UCX and sockets do not refuse
 * for resources there. */
static bool dead_is_refused(const char *info)
{
    return !strncmp(info, "ofi+tcp", 7) || !strncmp(info, "ofi+shm", 7);
}

/* A peer that is not there: a default class's send, put and get fail by
 * themselves with NA_HOSTUNREACH within 2 s (Margo's bound); over ofi+shm a
 * put/get's RMA check message is what the provider refuses. With NA_NO_RETRY
 * (Mercury 2.4.1: "no retry of operations in progress") the OFI providers' refusal is the
 * post's own NA_AGAIN at once. */
static void test_dead_peer(void **state)
{
    struct na_test_state *st = *state;
    struct na_init_info init = NA_INIT_INFO_INITIALIZER;
    char name[TEST_ADDR_MAX];
    na_addr_t *dead = NULL;

    assert_true(dead_peer_name(st->srv.addr, name, sizeof(name)));
    assert_int_equal(NA_Addr_lookup(st->cls, name, &dead), NA_SUCCESS);
    for (enum dead_op k = DEAD_SEND; k <= DEAD_GET; k++) {
        struct na_test_done done = {0};
        double start = test_now();
        to_dead(st->cls, st->ctx, dead, k, &done);
        print_message("# %s: %s to %s: %s after %.3f s\n", st->info, dead_op_name[k],
                      name, NA_Error_to_string(done.ret), test_now() - start);
        assert_int_equal(done.ret, NA_HOSTUNREACH);
    }
    NA_Addr_free(st->cls, dead);

    init.progress_mode = NA_NO_RETRY;
    na_class_t *cls = NA_Initialize_opt(st->info, false, &init);
    assert_non_null(cls);
    na_context_t *ctx = NA_Context_create(cls);
    assert_int_equal(NA_Addr_lookup(cls, name, &dead), NA_SUCCESS);
    for (enum dead_op k = DEAD_SEND; k <= DEAD_GET; k++) {
        struct na_test_done done = {0};
        na_return_t posted = to_dead(cls, ctx, dead, k, &done);
        print_message("# %s NA_NO_RETRY: %s posted %s, ended %s\n", st->info,
                      dead_op_name[k], NA_Error_to_string(posted),
                      NA_Error_to_string(done.ret));
        if (dead_is_refused(st->info))
            assert_int_equal(posted, NA_AGAIN);
        assert_int_not_equal(done.ret, NA_SUCCESS);
    }
    NA_Addr_free(cls, dead);
    assert_int_equal(NA_Context_destroy(cls, ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(cls), NA_SUCCESS);
}

/* UCX refuses a send for resources when the peer's send window is full
 * (HGX_UCX_SEND_WINDOW sends holding a UCX request): with NA_NO_RETRY the
 * post returns NA_AGAIN there, where a default class queues the send. With
 * a window of 1 and the server stalled, sends go back to back until the
 * transport holds one (its socket or fifo full), and the next is refused. */
static void test_no_retry_window(void **state)
{
    struct na_test_state *st = *state;
    enum { N = 4096 };

    if (strncmp(st->info, "ucx+", 4) != 0 && strncmp(st->info, "na+sm", 5) != 0) {
        print_message("# %s: no send window (OFI's refusals: test_dead_peer)\n",
                      st->info);
        return;
    }
    struct na_init_info init = NA_INIT_INFO_INITIALIZER;
    init.progress_mode = NA_NO_RETRY;
    setenv("HGX_UCX_SEND_WINDOW", "1", 1);
    na_class_t *cls = NA_Initialize_opt(st->info, false, &init);
    unsetenv("HGX_UCX_SEND_WINDOW");
    assert_non_null(cls);
    na_context_t *ctx = NA_Context_create(cls);
    na_addr_t *srv = NULL;
    assert_int_equal(NA_Addr_lookup(cls, st->srv.addr, &srv), NA_SUCCESS);
    size_t size = NA_Msg_get_max_expected_size(cls);
    void *plugin_data = NULL;
    char *buf = NA_Msg_buf_alloc(cls, size, NA_SEND, &plugin_data);
    struct na_test_done *done = calloc(N, sizeof(*done));
    na_op_id_t **ops = calloc(N, sizeof(*ops));
    int n = 0;
    na_return_t ret = NA_SUCCESS;
    /* The first send waits for the wire-up (not a refusal). */
    for (; n < N && ret == NA_SUCCESS; n++) {
        ops[n] = NA_Op_create(cls, NA_OP_SINGLE);
        ret = NA_Msg_send_expected(cls, ctx, na_test_cb, &done[n], buf, size, plugin_data,
                                   srv, 0, 0xfff00000u + (na_tag_t)n, ops[n]);
        if (n == 0) {
            assert_int_equal(ret, NA_SUCCESS);
            assert_true(na_test_wait(cls, ctx, &done[0], 1, 5000));
            struct na_test_cmd stall = {.op = CMD_STALL, .a = 3000};
            double stalled = test_now();
            call(st, stall, NULL, 0, NULL, 0, NULL);
            progress_until(st, stalled + 0.2); /* the server is asleep now */
        }
    }
    print_message("# %s NA_NO_RETRY, window 1, server stalled: send %d: %s\n", st->info,
                  n, NA_Error_to_string(ret));
    for (int i = 0; i < n; i++) {
        if (i < n - 1 || ret == NA_SUCCESS)
            assert_true(na_test_wait(cls, ctx, &done[i], 1, 10000));
        NA_Op_destroy(cls, ops[i]);
    }
    free(ops);
    free(done);
    NA_Msg_buf_free(cls, buf, plugin_data);
    NA_Addr_free(cls, srv);
    assert_int_equal(NA_Context_destroy(cls, ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(cls), NA_SUCCESS);
    assert_int_equal(ret, NA_AGAIN);
}

/* The registry entry of this user's na+sm class PID-ID. */
static void sm_entry_path(pid_t pid, unsigned int id, char *path, size_t size)
{
    snprintf(path, size, "/dev/shm/hgx-na-sm-%u/%d-%u", (unsigned int)geteuid(), (int)pid,
             id);
}

/* The id of the newest na+sm class of process pid (ids only grow). */
static bool sm_newest_id(pid_t pid, unsigned int *id)
{
    char dir[64], prefix[32];
    bool found = false;

    snprintf(dir, sizeof(dir), "/dev/shm/hgx-na-sm-%u", (unsigned int)geteuid());
    snprintf(prefix, sizeof(prefix), "%d-", (int)pid);
    DIR *d = opendir(dir);
    if (!d)
        return false;
    for (struct dirent *e; (e = readdir(d));) {
        unsigned int n;
        char end;
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 &&
            sscanf(e->d_name + strlen(prefix), "%u%c", &n, &end) == 1 &&
            (!found || n > *id)) {
            *id = n;
            found = true;
        }
    }
    closedir(d);
    return found;
}

/* Name links ("k-...") in this user's registry. */
static size_t sm_count_links(void)
{
    char dir[64];
    size_t n = 0;

    snprintf(dir, sizeof(dir), "/dev/shm/hgx-na-sm-%u", (unsigned int)geteuid());
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        n += strncmp(e->d_name, "k-", 2) == 0;
    closedir(d);
    return n;
}

/* Progress and trigger two classes until *a and *b have run (5 s at most). */
static bool wait_both(na_class_t *c1, na_context_t *x1, struct na_test_done *a,
                      na_class_t *c2, na_context_t *x2, struct na_test_done *b)
{
    for (double end = test_now() + 5; a->count < 1 || b->count < 1;) {
        unsigned int n;
        if (test_now() > end)
            return false;
        NA_Progress(c1, x1, 0);
        NA_Trigger(x1, 16, &n);
        NA_Progress(c2, x2, 0);
        NA_Trigger(x2, 16, &n);
    }
    return true;
}

/* A message from cls to peer, a class of this process (cls2), and its
 * expected reply back: peer must reach cls2, and the source cls2 sees reach cls. */
/* addr prints as Mercury's name of the class PID-ID. */
static void sm_expect_name(na_class_t *cls, na_addr_t *addr, pid_t pid, unsigned int id)
{
    char want[64], str[TEST_ADDR_MAX];
    size_t len = sizeof(str);

    snprintf(want, sizeof(want), "na+sm://%d-%u", (int)pid, id);
    assert_int_equal(NA_Addr_to_string(cls, str, &len, addr), NA_SUCCESS);
    assert_string_equal(str, want);
}

/* A message from cls to cls2 (at peer) and its answer; cls2 sees the sender
 * as Mercury's name of cls, PID-ID. */
static void sm_round_trip(na_class_t *cls, na_context_t *ctx, na_addr_t *peer,
                          na_class_t *cls2, na_context_t *ctx2, unsigned int id)
{
    size_t size = NA_Msg_get_unexpected_header_size(cls) + 8;
    void *pd1 = NULL, *pd2 = NULL, *pd3 = NULL;
    char *out = NA_Msg_buf_alloc(cls, size, NA_SEND, &pd1);
    char *in2 = NA_Msg_buf_alloc(cls2, size, NA_RECV, &pd2);
    char *in = NA_Msg_buf_alloc(cls, size, NA_RECV, &pd3);
    na_op_id_t *ops[4] = {
        NA_Op_create(cls, NA_OP_SINGLE), NA_Op_create(cls2, NA_OP_SINGLE),
        NA_Op_create(cls, NA_OP_SINGLE), NA_Op_create(cls2, NA_OP_SINGLE)};
    struct na_test_done sent = {0}, got = {0}, reply = {0}, replied = {0};

    assert_int_equal(
        NA_Msg_recv_unexpected(cls2, ctx2, na_test_cb, &got, in2, size, pd2, ops[1]),
        NA_SUCCESS);
    assert_int_equal(NA_Msg_recv_expected(cls, ctx, na_test_cb, &reply, in, size, pd3,
                                          peer, 0, 77, ops[2]),
                     NA_SUCCESS);
    NA_Msg_init_unexpected(cls, out, size);
    assert_int_equal(NA_Msg_send_unexpected(cls, ctx, na_test_cb, &sent, out, size, pd1,
                                            peer, 0, 77, ops[0]),
                     NA_SUCCESS);
    assert_true(wait_both(cls, ctx, &sent, cls2, ctx2, &got));
    assert_int_equal(sent.ret, NA_SUCCESS);
    assert_int_equal(got.ret, NA_SUCCESS);
    assert_int_equal(got.tag, 77);
    sm_expect_name(cls2, got.source, getpid(), id);
    assert_int_equal(NA_Msg_send_expected(cls2, ctx2, na_test_cb, &replied, in2, size,
                                          pd2, got.source, 0, 77, ops[3]),
                     NA_SUCCESS);
    assert_true(wait_both(cls, ctx, &reply, cls2, ctx2, &replied));
    assert_int_equal(replied.ret, NA_SUCCESS);
    assert_int_equal(reply.ret, NA_SUCCESS);
    NA_Addr_free(cls2, got.source);
    for (int i = 0; i < 4; i++)
        NA_Op_destroy(i % 2 ? cls2 : cls, ops[i]);
    NA_Msg_buf_free(cls, out, pd1);
    NA_Msg_buf_free(cls2, in2, pd2);
    NA_Msg_buf_free(cls, in, pd3);
}

/* Mercury's na+sm names "na+sm://PID-ID" (and "sm://", and the old
 * "PID/ID"): a live class's reaches it (the forked server's, a second
 * class of this process), one of a process that is gone is looked up and
 * every post to it fails by itself with NA_HOSTUNREACH (Margo's
 * comm_unreachable), malformed ones are refused, and a class's registry
 * entry goes with NA_Finalize (stale ones with NA_Cleanup). */
static void test_sm_names(void **state)
{
    struct na_test_state *st = *state;
    char name[TEST_ADDR_MAX], str[TEST_ADDR_MAX], path[128];
    size_t len = sizeof(str);
    na_addr_t *a = NULL, *b = NULL;
    unsigned int id;

    if (strncmp(st->info, "na+sm", 5) != 0) {
        print_message("# %s: no Mercury SM names\n", st->info);
        return;
    }
    static const char *const bad[] = {
        "na+sm://abc-1",        "na+sm://1-",
        "na+sm://-1",           "na+sm://1-x",
        "na+sm://0-1",          "na+sm://1-1-1",
        "na+sm://1/1/1",        "sm://+1-1",
        "na+sm://1 -1",         "na+sm://1-1 ",
        "na+sm://2147483648-1", "na+sm://1-4294967296",
        "na+sm://1--1",         "na+sm://99999999999999999999999-1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        if (NA_Addr_lookup(st->cls, bad[i], &a) != NA_INVALID_ARG)
            fail_msg("lookup of malformed \"%s\" not refused with NA_INVALID_ARG",
                     bad[i]);

    /* The forked server's entry reaches it, and its address prints as that
     * name however it was looked up. */
    assert_true(sm_newest_id(st->srv.pid, &id));
    snprintf(name, sizeof(name), "na+sm://%d-%u", (int)st->srv.pid, id);
    assert_int_equal(NA_Addr_lookup(st->cls, name, &a), NA_SUCCESS);
    assert_true(NA_Addr_cmp(st->cls, a, st->server));
    sm_expect_name(st->cls, a, st->srv.pid, id);
    sm_expect_name(st->cls, st->server, st->srv.pid, id);
    NA_Addr_free(st->cls, a);
    unsigned int my_id;
    assert_true(sm_newest_id(getpid(), &my_id));
    assert_int_equal(NA_Addr_self(st->cls, &a), NA_SUCCESS);
    sm_expect_name(st->cls, a, getpid(), my_id);
    NA_Addr_free(st->cls, a);
    size_t links = sm_count_links();

    /* A process that is gone: a child that ended. */
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    assert_true(gone > 0 && waitpid(gone, NULL, 0) == gone);
    snprintf(name, sizeof(name), "na+sm://%d-1", (int)gone);
    assert_int_equal(NA_Addr_lookup(st->cls, name, &a), NA_SUCCESS);
    assert_int_equal(NA_Addr_to_string(st->cls, str, &len, a), NA_SUCCESS);
    assert_string_equal(str, name);
    snprintf(name, sizeof(name), "sm://%d/1", (int)gone);
    assert_int_equal(NA_Addr_lookup(st->cls, name, &b), NA_SUCCESS);
    assert_true(NA_Addr_cmp(st->cls, a, b));
    assert_false(NA_Addr_cmp(st->cls, a, st->server));
    assert_false(NA_Addr_is_self(st->cls, a));
    NA_Addr_free(st->cls, b);
    for (enum dead_op k = DEAD_SEND; k <= DEAD_RECV_EXPECTED; k++) {
        struct na_test_done done = {0};
        double start = test_now();
        assert_int_equal(to_dead(st->cls, st->ctx, a, k, &done), NA_SUCCESS);
        print_message("# %s: %s to %s: %s after %.3f s\n", st->info, dead_op_name[k], str,
                      NA_Error_to_string(done.ret), test_now() - start);
        assert_int_equal(done.ret, NA_HOSTUNREACH);
    }
    NA_Addr_free(st->cls, a);

    /* A second class of this process, by its PID-ID: a round trip. */
    na_class_t *cls2 = NA_Initialize(st->info, true);
    assert_non_null(cls2);
    na_context_t *ctx2 = NA_Context_create(cls2);
    assert_non_null(ctx2);
    assert_true(sm_newest_id(getpid(), &id));
    snprintf(name, sizeof(name), "na+sm://%d-%u", (int)getpid(), id);
    assert_int_equal(NA_Addr_lookup(st->cls, name, &a), NA_SUCCESS);
    assert_int_equal(NA_Addr_self(cls2, &b), NA_SUCCESS);
    len = sizeof(str);
    assert_int_equal(NA_Addr_to_string(cls2, str, &len, b), NA_SUCCESS);
    assert_string_equal(str, name);
    NA_Addr_free(cls2, b);
    assert_int_equal(NA_Addr_lookup(st->cls, str, &b), NA_SUCCESS);
    assert_true(NA_Addr_cmp(st->cls, a, b));
    NA_Addr_free(st->cls, b);
    sm_expect_name(st->cls, a, getpid(), id);
    assert_int_equal(sm_count_links(), links + 1);
    sm_round_trip(st->cls, st->ctx, a, cls2, ctx2, my_id);
    NA_Addr_free(st->cls, a);

    /* NA_Cleanup removes a dead process's entry and name link, not a live
     * one's. */
    char stale[128], stale_link[160], target[32];
    sm_entry_path(gone, 3, stale, sizeof(stale));
    int fd = open(stale, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    close(fd);
    snprintf(target, sizeof(target), "%d-3", (int)gone);
    snprintf(stale_link, sizeof(stale_link), "/dev/shm/hgx-na-sm-%u/k-6e6f6e65",
             (unsigned int)geteuid());
    assert_int_equal(symlink(target, stale_link), 0);
    assert_int_equal(sm_count_links(), links + 2);
    NA_Cleanup();
    assert_int_equal(access(stale, F_OK), -1);
    assert_int_equal(sm_count_links(), links + 1);
    sm_entry_path(getpid(), id, path, sizeof(path));
    assert_int_equal(access(path, F_OK), 0);

    /* Gone with NA_Finalize: the name is then unreachable. */
    assert_int_equal(NA_Context_destroy(cls2, ctx2), NA_SUCCESS);
    assert_int_equal(NA_Finalize(cls2), NA_SUCCESS);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(sm_count_links(), links);
    assert_int_equal(NA_Addr_lookup(st->cls, name, &a), NA_SUCCESS);
    struct na_test_done done = {0};
    to_dead(st->cls, st->ctx, a, DEAD_SEND, &done);
    assert_int_equal(done.ret, NA_HOSTUNREACH);
    NA_Addr_free(st->cls, a);
}

int main(void)
{
    const char *const *transports;
    size_t n = test_transports_mercury(&transports);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_info),
        cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_msg_sizes),
        cmocka_unit_test(test_expected_early),
        cmocka_unit_test(test_expected_early_many),
        cmocka_unit_test(test_msg_too_big),
        cmocka_unit_test(test_recv_too_small),
        cmocka_unit_test(test_rma_contiguous),
        cmocka_unit_test(test_rma_segmented),
        cmocka_unit_test(test_rma_refused),
        cmocka_unit_test(test_cancel_recv),
        cmocka_unit_test(test_cancel_many_recvs),
        cmocka_unit_test(test_cancel_inflight),
        cmocka_unit_test(test_cancel_kept_keepalive),
        cmocka_unit_test(test_self),
        cmocka_unit_test(test_unexpected_backlog),
        cmocka_unit_test(test_optional_features),
        cmocka_unit_test(test_dead_peer),
        cmocka_unit_test(test_no_retry_window),
        cmocka_unit_test(test_sm_names),
    };
    return test_run_groups("na", transports, n, NULL, &current_info, tests,
                           sizeof(tests) / sizeof(*tests), group_setup, group_teardown);
}
