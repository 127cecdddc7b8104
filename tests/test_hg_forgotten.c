/*
 * test_hg_forgotten.c -- a program that forgets an address and a handle
 * still finishes: HG_Context_destroy releases the forgotten handle (one that
 * completed a forward), HG_Finalize the forgotten addresses, both return
 * HG_SUCCESS (Mercury 2.4.1 returns HG_BUSY; docs/mercury-compat.md). Run
 * under valgrind to check that nothing leaks. Exit 77 (SKIP) when ofi+tcp
 * cannot start here.
 */
#include "mercury.h"
#include "test_hg_done.h"

#include <stdio.h>
#include <time.h>

#define DEADLINE_S 20

static hg_return_t rpc_handler(hg_handle_t handle)
{
    hg_return_t ret = HG_Respond(handle, NULL, NULL, NULL);
    HG_Destroy(handle);
    return ret;
}

static int check(const char *what, hg_return_t ret)
{
    printf("%s: %s: %s\n", ret == HG_SUCCESS ? "ok" : "FAIL", what,
           HG_Error_to_string(ret));
    return ret != HG_SUCCESS;
}

int main(void)
{
    hg_class_t *cls = HG_Init("ofi+tcp://127.0.0.1", HG_TRUE);
    if (!cls) {
        printf("SKIP: ofi+tcp does not start here\n");
        return 77;
    }
    hg_context_t *ctx = HG_Context_create(cls);
    hg_id_t id = HG_Register_name(cls, "forgotten_rpc", NULL, NULL, rpc_handler);
    hg_addr_t self = HG_ADDR_NULL, addr = HG_ADDR_NULL;
    hg_handle_t h = HG_HANDLE_NULL;
    char name[256];
    hg_size_t size = sizeof(name);
    struct test_hg_done done = {0, HG_TIMEOUT};
    int fails = check("self address", HG_Addr_self(cls, &self));
    fails += check("address string", HG_Addr_to_string(cls, name, &size, self));
    fails += check("lookup", HG_Addr_lookup2(cls, name, &addr));
    fails += check("create", HG_Create(ctx, addr, id, &h));
    fails += check("forward", HG_Forward(h, test_hg_done_cb, &done, NULL));
    time_t t0 = time(NULL);
    while (!fails && !done.calls && time(NULL) - t0 < DEADLINE_S) {
        unsigned int n = 0;
        HG_Progress(ctx, 100);
        HG_Trigger(ctx, 0, 16, &n);
    }
    fails += check("forward completion", done.ret);
    /* h, self and addr are forgotten. */
    fails += check("HG_Context_destroy with a forgotten handle", HG_Context_destroy(ctx));
    fails += check("HG_Finalize with forgotten addresses", HG_Finalize(cls));
    printf("%s: forgotten addresses and handles\n", fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
