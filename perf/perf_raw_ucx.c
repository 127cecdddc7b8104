/*
 * perf_raw_ucx.c -- raw UCX baseline: a UCP worker with the same UCX_TLS as
 * na_ucx, ucp_tag_send_nbx/ucp_tag_recv_nbx for messages and
 * ucp_put_nbx(+flush)/ucp_get_nbx for bulk; the worker is busy-progressed.
 */
#include "config.h"
#include "perf_raw.h"

#ifdef HGX_HAVE_UCX
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

struct ucx_raw {
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_ep_h ep[PERF_MAX_CLIENTS]; /* a client's server is ep[0] */
    int nep;
    ucp_mem_h mem_big;
    ucp_rkey_h rkey;
    uint64_t raddr;
    char *msg, *big;
    size_t msg_size, big_size;
    void *req[PERF_RAW_NSLOTS];
    /* completions reported by callbacks, drained by poll */
    struct raw_completion *q;
    unsigned qhead, qtail; /* ring of PERF_RAW_NSLOTS * 2 */
    int rma_pending;
    int posting;     /* inside ucp_tag_recv_nbx: its request is not ours yet */
    int done_inline; /* that receive completed during its own posting */
};

#define QSIZE (PERF_RAW_NSLOTS * 2u)

static struct ucx_raw *g_ucx; /* callbacks reach the state through user_data = slot */

static void push(struct ucx_raw *u, int slot, enum raw_event ev, uint64_t tag, size_t len)
{
    u->q[u->qtail++ % QSIZE] =
        (struct raw_completion){.slot = slot, .ev = ev, .tag = tag, .len = len};
}

static void send_cb(void *request, ucs_status_t status, void *user_data)
{
    int slot = (int)(intptr_t)user_data;
    g_ucx->req[slot] = NULL;
    push(g_ucx, slot, status == UCS_ERR_CANCELED ? RAW_EV_CANCELLED : RAW_EV_SEND, 0, 0);
    ucp_request_free(request);
}

static void recv_cb(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                    void *user_data)
{
    int slot = (int)(intptr_t)user_data;
    g_ucx->req[slot] = NULL;
    if (status == UCS_ERR_CANCELED)
        push(g_ucx, slot, RAW_EV_CANCELLED, 0, 0);
    else
        push(g_ucx, slot, RAW_EV_RECV, info->sender_tag, info->length);
    if (g_ucx->posting)
        g_ucx->done_inline = 1; /* the poster frees the request it gets back */
    else
        ucp_request_free(request);
}

static void rma_cb(void *request, ucs_status_t status, void *user_data)
{
    (void)status, (void)user_data;
    if (--g_ucx->rma_pending == 0)
        push(g_ucx, PERF_RAW_RMA_SLOT, RAW_EV_RMA, 0, 0);
    ucp_request_free(request);
}

static int ucx_send(void *t, int peer, int slot, const void *buf, size_t len,
                    uint64_t tag)
{
    struct ucx_raw *u = t;
    ucp_request_param_t p = {.op_attr_mask =
                                 UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
                             .cb.send = send_cb,
                             .user_data = (void *)(intptr_t)slot};
    ucs_status_ptr_t sp = ucp_tag_send_nbx(u->ep[peer], buf, len, tag, &p);
    if (UCS_PTR_IS_ERR(sp)) {
        fprintf(stderr, "hgx-perf raw ucx: send: %s\n",
                ucs_status_string(UCS_PTR_STATUS(sp)));
        return -1;
    }
    if (sp == NULL)
        push(u, slot, RAW_EV_SEND, 0, 0);
    else
        u->req[slot] = sp;
    return 0;
}

/* NO_IMM_CMPL: UCX 1.13 leaves recv_info unwritten when a receive matches an
 * already-arrived message at once (the sender tag would be stack garbage), so
 * every receive reports through the callback. */
