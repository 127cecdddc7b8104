/*
 * test_margo.c -- the Mercury behaviours Margo (Mochi's layer over Mercury)
 * and Mercury's own test programs rely on, asserted over every transport with a
 * listening class and a client class in one process.
 *
 *   - address calls: their answers to NULL arguments, the size query of
 *     HG_Addr_to_string, lookups of malformed names
 *   - registration: HG_Registered of an unknown id, registering an id again
 *     (its data is kept), the data's free callback at HG_Deregister
 *   - Margo's handle cache: HG_Create with id 0, HG_Set_data, HG_Reset to the
 *     RPC and again to the handle's own address; the data stays; reference
 *     counts
 *   - Margo's serializer: a header before the user's struct; the header alone
 *     decoded first (input and output), then the whole; an error code in the
 *     output header sent with a NULL respond callback
 *   - an RPC the target does not know (HG_NOENTRY), a deregistered id, an RPC
 *     canceled while the target holds it (HG_CANCELED), a response disabled on
 *     both sides
 *   - a target id a plain client sets (HG_Set_target_id) reaching that
 *     context of a server with two, and any id reaching the one context of
 *     a server with one
 *   - an idle HG_Progress (HG_TIMEOUT) and HG_Trigger (nothing run)
 *   - a lookup of a peer that is not there (a port nobody listens on, a shm
 *     process that does not exist) succeeds and the first forward fails by
 *     itself, within Margo's 2 s, with an error that is not HG_TIMEOUT
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mercury.h"
#include "mercury_bulk.h"
#include "mercury_macros.h"
#include "mercury_proc_string.h"
#include "../test_common.h"
#include "../test_hg_done.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOOP_TIMEOUT 20.0

MERCURY_GEN_PROC(pair_t, ((int64_t)(x))((hg_string_t)(s)))

/* Margo's wire format: a fixed header, then the user's struct if any. */
struct in_hdr {
    uint64_t parent_rpc_id;
};
struct out_hdr {
    int32_t hg_ret;
};
struct in_args {
    struct in_hdr header;
    hg_proc_cb_t user_cb;
    void *user_args;
};
struct out_args {
    struct out_hdr header;
    hg_proc_cb_t user_cb;
    void *user_args;
};

static hg_return_t in_proc(hg_proc_t proc, void *arg)
{
    struct in_args *a = arg;
    hg_return_t ret = hg_proc_memcpy(proc, &a->header, sizeof(a->header));
    if (ret != HG_SUCCESS || !a->user_cb)
        return ret;
    return a->user_cb(proc, a->user_args);
}

static hg_return_t out_proc(hg_proc_t proc, void *arg)
{
    struct out_args *a = arg;
    hg_return_t ret = hg_proc_memcpy(proc, &a->header, sizeof(a->header));
    if (ret != HG_SUCCESS || !a->user_cb)
        return ret;
    return a->user_cb(proc, a->user_args);
}

#define PARENT_ID UINT64_C(0x1122334455667788)

struct env {
    const char *info;
    hg_class_t *srv, *cli;
    hg_context_t *srv_ctx, *srv_ctx1, *cli_ctx;
    hg_addr_t srv_addr; /* at the client */
    char addr_str[TEST_ADDR_MAX];
    hg_id_t echo_id, hold_id;
    int dropped;            /* requests the server dropped unanswered */
    int handled;            /* echo requests the server handled */
    hg_context_t *last_ctx; /* context that handled the last one */
};

/* ---- progress ---- */

static void progress_ctx(hg_context_t *ctx)
{
    unsigned int n;
    if (!ctx)
        return;
    HG_Progress(ctx, 0);
    do
        n = 0;
    while (HG_Trigger(ctx, 0, 16, &n) == HG_SUCCESS && n > 0);
}

static void loop_until(struct env *env, const int *done)
{
    double end = test_now() + LOOP_TIMEOUT;
    while (!*done && test_now() < end) {
        progress_ctx(env->srv_ctx);
        progress_ctx(env->srv_ctx1);
        progress_ctx(env->cli_ctx);
    }
    assert_true(*done);
}

/* ---- server side ---- */

static hg_return_t destroy_on_respond(const struct hg_cb_info *info)
{
    HG_Destroy(info->info.respond.handle);
    return HG_SUCCESS;
}

/* A Margo handler: the parent id first (header only), then the whole input. */
static hg_return_t echo_rpc(hg_handle_t handle)
{
    const struct hg_info *hgi = HG_Get_info(handle);
    struct env *env = HG_Registered_data(hgi->hg_class, hgi->id);
    struct in_args peek = {.user_cb = NULL};
    pair_t in = {0};
    struct in_args full = {.user_cb = hg_proc_pair_t, .user_args = &in};

    assert_non_null(env);
    assert_int_equal(HG_Get_input(handle, &peek), HG_SUCCESS);
    assert_true(peek.header.parent_rpc_id == PARENT_ID);
    assert_int_equal(HG_Free_input(handle, &peek), HG_SUCCESS);
    assert_int_equal(HG_Get_input(handle, &full), HG_SUCCESS);
    assert_true(full.header.parent_rpc_id == PARENT_ID);
    env->handled++;
    env->last_ctx = hgi->context;

    if (in.x < 0) {
        /* Margo's error answer: the header alone, no respond callback. */
        struct out_args err = {.header = {.hg_ret = HG_AGAIN}};
        assert_int_equal(HG_Free_input(handle, &full), HG_SUCCESS);
        assert_int_equal(HG_Respond(handle, NULL, NULL, &err), HG_SUCCESS);
        HG_Destroy(handle);
        return HG_SUCCESS;
    }
    pair_t out = {.x = in.x + 1, .s = in.s};
    struct out_args oargs = {
        .header = {.hg_ret = HG_SUCCESS}, .user_cb = hg_proc_pair_t, .user_args = &out};
    assert_int_equal(HG_Respond(handle, destroy_on_respond, NULL, &oargs), HG_SUCCESS);
    assert_int_equal(HG_Free_input(handle, &full), HG_SUCCESS);
    return HG_SUCCESS;
}

/* Drops the request unanswered as Mercury's cancel test does: a second
 * reference is held while a response is owed, so the handle goes with the
 * second HG_Destroy. */
static hg_return_t hold_rpc(hg_handle_t handle)
{
    const struct hg_info *hgi = HG_Get_info(handle);
    struct env *env = HG_Registered_data(hgi->hg_class, hgi->id);
    assert_int_equal(HG_Ref_get(handle), 2);
    assert_int_equal(HG_Destroy(handle), HG_SUCCESS);
    assert_int_equal(HG_Destroy(handle), HG_SUCCESS);
    env->dropped++;
    return HG_SUCCESS;
}

/* ---- setup ---- */

static const char *cur_info;
static bool cur_busy; /* NA_NO_BLOCK on both classes (Mercury's --busy runs) */

