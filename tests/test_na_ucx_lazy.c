/*
 * test_na_ucx_lazy.c -- UCX lookups record the peer and connect at its first
 * operation, as Mercury's UCX plugin does:
 * - the lookup of a closed port, and of a listener that never answers the
 *   wire-up, succeeds at once; their sends end NA_HOSTUNREACH, bounded,
 *   exactly once each, while a live server keeps answering;
 * - HG_Forward to a closed port completes with HG_HOSTUNREACH;
 * - a flood of sends and a get posted before the connection is up all
 *   complete (queued ones that are cancelled end NA_CANCELED at once), and
 *   the plugin's queue is empty afterwards.
 */
#include "hgx_test_hooks.h"
#include "mercury.h"
#include "na_test_proto.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define LAZY_SENDS 4
#define LAZY_FLOOD 2000
#define LAZY_CANCEL_EVERY 5
#define LAZY_GET_SIZE 4096
/* The plugin fails a wire-up after 5 s; a closed port fails at once. */
#define LAZY_SILENT_BOUND_S 8.0
#define LAZY_REFUSED_BOUND_S 3.0

static const char *current_info;

struct lazy {
    struct test_server srv;
    na_class_t *cls;
    na_context_t *ctx;
    na_addr_t *server;
    uint32_t next_tag;
};

static int group_setup(void **state)
{
    struct lazy *l = calloc(1, sizeof(*l));
    char info[TEST_ADDR_MAX];
    if (!l || !test_server_start(&l->srv, current_info, na_test_server_main))
        return -1;
    test_client_info(l->srv.addr, info, sizeof(info));
    l->cls = NA_Initialize(info, false);
    if (!l->cls || !(l->ctx = NA_Context_create(l->cls)) ||
        NA_Addr_lookup(l->cls, l->srv.addr, &l->server) != NA_SUCCESS)
        return -1;
    l->next_tag = 1;
    *state = l;
    return 0;
}

static int group_teardown(void **state)
{
    struct lazy *l = *state;
    if (!l)
        return 0;
    struct na_test_cmd quit = {.op = CMD_QUIT};
    struct na_test_done sent = {0};
    na_op_id_t *op = NA_Op_create(l->cls, NA_OP_SINGLE);
    size_t h = NA_Msg_get_unexpected_header_size(l->cls);
    char buf[256];
    NA_Msg_init_unexpected(l->cls, buf, h + sizeof(quit));
    memcpy(buf + h, &quit, sizeof(quit));
    if (NA_Msg_send_unexpected(l->cls, l->ctx, na_test_cb, &sent, buf, h + sizeof(quit),
                               NULL, l->server, 0, 0, op) == NA_SUCCESS)
        na_test_wait(l->cls, l->ctx, &sent, 1, 10000);
    NA_Op_destroy(l->cls, op);
    int rc = test_server_wait(&l->srv, 10000);
    NA_Addr_free(l->cls, l->server);
    NA_Context_destroy(l->cls, l->ctx);
    NA_Finalize(l->cls);
    free(l);
    return rc == 0 ? 0 : -1;
}

/* A loopback port nothing listens on. */
static unsigned closed_port(void)
{
    unsigned port = 0;
    int fd = test_loopback_socket(false, &port);
    assert_true(fd >= 0);
    close(fd);
    return port;
}

/* Post one unexpected message of an op the server ignores (op 0) or runs. */
static void post(struct lazy *l, na_addr_t *to, void *buf, uint32_t cmd_op,
                 struct na_test_done *done, na_op_id_t *op)
{
    size_t h = NA_Msg_get_unexpected_header_size(l->cls);
    struct na_test_cmd cmd = {.op = cmd_op, .tag = l->next_tag};
    assert_int_equal(NA_Msg_init_unexpected(l->cls, buf, h + sizeof(cmd)), NA_SUCCESS);
    memcpy((char *)buf + h, &cmd, sizeof(cmd));
    assert_int_equal(NA_Msg_send_unexpected(l->cls, l->ctx, na_test_cb, done, buf,
                                            h + sizeof(cmd), NULL, to, 0, 0, op),
                     NA_SUCCESS);
}

