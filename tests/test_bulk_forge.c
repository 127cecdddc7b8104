/*
 * test_bulk_forge.c -- forged bulk descriptors must not read, write or crash
 * a server, on every transport built: the attacks of bulk_forge.h
 * against a server in a forked child, counted per transport; zero
 * violations, hangs and crashes are required. Transports: $HGX_TEST_TRANSPORTS
 * or every one built, tcp ones pinned to loopback.
 */
#include "bulk_forge.h"
#include "na.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "test_common.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define MAX_TRANSPORTS 16

static int server_main(const char *info, int fd)
{
    hg_class_t *cls = HG_Init(info, HG_TRUE);
    hg_context_t *ctx = cls ? HG_Context_create(cls) : NULL;
    struct forge_server *srv = ctx ? forge_server_create(cls) : NULL;
    char addr[TEST_ADDR_MAX] = "";
    hg_size_t len = sizeof(addr);
    hg_addr_t self = HG_ADDR_NULL;

    if (srv && HG_Addr_self(cls, &self) == HG_SUCCESS)
        HG_Addr_to_string(cls, addr, &len, self);
    HG_Addr_free(cls, self);
    test_server_publish(fd, addr);
    if (!addr[0])
        return 2;
    while (!forge_server_stopped(srv)) {
        unsigned int n = 0;
        HG_Progress(ctx, 100);
        HG_Trigger(ctx, 0, 64, &n);
    }
    for (int i = 0; i < 20; i++) { /* let the last response go out */
        unsigned int n = 0;
        HG_Progress(ctx, 10);
        HG_Trigger(ctx, 0, 64, &n);
    }
    forge_server_free(srv);
    return HG_Context_destroy(ctx) == HG_SUCCESS && HG_Finalize(cls) == HG_SUCCESS ? 0
                                                                                   : 3;
}

static bool server_alive(void *arg)
{
    struct test_server *srv = arg;
    int status;
    if (waitpid(srv->pid, &status, WNOHANG) != srv->pid)
        return true;
    fprintf(stderr, "# forge: server %s (status 0x%x)\n",
            WIFSIGNALED(status) ? "killed by a signal" : "exited", status);
    srv->pid = 0;
    return false;
}

static void test_forge(void **state)
{
    const char *info = *state;
    struct test_server srv;
    struct forge_client c = {.alive = server_alive, .alive_arg = &srv};

    assert_true(test_server_start(&srv, info, server_main));
    hg_class_t *cls = HG_Init(info, HG_FALSE);
    assert_non_null(cls);
    hg_context_t *ctx = HG_Context_create(cls);
    assert_non_null(ctx);
    hg_addr_t server = HG_ADDR_NULL;
    assert_int_equal(HG_Addr_lookup2(cls, srv.addr, &server), HG_SUCCESS);
    assert_int_equal(forge_client_init(&c, cls, ctx, server), HG_SUCCESS);

    forge_attack_all(&c);
    forge_client_stop(&c);
    forge_print_summary(info, &c.st);
    forge_client_fini(&c);
    HG_Addr_free(cls, c.server);
    assert_int_equal(HG_Context_destroy(ctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(cls), HG_SUCCESS);
    int rc = srv.pid ? test_server_wait(&srv, 10000) : -1;

    assert_int_equal(c.st.controls_failed, 0);
    assert_int_equal(c.st.violations, 0);
    assert_int_equal(c.st.hangs, 0);
    assert_int_equal(c.st.crashes, 0);
    assert_int_equal(rc, 0);
}

/* The list, tcp ones pinned to loopback; those not built are left out. */
static size_t transports(const char **list)
{
    static const char *const all[] = {"ofi+tcp://127.0.0.1",
                                      "ofi+sockets://127.0.0.1",
                                      "ofi+shm",
                                      "ucx+tcp://127.0.0.1",
                                      "ucx+shm",
                                      "ucx+all://127.0.0.1"};
    const char *const *env;
    size_t n = 0;

    if (getenv("HGX_TEST_TRANSPORTS") && *getenv("HGX_TEST_TRANSPORTS")) {
        size_t k = test_transports(&env);
        for (size_t i = 0; i < k && n < MAX_TRANSPORTS; i++)
            list[n++] = env[i];
        return n;
    }
    for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++) {
        char proto[32];
        struct na_protocol_info *pi = NULL;
        snprintf(proto, sizeof(proto), "%.*s", (int)strcspn(all[i], ":"), all[i]);
        if (NA_Get_protocol_info(proto, &pi) == NA_SUCCESS && pi)
            list[n++] = all[i];
        NA_Free_protocol_info(pi);
    }
    return n;
}

int main(void)
{
    const char *list[MAX_TRANSPORTS];
    struct CMUnitTest tests[MAX_TRANSPORTS];
    size_t n = transports(list);

    if (n == 0) {
        printf("SKIP: no transport built\n");
        return 77;
    }
    for (size_t i = 0; i < n; i++)
        tests[i] = (struct CMUnitTest){.name = list[i],
                                       .test_func = test_forge,
                                       .initial_state = (void *)(uintptr_t)list[i]};
    test_group_banner("bulk_forge");
    return _cmocka_run_group_tests("bulk_forge", tests, n, NULL, NULL) ? 1 : 0;
}
