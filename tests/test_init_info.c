/*
 * test_init_info.c -- init-info fields that change what a class does, over
 * real transports in one process (a listening class and a client class):
 *   - request_post_incr: a listening context whose posted receives are all
 *     consumed at once posts that many more (default: as many as
 *     request_post_init's default; negative: never), and RPCs keep working
 *     whichever way
 *   - na_init_info.addr_format: ofi+tcp and ofi+sockets bind the family asked
 *     for (an RPC over IPv6 loopback), ofi+tcp refuses a host of the other
 *     family; ucx+tcp takes one family per class and refuses IPv6 loopback;
 *     ucx+shm ignores it
 *   - malformed "[IPV6]:PORT" look-ups on every IP transport
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "hgx_test_hooks.h"
#include "mercury.h"
#include "mercury_macros.h"
#include "na.h"
#include "test_common.h"
#include "test_hg_done.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOOP_TIMEOUT 20.0
#define DEFAULT_POSTS 64 /* request_post_init / _incr 0 */

MERCURY_GEN_PROC(ping_t, ((uint32_t)(v)))

struct env {
    hg_class_t *srv, *cli;
    hg_context_t *srv_ctx, *cli_ctx;
    hg_addr_t srv_addr; /* at the client */
    hg_id_t id;
};

static hg_return_t ping_rpc(hg_handle_t handle)
{
    ping_t in;
    assert_int_equal(HG_Get_input(handle, &in), HG_SUCCESS);
    ping_t out = {.v = in.v + 1};
    HG_Free_input(handle, &in);
    assert_int_equal(HG_Respond(handle, NULL, NULL, &out), HG_SUCCESS);
    HG_Destroy(handle);
    return HG_SUCCESS;
}

/* Server with init info srv_info on info, a client of it, and the client's
 * lookup of the server. */
static void env_open(struct env *env, const char *info,
                     const struct hg_init_info *srv_info)
{
    char addr[TEST_ADDR_MAX], cinfo[TEST_ADDR_MAX];
    hg_size_t len = sizeof(addr);
    hg_addr_t self;

    memset(env, 0, sizeof(*env));
    env->srv = HG_Init_opt2(info, true, HG_VERSION(2, 4), srv_info);
    assert_non_null(env->srv);
    env->srv_ctx = HG_Context_create(env->srv);
    assert_non_null(env->srv_ctx);
    env->id = MERCURY_REGISTER(env->srv, "ping", ping_t, ping_t, ping_rpc);
    assert_int_equal(HG_Addr_self(env->srv, &self), HG_SUCCESS);
    assert_int_equal(HG_Addr_to_string(env->srv, addr, &len, self), HG_SUCCESS);
    HG_Addr_free(env->srv, self);
    test_client_info(addr, cinfo, sizeof(cinfo));
    struct hg_init_info cli_info = HG_INIT_INFO_INITIALIZER;
    cli_info.na_init_info.addr_format = srv_info->na_init_info.addr_format;
    env->cli = HG_Init_opt2(cinfo, false, HG_VERSION(2, 4), &cli_info);
    assert_non_null(env->cli);
    env->cli_ctx = HG_Context_create(env->cli);
    assert_non_null(env->cli_ctx);
    assert_true(MERCURY_REGISTER(env->cli, "ping", ping_t, ping_t, NULL) == env->id);
    assert_int_equal(HG_Addr_lookup2(env->cli, addr, &env->srv_addr), HG_SUCCESS);
}

