/*
 * hgx_test_rpc.h -- RPCs the hgx request tests call on their forked server.
 */
#ifndef HGX_TEST_RPC_H
#define HGX_TEST_RPC_H

#include "mercury.h"
#include "mercury_bulk.h"
#include "mercury_macros.h"
#include "mercury_proc_bulk.h"

MERCURY_GEN_PROC(hgx_add_in_t, ((int32_t)(a))((int32_t)(b)))
MERCURY_GEN_PROC(hgx_add_out_t, ((int32_t)(sum)))
MERCURY_GEN_PROC(hgx_stall_in_t, ((uint32_t)(ms)))
MERCURY_GEN_PROC(hgx_expose_in_t, ((uint64_t)(size))((uint32_t)(seed)))
MERCURY_GEN_PROC(hgx_expose_out_t, ((hg_bulk_t)(bulk)))

struct hgx_test_ids {
    hg_id_t add, stall, expose, quit;
};

/* Register the test RPCs; handlers are installed only on the server. */
void hgx_test_register(hg_class_t *cls, struct hgx_test_ids *ids, bool server);

/* The server child for test_server_start(). */
int hgx_test_server_main(const char *info, int publish_fd);

#endif /* HGX_TEST_RPC_H */