static int env_setup(void **state)
{
    struct env *env = calloc(1, sizeof(*env));
    char cinfo[TEST_ADDR_MAX];
    hg_size_t len = sizeof(env->addr_str);
    hg_addr_t self;
    struct hg_init_info hii = HG_INIT_INFO_INITIALIZER;

    assert_non_null(env);
    char banner[TEST_ADDR_MAX + 32];
    env->info = cur_info;
    snprintf(banner, sizeof(banner), "%s%s", env->info, cur_busy ? " (NA_NO_BLOCK)" : "");
    test_group_banner(banner);
    /* The server serves two contexts; the client is a plain HG_Init (or busy
     * polling only). */
    hii.na_init_info.max_contexts = 2;
    hii.na_init_info.progress_mode = cur_busy ? NA_NO_BLOCK : 0;
    env->srv = HG_Init_opt(env->info, HG_TRUE, &hii);
    assert_non_null(env->srv);
    env->srv_ctx = HG_Context_create(env->srv);
    env->srv_ctx1 = HG_Context_create_id(env->srv, 1);
    assert_non_null(env->srv_ctx);
    assert_non_null(env->srv_ctx1);
    env->echo_id = HG_Register_name(env->srv, "echo", in_proc, out_proc, echo_rpc);
    env->hold_id = HG_Register_name(env->srv, "hold", in_proc, out_proc, hold_rpc);
    assert_int_equal(HG_Register_data(env->srv, env->echo_id, env, NULL), HG_SUCCESS);
    assert_int_equal(HG_Register_data(env->srv, env->hold_id, env, NULL), HG_SUCCESS);
    assert_int_equal(HG_Addr_self(env->srv, &self), HG_SUCCESS);
    assert_int_equal(HG_Addr_to_string(env->srv, env->addr_str, &len, self), HG_SUCCESS);
    HG_Addr_free(env->srv, self);

    test_client_info(env->addr_str, cinfo, sizeof(cinfo));
    struct hg_init_info cii = HG_INIT_INFO_INITIALIZER;
    cii.na_init_info.progress_mode = hii.na_init_info.progress_mode;
    env->cli = cur_busy ? HG_Init_opt(cinfo, HG_FALSE, &cii) : HG_Init(cinfo, HG_FALSE);
    assert_non_null(env->cli);
    env->cli_ctx = HG_Context_create(env->cli);
    assert_non_null(env->cli_ctx);
    assert_true(HG_Register_name(env->cli, "echo", in_proc, out_proc, NULL) ==
                env->echo_id);
    assert_true(HG_Register_name(env->cli, "hold", in_proc, out_proc, NULL) ==
                env->hold_id);
    assert_int_equal(HG_Addr_lookup2(env->cli, env->addr_str, &env->srv_addr),
                     HG_SUCCESS);
    *state = env;
    return 0;
}

