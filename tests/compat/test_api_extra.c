/*
 * test_api_extra.c -- the Mercury 2.4.1 calls hgx added for drop-in use, over
 * real transports in one process (a listening class and a client class), driven
 * only by the events API: poll(2) on the contexts' wait fds, HG_Event_ready,
 * HG_Event_progress, HG_Event_trigger.
 *   - RPC + bulk pull from poll(2) alone (every transport)
 *   - handle create callback, input/output offsets with a custom header written
 *     through HG_Get_input_buf / HG_Get_output_buf, payload sizes, extra buffers,
 *     HG_Release_input_buf, counters
 *   - HG_Bulk_bind: a third class pulls from the owner with HG_Bulk_bind_transfer
 *   - HG_Context_unpost, log function and stream, protocol info, string objects
 *   - RPC to self: the respond callback runs before the forward completes
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mercury.h"
#include "mercury_bulk.h"
#include "mercury_macros.h"
#include "mercury_proc_bulk.h"
#include "mercury_proc_string.h"
#include "../test_common.h"
#include "../test_hg_done.h"
#include "../test_log_capture.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BULK_SIZE (256 * 1024)
#define HDR_SIZE 16u /* the custom header reserved by the offsets */
#define LOOP_TIMEOUT 20.0

MERCURY_GEN_PROC(xfer_in_t, ((hg_bulk_t)(bulk))((uint32_t)(seed))((hg_string_t)(tag)))
MERCURY_GEN_PROC(xfer_out_t, ((uint64_t)(sum))((uint32_t)(pulled)))

struct env {
    const char *info;
    hg_class_t *srv, *cli;
    hg_context_t *srv_ctx, *cli_ctx;
    hg_addr_t srv_addr; /* at the client */
    hg_id_t id;
    int created;           /* handle create callback calls */
    int polls;             /* poll(2) calls that returned events */
    hg_size_t srv_in_size; /* input payload size the server saw */
};

