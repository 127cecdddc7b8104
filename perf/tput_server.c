/*
 * tput_server.c -- hgx-tput's server: one class in the default mode (what
 * HG_Init gives a program, with room for cfg->contexts contexts), contexts
 * with ids 0..n-1, each
 * driven by its own thread calling HG_Trigger and HG_Progress.
 *
 * The pull handler takes a registered buffer from its context's pool, pulls
 * the client's buffer into it and answers once the data is checked. A pool
 * belongs to one context and only that context's thread triggers the
 * callbacks that use it, so it needs no lock.
 */
#include "tput.h"

#include "mercury_bulk.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pull_op {
    struct pull_op *next; /* in the pool */
    struct srv_ctx *sc;
    void *data;
    hg_bulk_t bulk;
    hg_handle_t handle;
    tput_pull_in_t in;
};

struct srv_ctx {
    hg_context_t *ctx;
    int id;
    pthread_t thread;
    struct pull_op *pool; /* free buffers */
};

static struct {
    const struct tput_config *cfg;
    struct tput_shared *sh;
    hg_class_t *cls;
    struct srv_ctx ctx[TPUT_MAX_CONTEXTS];
    atomic_int stop;
} srv;

static struct srv_ctx *srv_ctx_of(hg_handle_t h)
{
    return HG_Context_get_data(HG_Get_info(h)->context);
}

static hg_return_t rpc_handler(hg_handle_t h)
{
    struct srv_ctx *sc = srv_ctx_of(h);
    tput_rpc_in_t in = {0};
    tput_rpc_out_t out = {.context = (uint32_t)sc->id};
    if (HG_Get_input(h, &in) == HG_SUCCESS) {
        out.seq = in.seq;
        HG_Free_input(h, &in);
    }
    if (in.target != (uint32_t)sc->id)
        atomic_fetch_add_explicit(&srv.sh->off_target, 1, memory_order_relaxed);
    HG_Respond(h, NULL, NULL, &out);
    atomic_fetch_add_explicit(&srv.sh->handled[sc->id], 1, memory_order_relaxed);
    return HG_Destroy(h);
}

/* A buffer of the context's pool, registered on first use. */
static struct pull_op *pool_get(struct srv_ctx *sc)
{
    struct pull_op *op = sc->pool;
    if (op) {
        sc->pool = op->next;
        return op;
    }
    op = calloc(1, sizeof(*op));
    hg_size_t size = srv.cfg->pull_size;
    if (!op || !(op->data = malloc(size)) ||
        HG_Bulk_create(srv.cls, 1, &op->data, &size, HG_BULK_READWRITE, &op->bulk) !=
            HG_SUCCESS) {
        if (op)
            free(op->data);
        free(op);
        return NULL;
    }
    op->sc = sc;
    return op;
}

static void pool_free(struct srv_ctx *sc)
{
    while (sc->pool) {
        struct pull_op *op = sc->pool;
        sc->pool = op->next;
        HG_Bulk_free(op->bulk);
        free(op->data);
        free(op);
    }
}

/* Answer a pull RPC and give its buffer back. */
static void pull_answer(struct pull_op *op, int data_ok)
{
    tput_pull_out_t out = {
        .seq = op->in.seq, .context = (uint32_t)op->sc->id, .data_ok = (uint32_t)data_ok};
    if (!data_ok)
        atomic_fetch_add_explicit(&srv.sh->bad_data, 1, memory_order_relaxed);
    HG_Respond(op->handle, NULL, NULL, &out);
    HG_Free_input(op->handle, &op->in);
    HG_Destroy(op->handle);
    atomic_fetch_add_explicit(&srv.sh->handled[op->sc->id], 1, memory_order_relaxed);
    op->next = op->sc->pool;
    op->sc->pool = op;
}

static hg_return_t pull_done(const struct hg_cb_info *info)
{
    struct pull_op *op = info->arg;
    size_t words = op->in.size / sizeof(uint64_t);
    pull_answer(op,
                info->ret == HG_SUCCESS && tput_check(op->data, words, op->in.seq,
                                                      op->in.seed, srv.cfg->verify_all));
    return HG_SUCCESS;
}

static hg_return_t pull_handler(hg_handle_t h)
{
    struct srv_ctx *sc = srv_ctx_of(h);
    struct pull_op *op = pool_get(sc);
    if (!op) {
        fprintf(stderr, "hgx-tput server: no pull buffer\n");
        HG_Respond(h, NULL, NULL, &(tput_pull_out_t){.context = (uint32_t)sc->id});
        return HG_Destroy(h);
    }
    op->handle = h;
    if (HG_Get_input(h, &op->in) != HG_SUCCESS) {
        op->in = (tput_pull_in_t){.bulk = HG_BULK_NULL};
        pull_answer(op, 0);
        return HG_SUCCESS;
    }
    if (op->in.target != (uint32_t)sc->id)
        atomic_fetch_add_explicit(&srv.sh->off_target, 1, memory_order_relaxed);
    const struct hg_info *info = HG_Get_info(h);
    if (op->in.size != srv.cfg->pull_size ||
        HG_Bulk_transfer(sc->ctx, pull_done, op, HG_BULK_PULL, info->addr, op->in.bulk, 0,
                         op->bulk, 0, op->in.size, HG_OP_ID_IGNORE) != HG_SUCCESS)
        pull_answer(op, 0);
    return HG_SUCCESS;
}

