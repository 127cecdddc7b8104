/*
 * ping.c -- hgx-info --ping: look a server up and time hgx_info_ping RPCs,
 * each a request with a deadline, so a silent or absent server costs at most
 * the timeout per ping.
 */
#define _POSIX_C_SOURCE 200809L

#include "hgx_info.h"

#include <hgx.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * The client's info string from the address: its plugin+protocol prefix,
 * pinned to loopback when the server is on loopback (a bare protocol would
 * bind a routable interface).
 */
static int info_from_addr(const char *addr, char *info, size_t size)
{
    const char *sep = strstr(addr, "://");
    const char *pin = "";

    if (!sep || sep == addr || !memchr(addr, '+', (size_t)(sep - addr)))
        return -1;
    if (strncmp(sep + 3, "127.", 4) == 0 || strncmp(sep + 3, "localhost:", 10) == 0)
        pin = "://127.0.0.1";
    else if (strncmp(sep + 3, "[::1]", 5) == 0)
        pin = "://[::1]";
    int n = snprintf(info, size, "%.*s%s", (int)(sep - addr), addr, pin);
    return n > 0 && (size_t)n < size ? 0 : -1;
}

/* Forward and wait; the deadline cancels the request when no answer comes. */
static hg_return_t forward_with_deadline(hg_handle_t handle, hgx_info_ping_t *in,
                                         unsigned int timeout_ms)
{
    hgx_request_t req = HGX_REQUEST_NULL;
    hgx_status_t status;
    hg_return_t ret = hgx_iforward(handle, in, &req);

    if (ret != HG_SUCCESS)
        return ret;
    ret = hgx_request_set_timeout(req, timeout_ms);
    if (ret != HG_SUCCESS)
        hgx_cancel(&req); /* never wait without a bound */
    if (hgx_wait(&req, &status) != HG_SUCCESS)
        return HG_OTHER_ERROR;
    return ret != HG_SUCCESS ? ret : status.error;
}

/* One ping on a fresh handle; 0 and *rtt_ms when the answer echoes seq. */
static int ping_once(hg_context_t *ctx, hg_addr_t addr, hg_id_t id, uint64_t seq,
                     unsigned int timeout_ms, double *rtt_ms)
{
    hg_handle_t handle = HG_HANDLE_NULL;
    hgx_info_ping_t in = {.seq = seq}, out;
    double start = now_ms();
    hg_return_t ret = HG_Create(ctx, addr, id, &handle);

    if (ret == HG_SUCCESS)
        ret = forward_with_deadline(handle, &in, timeout_ms);
    *rtt_ms = now_ms() - start;
    if (ret == HG_SUCCESS && (ret = HG_Get_output(handle, &out)) == HG_SUCCESS) {
        uint64_t echoed = out.seq;
        HG_Free_output(handle, &out);
        if (echoed != seq) {
            printf("ping %llu: wrong answer (sequence %llu)\n", (unsigned long long)seq,
                   (unsigned long long)echoed);
            ret = HG_PROTOCOL_ERROR;
        }
    }
    if (handle != HG_HANDLE_NULL)
        HG_Destroy(handle);
    if (ret == HG_TIMEOUT)
        printf("ping %llu: no answer within %u ms\n", (unsigned long long)seq,
               timeout_ms);
    else if (ret != HG_SUCCESS)
        printf("ping %llu: failed after %.3f ms: %s\n", (unsigned long long)seq, *rtt_ms,
               HG_Error_to_string(ret));
    return ret == HG_SUCCESS ? 0 : -1;
}

static int ping_all(hg_class_t *cls, const char *addr_str, unsigned int count,
                    unsigned int timeout_ms)
{
    hg_context_t *ctx = HG_Context_create(cls);
    hg_addr_t addr = HG_ADDR_NULL;
    unsigned int answered = 0;
    double min = 0, max = 0, sum = 0;
    hg_id_t id;
    hg_return_t ret;

    if (!ctx) {
        fprintf(stderr, "hgx-info: HG_Context_create failed\n");
        return 1;
    }
    id = MERCURY_REGISTER(cls, HGX_INFO_PING_RPC, hgx_info_ping_t, hgx_info_ping_t, NULL);
    ret = id ? HG_Addr_lookup2(cls, addr_str, &addr) : HG_OTHER_ERROR;
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hgx-info: cannot look up %s: %s\n", addr_str,
                HG_Error_to_string(ret));
        HG_Context_destroy(ctx);
        return 1;
    }
    for (unsigned int i = 1; i <= count; i++) {
        double rtt;
        if (ping_once(ctx, addr, id, i, timeout_ms, &rtt) != 0)
            continue;
        printf("ping %u: answer from %s in %.3f ms\n", i, addr_str, rtt);
        fflush(stdout);
        min = answered == 0 || rtt < min ? rtt : min;
        max = rtt > max ? rtt : max;
        sum += rtt;
        answered++;
    }
    printf("%u sent, %u answered", count, answered);
    if (answered)
        printf(", round trip min/avg/max %.3f/%.3f/%.3f ms", min, sum / answered, max);
    printf("\n");
    HG_Addr_free(cls, addr);
    HG_Context_destroy(ctx);
    return answered == count ? 0 : 1;
}

int hgx_info_ping(const char *addr, unsigned int count, unsigned int timeout_ms)
{
    char info[256];
    hg_class_t *cls;
    int rc;

    if (info_from_addr(addr, info, sizeof info) != 0) {
        fprintf(stderr, "hgx-info: \"%s\" is not an address (PLUGIN+PROTOCOL://...)\n",
                addr);
        return 2;
    }
    cls = HG_Init(info, HG_FALSE);
    if (!cls) {
        fprintf(stderr, "hgx-info: cannot open \"%s\" to reach %s: HG_Init failed\n",
                info, addr);
        return 1;
    }
    rc = ping_all(cls, addr, count, timeout_ms);
    HG_Finalize(cls);
    return rc;
}