static int env_teardown(void **state)
{
    struct env *env = *state;
    /* Respond callbacks may still be queued on the server's contexts. */
    for (double end = test_now() + 0.5; test_now() < end;) {
        progress_ctx(env->srv_ctx);
        progress_ctx(env->srv_ctx1);
        progress_ctx(env->cli_ctx);
    }
    HG_Addr_free(env->cli, env->srv_addr);
    assert_int_equal(HG_Context_destroy(env->cli_ctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(env->cli), HG_SUCCESS);
    assert_int_equal(HG_Context_destroy(env->srv_ctx1), HG_SUCCESS);
    assert_int_equal(HG_Context_destroy(env->srv_ctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(env->srv), HG_SUCCESS);
    free(env);
    return 0;
}

/* ---- client side ---- */

static hg_return_t fwd_cb(const struct hg_cb_info *info)
{
    assert_int_equal(info->type, HG_CB_FORWARD);
    return test_hg_done_cb(info);
}

static hg_return_t forward_wait(struct env *env, hg_handle_t h, int64_t x)
{
    pair_t in = {.x = x, .s = (hg_string_t) "margo"};
    struct in_args args = {.header = {.parent_rpc_id = PARENT_ID},
                           .user_cb = hg_proc_pair_t,
                           .user_args = &in};
    struct test_hg_done f = {0};
    hg_return_t ret = HG_Forward(h, fwd_cb, &f, &args);
    if (ret != HG_SUCCESS)
        return ret;
    loop_until(env, &f.calls);
    return f.ret;
}

/* Margo's check_error_in_output: the header alone, then freed. */
static int32_t output_header(hg_handle_t h)
{
    struct out_args peek = {.user_cb = NULL};
    const struct hg_info *hgi = HG_Get_info(h);
    hg_bool_t disabled = HG_TRUE;

    assert_int_equal(HG_Registered_disabled_response(hgi->hg_class, hgi->id, &disabled),
                     HG_SUCCESS);
    assert_false(disabled);
    assert_int_equal(HG_Get_output(h, &peek), HG_SUCCESS);
    assert_int_equal(HG_Free_output(h, &peek), HG_SUCCESS);
    return peek.header.hg_ret;
}

static int data_freed;
static void count_free(void *arg)
{
    (void)arg;
    data_freed++;
}

/* The handle cache: id 0, data, HG_Reset twice, the whole exchange. */
static void test_handle_cache(void **state)
{
    struct env *env = *state;
    hg_handle_t h = HG_HANDLE_NULL;
    static int data;

    assert_int_equal(HG_Create(env->cli_ctx, HG_ADDR_NULL, 0, &h), HG_SUCCESS);
    assert_int_equal(HG_Set_data(h, &data, NULL), HG_SUCCESS);
    assert_int_equal(HG_Reset(h, env->srv_addr, env->echo_id), HG_SUCCESS);
    assert_ptr_equal(HG_Get_data(h), &data);
    /* Margo resets again to the id with the provider, to the handle's own address. */
    const struct hg_info *hgi = HG_Get_info(h);
    assert_true(hgi->id == env->echo_id);
    assert_int_equal(HG_Reset(h, hgi->addr, env->echo_id), HG_SUCCESS);
    assert_ptr_equal(HG_Get_data(h), &data);
    assert_true(HG_Addr_cmp(env->cli, HG_Get_info(h)->addr, env->srv_addr));

    assert_int_equal(forward_wait(env, h, 41), HG_SUCCESS);
    /* Margo's timer may fire after the forward completed: a no-op. */
    assert_int_equal(HG_Cancel(h), HG_SUCCESS);
    assert_int_equal(output_header(h), HG_SUCCESS);
    pair_t out = {0};
    struct out_args full = {.user_cb = hg_proc_pair_t, .user_args = &out};
    assert_int_equal(HG_Get_output(h, &full), HG_SUCCESS);
    assert_true(out.x == 42);
    assert_string_equal(out.s, "margo");
    assert_int_equal(HG_Free_output(h, &full), HG_SUCCESS);

    /* The error code in the header, answered with a NULL respond callback. */
    assert_int_equal(forward_wait(env, h, -1), HG_SUCCESS);
    assert_int_equal(output_header(h), HG_AGAIN);

    /* Reference counts as margo_destroy reads them. */
    assert_int_equal(HG_Ref_get(h), 1);
    assert_int_equal(HG_Ref_incr(h), HG_SUCCESS);
    assert_int_equal(HG_Ref_get(h), 2);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
    assert_int_equal(HG_Ref_get(h), 1);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
    assert_int_equal(env->handled, 2);
}

/* Address calls with NULL and malformed arguments, as Margo's tests pass them. */
static void test_addr_args(void **state)
{
    struct env *env = *state;
    hg_addr_t self = HG_ADDR_NULL, dup = HG_ADDR_NULL, a = HG_ADDR_NULL;
    char buf[TEST_ADDR_MAX];
    hg_size_t size = 0;

    assert_int_equal(HG_Addr_self(env->srv, NULL), HG_INVALID_ARG);
    assert_int_equal(HG_Addr_self(env->srv, &self), HG_SUCCESS);
    assert_int_equal(HG_Addr_free(env->srv, HG_ADDR_NULL), HG_SUCCESS);
    assert_int_equal(HG_Addr_dup(env->srv, self, NULL), HG_INVALID_ARG);
    assert_int_equal(HG_Addr_dup(env->srv, HG_ADDR_NULL, &dup), HG_INVALID_ARG);
    assert_int_equal(HG_Addr_dup(env->srv, self, &dup), HG_SUCCESS);
    assert_true(HG_Addr_cmp(env->srv, self, dup));
    assert_false(HG_Addr_cmp(env->srv, self, HG_ADDR_NULL));
    /* Size query first (NULL buffer), then the string. */
    assert_int_equal(HG_Addr_to_string(env->srv, NULL, &size, self), HG_SUCCESS);
    assert_true(size > 1 && size <= sizeof(buf));
    assert_int_equal(HG_Addr_to_string(env->srv, buf, &size, self), HG_SUCCESS);
    assert_int_equal(strlen(buf) + 1, size);
    assert_string_equal(buf, env->addr_str);
    size = sizeof(buf);
    assert_int_equal(HG_Addr_to_string(env->srv, buf, &size, HG_ADDR_NULL),
                     HG_INVALID_ARG);
    assert_int_equal(HG_Addr_lookup2(env->cli, "dummy", &a), HG_INVALID_ARG);
    assert_int_equal(HG_Addr_lookup2(env->cli, NULL, &a), HG_INVALID_ARG);
    assert_int_equal(HG_Addr_lookup2(env->cli, env->addr_str, NULL), HG_INVALID_ARG);
    assert_int_equal(HG_Addr_lookup2(env->cli, env->addr_str, &a), HG_SUCCESS);
    assert_int_equal(HG_Addr_set_remove(env->cli, a), HG_SUCCESS);
    assert_int_equal(HG_Addr_free(env->cli, a), HG_SUCCESS);
    HG_Addr_free(env->srv, dup);
    HG_Addr_free(env->srv, self);
    assert_true(HG_Class_is_listening(env->srv));
    assert_false(HG_Class_is_listening(env->cli));
    assert_true(HG_Class_get_input_eager_size(env->cli) > 0);
    assert_true(HG_Class_get_output_eager_size(env->cli) > 0);
}

static hg_return_t other_rpc(hg_handle_t handle)
{
    HG_Destroy(handle);
    return HG_SUCCESS;
}

/* Registration as Margo uses it. */
static void test_registration(void **state)
{
    struct env *env = *state;
    hg_bool_t flag = HG_TRUE;
    static int data;

    assert_int_equal(HG_Registered(env->cli, 12345, &flag), HG_SUCCESS);
    assert_false(flag);
    assert_null(HG_Registered_data(env->cli, 12345));
    hg_id_t id = HG_Register_name(env->cli, "reg", in_proc, out_proc, NULL);
    assert_int_equal(HG_Register_data(env->cli, id, &data, count_free), HG_SUCCESS);
    /* Registering again (Margo does for each provider) keeps the data. */
    assert_int_equal(HG_Register(env->cli, id, in_proc, out_proc, other_rpc), HG_SUCCESS);
    assert_ptr_equal(HG_Registered_data(env->cli, id), &data);
    assert_int_equal(HG_Registered(env->cli, id, &flag), HG_SUCCESS);
    assert_true(flag);
    assert_int_equal(HG_Registered_disable_response(env->cli, id, HG_TRUE), HG_SUCCESS);
    assert_int_equal(HG_Registered_disabled_response(env->cli, id, &flag), HG_SUCCESS);
    assert_true(flag);
    data_freed = 0;
    assert_int_equal(HG_Deregister(env->cli, id), HG_SUCCESS);
    assert_int_equal(data_freed, 1); /* the free callback ran */
    assert_int_equal(HG_Registered(env->cli, id, &flag), HG_SUCCESS);
    assert_false(flag);
}

/* An RPC the server does not know, and an id deregistered at the client. */
static void test_noentry(void **state)
{
    struct env *env = *state;
    hg_handle_t h;
    hg_id_t id = HG_Register_name(env->cli, "not_on_server", in_proc, out_proc, NULL);

    assert_int_equal(HG_Create(env->cli_ctx, env->srv_addr, id, &h), HG_SUCCESS);
    assert_int_equal(forward_wait(env, h, 1), HG_NOENTRY);

    /* Mercury's "RPC with unregistered ID": HG_NOENTRY from HG_Reset or later. */
    assert_int_equal(HG_Deregister(env->cli, id), HG_SUCCESS);
    hg_return_t ret = HG_Reset(h, env->srv_addr, id);
    if (ret == HG_SUCCESS)
        ret = forward_wait(env, h, 1);
    assert_int_equal(ret, HG_NOENTRY);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
}

/* Margo's timeout: HG_Cancel of a request the target dropped unanswered. */
static void test_cancel_dropped(void **state)
{
    struct env *env = *state;
    hg_handle_t h;
    pair_t in = {.x = 1, .s = (hg_string_t) "held"};
    struct in_args args = {.user_cb = hg_proc_pair_t, .user_args = &in};
    struct test_hg_done f = {0};

    assert_int_equal(HG_Create(env->cli_ctx, env->srv_addr, env->hold_id, &h),
                     HG_SUCCESS);
    assert_int_equal(HG_Forward(h, fwd_cb, &f, &args), HG_SUCCESS);
    double end = test_now() + LOOP_TIMEOUT;
    while (!env->dropped && test_now() < end) {
        progress_ctx(env->srv_ctx);
        progress_ctx(env->cli_ctx);
    }
    assert_int_equal(env->dropped, 1);
    assert_false(f.calls);
    assert_int_equal(HG_Cancel(h), HG_SUCCESS);
    loop_until(env, &f.calls);
    assert_int_equal(f.ret, HG_CANCELED);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
}

/* A response disabled on both sides: the forward completes on the send. */
static void test_no_response(void **state)
{
    struct env *env = *state;
    hg_handle_t h;
    hg_id_t id = HG_Register_name(env->srv, "oneway", in_proc, out_proc, echo_rpc);

    assert_int_equal(HG_Register_data(env->srv, id, env, NULL), HG_SUCCESS);
    assert_int_equal(HG_Registered_disable_response(env->srv, id, HG_TRUE), HG_SUCCESS);
    assert_true(HG_Register_name(env->cli, "oneway", in_proc, out_proc, NULL) == id);
    assert_int_equal(HG_Registered_disable_response(env->cli, id, HG_TRUE), HG_SUCCESS);
    assert_int_equal(HG_Create(env->cli_ctx, env->srv_addr, id, &h), HG_SUCCESS);
    int before = env->handled;
    assert_int_equal(forward_wait(env, h, 5), HG_SUCCESS);
    double end = test_now() + LOOP_TIMEOUT;
    while (env->handled == before && test_now() < end) {
        progress_ctx(env->srv_ctx);
        progress_ctx(env->cli_ctx);
    }
    assert_int_equal(env->handled, before + 1);

    /* Mercury's one-way input overflow: a string twice the eager size. */
    size_t len = 2 * HG_Class_get_input_eager_size(env->cli);
    char *big = malloc(len + 1);
    assert_non_null(big);
    memset(big, 'o', len);
    big[len] = '\0';
    pair_t in = {.x = 5, .s = big};
    struct in_args args = {.header = {.parent_rpc_id = PARENT_ID},
                           .user_cb = hg_proc_pair_t,
                           .user_args = &in};
    struct test_hg_done f = {0};
    assert_int_equal(HG_Forward(h, fwd_cb, &f, &args), HG_SUCCESS);
    loop_until(env, &f.calls);
    assert_int_equal(f.ret, HG_SUCCESS);
    free(big); /* the origin's part is over: the target must not need it */
    end = test_now() + LOOP_TIMEOUT;
    while (env->handled == before + 1 && test_now() < end) {
        progress_ctx(env->srv_ctx);
        progress_ctx(env->cli_ctx);
    }
    assert_int_equal(env->handled, before + 2);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
}

/* A plain HG_Init client names the server's second context. */
static void test_target_id(void **state)
{
    struct env *env = *state;
    hg_handle_t h;

    assert_int_equal(HG_Create(env->cli_ctx, env->srv_addr, env->echo_id, &h),
                     HG_SUCCESS);
    assert_int_equal(HG_Set_target_id(h, 1), HG_SUCCESS);
    assert_int_equal(forward_wait(env, h, 7), HG_SUCCESS);
    assert_int_equal(output_header(h), HG_SUCCESS);
    assert_ptr_equal(env->last_ctx, env->srv_ctx1);
    assert_int_equal(HG_Set_target_id(h, 0), HG_SUCCESS);
    assert_int_equal(forward_wait(env, h, 7), HG_SUCCESS);
    assert_ptr_equal(env->last_ctx, env->srv_ctx);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
}

/* A server of one context takes every target id there, as Mercury's do: the
 * client cannot know how many contexts a server has. The loop progresses
 * env's contexts, so this server's context stands in for the second one. */
static void test_target_id_one_context(void **state)
{
    struct env *env = *state;
    struct hg_init_info hii = HG_INIT_INFO_INITIALIZER;
    char str[TEST_ADDR_MAX];
    hg_size_t len = sizeof(str);
    hg_addr_t self, addr;
    hg_handle_t h;

    hii.na_init_info.progress_mode = cur_busy ? NA_NO_BLOCK : 0;
    hg_class_t *one = HG_Init_opt(env->info, HG_TRUE, &hii);
    assert_non_null(one);
    hg_context_t *ctx = HG_Context_create(one), *second = env->srv_ctx1;
    assert_non_null(ctx);
    assert_true(HG_Register_name(one, "echo", in_proc, out_proc, echo_rpc) ==
                env->echo_id);
    assert_int_equal(HG_Register_data(one, env->echo_id, env, NULL), HG_SUCCESS);
    assert_int_equal(HG_Addr_self(one, &self), HG_SUCCESS);
    assert_int_equal(HG_Addr_to_string(one, str, &len, self), HG_SUCCESS);
    HG_Addr_free(one, self);
    assert_int_equal(HG_Addr_lookup2(env->cli, str, &addr), HG_SUCCESS);

    env->srv_ctx1 = ctx;
    assert_int_equal(HG_Create(env->cli_ctx, addr, env->echo_id, &h), HG_SUCCESS);
    static const uint8_t ids[] = {3, UINT8_MAX};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        int before = env->handled;
        assert_int_equal(HG_Set_target_id(h, ids[i]), HG_SUCCESS);
        assert_int_equal(forward_wait(env, h, 7), HG_SUCCESS);
        assert_int_equal(output_header(h), HG_SUCCESS);
        assert_int_equal(env->handled, before + 1);
        assert_ptr_equal(env->last_ctx, ctx);
    }
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
    for (double end = test_now() + 0.2; test_now() < end;) {
        progress_ctx(ctx);
        progress_ctx(env->cli_ctx);
    }
    env->srv_ctx1 = second;
    HG_Addr_free(env->cli, addr);
    assert_int_equal(HG_Context_destroy(ctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(one), HG_SUCCESS);
}

/* An id a server of several contexts has no context for: the request is not
 * handled (see docs/mercury-compat.md); the origin ends it with HG_Cancel. */
static void test_target_id_unknown(void **state)
{
    struct env *env = *state;
    hg_handle_t h;
    pair_t in = {.x = 3, .s = (hg_string_t) "nowhere"};
    struct in_args args = {.user_cb = hg_proc_pair_t, .user_args = &in};
    struct test_hg_done f = {0};
    int before = env->handled;

    assert_int_equal(HG_Create(env->cli_ctx, env->srv_addr, env->echo_id, &h),
                     HG_SUCCESS);
    assert_int_equal(HG_Set_target_id(h, 7), HG_SUCCESS);
    assert_int_equal(HG_Forward(h, fwd_cb, &f, &args), HG_SUCCESS);
    for (double end = test_now() + 0.3; test_now() < end;) {
        progress_ctx(env->srv_ctx);
        progress_ctx(env->srv_ctx1);
        progress_ctx(env->cli_ctx);
    }
    assert_int_equal(env->handled, before);
    assert_int_equal(HG_Cancel(h), HG_SUCCESS);
    loop_until(env, &f.calls);
    assert_int_equal(f.ret, HG_CANCELED);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
}

/* Margo's progress loop accepts only these answers from an idle context. */
static void test_idle(void **state)
{
    struct env *env = *state;
    unsigned int n = 99;

    /* Drain what earlier tests left, then nothing is queued. */
    for (int i = 0; i < 10; i++)
        progress_ctx(env->cli_ctx);
    hg_return_t ret = HG_Trigger(env->cli_ctx, 0, 1, &n);
    assert_true(ret == HG_SUCCESS || ret == HG_TIMEOUT);
    assert_int_equal(n, 0);
    assert_int_equal(HG_Progress(env->cli_ctx, 0), HG_TIMEOUT);
    assert_int_equal(HG_Progress(env->cli_ctx, 10), HG_TIMEOUT);
}

/* A name of this transport no process answers: a port nobody listens on, or
 * for ofi+shm a process id at pid_max (ids stay below it). */
static bool unreachable_name(const struct env *env, char *name, size_t size)
{
    const char *sep = strstr(env->addr_str, "://");
    int plen = (int)(sep - env->addr_str);

    if (strncmp(env->addr_str, "ofi+shm", 7) != 0)
        return snprintf(name, size, "%.*s://127.0.0.1:1", plen, env->addr_str) <
               (int)size;
    FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
    long pid_max = 0;
    if (!f)
        return false;
    bool ok = fscanf(f, "%ld", &pid_max) == 1 && pid_max > 0;
    fclose(f);
    return ok && snprintf(name, size, "ofi+shm://%ld:0:0", pid_max) < (int)size;
}

/* Margo's comm_unreachable: the lookup succeeds, the forward fails by itself
 * within the 2 s Margo gives it (then Margo cancels it and reports
 * HG_TIMEOUT), on every transport. */
#define UNREACHABLE_BOUND_S 2.0
static void test_unreachable(void **state)
{
    struct env *env = *state;
    char name[TEST_ADDR_MAX];
    hg_addr_t a = HG_ADDR_NULL;
    hg_handle_t h;

    assert_true(unreachable_name(env, name, sizeof(name)));
    assert_int_equal(HG_Addr_lookup2(env->cli, name, &a), HG_SUCCESS);
    assert_int_equal(HG_Create(env->cli_ctx, a, env->echo_id, &h), HG_SUCCESS);
    double start = test_now();
    hg_return_t ret = forward_wait(env, h, 1);
    assert_int_not_equal(ret, HG_SUCCESS);
    assert_int_not_equal(ret, HG_TIMEOUT);
    assert_int_not_equal(ret, HG_CANCELED);
    double took = test_now() - start;
    print_message("# %s: forward to %s failed by itself after %.3f s: %s\n", env->info,
                  name, took, HG_Error_to_string(ret));
    assert_true(took < UNREACHABLE_BOUND_S);

    /* Mercury's kill test: a forward to the dead peer canceled at once ends
     * with HG_CANCELED without waiting for the transport to give up (unless
     * the transport refused it at once: ofi+sockets). */
    pair_t in = {.x = 2, .s = (hg_string_t) "dead"};
    struct in_args args = {.user_cb = hg_proc_pair_t, .user_args = &in};
    struct test_hg_done f = {0};
    start = test_now();
    ret = HG_Forward(h, fwd_cb, &f, &args);
    if (ret == HG_SUCCESS) {
        assert_int_equal(HG_Cancel(h), HG_SUCCESS);
        loop_until(env, &f.calls);
        ret = f.ret;
        assert_int_equal(ret, HG_CANCELED);
    }
    assert_int_not_equal(ret, HG_SUCCESS);
    assert_true(test_now() - start < 2.0);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
    assert_int_equal(HG_Addr_free(env->cli, a), HG_SUCCESS);

    /* NA_NO_RETRY set through hg_init_info (Margo's na_no_retry): a refusal
     * of the transport is not retried. Over ofi+tcp and ofi+shm the
     * provider refuses the send (EAGAIN), so HG_Forward itself fails with
     * HG_AGAIN; the others fail the forward as above. */
    struct hg_init_info nii = HG_INIT_INFO_INITIALIZER;
    char cinfo[TEST_ADDR_MAX];
    test_client_info(env->addr_str, cinfo, sizeof(cinfo));
    nii.na_init_info.progress_mode = NA_NO_RETRY;
    hg_class_t *cls = HG_Init_opt(cinfo, HG_FALSE, &nii);
    assert_non_null(cls);
    hg_context_t *ctx = HG_Context_create(cls);
    assert_non_null(ctx);
    hg_id_t id = HG_Register_name(cls, "echo", in_proc, out_proc, NULL);
    assert_int_equal(HG_Addr_lookup2(cls, name, &a), HG_SUCCESS);
    assert_int_equal(HG_Create(ctx, a, id, &h), HG_SUCCESS);
    f = (struct test_hg_done){0};
    ret = HG_Forward(h, fwd_cb, &f, &args);
    for (double end = test_now() + UNREACHABLE_BOUND_S;
         ret == HG_SUCCESS && !f.calls && test_now() < end;)
        progress_ctx(ctx);
    if (ret == HG_SUCCESS && f.calls)
        ret = f.ret;
    print_message("# %s NA_NO_RETRY: forward to %s: %s\n", env->info, name,
                  HG_Error_to_string(ret));
    if (!strncmp(env->info, "ofi+tcp", 7) || !strncmp(env->info, "ofi+shm", 7))
        assert_int_equal(ret, HG_AGAIN);
    assert_int_not_equal(ret, HG_SUCCESS);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
    assert_int_equal(HG_Addr_free(cls, a), HG_SUCCESS);
    assert_int_equal(HG_Context_destroy(ctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(cls), HG_SUCCESS);
}

/* A forward to a Mercury SM name "na+sm://PID-ID" with no class behind it
 * fails by itself, HG_HOSTUNREACH within Margo's 2 s. */
static void sm_forward_unreachable(struct env *env, const char *name)
{
    hg_addr_t a = HG_ADDR_NULL;
    hg_handle_t h;

    assert_int_equal(HG_Addr_lookup2(env->cli, name, &a), HG_SUCCESS);
    assert_int_equal(HG_Create(env->cli_ctx, a, env->echo_id, &h), HG_SUCCESS);
    double start = test_now();
    hg_return_t ret = forward_wait(env, h, 1);
    double took = test_now() - start;
    print_message("# %s: forward to %s failed by itself after %.3f s: %s\n", env->info,
                  name, took, HG_Error_to_string(ret));
    assert_int_equal(ret, HG_HOSTUNREACH);
    assert_true(took < UNREACHABLE_BOUND_S);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
    assert_int_equal(HG_Addr_free(env->cli, a), HG_SUCCESS);
}

/* Mercury's na+sm names: Margo's comm_unreachable looks up "na+sm://1-1"
 * (pid 1 has no class of ours) and a process that is gone is the same; the
 * server's own PID-ID (one of this process's registry entries) reaches it. */
static void test_sm_names(void **state)
{
    struct env *env = *state;
    char name[TEST_ADDR_MAX], dir[64], prefix[32];

    if (strncmp(env->info, "na+sm", 5) != 0) {
        print_message("# %s: no Mercury SM names\n", env->info);
        return;
    }
    if (getpid() != 1)
        sm_forward_unreachable(env, "na+sm://1-1");
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    assert_true(gone > 0 && waitpid(gone, NULL, 0) == gone);
    snprintf(name, sizeof(name), "na+sm://%d-0", (int)gone);
    sm_forward_unreachable(env, name);

    int reached = 0;
    snprintf(dir, sizeof(dir), "/dev/shm/hgx-na-sm-%u", (unsigned int)geteuid());
    snprintf(prefix, sizeof(prefix), "%d-", (int)getpid());
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        hg_addr_t a = HG_ADDR_NULL;
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || strchr(e->d_name, '.'))
            continue;
        snprintf(name, sizeof(name), "na+sm://%.32s", e->d_name);
        assert_int_equal(HG_Addr_lookup2(env->cli, name, &a), HG_SUCCESS);
        if (HG_Addr_cmp(env->cli, a, env->srv_addr)) {
            hg_handle_t h;
            assert_int_equal(HG_Create(env->cli_ctx, a, env->echo_id, &h), HG_SUCCESS);
            assert_int_equal(forward_wait(env, h, 5), HG_SUCCESS);
            assert_int_equal(HG_Destroy(h), HG_SUCCESS);
            reached++;
        }
        assert_int_equal(HG_Addr_free(env->cli, a), HG_SUCCESS);
    }
    closedir(d);
    assert_int_equal(reached, 1);
}

/* Mercury's test_lookup: threads look the server up, remove it from the
 * address set and free it, 32 times each, at the same time. */
#define LOOKUP_THREADS 4
#define LOOKUP_ROUNDS 32

static void *lookup_loop(void *arg)
{
    struct env *env = arg;
    for (int i = 0; i < LOOKUP_ROUNDS; i++) {
        hg_addr_t a = HG_ADDR_NULL;
        if (HG_Addr_lookup2(env->cli, env->addr_str, &a) != HG_SUCCESS ||
            HG_Addr_set_remove(env->cli, a) != HG_SUCCESS ||
            HG_Addr_free(env->cli, a) != HG_SUCCESS)
            return (void *)1;
    }
    return NULL;
}

static void test_lookup_threads(void **state)
{
    struct env *env = *state;
    pthread_t threads[LOOKUP_THREADS];

    for (int i = 0; i < LOOKUP_THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, lookup_loop, env), 0);
    for (int i = 0; i < LOOKUP_THREADS; i++) {
        void *failed = NULL;
        assert_int_equal(pthread_join(threads[i], &failed), 0);
        assert_null(failed);
    }
    /* The address the tests share still works. */
    hg_handle_t h;
    assert_int_equal(HG_Create(env->cli_ctx, env->srv_addr, env->echo_id, &h),
                     HG_SUCCESS);
    assert_int_equal(forward_wait(env, h, 9), HG_SUCCESS);
    assert_int_equal(output_header(h), HG_SUCCESS);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
}