static int ucx_recv(void *t, int slot, void *buf, size_t len, uint64_t tag, int any)
{
    struct ucx_raw *u = t;
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                             UCP_OP_ATTR_FIELD_USER_DATA |
                                             UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
                             .cb.recv = recv_cb,
                             .user_data = (void *)(intptr_t)slot};
    u->posting = 1;
    u->done_inline = 0;
    ucs_status_ptr_t sp =
        ucp_tag_recv_nbx(u->worker, buf, len, tag, any ? 0 : ~(ucp_tag_t)0, &p);
    u->posting = 0;
    if (UCS_PTR_IS_ERR(sp)) {
        fprintf(stderr, "hgx-perf raw ucx: recv: %s\n",
                ucs_status_string(UCS_PTR_STATUS(sp)));
        return -1;
    }
    if (u->done_inline)
        ucp_request_free(sp);
    else
        u->req[slot] = sp;
    return 0;
}

static int ucx_poll(void *t, struct raw_completion *out, int max)
{
    struct ucx_raw *u = t;
    if (u->qhead == u->qtail)
        ucp_worker_progress(u->worker);
    int n = 0;
    while (n < max && u->qhead != u->qtail)
        out[n++] = u->q[u->qhead++ % QSIZE];
    return n;
}

static int ucx_cancel(void *t, int slot)
{
    struct ucx_raw *u = t;
    if (u->req[slot])
        ucp_request_cancel(u->worker, u->req[slot]);
    return 0;
}

static int ucx_rma(void *t, int put, void *local, size_t len)
{
    struct ucx_raw *u = t;
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK,
                             .cb.send = rma_cb};
    ucs_status_ptr_t sp = put ? ucp_put_nbx(u->ep[0], local, len, u->raddr, u->rkey, &p)
                              : ucp_get_nbx(u->ep[0], local, len, u->raddr, u->rkey, &p);
    if (UCS_PTR_IS_ERR(sp))
        return -1;
    if (sp)
        u->rma_pending++;
    if (put) { /* as na_ucx: a put is complete once flushed */
        sp = ucp_ep_flush_nbx(u->ep[0], &p);
        if (UCS_PTR_IS_ERR(sp))
            return -1;
        if (sp)
            u->rma_pending++;
    }
    if (u->rma_pending == 0)
        push(u, PERF_RAW_RMA_SLOT, RAW_EV_RMA, 0, 0);
    return 0;
}

#define UCX_CHK(call)                                                                    \
    do {                                                                                 \
        ucs_status_t st_ = (call);                                                       \
        if (st_ != UCS_OK) {                                                             \
            fprintf(stderr, "hgx-perf raw ucx: %s: %s\n", #call,                         \
                    ucs_status_string(st_));                                             \
            return -1;                                                                   \
        }                                                                                \
    } while (0)