static void env_close(struct env *env)
{
    /* The server's respond completions may still be queued. */
    for (double end = test_now() + 0.3; test_now() < end;) {
        unsigned int n;
        (void)HG_Progress(env->srv_ctx, 1);
        (void)HG_Trigger(env->srv_ctx, 0, 16, &n);
        (void)HG_Progress(env->cli_ctx, 0);
        (void)HG_Trigger(env->cli_ctx, 0, 16, &n);
    }
    HG_Addr_free(env->cli, env->srv_addr);
    assert_int_equal(HG_Context_destroy(env->cli_ctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(env->cli), HG_SUCCESS);
    assert_int_equal(HG_Context_destroy(env->srv_ctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(env->srv), HG_SUCCESS);
}

/* One ping from the client, both contexts progressed until it completes. */
static void ping(struct env *env, uint32_t v)
{
    hg_handle_t h;
    struct test_hg_done f = {0};
    ping_t in = {.v = v}, out;

    assert_int_equal(HG_Create(env->cli_ctx, env->srv_addr, env->id, &h), HG_SUCCESS);
    assert_int_equal(HG_Forward(h, test_hg_done_cb, &f, &in), HG_SUCCESS);
    double end = test_now() + LOOP_TIMEOUT;
    while (!f.calls && test_now() < end) {
        unsigned int n;
        (void)HG_Progress(env->srv_ctx, 0);
        (void)HG_Trigger(env->srv_ctx, 0, 16, &n);
        (void)HG_Progress(env->cli_ctx, 1);
        (void)HG_Trigger(env->cli_ctx, 0, 16, &n);
    }
    assert_true(f.calls);
    assert_int_equal(f.ret, HG_SUCCESS);
    assert_int_equal(HG_Get_output(h, &out), HG_SUCCESS);
    assert_int_equal(out.v, v + 1);
    HG_Free_output(h, &out);
    HG_Destroy(h);
}

/* ---- request_post_incr (every transport) ---- */

static const char *cur_info; /* transport of the group being run */

/* With request_post_init 1, the first request consumes every posted
 * receive: the pool grows by incr (0 when it must not) once, and stays so
 * over requests that come one at a time. */
static void post_incr_case(int32_t request_post_incr, unsigned int incr)
{
    struct hg_init_info info = HG_INIT_INFO_INITIALIZER;
    struct env env;

    info.request_post_init = 1;
    info.request_post_incr = request_post_incr;
    env_open(&env, cur_info, &info);
    assert_int_equal(hgx_test_hg_posts(env.srv_ctx), 1);
    ping(&env, 1);
    (void)HG_Progress(env.srv_ctx, 0); /* the flush that grows the pool */
    assert_int_equal(hgx_test_hg_posts(env.srv_ctx), 1 + incr);
    for (uint32_t i = 0; i < 8; i++)
        ping(&env, 10 + i);
    (void)HG_Progress(env.srv_ctx, 0);
    assert_int_equal(hgx_test_hg_posts(env.srv_ctx), 1 + incr);
    env_close(&env);
}

static void test_post_incr_grows(void **state)
{
    (void)state;
    post_incr_case(3, 3);
}

static void test_post_incr_default(void **state)
{
    (void)state;
    post_incr_case(0, DEFAULT_POSTS);
}

static void test_post_incr_off(void **state)
{
    (void)state;
    post_incr_case(-1, 0);
}

/* Growth stops at 4096 receives per context (HG_POST_POOL_MAX), whatever
 * the increment asks for. */
static void test_post_incr_capped(void **state)
{
    (void)state;
    if (strstr(cur_info, "sockets")) {
        /* libfabric 1.17's sockets drops the cancel reports of receives past
         * its first ~400 ("failed to report error"), so a context holding
         * thousands cannot be destroyed (docs/na-ofi.md). */
        printf("# %s: skipped, the provider loses mass cancel reports\n", cur_info);
        skip();
    }
    post_incr_case(5000, 4096 - 1);
}

/* The default pool: request_post_init 0 posts the default count. */
static void test_post_init_default(void **state)
{
    struct hg_init_info info = HG_INIT_INFO_INITIALIZER;
    struct env env;

    (void)state;
    env_open(&env, cur_info, &info);
    assert_int_equal(hgx_test_hg_posts(env.srv_ctx), DEFAULT_POSTS);
    ping(&env, 1);
    env_close(&env);
}

static const struct CMUnitTest post_tests[] = {
    cmocka_unit_test(test_post_incr_grows),  cmocka_unit_test(test_post_incr_default),
    cmocka_unit_test(test_post_incr_off),    cmocka_unit_test(test_post_init_default),
    cmocka_unit_test(test_post_incr_capped),
};

/* ---- addr_format ---- */

static bool have(const char *info)
{
    struct na_protocol_info *pi = NULL;
    bool ok = NA_Get_protocol_info(info, &pi) == NA_SUCCESS && pi;
    NA_Free_protocol_info(pi);
    if (!ok)
        printf("SKIP: %s not built into this library\n", info);
    return ok;
}

/* The address string of a listening NA class of info with addr_format,
 * or "" if it cannot be created. */
static void na_addr_of(const char *info, enum na_addr_format format, char *out,
                       size_t size)
{
    struct na_init_info init = NA_INIT_INFO_INITIALIZER;
    init.addr_format = format;
    na_class_t *c = NA_Initialize_opt2(info, true, NA_VERSION(6, 0), &init);
    out[0] = '\0';
    if (!c)
        return;
    na_addr_t *self = NULL;
    assert_int_equal(NA_Addr_self(c, &self), NA_SUCCESS);
    assert_int_equal(NA_Addr_to_string(c, out, &size, self), NA_SUCCESS);
    NA_Addr_free(c, self);
    assert_int_equal(NA_Finalize(c), NA_SUCCESS);
}

/* Whether s starts with "PLUGIN+PROTO://" of info, then rest. */
static bool addr_is(const char *s, const char *info, const char *rest)
{
    size_t n = strlen(info);
    return strncmp(s, info, n) == 0 && strncmp(s + n, "://", 3) == 0 &&
           strncmp(s + n + 3, rest, strlen(rest)) == 0;
}

/* The interface name leaves the family open: addr_format picks lo's
 * address of that family (ofi+tcp and ofi+sockets). */
static void test_ofi_family_of_interface(void **state)
{
    static const char *const protos[] = {"ofi+tcp", "ofi+sockets"};
    char addr[TEST_ADDR_MAX], info[64];
    int tested = 0;

    (void)state;
    for (size_t i = 0; i < 2; i++) {
        if (!have(protos[i]))
            continue;
        tested++;
        snprintf(info, sizeof(info), "%s://lo", protos[i]);
        na_addr_of(info, NA_ADDR_IPV6, addr, sizeof(addr));
        assert_true(addr_is(addr, protos[i], "[::1]:"));
        na_addr_of(info, NA_ADDR_IPV4, addr, sizeof(addr));
        assert_true(addr_is(addr, protos[i], "127.0.0.1:"));
        na_addr_of(info, NA_ADDR_UNSPEC, addr, sizeof(addr));
        assert_true(addr_is(addr, protos[i], "127.0.0.1:"));
    }
    if (!tested) {
        printf("# SKIP: no OFI or UCX TCP transport built here\n");
        skip();
    }
}

/* A host of the other family fails, as in Mercury. */
static void test_ofi_family_mismatch(void **state)
{
    char addr[TEST_ADDR_MAX];

    (void)state;
    if (!have("ofi+tcp"))
        skip();
    na_addr_of("ofi+tcp://127.0.0.1", NA_ADDR_IPV6, addr, sizeof(addr));
    assert_string_equal(addr, "");
    na_addr_of("ofi+tcp://[::1]", NA_ADDR_IPV4, addr, sizeof(addr));
    assert_string_equal(addr, "");
    na_addr_of("ofi+tcp://[::1]", NA_ADDR_IPV6, addr, sizeof(addr));
    assert_true(strncmp(addr, "ofi+tcp://[::1]:", 16) == 0);
}

/* An RPC between two classes that both asked for IPv6. */
static void test_ofi_ipv6_rpc(void **state)
{
    struct hg_init_info info = HG_INIT_INFO_INITIALIZER;
    struct env env;

    (void)state;
    if (!have("ofi+tcp"))
        skip();
    info.na_init_info.addr_format = NA_ADDR_IPV6;
    env_open(&env, "ofi+tcp://lo", &info);
    char addr[TEST_ADDR_MAX];
    hg_size_t len = sizeof(addr);
    hg_addr_t self;
    assert_int_equal(HG_Addr_self(env.cli, &self), HG_SUCCESS);
    assert_int_equal(HG_Addr_to_string(env.cli, addr, &len, self), HG_SUCCESS);
    HG_Addr_free(env.cli, self);
    assert_true(strncmp(addr, "ofi+tcp://[::1]:", 16) == 0);
    ping(&env, 7);
    env_close(&env);
}

/* The look-up of name by a client class of info with addr_format. */
static na_return_t na_lookup_by(const char *info, enum na_addr_format format,
                                const char *name)
{
    struct na_init_info init = NA_INIT_INFO_INITIALIZER;
    init.addr_format = format;
    na_class_t *c = NA_Initialize_opt2(info, false, NA_VERSION(6, 0), &init);
    assert_non_null(c);
    na_addr_t *addr = NULL;
    na_return_t ret = NA_Addr_lookup(c, name, &addr);
    if (ret == NA_SUCCESS)
        NA_Addr_free(c, addr);
    assert_int_equal(NA_Finalize(c), NA_SUCCESS);
    return ret;
}

/* A UCX class has one family: IPv6 when it names an IPv6 address or asks
 * for it, else IPv4; it looks up peers of that family only. UCX's tcp
 * transport takes no IPv6 loopback address, so [::1] (lo's only IPv6
 * address, and make check keeps UCX on lo) is refused at once. IPv6
 * classes, their look-ups and an RPC between them run in two network
 * namespaces (tests/netns-addr.sh). ucx+shm ignores the format. */
static void test_ucx_family(void **state)
{
    char addr[TEST_ADDR_MAX];

    (void)state;
    if (!have("ucx+tcp"))
        skip();
    na_addr_of("ucx+tcp://lo", NA_ADDR_IPV6, addr, sizeof(addr));
    assert_string_equal(addr, "");
    na_addr_of("ucx+tcp://[::1]", NA_ADDR_UNSPEC, addr, sizeof(addr));
    assert_string_equal(addr, "");
    na_addr_of("ucx+tcp://127.0.0.1", NA_ADDR_IPV6, addr, sizeof(addr));
    assert_string_equal(addr, "");
    static const enum na_addr_format v4[] = {NA_ADDR_IPV4, NA_ADDR_UNSPEC,
                                             NA_ADDR_NATIVE};
    for (size_t i = 0; i < sizeof(v4) / sizeof(*v4); i++) {
        na_addr_of("ucx+tcp://lo", v4[i], addr, sizeof(addr));
        assert_true(strncmp(addr, "ucx+tcp://127.0.0.1:", 20) == 0);
    }
    assert_int_equal(na_lookup_by("ucx+tcp", NA_ADDR_UNSPEC, "ucx+tcp://[2001:db8::1]:7"),
                     NA_ADDRNOTAVAIL);
    if (have("ucx+shm")) { /* no network address: the format does not apply */
        na_addr_of("ucx+shm", NA_ADDR_IPV6, addr, sizeof(addr));
        assert_true(strncmp(addr, "ucx+shm://127.0.0.1:", 20) == 0);
    }
}

/* Bracketed hosts that are no "[IPV6]:PORT": NA_INVALID_ARG on every IP
 * transport, at once. */
static void test_malformed_v6(void **state)
{
    static const char *const infos[] = {"ucx+tcp", "ucx+all", "ofi+tcp", "ofi+sockets"};
    static const char *const bad[] = {
        "[::1", "[::1]x", "[zz::]:1", "[::1]:", "[]:1", "[::1]:+1", "[127.0.0.1]:1"};
    char name[64];
    int tested = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(infos) / sizeof(*infos); i++) {
        if (!have(infos[i]))
            continue;
        tested++;
        for (size_t j = 0; j < sizeof(bad) / sizeof(*bad); j++) {
            snprintf(name, sizeof(name), "%s://%s", infos[i], bad[j]);
            assert_int_equal(na_lookup_by(infos[i], NA_ADDR_UNSPEC, name),
                             NA_INVALID_ARG);
        }
    }
    if (!tested) {
        printf("# SKIP: no OFI or UCX TCP transport built here\n");
        skip();
    }
}

int main(void)
{
    const char *const *transports;
    size_t n = test_transports(&transports);
    int failed = 0;

    const struct CMUnitTest addr_tests[] = {
        cmocka_unit_test(test_ofi_family_of_interface),
        cmocka_unit_test(test_ofi_family_mismatch),
        cmocka_unit_test(test_ofi_ipv6_rpc),
        cmocka_unit_test(test_ucx_family),
        cmocka_unit_test(test_malformed_v6),
    };
    failed |= cmocka_run_group_tests_name("addr_format", addr_tests, NULL, NULL);
    failed |= test_run_groups("init_info", transports, n, NULL, &cur_info, post_tests,
                              sizeof(post_tests) / sizeof(*post_tests), NULL, NULL);
    return failed;
}