/* Mercury's test server and clients, threaded as they are: the server runs
 * HG_Progress() in one thread and a blocking HG_Trigger() in another, its
 * handlers hand the request to worker threads that decode, respond and
 * destroy; client threads forward on their own handles while all of them
 * progress and trigger the one client context. */
#define POOL_WORKERS 2
#define CLIENT_THREADS 4
#define CLIENT_RPCS 25

struct pool {
    struct env *env;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    hg_handle_t queue[CLIENT_THREADS];
    int n;
    atomic_int handled;
    atomic_bool stop;
};

static hg_return_t pooled_rpc(hg_handle_t handle)
{
    const struct hg_info *hgi = HG_Get_info(handle);
    struct pool *pool = HG_Registered_data(hgi->hg_class, hgi->id);
    pthread_mutex_lock(&pool->lock);
    assert_true(pool->n < CLIENT_THREADS); /* one request per client thread */
    pool->queue[pool->n++] = handle;
    pthread_cond_signal(&pool->cond);
    pthread_mutex_unlock(&pool->lock);
    return HG_SUCCESS;
}

static void *pool_worker(void *arg)
{
    struct pool *pool = arg;
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        while (pool->n == 0 && !atomic_load(&pool->stop))
            pthread_cond_wait(&pool->cond, &pool->lock);
        hg_handle_t h = pool->n ? pool->queue[--pool->n] : HG_HANDLE_NULL;
        pthread_mutex_unlock(&pool->lock);
        if (!h)
            return NULL;
        pair_t in = {0};
        struct in_args args = {.user_cb = hg_proc_pair_t, .user_args = &in};
        pair_t out = {.x = -1, .s = (hg_string_t) "pool"};
        if (HG_Get_input(h, &args) == HG_SUCCESS) {
            out.x = in.x + 1;
            HG_Free_input(h, &args);
        }
        struct out_args oargs = {.user_cb = hg_proc_pair_t, .user_args = &out};
        if (HG_Respond(h, NULL, NULL, &oargs) == HG_SUCCESS)
            atomic_fetch_add(&pool->handled, 1);
        HG_Destroy(h);
    }
}

