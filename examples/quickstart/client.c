/*
 * Quick start, client side: three calls to the quick-start server, each an
 * hgx request completed the MPI way.
 *
 *     ./examples/quickstart/client ADDR [NAME]
 *
 * ADDR is what the server printed. The client
 *   1. calls greet and waits for the answer (hgx_iforward, hgx_wait);
 *   2. calls greet with a 2000 ms delay under a 300 ms deadline
 *      (hgx_request_set_timeout): the request ends with HG_TIMEOUT, cancelled;
 *   3. calls greet with a 2000 ms delay and cancels it at once (hgx_cancel):
 *      the request ends cancelled, long before the server would answer;
 *   4. calls greet once more on the same handle: a forward that ended
 *      cancelled leaves its handle ready for the next one.
 * It prints one line per step and exits 0 when every step went as described.
 */
#define _POSIX_C_SOURCE 200809L

#include "greet.h"

#include <hgx.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define SLOW_MS 2000u    /* the delay asked for in steps 2 and 3 */
#define DEADLINE_MS 300u /* the deadline of step 2 */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A plain call: forward, wait, read the output. 0 on success. */
static int call(hg_handle_t h, const char *name, int step)
{
    greet_in_t in = {.name = name, .delay_ms = 0};
    greet_out_t out;
    hgx_request_t req;
    hgx_status_t status;

    if (hgx_iforward(h, &in, &req) != HG_SUCCESS || hgx_wait(&req, &status) != HG_SUCCESS)
        return -1;
    if (status.error != HG_SUCCESS) {
        printf("%d. call failed: %s\n", step, HG_Error_to_string(status.error));
        return -1;
    }
    if (HG_Get_output(h, &out) != HG_SUCCESS)
        return -1;
    printf("%d. call: the server says \"%s\"\n", step, out.greeting);
    HG_Free_output(h, &out);
    return 0;
}

/* A call the server answers after SLOW_MS, ended early by a deadline (step 2)
 * or by hgx_cancel (step 3). 0 when it ended cancelled, in time. */
static int slow_call(hg_handle_t h, const char *name, int step)
{
    greet_in_t in = {.name = name, .delay_ms = SLOW_MS};
    hgx_request_t req;
    hgx_status_t status;
    int cancelled = 0;
    uint64_t start = now_ms();

    if (hgx_iforward(h, &in, &req) != HG_SUCCESS)
        return -1;
    hg_return_t ret =
        step == 2 ? hgx_request_set_timeout(req, DEADLINE_MS) : hgx_cancel(&req);
    if (ret != HG_SUCCESS || hgx_wait(&req, &status) != HG_SUCCESS)
        return -1; /* a request that cannot be waited for stays with HG: exit soon */
    hgx_test_cancelled(&status, &cancelled);
    unsigned int took = (unsigned int)(now_ms() - start);
    printf("%d. %s: ended after %u ms with %s, cancelled %s\n", step,
           step == 2 ? "deadline" : "cancel", took, HG_Error_to_string(status.error),
           cancelled ? "yes" : "no");
    /* A deadline reports HG_TIMEOUT; a cancel, HG_CANCELED. */
    hg_return_t expected = step == 2 ? HG_TIMEOUT : HG_CANCELED;
    return cancelled && status.error == expected && took < SLOW_MS ? 0 : -1;
}

int main(int argc, char *argv[])
{
    if (argc < 2 || argc > 3 || !strstr(argv[1], "://")) {
        fprintf(stderr, "usage: %s ADDR [NAME]   (ADDR as the server printed it)\n",
                argv[0]);
        return 2;
    }
    const char *server = argv[1];
    const char *name = argc > 2 ? argv[2] : "world";
    char info[32];
    hg_addr_t addr = HG_ADDR_NULL;
    hg_handle_t h = HG_HANDLE_NULL;
    hg_context_t *ctx = NULL;
    int rc = 1;

    /* The client needs only the protocol: "ofi+tcp://10.0.0.5:4242" -> "ofi+tcp". */
    snprintf(info, sizeof info, "%.*s", (int)(strstr(server, "://") - server), server);
    setvbuf(stdout, NULL, _IOLBF, 0);
    hg_class_t *cls = HG_Init(info, HG_FALSE);
    if (!cls) {
        fprintf(stderr, "quickstart client: HG_Init(\"%s\") failed\n", info);
        return 1;
    }
    ctx = HG_Context_create(cls);
    hg_id_t id = MERCURY_REGISTER(cls, GREET_RPC, greet_in_t, greet_out_t, NULL);
    if (!ctx || id == 0 || HG_Addr_lookup2(cls, server, &addr) != HG_SUCCESS ||
        HG_Create(ctx, addr, id, &h) != HG_SUCCESS) {
        fprintf(stderr, "quickstart client: cannot reach %s\n", server);
        goto out;
    }
    if (call(h, name, 1) == 0 && slow_call(h, name, 2) == 0 &&
        slow_call(h, name, 3) == 0 && call(h, name, 4) == 0) {
        printf("quickstart client: every step OK\n");
        rc = 0;
    }
out:
    if (h != HG_HANDLE_NULL)
        HG_Destroy(h);
    if (addr != HG_ADDR_NULL)
        HG_Addr_free(cls, addr);
    if (ctx)
        HG_Context_destroy(ctx);
    HG_Finalize(cls);
    return rc;
}