/* Trigger what is ready, else wait up to --progress-ms for the network. */
static void *progress_loop(void *arg)
{
    struct srv_ctx *sc = arg;
    while (!atomic_load_explicit(&srv.stop, memory_order_relaxed)) {
        unsigned int n;
        hg_return_t r;
        do {
            n = 0;
            r = HG_Trigger(sc->ctx, 0, 64, &n);
        } while (r == HG_SUCCESS && n > 0);
        if (r != HG_SUCCESS && r != HG_TIMEOUT)
            atomic_fetch_add(&srv.sh->progress_errors, 1);
        r = HG_Progress(sc->ctx, (unsigned int)srv.cfg->progress_ms);
        if (r != HG_SUCCESS && r != HG_TIMEOUT) {
            fprintf(stderr, "hgx-tput server: HG_Progress on context %d: %s\n", sc->id,
                    HG_Error_to_string(r));
            atomic_fetch_add(&srv.sh->progress_errors, 1);
        }
    }
    return NULL;
}

/* After the threads stopped: run what is left (response completions), then
 * destroy the context; -1 if it stays busy for a second. */
static int context_close(struct srv_ctx *sc)
{
    double t0 = tput_now();
    while (tput_now() - t0 < 1.0) {
        unsigned int n = 0;
        HG_Progress(sc->ctx, 0);
        HG_Trigger(sc->ctx, 0, 64, &n);
        if (n == 0 && HG_Context_destroy(sc->ctx) == HG_SUCCESS) {
            pool_free(sc);
            return 0;
        }
    }
    fprintf(stderr, "hgx-tput server: context %d still busy at exit\n", sc->id);
    return -1;
}

/* Commands until QUIT; 0 on a clean QUIT. */
static int serve_commands(const struct tput_chan *ch)
{
    char c;
    while (tput_recv(ch, &c) == 0) {
        if (c == TPUT_CMD_QUIT)
            return 0;
        if (c != TPUT_CMD_CPU)
            break;
        srv.sh->server_cpu = tput_cpu_seconds();
        if (tput_send(ch, TPUT_ANS_ACK))
            break;
    }
    return -1;
}

int tput_server(const struct tput_config *cfg, struct tput_shared *sh,
                const struct tput_chan *ch)
{
    struct tput_ids ids;
    char addr[256] = "";
    hg_size_t alen = sizeof(addr);
    hg_addr_t self = HG_ADDR_NULL;
    int started = 0, ret = 1;

    srv.cfg = cfg;
    srv.sh = sh;
    /* Only the number of contexts differs from HG_Init's defaults. */
    struct hg_init_info init = HG_INIT_INFO_INITIALIZER;
    init.na_init_info.max_contexts = (uint8_t)cfg->contexts;
    srv.cls = HG_Init_opt(cfg->info, HG_TRUE, &init);
    if (!srv.cls || HG_Addr_self(srv.cls, &self) != HG_SUCCESS ||
        HG_Addr_to_string(srv.cls, addr, &alen, self) != HG_SUCCESS) {
        fprintf(stderr, "hgx-tput server: HG_Init(%s) failed\n", cfg->info);
        addr[0] = '\0';
    }
    if (self != HG_ADDR_NULL)
        HG_Addr_free(srv.cls, self);
    if (addr[0])
        tput_register(srv.cls, &ids, rpc_handler, pull_handler);
    for (int i = 0; addr[0] && i < cfg->contexts; i++) {
        struct srv_ctx *sc = &srv.ctx[i];
        sc->id = i;
        sc->ctx = HG_Context_create_id(srv.cls, (hg_uint8_t)i);
        if (!sc->ctx || HG_Context_set_data(sc->ctx, sc, NULL) != HG_SUCCESS) {
            fprintf(stderr, "hgx-tput server: context %d not created\n", i);
            addr[0] = '\0';
        }
    }
    for (; addr[0] && started < cfg->contexts; started++)
        if (pthread_create(&srv.ctx[started].thread, NULL, progress_loop,
                           &srv.ctx[started])) {
            fprintf(stderr, "hgx-tput server: no thread for context %d\n", started);
            addr[0] = '\0';
            break;
        }
    /* An empty address tells the coordinator the server failed. */
    if (tput_send_str(ch, addr) == 0 && addr[0])
        ret = serve_commands(ch) ? 1 : 0;
    atomic_store(&srv.stop, 1);
    for (int i = 0; i < started; i++)
        pthread_join(srv.ctx[i].thread, NULL);
    for (int i = 0; i < cfg->contexts; i++)
        if (srv.ctx[i].ctx && context_close(&srv.ctx[i]))
            ret = 1;
    if (srv.cls && HG_Finalize(srv.cls) != HG_SUCCESS)
        ret = 1;
    return ret;
}