static void *server_progress(void *arg)
{
    struct pool *pool = arg;
    while (!atomic_load(&pool->stop)) {
        hg_return_t ret = HG_Progress(pool->env->srv_ctx, 100);
        if (ret != HG_SUCCESS && ret != HG_TIMEOUT)
            return (void *)1;
    }
    return NULL;
}

static void *server_trigger(void *arg)
{
    struct pool *pool = arg;
    while (!atomic_load(&pool->stop)) {
        hg_return_t ret = HG_Trigger(pool->env->srv_ctx, 200, 1, NULL);
        if (ret != HG_SUCCESS && ret != HG_TIMEOUT)
            return (void *)1;
    }
    return NULL;
}

struct client_rpc {
    atomic_int done;
    hg_return_t ret;
    int64_t x;
};

static hg_return_t client_rpc_done(const struct hg_cb_info *info)
{
    struct client_rpc *c = info->arg;
    pair_t out = {0};
    struct out_args oargs = {.user_cb = hg_proc_pair_t, .user_args = &out};
    c->ret = info->ret;
    if (c->ret == HG_SUCCESS) {
        c->ret = HG_Get_output(info->info.forward.handle, &oargs);
        if (c->ret == HG_SUCCESS && out.x != c->x + 1)
            c->ret = HG_FAULT;
        if (c->ret == HG_SUCCESS)
            c->ret = HG_Free_output(info->info.forward.handle, &oargs);
    }
    atomic_store(&c->done, 1);
    return HG_SUCCESS;
}