/* The live server echoes a command: its reply arrives. */
static void echo(struct lazy *l)
{
    size_t eh = NA_Msg_get_expected_header_size(l->cls);
    char in[512], out[256];
    struct na_test_done got = {0}, sent = {0};
    na_op_id_t *rop = NA_Op_create(l->cls, NA_OP_SINGLE);
    na_op_id_t *sop = NA_Op_create(l->cls, NA_OP_SINGLE);
    l->next_tag++;
    assert_int_equal(NA_Msg_recv_expected(l->cls, l->ctx, na_test_cb, &got, in,
                                          sizeof(in), NULL, l->server, 0, l->next_tag,
                                          rop),
                     NA_SUCCESS);
    post(l, l->server, out, CMD_ECHO, &sent, sop);
    assert_true(na_test_wait(l->cls, l->ctx, &got, 1, 5000));
    assert_true(na_test_wait(l->cls, l->ctx, &sent, 1, 5000));
    assert_int_equal(got.ret, NA_SUCCESS);
    assert_int_equal(sent.ret, NA_SUCCESS);
    assert_int_equal(got.size, eh + sizeof(struct na_test_cmd));
    NA_Op_destroy(l->cls, rop);
    NA_Op_destroy(l->cls, sop);
}

/* Sends to an unreachable peer, whose lookup succeeded at once. */
struct lazy_dead {
    na_addr_t *addr;
    char buf[LAZY_SENDS][256];
    struct na_test_done done[LAZY_SENDS];
    na_op_id_t *op[LAZY_SENDS];
};

static void dead_start(struct lazy *l, struct lazy_dead *d, unsigned port)
{
    char name[64];
    test_loopback_addr(current_info, port, name, sizeof(name));
    double t0 = test_now();
    assert_int_equal(NA_Addr_lookup(l->cls, name, &d->addr), NA_SUCCESS);
    assert_true(test_now() - t0 < 0.5);
    for (int i = 0; i < LAZY_SENDS; i++) {
        d->op[i] = NA_Op_create(l->cls, NA_OP_SINGLE);
        post(l, d->addr, d->buf[i], 0, &d->done[i], d->op[i]);
    }
}

/* Every send ended NA_HOSTUNREACH, once, within bound_s of t0. */
static void dead_finish(struct lazy *l, struct lazy_dead *d, double t0, double bound_s)
{
    for (int i = 0; i < LAZY_SENDS; i++) {
        assert_true(na_test_wait(l->cls, l->ctx, &d->done[i], 1, 10000));
        assert_int_equal(d->done[i].ret, NA_HOSTUNREACH);
    }
    double took = test_now() - t0;
    print_message("# %s: %d sends to an unreachable peer failed after %.2f s\n",
                  current_info, LAZY_SENDS, took);
    assert_true(took < bound_s);
    NA_Progress(l->cls, l->ctx, 50);
    NA_Trigger(l->ctx, UINT32_MAX, NULL);
    for (int i = 0; i < LAZY_SENDS; i++) {
        assert_int_equal(d->done[i].count, 1);
        NA_Op_destroy(l->cls, d->op[i]);
    }
}

static void test_unreachable(void **state)
{
    struct lazy *l = *state;
    struct lazy_dead refused = {0}, silent = {0};
    unsigned silent_port = 0;
    /* Listening but never accepting: UCX's wire-up waits for an answer that
     * never comes. */
    int fd = test_loopback_socket(true, &silent_port);
    assert_true(fd >= 0);

    double t0 = test_now();
    dead_start(l, &refused, closed_port());
    dead_start(l, &silent, silent_port);
    /* The live server answers while both connections are pending or failing. */
    echo(l);
    for (int i = 0; i < LAZY_SENDS; i++)
        assert_int_equal(silent.done[i].count, 0);
    dead_finish(l, &refused, t0, LAZY_REFUSED_BOUND_S);
    echo(l);
    dead_finish(l, &silent, t0, LAZY_SILENT_BOUND_S);

    /* The next send connects again, and fails again. */
    t0 = test_now();
    for (int i = 0; i < LAZY_SENDS; i++) {
        refused.op[i] = NA_Op_create(l->cls, NA_OP_SINGLE);
        refused.done[i] = (struct na_test_done){0};
        post(l, refused.addr, refused.buf[i], 0, &refused.done[i], refused.op[i]);
    }
    dead_finish(l, &refused, t0, LAZY_REFUSED_BOUND_S);
    echo(l);
    NA_Addr_free(l->cls, refused.addr);
    NA_Addr_free(l->cls, silent.addr);
    close(fd);
}

static hg_return_t forward_done(const struct hg_cb_info *info)
{
    *(hg_return_t *)info->arg = info->ret;
    return HG_SUCCESS;
}

