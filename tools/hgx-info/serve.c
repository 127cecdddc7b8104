/*
 * serve.c -- hgx-info --listen and --serve: a listening class, its
 * advertised address (HG_Addr_self + HG_Addr_to_string) and, for --serve, a
 * progress loop answering pings until SIGINT or SIGTERM.
 */
#define _POSIX_C_SOURCE 200809L

#include "hgx_info.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t stop_serving;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_serving = 1;
}

static hg_return_t pong_done(const struct hg_cb_info *info)
{
    HG_Destroy(info->info.respond.handle);
    return HG_SUCCESS;
}

/* Echo the ping's sequence number; a malformed ping is dropped (and logged). */
static hg_return_t ping_handler(hg_handle_t handle)
{
    hgx_info_ping_t ping;
    hg_return_t ret = HG_Get_input(handle, &ping);

    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hgx-info: bad ping: %s\n", HG_Error_to_string(ret));
        HG_Destroy(handle);
        return ret;
    }
    hgx_info_ping_t pong = ping;
    HG_Free_input(handle, &ping);
    ret = HG_Respond(handle, pong_done, NULL, &pong);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hgx-info: cannot answer a ping: %s\n", HG_Error_to_string(ret));
        HG_Destroy(handle);
    }
    return HG_SUCCESS;
}

static int print_self(hg_class_t *cls)
{
    hg_addr_t self = HG_ADDR_NULL;
    char buf[512];
    hg_size_t len = sizeof buf;
    hg_return_t ret = HG_Addr_self(cls, &self);

    if (ret == HG_SUCCESS)
        ret = HG_Addr_to_string(cls, buf, &len, self);
    if (self != HG_ADDR_NULL)
        HG_Addr_free(cls, self);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hgx-info: cannot get the class's own address: %s\n",
                HG_Error_to_string(ret));
        return 1;
    }
    printf("%s\n", buf);
    fflush(stdout);
    return 0;
}

static int serve(hg_class_t *cls)
{
    struct sigaction sa;
    hg_context_t *ctx = HG_Context_create(cls);
    int rc = 1;

    if (!ctx) {
        fprintf(stderr, "hgx-info: HG_Context_create failed\n");
        return 1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (MERCURY_REGISTER(cls, HGX_INFO_PING_RPC, hgx_info_ping_t, hgx_info_ping_t,
                         ping_handler) == 0) {
        fprintf(stderr, "hgx-info: cannot register %s\n", HGX_INFO_PING_RPC);
        goto out;
    }
    if (print_self(cls) != 0)
        goto out;
    /* A short progress timeout so that a stop signal is seen promptly. */
    while (!stop_serving) {
        unsigned int n = 0;
        hg_return_t ret = HG_Progress(ctx, 100);
        if (ret != HG_SUCCESS && ret != HG_TIMEOUT) {
            fprintf(stderr, "hgx-info: HG_Progress: %s\n", HG_Error_to_string(ret));
            goto out;
        }
        do {
            ret = HG_Trigger(ctx, 0, 16, &n);
        } while (ret == HG_SUCCESS && n > 0);
    }
    rc = 0;
out:
    HG_Context_destroy(ctx);
    return rc;
}

int hgx_info_listen(const char *info, bool serve_pings)
{
    hg_class_t *cls = HG_Init(info, HG_TRUE);
    int rc;

    if (!cls) {
        fprintf(stderr, "hgx-info: cannot listen on \"%s\": HG_Init failed\n", info);
        return 1;
    }
    rc = serve_pings ? serve(cls) : print_self(cls);
    HG_Finalize(cls);
    return rc;
}