static hg_id_t pooled_id;

static void *client_thread(void *arg)
{
    struct env *env = arg;
    hg_handle_t h;
    if (HG_Create(env->cli_ctx, env->srv_addr, pooled_id, &h) != HG_SUCCESS)
        return (void *)1;
    for (int i = 0; i < CLIENT_RPCS; i++) {
        struct client_rpc c = {.x = i};
        pair_t in = {.x = i, .s = (hg_string_t) "thread"};
        struct in_args args = {.user_cb = hg_proc_pair_t, .user_args = &in};
        atomic_init(&c.done, 0);
        if (HG_Forward(h, client_rpc_done, &c, &args) != HG_SUCCESS) {
            HG_Destroy(h);
            return (void *)1;
        }
        double end = test_now() + LOOP_TIMEOUT;
        while (!atomic_load(&c.done) && test_now() < end) {
            unsigned int n;
            do
                n = 0;
            while (HG_Trigger(env->cli_ctx, 0, 100, &n) == HG_SUCCESS && n > 0);
            if (!atomic_load(&c.done))
                HG_Progress(env->cli_ctx, 0);
        }
        if (!atomic_load(&c.done) || c.ret != HG_SUCCESS) {
            if (!atomic_load(&c.done))
                HG_Cancel(h);
            /* Stay until the callback ran: c lives on this stack. */
            while (!atomic_load(&c.done)) {
                HG_Progress(env->cli_ctx, 10);
                HG_Trigger(env->cli_ctx, 0, 100, NULL);
            }
            HG_Destroy(h);
            return (void *)1;
        }
    }
    HG_Destroy(h);
    return NULL;
}

