/*
 * test_self_rpc.c -- an RPC to the process's own address runs its handler on
 * the forwarded handle, as in Mercury, and a target looks an RPC up when it
 * runs the handler, not when the request arrives.
 *
 *   - the handler gets the very handle that was forwarded: its HG_Get_data,
 *     its reference count (Margo counts the destroy that sees a count of 1:
 *     exactly one of the handler's and the origin's destroys does), input
 *     and output decoded on the one handle; a second HG_Respond is refused
 *   - a forward to self cancelled before its handler ran ends with
 *     HG_CANCELED; the handler still runs and its respond callback too
 *   - an RPC deregistered between the request's arrival and HG_Trigger is
 *     answered with HG_NOENTRY (remote and self), without running the handler
 *   - an RPC the target does not know is logged as a warning, not an error
 *     (Mercury's test driver fails a run whose output says "error")
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mercury.h"
#include "mercury_macros.h"
#include "../test_common.h"
#include "../test_hg_done.h"
#include "../test_log_capture.h"

#include <stdio.h>
#include <string.h>

#define LOOP_TIMEOUT 20.0

MERCURY_GEN_PROC(num_t, ((int32_t)(x)))

static hg_handle_t seen_handle;
static void *seen_data;
static int seen_input;
static int handler_runs, resp_calls, ref_one_destroys;
static bool respond_twice;

/* Margo's margo_destroy: the destroy that sees a count of 1 is the last. */
static void counted_destroy(hg_handle_t h)
{
    if (HG_Ref_get(h) == 1)
        ref_one_destroys++;
    HG_Destroy(h);
}

static hg_return_t resp_cb(const struct hg_cb_info *info)
{
    (void)info;
    resp_calls++;
    return HG_SUCCESS;
}

/* Doubles its input; takes and drops an extra reference as Margo's wrapper. */
static hg_return_t double_rpc(hg_handle_t h)
{
    num_t in, out;

    handler_runs++;
    seen_handle = h;
    seen_data = HG_Get_data(h);
    HG_Ref_incr(h);
    assert_int_equal(HG_Get_input(h, &in), HG_SUCCESS);
    seen_input = in.x;
    out.x = 2 * in.x;
    assert_int_equal(HG_Respond(h, resp_cb, NULL, &out), HG_SUCCESS);
    if (respond_twice) /* a forward to self takes one answer */
        assert_int_equal(HG_Respond(h, resp_cb, NULL, &out), HG_INVALID_ARG);
    HG_Free_input(h, &in);
    counted_destroy(h);
    counted_destroy(h);
    return HG_SUCCESS;
}

struct env {
    hg_class_t *cls;
    hg_context_t *ctx;
    hg_addr_t self;
    hg_id_t id;
};

static int setup(void **state)
{
    static struct env env;
    env.cls = HG_Init("ofi+tcp://127.0.0.1", HG_TRUE);
    assert_non_null(env.cls);
    env.ctx = HG_Context_create(env.cls);
    assert_non_null(env.ctx);
    env.id = MERCURY_REGISTER(env.cls, "self_double", num_t, num_t, double_rpc);
    assert_int_equal(HG_Addr_self(env.cls, &env.self), HG_SUCCESS);
    handler_runs = resp_calls = ref_one_destroys = 0;
    respond_twice = false;
    seen_handle = HG_HANDLE_NULL;
    seen_data = NULL;
    *state = &env;
    return 0;
}