/* Run both contexts from poll(2) until *done or the timeout. */
static void event_loop(struct env *env, const int *done)
{
    hg_context_t *ctx[2] = {env->srv_ctx, env->cli_ctx};
    double end = test_now() + LOOP_TIMEOUT;

    while (!*done && test_now() < end) {
        struct pollfd fds[2];
        nfds_t n = 0;
        bool ready = false;
        for (int i = 0; i < 2; i++) {
            if (!ctx[i])
                continue;
            if (HG_Event_ready(ctx[i]))
                ready = true;
            int fd = HG_Event_get_wait_fd(ctx[i]);
            assert_true(fd >= 0);
            fds[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
        }
        if (!ready && poll(fds, n, n ? 100 : 1) > 0)
            env->polls++;
        for (int i = 0; i < 2; i++) {
            if (!ctx[i])
                continue;
            unsigned int queued = 0, ran = 0;
            assert_int_equal(HG_Event_progress(ctx[i], &queued), HG_SUCCESS);
            assert_int_equal(HG_Event_trigger(ctx[i], 16, &ran), HG_SUCCESS);
            assert_true(ran <= queued || queued == 0);
        }
    }
    assert_true(*done);
}

/* ---- server side ---- */

struct pull {
    hg_handle_t handle;
    hg_bulk_t local;
    void *buf;
    uint32_t seed;
};

static hg_return_t pulled_cb(const struct hg_cb_info *info)
{
    struct pull *p = info->arg;
    xfer_out_t out = {.sum = 0, .pulled = info->ret == HG_SUCCESS};

    if (info->ret == HG_SUCCESS && test_check(p->buf, BULK_SIZE, p->seed))
        out.sum = BULK_SIZE;
    /* The custom output header goes first, in the reserved bytes. */
    void *obuf = NULL;
    hg_size_t osize = 0;
    assert_int_equal(HG_Get_output_buf(p->handle, &obuf, &osize), HG_SUCCESS);
    assert_true(osize >= HDR_SIZE);
    memset(obuf, 0xB0, HDR_SIZE);
    assert_int_equal(HG_Respond(p->handle, NULL, NULL, &out), HG_SUCCESS);
    HG_Bulk_free(p->local);
    free(p->buf);
    HG_Destroy(p->handle);
    free(p);
    return HG_SUCCESS;
}

static hg_return_t xfer_rpc(hg_handle_t handle)
{
    const struct hg_info *hgi = HG_Get_info(handle);
    xfer_in_t in;
    void *ibuf = NULL;
    hg_size_t isize = 0;

    /* The client's header is in the reserved bytes of the input. */
    assert_int_equal(HG_Get_input_buf(handle, &ibuf, &isize), HG_SUCCESS);
    assert_true(isize >= HDR_SIZE);
    for (unsigned int i = 0; i < HDR_SIZE; i++)
        assert_int_equal(((unsigned char *)ibuf)[i], 0xA0 + i);
    assert_int_equal(HG_Get_input_payload_size(handle), isize);
    ((struct env *)HG_Get_data(handle))->srv_in_size = isize;
    assert_non_null(HG_Get_data(handle)); /* set by the create callback */
    assert_int_equal(HG_Get_input(handle, &in), HG_SUCCESS);
    assert_string_equal(in.tag, "pull me");

    struct pull *p = calloc(1, sizeof(*p));
    assert_non_null(p);
    p->handle = handle;
    p->seed = in.seed;
    p->buf = malloc(BULK_SIZE);
    hg_size_t size = BULK_SIZE;
    assert_int_equal(
        HG_Bulk_create(hgi->hg_class, 1, &p->buf, &size, HG_BULK_WRITE_ONLY, &p->local),
        HG_SUCCESS);
    assert_int_equal(HG_Bulk_transfer(hgi->context, pulled_cb, p, HG_BULK_PULL, hgi->addr,
                                      in.bulk, 0, p->local, 0, BULK_SIZE,
                                      HG_OP_ID_IGNORE),
                     HG_SUCCESS);
    HG_Free_input(handle, &in);
    /* The input was decoded: it may go now. */
    assert_int_equal(HG_Release_input_buf(handle), HG_SUCCESS);
    assert_int_equal(HG_Get_input_buf(handle, &ibuf, NULL), HG_NOENTRY);
    return HG_SUCCESS;
}

static hg_return_t on_create(hg_handle_t handle, void *arg)
{
    struct env *env = arg;
    env->created++;
    return HG_Set_data(handle, env, NULL);
}

/* ---- setup ---- */

static hg_class_t *class_init(const char *info, bool listen)
{
    hg_class_t *c = HG_Init(info, listen);
    assert_non_null(c);
    assert_int_equal(HG_Class_set_input_offset(c, HDR_SIZE), HG_SUCCESS);
    assert_int_equal(HG_Class_set_output_offset(c, HDR_SIZE), HG_SUCCESS);
    return c;
}

static const char *cur_info; /* transport of the group being run */

static int env_setup(void **state)
{
    struct env *env = calloc(1, sizeof(*env));
    char addr[TEST_ADDR_MAX], cinfo[TEST_ADDR_MAX];
    hg_size_t len = sizeof(addr);
    hg_addr_t self;

    env->info = cur_info;
    env->srv = class_init(env->info, true);
    env->srv_ctx = HG_Context_create(env->srv);
    assert_int_equal(HG_Class_set_handle_create_callback(env->srv, on_create, env),
                     HG_SUCCESS);
    env->id = MERCURY_REGISTER(env->srv, "xfer", xfer_in_t, xfer_out_t, xfer_rpc);
    assert_int_equal(HG_Addr_self(env->srv, &self), HG_SUCCESS);
    assert_int_equal(HG_Addr_to_string(env->srv, addr, &len, self), HG_SUCCESS);
    HG_Addr_free(env->srv, self);
    test_client_info(addr, cinfo, sizeof(cinfo));
    env->cli = class_init(cinfo, false);
    env->cli_ctx = HG_Context_create(env->cli);
    assert_true(MERCURY_REGISTER(env->cli, "xfer", xfer_in_t, xfer_out_t, NULL) ==
                env->id);
    assert_int_equal(HG_Addr_lookup2(env->cli, addr, &env->srv_addr), HG_SUCCESS);
    *state = env;
    return 0;
}

static int env_teardown(void **state)
{
    struct env *env = *state;
    HG_Addr_free(env->cli, env->srv_addr);
    assert_int_equal(HG_Context_destroy(env->cli_ctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(env->cli), HG_SUCCESS);
    assert_int_equal(HG_Context_destroy(env->srv_ctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(env->srv), HG_SUCCESS);
    free(env);
    return 0;
}

/* ---- tests ---- */

/* Progress and trigger both contexts until neither has work: true once both
 * say a program may sleep on their wait fds, false if that does not happen
 * within LOOP_TIMEOUT. */
static bool events_settle(struct env *env)
{
    hg_context_t *ctx[2] = {env->srv_ctx, env->cli_ctx};
    double end = test_now() + LOOP_TIMEOUT;

    while (test_now() < end) {
        if (!HG_Event_ready(ctx[0]) && !HG_Event_ready(ctx[1]))
            return true;
        for (int i = 0; i < 2; i++) {
            assert_int_equal(HG_Event_progress(ctx[i], NULL), HG_SUCCESS);
            assert_int_equal(HG_Event_trigger(ctx[i], 16, NULL), HG_SUCCESS);
        }
    }
    return false;
}

/* One RPC with a bulk pull from poll(2) alone, custom headers both ways,
 * sizes and counters. */
static void rpc_bulk_events(struct env *env)
{
    void *buf = malloc(BULK_SIZE);
    hg_size_t size = BULK_SIZE;
    hg_bulk_t bulk;
    hg_handle_t h;
    struct test_hg_done f = {0};
    struct hg_diag_counters c0, c1;

    assert_int_equal(HG_Class_get_counters(env->cli, &c0), HG_SUCCESS);
    test_fill(buf, BULK_SIZE, 7);
    assert_int_equal(HG_Bulk_create(env->cli, 1, &buf, &size, HG_BULK_READ_ONLY, &bulk),
                     HG_SUCCESS);
    assert_int_equal(HG_Create(env->cli_ctx, env->srv_addr, env->id, &h), HG_SUCCESS);
    void *ibuf = NULL;
    hg_size_t isize = 0;
    assert_int_equal(HG_Get_input_buf(h, &ibuf, &isize), HG_SUCCESS);
    assert_true(isize > HDR_SIZE);
    for (unsigned int i = 0; i < HDR_SIZE; i++)
        ((unsigned char *)ibuf)[i] = (unsigned char)(0xA0 + i);
    xfer_in_t in = {.bulk = bulk, .seed = 7, .tag = (char *)"pull me"};
    assert_int_equal(HG_Forward(h, test_hg_done_cb, &f, &in), HG_SUCCESS);
    event_loop(env, &f.calls);
    assert_int_equal(f.ret, HG_SUCCESS);

    xfer_out_t out;
    void *obuf = NULL, *extra = &out;
    hg_size_t osize = 0, esize = 1;
    assert_int_equal(HG_Get_output_buf(h, &obuf, &osize), HG_SUCCESS);
    for (unsigned int i = 0; i < HDR_SIZE; i++)
        assert_int_equal(((unsigned char *)obuf)[i], 0xB0);
    assert_int_equal(HG_Get_output_payload_size(h), osize);
    assert_int_equal(HG_Get_output_extra_buf(h, &extra, &esize), HG_SUCCESS);
    assert_null(extra);
    assert_int_equal(esize, 0);
    assert_int_equal(HG_Get_output(h, &out), HG_SUCCESS);
    assert_int_equal(out.sum, BULK_SIZE);
    HG_Free_output(h, &out);
    /* What the origin sent is what the target received: header, bulk
     * descriptor, seed, "pull me". */
    assert_true(HG_Get_input_payload_size(h) > HDR_SIZE + 4 + 16);
    assert_int_equal(HG_Get_input_payload_size(h), env->srv_in_size);
    HG_Destroy(h);
    HG_Bulk_free(bulk);
    free(buf);

    assert_int_equal(HG_Class_get_counters(env->cli, &c1), HG_SUCCESS);
    assert_int_equal(c1.rpc_req_sent_count, c0.rpc_req_sent_count + 1);
    assert_int_equal(c1.rpc_resp_recv_count, c0.rpc_resp_recv_count + 1);
    assert_int_equal(HG_Class_get_counters(env->srv, &c1), HG_SUCCESS);
    assert_true(c1.rpc_req_recv_count >= 1 && c1.rpc_resp_sent_count >= 1);
    assert_true(c1.bulk_count >= 1);
    assert_true(env->created >= 1);
}

/* The first RPC wires the connection up while the loop sleeps in poll(2)
 * (a wire-up's deadline is the wait fd's timer, not a reason to spin), the
 * second uses it; after each, both contexts let the program sleep. A second
 * RPC in one process may run start to end without either side idle, so
 * only the first must have slept. */
static void test_rpc_bulk_events(void **state)
{
    struct env *env = *state;
    rpc_bulk_events(env);
    /* Woken from poll(2) by the wait fds. Not over ofi+tcp: rxm refuses
     * sends while it connects, only progress retries them and no fd says
     * when, so HG_Event_ready says yes until the connection is up and the
     * loop does not sleep during the first RPC. Nor over ofi+shm: its wait
     * fd is a timer set to the idle policy, which polls on for
     * HGX_NA_SPIN_US after the last activity, and in one process each step
     * of the RPC follows the last within that window (with the window at 0
     * the loop sleeps 3 times). */
    if (strncmp(env->info, "ofi+tcp", 7) != 0 && strncmp(env->info, "ofi+shm", 7) != 0)
        assert_true(env->polls >= 1);
    assert_true(events_settle(env));
    rpc_bulk_events(env);
    assert_true(events_settle(env));
    HG_Diag_dump_counters();
}

/* A bound handle carries its owner: a class that never looked it up pulls. */
static void test_bulk_bind(void **state)
{
    struct env *env = *state;
    void *buf = malloc(4096), *dst = calloc(1, 4096);
    hg_size_t size = 4096;
    hg_bulk_t owner, remote, local;
    unsigned char desc[1024];
    struct test_hg_done f = {0};

    test_fill(buf, 4096, 3);
    assert_int_equal(HG_Bulk_create(env->srv, 1, &buf, &size, HG_BULK_READ_ONLY, &owner),
                     HG_SUCCESS);
    assert_ptr_equal(HG_Bulk_get_addr(owner), HG_ADDR_NULL);
    assert_int_equal(HG_Bulk_bind(owner, env->srv_ctx), HG_SUCCESS);
    assert_ptr_not_equal(HG_Bulk_get_addr(owner), HG_ADDR_NULL);
    assert_int_equal(HG_Bulk_get_context_id(owner), 0);
    hg_size_t len = HG_Bulk_get_serialize_size(owner, 0);
    assert_true(len <= sizeof(desc));
    assert_int_equal(HG_Bulk_serialize(desc, len, 0, owner), HG_SUCCESS);
    assert_int_equal(HG_Bulk_deserialize(env->cli, &remote, desc, len), HG_SUCCESS);
    assert_ptr_not_equal(HG_Bulk_get_addr(remote), HG_ADDR_NULL);
    /* Cut short, the owner part is refused. */
    hg_bulk_t bad;
    assert_int_equal(HG_Bulk_deserialize(env->cli, &bad, desc, len - 1),
                     HG_PROTOCOL_ERROR);
    assert_int_equal(HG_Bulk_bind(remote, env->cli_ctx), HG_INVALID_ARG);

    assert_int_equal(HG_Bulk_create(env->cli, 1, &dst, &size, HG_BULK_WRITE_ONLY, &local),
                     HG_SUCCESS);
    assert_int_equal(HG_Bulk_bind_transfer(env->cli_ctx, test_hg_done_cb, &f,
                                           HG_BULK_PULL, local, 0, local, 0, 16,
                                           HG_OP_ID_IGNORE),
                     HG_INVALID_ARG); /* not bound */
    assert_int_equal(HG_Bulk_bind_transfer(env->cli_ctx, test_hg_done_cb, &f,
                                           HG_BULK_PULL, remote, 0, local, 0, 4096,
                                           HG_OP_ID_IGNORE),
                     HG_SUCCESS);
    event_loop(env, &f.calls);
    assert_int_equal(f.ret, HG_SUCCESS);
    assert_true(test_check(dst, 4096, 3));
    HG_Bulk_free(local);
    HG_Bulk_free(remote);
    HG_Bulk_free(owner);
    free(buf);
    free(dst);
}

/* After HG_Context_unpost the server takes no request: the forward is cancelled. */
static void test_context_unpost(void **state)
{
    struct env *env = *state;
    hg_handle_t h;
    struct test_hg_done f = {0};

    assert_int_equal(HG_Context_unpost(env->srv_ctx), HG_SUCCESS);
    assert_int_equal(HG_Context_unpost(env->srv_ctx), HG_SUCCESS); /* again: no-op */
    struct hg_diag_counters c0, c1;
    assert_int_equal(HG_Class_get_counters(env->srv, &c0), HG_SUCCESS);
    assert_int_equal(HG_Create(env->cli_ctx, env->srv_addr, env->id, &h), HG_SUCCESS);
    xfer_in_t in = {.bulk = HG_BULK_NULL, .seed = 0, .tag = (char *)"x"};
    assert_int_equal(HG_Forward(h, test_hg_done_cb, &f, &in), HG_SUCCESS);
    double end = test_now() + 1.0;
    while (test_now() < end) { /* one second of progress on both sides */
        HG_Progress(env->srv_ctx, 10);
        HG_Trigger(env->srv_ctx, 0, 16, NULL);
        HG_Progress(env->cli_ctx, 10);
        HG_Trigger(env->cli_ctx, 0, 16, NULL);
    }
    assert_int_equal(f.calls, 0);
    assert_int_equal(HG_Class_get_counters(env->srv, &c1), HG_SUCCESS);
    assert_int_equal(c1.rpc_req_recv_count, c0.rpc_req_recv_count);
    assert_int_equal(HG_Cancel(h), HG_SUCCESS);
    event_loop(env, &f.calls);
    assert_int_equal(f.ret, HG_CANCELED);
    HG_Destroy(h);
}

static const struct CMUnitTest transport_tests[] = {
    cmocka_unit_test(test_rpc_bulk_events), cmocka_unit_test(test_bulk_bind),
    cmocka_unit_test(test_context_unpost), /* last: the server stops listening */
};

/* ---- transport-free ---- */

static void test_log_func_stream(void **state)
{
    (void)state;
    char *mem = NULL;
    size_t mem_len = 0;
    FILE *f = open_memstream(&mem, &mem_len);
    assert_non_null(f);

    HG_Set_log_level("error");
    HG_Set_log_stream("error", f);
    (void)HG_Init("nosuchplugin+tcp", HG_FALSE); /* logs an error */
    fflush(f);
    assert_non_null(strstr(mem, "nosuchplugin"));
    test_log_capture_reset();
    HG_Set_log_func(test_log_capture);
    (void)HG_Init("nosuchplugin+again", HG_FALSE);
    assert_non_null(strstr(test_log_captured(), "nosuchplugin+again"));
    HG_Set_log_func(NULL);
    HG_Set_log_stream("error", NULL);
    HG_Set_log_stream("bogus", f); /* refused with a log line, nothing changes */
    fclose(f);
    free(mem);
}

static void test_protocol_info(void **state)
{
    (void)state;
    struct na_protocol_info *list = NULL;
    assert_int_equal(HG_Get_na_protocol_info("ofi+tcp", &list), HG_SUCCESS);
    assert_non_null(list);
    assert_string_equal(list->class_name, "ofi");
    HG_Free_na_protocol_info(list);
    HG_Free_na_protocol_info(NULL);
}

static void test_string_object(void **state)
{
    (void)state;
    hg_string_object_t a, b;
    hg_class_t *c = HG_Init("ofi+tcp://127.0.0.1", HG_FALSE);
    hg_proc_t proc;
    char buf[64];

    assert_non_null(c);
    assert_int_equal(hg_string_object_init_const_char(&a, "hello", HG_FALSE), HG_SUCCESS);
    assert_true(a.is_const && !a.is_owned);
    assert_int_equal(hg_string_object_dup(a, &b), HG_SUCCESS);
    assert_true(b.is_owned && b.data != a.data);
    assert_string_equal(b.data, "hello");
    char *old = hg_string_object_swap(&b, strdup("world"));
    assert_string_equal(old, "hello");
    free(old);
    assert_int_equal(hg_proc_create_set(c, buf, sizeof(buf), HG_ENCODE, HG_NOHASH, &proc),
                     HG_SUCCESS);
    assert_null(hg_proc_get_xdr_ptr(proc));
    assert_int_equal(hg_proc_hg_string_object_t(proc, &b), HG_SUCCESS);
    assert_int_equal(hg_proc_get_size_used(proc), 8 + 6 + 2);
    assert_int_equal(hg_string_object_free(&b), HG_SUCCESS);
    assert_null(b.data);
    hg_proc_reset(proc, buf, sizeof(buf), HG_DECODE);
    assert_int_equal(hg_proc_hg_string_object_t(proc, &b), HG_SUCCESS);
    assert_string_equal(b.data, "world");
    assert_true(b.is_owned);
    hg_proc_reset(proc, NULL, 0, HG_FREE);
    assert_int_equal(hg_proc_hg_string_object_t(proc, &b), HG_SUCCESS);
    assert_null(b.data);
    hg_proc_free(proc);
    assert_int_equal(HG_Finalize(c), HG_SUCCESS);
}

/* ---- self RPC order ---- */

static int order[4], order_n;

static hg_return_t self_resp_cb(const struct hg_cb_info *info)
{
    (void)info;
    order[order_n++] = 1;
    return HG_SUCCESS;
}

static hg_return_t self_fwd_cb(const struct hg_cb_info *info)
{
    (void)info;
    order[order_n++] = 2;
    return HG_SUCCESS;
}

static hg_return_t self_rpc(hg_handle_t handle)
{
    xfer_out_t out = {.sum = 1, .pulled = 0};
    HG_Respond(handle, self_resp_cb, NULL, &out);
    HG_Destroy(handle);
    return HG_SUCCESS;
}

static void test_self_order(void **state)
{
    (void)state;
    hg_class_t *c = HG_Init("ofi+tcp://127.0.0.1", HG_TRUE);
    assert_non_null(c);
    hg_context_t *ctx = HG_Context_create(c);
    hg_id_t id = MERCURY_REGISTER(c, "self_xfer", xfer_in_t, xfer_out_t, self_rpc);
    hg_addr_t self;
    hg_handle_t h;
    assert_int_equal(HG_Addr_self(c, &self), HG_SUCCESS);
    assert_int_equal(HG_Create(ctx, self, id, &h), HG_SUCCESS);
    xfer_in_t in = {.bulk = HG_BULK_NULL, .seed = 0, .tag = (char *)"self"};
    assert_int_equal(HG_Forward(h, self_fwd_cb, NULL, &in), HG_SUCCESS);
    assert_int_equal(HG_Get_input_payload_size(h),
                     8 + 4 + 8 + 5 + 2); /* no offset: self */
    for (int i = 0; i < 100 && order_n < 2; i++) {
        HG_Trigger(ctx, 0, 1, NULL);
        HG_Progress(ctx, 10);
    }
    assert_int_equal(order_n, 2);
    assert_int_equal(order[0], 1); /* respond callback first, as in Mercury */
    assert_int_equal(order[1], 2);
    HG_Destroy(h);
    HG_Addr_free(c, self);
    assert_int_equal(HG_Context_destroy(ctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(c), HG_SUCCESS);
}

/* ---- the target's view of the origin's context ---- */

static int seen_context_id = -1;

static hg_return_t ctxid_rpc(hg_handle_t handle)
{
    seen_context_id = HG_Get_info(handle)->context_id;
    HG_Respond(handle, NULL, NULL, NULL);
    HG_Destroy(handle);
    return HG_SUCCESS;
}

/* One RPC from ctx to addr; progresses ctx and, if not NULL, other. The
 * context id the handler saw. */
static int ctxid_call(hg_context_t *ctx, hg_context_t *other, hg_addr_t addr, hg_id_t id)
{
    struct test_hg_done st = {0, HG_OTHER_ERROR};
    hg_handle_t h;

    seen_context_id = -1;
    assert_int_equal(HG_Create(ctx, addr, id, &h), HG_SUCCESS);
    assert_int_equal(HG_Forward(h, test_hg_done_cb, &st, NULL), HG_SUCCESS);
    for (double end = test_now() + LOOP_TIMEOUT; st.calls == 0 && test_now() < end;) {
        HG_Progress(ctx, 1);
        HG_Trigger(ctx, 0, 8, NULL);
        if (other) {
            HG_Progress(other, 1);
            HG_Trigger(other, 0, 8, NULL);
        }
    }
    assert_int_equal(st.calls, 1);
    assert_int_equal(st.ret, HG_SUCCESS);
    HG_Destroy(h);
    return seen_context_id;
}

/* HG_Get_info of a handle that runs at the target names the origin's
 * context, as Mercury's: a handler passes it on to HG_Bulk_transfer_id. */
static void test_target_context_id(void **state)
{
    (void)state;
    struct hg_init_info hii = HG_INIT_INFO_INITIALIZER;
    hii.na_init_info.max_contexts = 2;
    hg_class_t *srv = HG_Init_opt("ofi+tcp://127.0.0.1", HG_TRUE, &hii);
    hg_class_t *cli = HG_Init_opt("ofi+tcp://127.0.0.1", HG_FALSE, &hii);
    assert_non_null(srv);
    assert_non_null(cli);
    hg_context_t *sctx = HG_Context_create(srv), *sctx1 = HG_Context_create_id(srv, 1);
    hg_context_t *cctx1 = HG_Context_create_id(cli, 1);
    assert_non_null(sctx);
    assert_non_null(sctx1);
    assert_non_null(cctx1);
    hg_id_t id = MERCURY_REGISTER(srv, "ctxid", void, void, ctxid_rpc);
    assert_int_equal(MERCURY_REGISTER(cli, "ctxid", void, void, NULL), id);
    char name[256];
    hg_size_t len = sizeof(name);
    hg_addr_t self, remote;
    assert_int_equal(HG_Addr_self(srv, &self), HG_SUCCESS);
    assert_int_equal(HG_Addr_to_string(srv, name, &len, self), HG_SUCCESS);
    assert_int_equal(HG_Addr_lookup2(cli, name, &remote), HG_SUCCESS);

    /* from the client's context 1 to the server's context 0 */
    assert_int_equal(ctxid_call(cctx1, sctx, remote, id), 1);
    /* to itself, from context 1 */
    assert_int_equal(ctxid_call(sctx1, sctx, self, id), 1);
    /* to itself, from context 0 */
    assert_int_equal(ctxid_call(sctx, NULL, self, id), 0);

    HG_Addr_free(cli, remote);
    HG_Addr_free(srv, self);
    assert_int_equal(HG_Context_destroy(cctx1), HG_SUCCESS);
    assert_int_equal(HG_Context_destroy(sctx1), HG_SUCCESS);
    assert_int_equal(HG_Context_destroy(sctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(cli), HG_SUCCESS);
    assert_int_equal(HG_Finalize(srv), HG_SUCCESS);
}

int main(void)
{
    const char *const *transports;
    size_t n = test_transports(&transports);
    int failed = 0;

    const struct CMUnitTest local_tests[] = {
        cmocka_unit_test(test_log_func_stream),   cmocka_unit_test(test_protocol_info),
        cmocka_unit_test(test_string_object),     cmocka_unit_test(test_self_order),
        cmocka_unit_test(test_target_context_id),
    };
    failed |= cmocka_run_group_tests_name("compat-local", local_tests, NULL, NULL);
    /* The mpi+ plugin needs mpirun (mpitests/test_hg_events_mpi.c). */
    failed |= test_run_groups(
        "api_extra", transports, n, "mpi", &cur_info, transport_tests,
        sizeof(transport_tests) / sizeof(*transport_tests), env_setup, env_teardown);
    return failed;
}