static void test_threads(void **state)
{
    struct env *env = *state;
    static struct pool pool;
    pthread_t workers[POOL_WORKERS], progress, trigger, clients[CLIENT_THREADS];
    void *failed;

    pool = (struct pool){.env = env, .n = 0};
    atomic_init(&pool.handled, 0);
    atomic_init(&pool.stop, false);
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.cond, NULL);
    pooled_id = HG_Register_name(env->srv, "pooled", in_proc, out_proc, pooled_rpc);
    assert_int_equal(HG_Register_data(env->srv, pooled_id, &pool, NULL), HG_SUCCESS);
    assert_true(HG_Register_name(env->cli, "pooled", in_proc, out_proc, NULL) ==
                pooled_id);

    for (int i = 0; i < POOL_WORKERS; i++)
        assert_int_equal(pthread_create(&workers[i], NULL, pool_worker, &pool), 0);
    assert_int_equal(pthread_create(&progress, NULL, server_progress, &pool), 0);
    assert_int_equal(pthread_create(&trigger, NULL, server_trigger, &pool), 0);
    for (int i = 0; i < CLIENT_THREADS; i++)
        assert_int_equal(pthread_create(&clients[i], NULL, client_thread, env), 0);
    int client_failures = 0;
    for (int i = 0; i < CLIENT_THREADS; i++) {
        assert_int_equal(pthread_join(clients[i], &failed), 0);
        client_failures += failed != NULL;
    }
    atomic_store(&pool.stop, true);
    pthread_mutex_lock(&pool.lock);
    pthread_cond_broadcast(&pool.cond);
    pthread_mutex_unlock(&pool.lock);
    int server_failures = 0;
    for (int i = 0; i < POOL_WORKERS; i++)
        assert_int_equal(pthread_join(workers[i], NULL), 0);
    assert_int_equal(pthread_join(progress, &failed), 0);
    server_failures += failed != NULL;
    assert_int_equal(pthread_join(trigger, &failed), 0);
    server_failures += failed != NULL;
    pthread_cond_destroy(&pool.cond);
    pthread_mutex_destroy(&pool.lock);
    assert_int_equal(client_failures, 0);
    assert_int_equal(server_failures, 0);
    assert_int_equal(atomic_load(&pool.handled), CLIENT_THREADS * CLIENT_RPCS);
}

/* Margo's bulk pool reads its buffers back with HG_Bulk_access. */
static void test_bulk_access(void **state)
{
    struct env *env = *state;
    static char buf[8192];
    void *ptr = buf, *got = NULL;
    hg_size_t size = sizeof(buf), got_size = 0;
    hg_uint32_t count = 0;
    hg_bulk_t b;

    assert_int_equal(HG_Bulk_create(env->cli, 1, &ptr, &size, HG_BULK_READWRITE, &b),
                     HG_SUCCESS);
    assert_int_equal(HG_Bulk_get_size(b), sizeof(buf));
    assert_int_equal(
        HG_Bulk_access(b, 0, sizeof(buf), HG_BULK_READWRITE, 1, &got, &got_size, &count),
        HG_SUCCESS);
    assert_ptr_equal(got, buf);
    assert_int_equal(got_size, sizeof(buf));
    assert_int_equal(count, 1);
    /* Mercury's bulk callbacks ask for the pointer alone. */
    got = NULL;
    assert_int_equal(
        HG_Bulk_access(b, 0, sizeof(buf), HG_BULK_READ_ONLY, 1, &got, NULL, NULL),
        HG_SUCCESS);
    assert_ptr_equal(got, buf);
    assert_int_equal(HG_Bulk_free(b), HG_SUCCESS);
    /* Mercury does not check the flags: its perf server asks for read-write
     * access to the write-only handle it pushes into. */
    assert_int_equal(HG_Bulk_create(env->cli, 1, &ptr, &size, HG_BULK_WRITE_ONLY, &b),
                     HG_SUCCESS);
    got = NULL;
    assert_int_equal(
        HG_Bulk_access(b, 0, sizeof(buf), HG_BULK_READWRITE, 1, &got, NULL, NULL),
        HG_SUCCESS);
    assert_ptr_equal(got, buf);
    assert_int_equal(HG_Bulk_free(b), HG_SUCCESS);
}

/* Mercury's test_bulk: segments of 0 bytes with NULL pointers, a handle whose
 * memory hgx allocates (NULL pointers, size given), a 0-byte transfer, and an
 * extra reference on a decoded handle. */
static hg_return_t bulk_done(const struct hg_cb_info *info)
{
    assert_int_equal(info->type, HG_CB_BULK);
    return test_hg_done_cb(info);
}

static void test_bulk_edges(void **state)
{
    struct env *env = *state;
    void *ptrs[2] = {NULL, NULL};
    hg_size_t sizes[2] = {0, 0};
    hg_bulk_t empty, owned, copy = HG_BULK_NULL;
    struct test_hg_done f = {0};
    hg_size_t len = 4096;

    /* The class is named as its info string names it: "na" for na+sm,
     * whichever hgx plugin serves it. */
    const char *cls_name = HG_Class_get_name(env->cli);
    assert_non_null(cls_name);
    assert_int_equal(strncmp(env->info, cls_name, strlen(cls_name)), 0);
    assert_int_equal(env->info[strlen(cls_name)], '+');
    assert_int_equal(HG_Bulk_create(env->cli, 2, ptrs, sizes, HG_BULK_READ_ONLY, &empty),
                     HG_SUCCESS);
    assert_int_equal(HG_Bulk_get_size(empty), 0);
    assert_int_equal(HG_Bulk_create(env->srv, 1, NULL, &len, HG_BULK_READWRITE, &owned),
                     HG_SUCCESS);
    void *mem = NULL;
    hg_size_t mem_len = 0;
    hg_uint32_t n = 0;
    assert_int_equal(
        HG_Bulk_access(owned, 0, len, HG_BULK_READWRITE, 1, &mem, &mem_len, &n),
        HG_SUCCESS);
    assert_non_null(mem);
    assert_int_equal(mem_len, len);
    memset(mem, 0x3c, len); /* the memory is the program's to use */

    /* The server pulls 0 bytes from the client's empty handle. */
    hg_size_t ser = HG_Bulk_get_serialize_size(empty, 0);
    char *buf = malloc(ser ? ser : 1);
    assert_int_equal(HG_Bulk_serialize(buf, ser, 0, empty), HG_SUCCESS);
    assert_int_equal(HG_Bulk_deserialize(env->srv, &copy, buf, ser), HG_SUCCESS);
    free(buf);
    assert_int_equal(HG_Bulk_ref_incr(copy), HG_SUCCESS);
    assert_int_equal(HG_Bulk_free(copy), HG_SUCCESS); /* one reference left */
    hg_addr_t cli_addr;
    char name[TEST_ADDR_MAX];
    hg_size_t name_len = sizeof(name);
    hg_addr_t cli_self;
    assert_int_equal(HG_Addr_self(env->cli, &cli_self), HG_SUCCESS);
    hg_return_t ret = HG_Addr_to_string(env->cli, name, &name_len, cli_self);
    HG_Addr_free(env->cli, cli_self);
    if (ret == HG_SUCCESS && HG_Addr_lookup2(env->srv, name, &cli_addr) == HG_SUCCESS) {
        assert_int_equal(HG_Bulk_transfer_id(env->srv_ctx, bulk_done, &f, HG_BULK_PULL,
                                             cli_addr, 0, copy, 0, owned, 0, 0,
                                             HG_OP_ID_IGNORE),
                         HG_SUCCESS);
        loop_until(env, &f.calls);
        assert_int_equal(f.ret, HG_SUCCESS);
        HG_Addr_free(env->srv, cli_addr);
    } else {
        printf("# %s: a client that does not listen has no address to pull from\n",
               env->info);
    }
    assert_int_equal(HG_Bulk_free(copy), HG_SUCCESS);
    assert_int_equal(HG_Bulk_free(owned), HG_SUCCESS);
    assert_int_equal(HG_Bulk_free(empty), HG_SUCCESS);

    /* Mercury's test server sizes its local handle from the origin's: 0 too. */
    hg_size_t zero = 0;
    hg_bulk_t none;
    assert_int_equal(HG_Bulk_create(env->srv, 1, NULL, &zero, HG_BULK_READWRITE, &none),
                     HG_SUCCESS);
    assert_int_equal(HG_Bulk_get_size(none), 0);
    assert_int_equal(HG_Bulk_access(none, 0, 0, HG_BULK_READ_ONLY, 1, &mem, NULL, &n),
                     HG_SUCCESS);
    assert_int_equal(n, 0);
    assert_int_equal(HG_Bulk_free(none), HG_SUCCESS);
}