static int teardown(void **state)
{
    struct env *env = *state;
    HG_Addr_free(env->cls, env->self);
    assert_int_equal(HG_Context_destroy(env->ctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(env->cls), HG_SUCCESS);
    return 0;
}

static void loop(hg_context_t *ctx, hg_context_t *other, const int *done)
{
    for (double end = test_now() + LOOP_TIMEOUT; *done == 0 && test_now() < end;) {
        HG_Trigger(ctx, 0, 8, NULL);
        HG_Progress(ctx, 1);
        if (other) {
            HG_Trigger(other, 0, 8, NULL);
            HG_Progress(other, 1);
        }
    }
}

/* Create a handle to this process and forward x to it. */
static hg_handle_t forward_self(struct env *env, int32_t x, struct test_hg_done *st)
{
    hg_handle_t h;
    num_t in = {.x = x};

    assert_int_equal(HG_Create(env->ctx, env->self, env->id, &h), HG_SUCCESS);
    assert_int_equal(HG_Forward(h, test_hg_done_cb, st, &in), HG_SUCCESS);
    return h;
}

static void test_same_handle(void **state)
{
    struct env *env = *state;
    struct test_hg_done st = {0, HG_OTHER_ERROR};
    static int mark;
    hg_handle_t h;

    assert_int_equal(HG_Create(env->ctx, env->self, env->id, &h), HG_SUCCESS);
    assert_int_equal(HG_Set_data(h, &mark, NULL), HG_SUCCESS);
    respond_twice = true;
    num_t in = {.x = 21}, out;
    assert_int_equal(HG_Forward(h, test_hg_done_cb, &st, &in), HG_SUCCESS);
    loop(env->ctx, NULL, &st.calls);
    assert_int_equal(st.ret, HG_SUCCESS);
    assert_int_equal(handler_runs, 1);
    assert_ptr_equal(seen_handle, h);
    assert_ptr_equal(seen_data, &mark);
    assert_int_equal(seen_input, 21);
    assert_int_equal(resp_calls, 1);
    assert_int_equal(HG_Get_output(h, &out), HG_SUCCESS);
    assert_int_equal(out.x, 42);
    HG_Free_output(h, &out);
    /* the handler's two destroys saw more than one reference */
    assert_int_equal(ref_one_destroys, 0);
    counted_destroy(h);
    assert_int_equal(ref_one_destroys, 1);
}

static void test_cancel_before_handler(void **state)
{
    struct env *env = *state;
    struct test_hg_done st = {0, HG_OTHER_ERROR};
    hg_handle_t h = forward_self(env, 1, &st);

    assert_int_equal(HG_Cancel(h), HG_SUCCESS);
    loop(env->ctx, NULL, &st.calls);
    assert_int_equal(st.ret, HG_CANCELED);
    /* The handler was already on its way: it runs and its answer is kept
     * from the cancelled forward. */
    for (int i = 0; i < 100 && resp_calls == 0; i++) {
        HG_Trigger(env->ctx, 0, 8, NULL);
        HG_Progress(env->ctx, 1);
    }
    assert_int_equal(handler_runs, 1);
    assert_int_equal(resp_calls, 1);
    assert_int_equal(st.calls, 1);
    counted_destroy(h);
    assert_int_equal(ref_one_destroys, 1);
}

static void test_deregistered_self(void **state)
{
    struct env *env = *state;
    struct test_hg_done st = {0, HG_OTHER_ERROR};
    hg_handle_t h = forward_self(env, 1, &st);

    assert_int_equal(HG_Deregister(env->cls, env->id), HG_SUCCESS);
    loop(env->ctx, NULL, &st.calls);
    assert_int_equal(st.ret, HG_NOENTRY);
    assert_int_equal(handler_runs, 0);
    HG_Destroy(h);
}

/* One RPC from a client class; the server deregisters the id after the
 * request arrived (when deregister is set) and before HG_Trigger. */
static hg_return_t remote_call(struct env *env, hg_id_t id, bool deregister)
{
    hg_class_t *cli = HG_Init("ofi+tcp://127.0.0.1", HG_FALSE);
    assert_non_null(cli);
    hg_context_t *cctx = HG_Context_create(cli);
    assert_non_null(cctx);
    assert_int_equal(MERCURY_REGISTER(cli, "self_double", num_t, num_t, NULL), env->id);
    char name[256];
    hg_size_t len = sizeof(name);
    hg_addr_t srv;
    assert_int_equal(HG_Addr_to_string(env->cls, name, &len, env->self), HG_SUCCESS);
    assert_int_equal(HG_Addr_lookup2(cli, name, &srv), HG_SUCCESS);
    struct test_hg_done st = {0, HG_OTHER_ERROR};
    hg_handle_t h;
    assert_int_equal(HG_Create(cctx, srv, id, &h), HG_SUCCESS);
    num_t in = {.x = 5};
    assert_int_equal(HG_Forward(h, test_hg_done_cb, &st, &in), HG_SUCCESS);
    if (deregister) {
        /* progress the server without triggering until the request is in */
        struct hg_diag_counters c = {0};
        for (double end = test_now() + LOOP_TIMEOUT;
             c.rpc_req_recv_count == 0 && test_now() < end;) {
            HG_Progress(cctx, 0);
            HG_Progress(env->ctx, 1);
            assert_int_equal(HG_Class_get_counters(env->cls, &c), HG_SUCCESS);
        }
        assert_int_equal(c.rpc_req_recv_count, 1);
        assert_int_equal(HG_Deregister(env->cls, env->id), HG_SUCCESS);
    }
    loop(cctx, env->ctx, &st.calls);
    HG_Destroy(h);
    HG_Addr_free(cli, srv);
    assert_int_equal(HG_Context_destroy(cctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(cli), HG_SUCCESS);
    return st.calls == 1 ? st.ret : HG_OTHER_ERROR;
}

static void test_deregistered_remote(void **state)
{
    struct env *env = *state;
    assert_int_equal(remote_call(env, env->id, true), HG_NOENTRY);
    assert_int_equal(handler_runs, 0);
}

static void test_unknown_is_warning(void **state)
{
    struct env *env = *state;
    test_log_capture_reset();
    HG_Set_log_func(test_log_capture);
    HG_Set_log_level("warning");
    assert_int_equal(HG_Deregister(env->cls, env->id), HG_SUCCESS);
    hg_return_t ret = remote_call(env, env->id, false);
    HG_Set_log_level("error");
    HG_Set_log_func(NULL);
    assert_int_equal(ret, HG_NOENTRY);
    const char *logged = test_log_captured();
    print_message("logged: %s", logged);
    assert_non_null(strstr(logged, "no handler registered for RPC"));
    assert_null(strstr(logged, "error"));
    assert_null(strstr(logged, "failed"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_same_handle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_before_handler, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deregistered_self, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deregistered_remote, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_is_warning, setup, teardown),
    };
    return cmocka_run_group_tests_name("self_rpc", tests, NULL, NULL);
}
