/*
 * hgx_test_server.c -- server for the hgx request tests: add, stall (sleeps
 * without progressing), expose (a patterned region as a bulk handle), quit.
 */
#include "hgx_test_rpc.h"
#include "test_common.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct hgx_server_state {
    bool quit;
    void *region;
    hg_bulk_t bulk;
};

static struct hgx_server_state server;

static hg_return_t add_rpc(hg_handle_t h)
{
    hgx_add_in_t in;
    hgx_add_out_t out;
    HG_Get_input(h, &in);
    out.sum = in.a + in.b;
    HG_Free_input(h, &in);
    HG_Respond(h, NULL, NULL, &out);
    return HG_Destroy(h);
}

static hg_return_t stall_rpc(hg_handle_t h)
{
    hgx_stall_in_t in;
    hgx_add_out_t out = {.sum = 1};
    HG_Get_input(h, &in);
    usleep(in.ms * 1000u);
    HG_Free_input(h, &in);
    HG_Respond(h, NULL, NULL, &out);
    return HG_Destroy(h);
}

static hg_return_t expose_rpc(hg_handle_t h)
{
    hgx_expose_in_t in;
    hgx_expose_out_t out;
    HG_Get_input(h, &in);
    if (server.bulk)
        HG_Bulk_free(server.bulk);
    free(server.region);
    server.region = malloc(in.size);
    test_fill(server.region, in.size, in.seed);
    hg_size_t size = in.size;
    HG_Bulk_create(HG_Get_info(h)->hg_class, 1, &server.region, &size, HG_BULK_READWRITE,
                   &server.bulk);
    out.bulk = server.bulk;
    HG_Free_input(h, &in);
    HG_Respond(h, NULL, NULL, &out);
    return HG_Destroy(h);
}

static hg_return_t quit_rpc(hg_handle_t h)
{
    server.quit = true;
    return HG_Destroy(h);
}

void hgx_test_register(hg_class_t *cls, struct hgx_test_ids *ids, bool srv)
{
    ids->add = MERCURY_REGISTER(cls, "hgx_add", hgx_add_in_t, hgx_add_out_t,
                                srv ? add_rpc : NULL);
    ids->stall = MERCURY_REGISTER(cls, "hgx_stall", hgx_stall_in_t, hgx_add_out_t,
                                  srv ? stall_rpc : NULL);
    ids->expose = MERCURY_REGISTER(cls, "hgx_expose", hgx_expose_in_t, hgx_expose_out_t,
                                   srv ? expose_rpc : NULL);
    ids->quit = HG_Register_name(cls, "hgx_quit", NULL, NULL, srv ? quit_rpc : NULL);
    HG_Registered_disable_response(cls, ids->quit, HG_TRUE);
}

int hgx_test_server_main(const char *info, int publish_fd)
{
    struct hgx_test_ids ids;
    char addr[TEST_ADDR_MAX] = "";
    hg_size_t len = sizeof(addr);
    hg_addr_t self = HG_ADDR_NULL;
    hg_class_t *cls = HG_Init(info, HG_TRUE);
    hg_context_t *ctx = cls ? HG_Context_create(cls) : NULL;

    if (!ctx || HG_Addr_self(cls, &self) != HG_SUCCESS ||
        HG_Addr_to_string(cls, addr, &len, self) != HG_SUCCESS) {
        test_server_publish(publish_fd, "");
        return 1;
    }
    HG_Addr_free(cls, self);
    hgx_test_register(cls, &ids, true);
    test_server_publish(publish_fd, addr);
    double idle_since = test_now();
    while (!server.quit && test_now() - idle_since < 120) {
        unsigned int count = 0;
        HG_Progress(ctx, 100);
        HG_Trigger(ctx, 0, 64, &count);
        if (count)
            idle_since = test_now();
    }
    if (server.bulk)
        HG_Bulk_free(server.bulk);
    free(server.region);
    HG_Context_destroy(ctx);
    return HG_Finalize(cls) == HG_SUCCESS && server.quit ? 0 : 1;
}