/* The client moves len bytes between the server's remote handle and its
 * local one, and the transfer succeeds. */
static void client_transfer(struct env *env, hg_bulk_op_t op, hg_bulk_t remote,
                            hg_bulk_t local, hg_size_t len)
{
    struct test_hg_done f = {0};
    assert_int_equal(HG_Bulk_transfer(env->cli_ctx, bulk_done, &f, op, env->srv_addr,
                                      remote, 0, local, 0, len, HG_OP_ID_IGNORE),
                     HG_SUCCESS);
    loop_until(env, &f.calls);
    assert_int_equal(f.ret, HG_SUCCESS);
}

/* Mercury's test_bulk mixes empty segments ({NULL, 0}) with buffers in one
 * handle: the client pulls from the server's {empty, 1000 B, empty, 3096 B}
 * into its {4096 B, empty}, then pushes back, and the bytes land in place. */
static void test_bulk_mixed_empty(void **state)
{
    struct env *env = *state;
    enum { A = 1000, B = 3096 };
    unsigned char a[A], b[B], d[A + B];
    void *sptr[4] = {NULL, a, NULL, b}, *dptr[2] = {d, NULL};
    hg_size_t ssz[4] = {0, A, 0, B}, dsz[2] = {A + B, 0};
    hg_bulk_t src, dst, remote = HG_BULK_NULL;
    for (int i = 0; i < A; i++)
        a[i] = (unsigned char)(i * 7 + 1);
    for (int i = 0; i < B; i++)
        b[i] = (unsigned char)(i * 13 + 5);
    memset(d, 0, sizeof(d));
    assert_int_equal(HG_Bulk_create(env->srv, 4, sptr, ssz, HG_BULK_READWRITE, &src),
                     HG_SUCCESS);
    assert_int_equal(HG_Bulk_get_segment_count(src), 4);
    assert_int_equal(HG_Bulk_get_size(src), A + B);
    assert_int_equal(HG_Bulk_create(env->cli, 2, dptr, dsz, HG_BULK_READWRITE, &dst),
                     HG_SUCCESS);
    assert_int_equal(HG_Bulk_get_segment_count(dst), 2);

    hg_size_t ser = HG_Bulk_get_serialize_size(src, 0);
    char *buf = malloc(ser);
    assert_non_null(buf);
    assert_int_equal(HG_Bulk_serialize(buf, ser, 0, src), HG_SUCCESS);
    assert_int_equal(HG_Bulk_deserialize(env->cli, &remote, buf, ser), HG_SUCCESS);
    free(buf);
    assert_int_equal(HG_Bulk_get_size(remote), A + B);

    client_transfer(env, HG_BULK_PULL, remote, dst, A + B);
    assert_memory_equal(d, a, A);
    assert_memory_equal(d + A, b, B);

    for (size_t i = 0; i < sizeof(d); i++)
        d[i] = (unsigned char)~d[i];
    client_transfer(env, HG_BULK_PUSH, remote, dst, A + B);
    assert_memory_equal(a, d, A);
    assert_memory_equal(b, d + A, B);
    assert_int_equal(HG_Bulk_free(remote), HG_SUCCESS);
    assert_int_equal(HG_Bulk_free(dst), HG_SUCCESS);
    assert_int_equal(HG_Bulk_free(src), HG_SUCCESS);
}

static const struct CMUnitTest transport_tests[] = {
    cmocka_unit_test(test_handle_cache),
    cmocka_unit_test(test_addr_args),
    cmocka_unit_test(test_registration),
    cmocka_unit_test(test_noentry),
    cmocka_unit_test(test_cancel_dropped),
    cmocka_unit_test(test_no_response),
    cmocka_unit_test(test_target_id),
    cmocka_unit_test(test_target_id_one_context),
    cmocka_unit_test(test_target_id_unknown),
    cmocka_unit_test(test_idle),
    cmocka_unit_test(test_bulk_access),
    cmocka_unit_test(test_bulk_edges),
    cmocka_unit_test(test_bulk_mixed_empty),
    cmocka_unit_test(test_lookup_threads),
    cmocka_unit_test(test_threads),
    cmocka_unit_test(test_unreachable), /* fails by itself in 2 s: busy runs too */
    cmocka_unit_test(test_sm_names),
};

static void test_version(void **state)
{
    unsigned int major = 0, minor = 0, patch = 0;
    (void)state;
    assert_int_equal(HG_Version_get(&major, &minor, &patch), HG_SUCCESS);
    assert_int_equal(major, 2);
    assert_int_equal(minor, 4);
    assert_int_equal(patch, 1);
}

int main(void)
{
    const char *const *transports;
    size_t n = test_transports_mercury(&transports);
    const struct CMUnitTest local_tests[] = {cmocka_unit_test(test_version)};
    int failed = cmocka_run_group_tests_name("margo-local", local_tests, NULL, NULL);

    /* Each transport blocking, then busy polling as Mercury's tests run them. */
    const size_t n_tests = sizeof(transport_tests) / sizeof(*transport_tests);
    for (size_t i = 0; i < 2 * n; i++) {
        char name[TEST_ADDR_MAX + 8];
        cur_info = transports[i % n];
        cur_busy = i >= n;
        snprintf(name, sizeof(name), "%s%s", cur_info, cur_busy ? " busy" : "");
        failed |= _cmocka_run_group_tests(name, transport_tests, n_tests, env_setup,
                                          env_teardown);
    }
    return failed;
}