/* HG_Forward to a closed port: the lookup succeeds, the forward completes
 * with HG_HOSTUNREACH. */
static void test_forward_unreachable(void **state)
{
    (void)state;
    char info[TEST_ADDR_MAX], name[64];
    const char *sep = strstr(current_info, "://");
    snprintf(info, sizeof(info), "%.*s://127.0.0.1",
             sep ? (int)(sep - current_info) : (int)strlen(current_info), current_info);
    hg_class_t *cls = HG_Init(info, HG_FALSE);
    assert_non_null(cls);
    hg_context_t *ctx = HG_Context_create(cls);
    assert_non_null(ctx);
    hg_id_t id = HG_Register_name(cls, "lazy_noop", NULL, NULL, NULL);
    hg_addr_t addr = HG_ADDR_NULL;
    test_loopback_addr(current_info, closed_port(), name, sizeof(name));
    assert_int_equal(HG_Addr_lookup2(cls, name, &addr), HG_SUCCESS);
    hg_handle_t h = HG_HANDLE_NULL;
    assert_int_equal(HG_Create(ctx, addr, id, &h), HG_SUCCESS);
    hg_return_t got = HG_OTHER_ERROR + 1;
    double t0 = test_now();
    assert_int_equal(HG_Forward(h, forward_done, &got, NULL), HG_SUCCESS);
    while (got == HG_OTHER_ERROR + 1 && test_now() - t0 < 10) {
        unsigned int n = 0;
        HG_Progress(ctx, 100);
        HG_Trigger(ctx, 0, 1, &n);
    }
    print_message("# %s: HG_Forward to a closed port: %s after %.2f s\n", current_info,
                  HG_Error_to_string(got), test_now() - t0);
    assert_int_equal(got, HG_HOSTUNREACH);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
    assert_int_equal(HG_Addr_free(cls, addr), HG_SUCCESS);
    assert_int_equal(HG_Context_destroy(ctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(cls), HG_SUCCESS);
}

/* The server exposes a region: its handle, deserialized in cls. */
static na_mem_handle_t *expose(struct lazy *l, na_class_t *cls)
{
    size_t eh = NA_Msg_get_expected_header_size(l->cls);
    size_t h = NA_Msg_get_unexpected_header_size(l->cls);
    char in[1024], out[256];
    struct na_test_done got = {0}, sent = {0};
    na_op_id_t *rop = NA_Op_create(l->cls, NA_OP_SINGLE);
    na_op_id_t *sop = NA_Op_create(l->cls, NA_OP_SINGLE);
    struct na_test_cmd cmd = {.op = CMD_EXPOSE,
                              .tag = ++l->next_tag,
                              .a = LAZY_GET_SIZE,
                              .b = NA_MEM_READWRITE};
    assert_int_equal(NA_Msg_recv_expected(l->cls, l->ctx, na_test_cb, &got, in,
                                          sizeof(in), NULL, l->server, 0, cmd.tag, rop),
                     NA_SUCCESS);
    NA_Msg_init_unexpected(l->cls, out, h + sizeof(cmd));
    memcpy(out + h, &cmd, sizeof(cmd));
    assert_int_equal(NA_Msg_send_unexpected(l->cls, l->ctx, na_test_cb, &sent, out,
                                            h + sizeof(cmd), NULL, l->server, 0, 0, sop),
                     NA_SUCCESS);
    assert_true(na_test_wait(l->cls, l->ctx, &got, 1, 5000));
    assert_true(na_test_wait(l->cls, l->ctx, &sent, 1, 5000));
    assert_int_equal(got.ret, NA_SUCCESS);
    assert_true(got.size > eh);
    na_mem_handle_t *remote = NULL;
    assert_int_equal(NA_Mem_handle_deserialize(cls, &remote, in + eh, got.size - eh),
                     NA_SUCCESS);
    NA_Op_destroy(l->cls, rop);
    NA_Op_destroy(l->cls, sop);
    return remote;
}

/* A fresh class floods a live server before its connection is up: every
 * send and a get complete once; cancelled queued ones end NA_CANCELED. */
static void test_flood_before_up(void **state)
{
    struct lazy *l = *state;
    char info[TEST_ADDR_MAX];
    test_client_info(l->srv.addr, info, sizeof(info));
    struct lazy f = {.cls = NA_Initialize(info, false), .next_tag = 1};
    assert_non_null(f.cls);
    na_mem_handle_t *remote = expose(l, f.cls);
    f.ctx = NA_Context_create(f.cls);
    assert_non_null(f.ctx);
    assert_int_equal(NA_Addr_lookup(f.cls, l->srv.addr, &f.server), NA_SUCCESS);

    /* A get, and a second one cancelled while queued. */
    char *local = calloc(2, LAZY_GET_SIZE);
    na_mem_handle_t *lmh = NULL;
    assert_int_equal(
        NA_Mem_handle_create(f.cls, local, 2 * LAZY_GET_SIZE, NA_MEM_READWRITE, &lmh),
        NA_SUCCESS);
    assert_int_equal(NA_Mem_register(f.cls, lmh, NA_MEM_TYPE_HOST, 0), NA_SUCCESS);
    struct na_test_done gets[2] = {{0}};
    na_op_id_t *gop[2];
    for (int i = 0; i < 2; i++) {
        gop[i] = NA_Op_create(f.cls, NA_OP_SINGLE);
        assert_int_equal(NA_Get(f.cls, f.ctx, na_test_cb, &gets[i], lmh,
                                (na_offset_t)i * LAZY_GET_SIZE, remote, 0, LAZY_GET_SIZE,
                                f.server, 0, gop[i]),
                         NA_SUCCESS);
    }
    assert_int_equal(NA_Cancel(f.cls, f.ctx, gop[1]), NA_SUCCESS);

    size_t h = NA_Msg_get_unexpected_header_size(f.cls);
    size_t len = h + sizeof(struct na_test_cmd);
    char *bufs = malloc(LAZY_FLOOD * len);
    struct na_test_done *done = calloc(LAZY_FLOOD, sizeof(*done));
    na_op_id_t **ops = calloc(LAZY_FLOOD, sizeof(*ops));
    for (int i = 0; i < LAZY_FLOOD; i++) {
        ops[i] = NA_Op_create(f.cls, NA_OP_SINGLE);
        post(&f, f.server, bufs + (size_t)i * len, 0, &done[i], ops[i]);
    }
    long queued = na_ucx_pending_count();
    print_message("# %s: %ld ops queued before the connection was up\n", current_info,
                  queued);
    assert_true(queued >= LAZY_FLOOD);
    for (int i = 0; i < LAZY_FLOOD; i += LAZY_CANCEL_EVERY)
        assert_int_equal(NA_Cancel(f.cls, f.ctx, ops[i]), NA_SUCCESS);

    int ok = 0, cancelled = 0;
    for (int i = 0; i < LAZY_FLOOD; i++) {
        assert_true(na_test_wait(f.cls, f.ctx, &done[i], 1, 10000));
        if (i % LAZY_CANCEL_EVERY == 0) {
            assert_int_equal(done[i].ret, NA_CANCELED);
            cancelled++;
        } else {
            assert_int_equal(done[i].ret, NA_SUCCESS);
            ok++;
        }
    }
    for (int i = 0; i < 2; i++)
        assert_true(na_test_wait(f.cls, f.ctx, &gets[i], 1, 10000));
    assert_int_equal(gets[0].ret, NA_SUCCESS);
    assert_int_equal(gets[1].ret, NA_CANCELED);
    NA_Progress(f.cls, f.ctx, 50);
    NA_Trigger(f.ctx, UINT32_MAX, NULL);
    for (int i = 0; i < LAZY_FLOOD; i++) {
        assert_int_equal(done[i].count, 1);
        NA_Op_destroy(f.cls, ops[i]);
    }
    for (int i = 0; i < 2; i++) {
        assert_int_equal(gets[i].count, 1);
        NA_Op_destroy(f.cls, gop[i]);
    }
    print_message("# %s: %d sent, %d cancelled while queued\n", current_info, ok,
                  cancelled);
    assert_int_equal(na_ucx_pending_count(), 0);
    echo(&f);

    NA_Mem_deregister(f.cls, lmh);
    NA_Mem_handle_free(f.cls, lmh);
    NA_Mem_handle_free(f.cls, remote);
    free(local);
    free(bufs);
    free(done);
    free(ops);
    NA_Addr_free(f.cls, f.server);
    NA_Context_destroy(f.cls, f.ctx);
    assert_int_equal(NA_Finalize(f.cls), NA_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_forward_unreachable),
        cmocka_unit_test(test_flood_before_up),
    };
    return test_run_per_transport("na_ucx_lazy", "ucx+", &current_info, tests,
                                  sizeof(tests) / sizeof(*tests), group_setup,
                                  group_teardown);
}