static int ucx_setup(struct ucx_raw *u, const struct perf_config *cfg,
                     struct perf_oob *oob)
{
    ucp_config_t *config;
    UCX_CHK(ucp_config_read(NULL, NULL, &config));
    const char *tls =
        strcmp(cfg->proto, "shm") == 0 ? "posix,sysv,cma,self,tcp" : "tcp,self";
    UCX_CHK(ucp_config_modify(config, "TLS", tls));
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features = UCP_FEATURE_TAG | UCP_FEATURE_RMA};
    ucs_status_t st = ucp_init(&params, config, &u->ctx);
    ucp_config_release(config);
    UCX_CHK(st);
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    UCX_CHK(ucp_worker_create(u->ctx, &wp, &u->worker));

    u->msg_size = (size_t)(PERF_RAW_SRV_RECVS + 2) * PERF_RAW_MSG_MAX;
    u->big_size = perf_raw_big_size(cfg);
    u->msg = aligned_alloc(4096, u->msg_size);
    u->big = aligned_alloc(4096, u->big_size);
    u->q = calloc(QSIZE, sizeof(*u->q));
    if (!u->msg || !u->big || !u->q)
        return -1;
    memset(u->msg, 0, u->msg_size);
    memset(u->big, cfg->server ? 0x5a : 0xa5, u->big_size);
    ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                                             UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                               .address = u->big,
                               .length = u->big_size};
    UCX_CHK(ucp_mem_map(u->ctx, &mp, &u->mem_big));

    ucp_address_t *addr;
    size_t alen, rlen;
    void *rkbuf;
    UCX_CHK(ucp_worker_get_address(u->worker, &addr, &alen));
    UCX_CHK(ucp_rkey_pack(u->ctx, u->mem_big, &rkbuf, &rlen));
    uint64_t base = (uint64_t)(uintptr_t)u->big;
    static char peer[8192], prk[8192];
    size_t plen, prlen, blen;
    uint64_t pbase = 0;
    int bad = 0;
    /* One exchange per channel: a server gets an ep to each client. The
     * remote key is of the first peer only: a client's server (only clients
     * issue RMA). */
    for (int k = 0; k < perf_oob_count(cfg) && !bad; k++) {
        struct perf_oob *ch = &oob[k];
        uint64_t pb = 0;
        bad = perf_oob_send_blob(ch, addr, alen) || perf_oob_send_blob(ch, rkbuf, rlen) ||
              perf_oob_send_blob(ch, &base, sizeof(base)) ||
              perf_oob_recv_blob(ch, peer, sizeof(peer), &plen) ||
              perf_oob_recv_blob(ch, prk, sizeof(prk), &prlen) ||
              perf_oob_recv_blob(ch, &pb, sizeof(pb), &blen);
        if (k == 0)
            pbase = pb;
        ucp_ep_params_t ep = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                              .address = (const ucp_address_t *)peer};
        if (!bad && ucp_ep_create(u->worker, &ep, &u->ep[k]) != UCS_OK)
            bad = 1;
        if (!bad)
            u->nep = k + 1;
        if (!bad && k == 0 && ucp_ep_rkey_unpack(u->ep[0], prk, &u->rkey) != UCS_OK)
            bad = 1;
    }
    ucp_worker_release_address(u->worker, addr);
    ucp_rkey_buffer_release(rkbuf);
    if (bad) {
        fprintf(stderr, "hgx-perf raw ucx: address exchange or ep creation failed\n");
        return -1;
    }
    u->raddr = pbase;
    return 0;
}

static void ucx_teardown(struct ucx_raw *u)
{
    if (u->rkey)
        ucp_rkey_destroy(u->rkey);
    for (int k = 0; k < u->nep; k++) {
        ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = UCP_EP_CLOSE_FLAG_FORCE};
        ucs_status_ptr_t sp = ucp_ep_close_nbx(u->ep[k], &p);
        if (sp && !UCS_PTR_IS_ERR(sp)) {
            while (ucp_request_check_status(sp) == UCS_INPROGRESS)
                ucp_worker_progress(u->worker);
            ucp_request_free(sp);
        }
    }
    if (u->mem_big)
        ucp_mem_unmap(u->ctx, u->mem_big);
    if (u->worker)
        ucp_worker_destroy(u->worker);
    if (u->ctx)
        ucp_cleanup(u->ctx);
    free(u->msg);
    free(u->big);
    free(u->q);
}

int perf_raw_ucx_run(const struct perf_config *cfg, struct perf_oob *oob,
                     struct perf_results *res)
{
    struct ucx_raw *u = calloc(1, sizeof(*u));
    if (!u)
        return -1;
    g_ucx = u;
    int ret = ucx_setup(u, cfg, oob);
    if (ret == 0) {
        struct raw_transport rt = {.t = u,
                                   .msg = u->msg,
                                   .big = u->big,
                                   .big_size = u->big_size,
                                   .send = ucx_send,
                                   .recv = ucx_recv,
                                   .poll = ucx_poll,
                                   .cancel = ucx_cancel,
                                   .rma = ucx_rma};
        ret = perf_raw_drive(cfg, &rt, res);
        /* let the last sends drain before the sync */
        for (int i = 0; i < 1000; i++)
            ucp_worker_progress(u->worker);
    }
    perf_oob_barrier(cfg, oob);
    ucx_teardown(u);
    free(u);
    g_ucx = NULL;
    return ret;
}
#else
int perf_raw_ucx_run(const struct perf_config *cfg, struct perf_oob *oob,
                     struct perf_results *res)
{
    (void)cfg, (void)oob, (void)res;
    return -1;
}
#endif
