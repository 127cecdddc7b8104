/*
 * tput_client.c -- one hgx-tput client process: cfg->window RPCs outstanding
 * back to back from one thread, each handle aimed at a server context by
 * HG_Set_target_id, every reply checked (sequence number, a context that
 * exists, and for pulls the server's verdict on the data it read). Whether
 * the targeted context answered is the server's count (off_target).
 */
#include "tput.h"

#include "mercury_bulk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct slot {
    hg_handle_t h;
    uint32_t target;
    uint64_t seq, seed;
    double sent;   /* tput_now() at HG_Forward */
    uint64_t *buf; /* pull: registered, the server reads it */
    hg_bulk_t bulk;
};

static struct {
    const struct tput_config *cfg;
    struct tput_client_stats *me;
    hg_class_t *cls;
    hg_context_t *ctx;
    hg_addr_t server;
    struct tput_ids ids;
    enum tput_kind kind;
    struct slot slot[TPUT_MAX_WINDOW];
    int ready[TPUT_MAX_WINDOW], nready; /* slots whose RPC completed */
    long completed;
} cl;

/* Round trip of s's RPC into the histogram. */
static void lat_note(struct slot *s)
{
    double lat = tput_now() - s->sent;
    long ns = (long)(lat * 1e9);
    int b = 0;
    while (ns > 1 && b < TPUT_LAT_BUCKETS - 1)
        ns >>= 1, b++;
    cl.me->lat_hist[b]++;
    if (lat > cl.me->lat_max)
        cl.me->lat_max = lat;
}

static void reply_checked(struct slot *s, int ok)
{
    lat_note(s);
    atomic_fetch_add_explicit(&cl.me->done, 1, memory_order_relaxed);
    if (!ok)
        atomic_fetch_add_explicit(&cl.me->bad, 1, memory_order_relaxed);
    cl.completed++;
    cl.ready[cl.nready++] = (int)(s - cl.slot);
}

static hg_return_t rpc_done(const struct hg_cb_info *info)
{
    struct slot *s = info->arg;
    tput_rpc_out_t out;
    int ok = info->ret == HG_SUCCESS && HG_Get_output(s->h, &out) == HG_SUCCESS;
    if (ok) {
        ok = out.seq == s->seq && out.context < (uint32_t)cl.cfg->contexts;
        HG_Free_output(s->h, &out);
    }
    reply_checked(s, ok);
    return HG_SUCCESS;
}

static hg_return_t pull_done(const struct hg_cb_info *info)
{
    struct slot *s = info->arg;
    tput_pull_out_t out;
    int ok = info->ret == HG_SUCCESS && HG_Get_output(s->h, &out) == HG_SUCCESS;
    if (ok) {
        ok = out.seq == s->seq && out.context < (uint32_t)cl.cfg->contexts && out.data_ok;
        HG_Free_output(s->h, &out);
    }
    reply_checked(s, ok);
    return HG_SUCCESS;
}

static int forward(struct slot *s)
{
    hg_return_t r;
    s->seq++;
    s->sent = tput_now();
    if (cl.kind == TPUT_RPC) {
        tput_rpc_in_t in = {.seq = s->seq, .target = s->target};
        r = HG_Forward(s->h, rpc_done, s, &in);
    } else {
        size_t words = cl.cfg->pull_size / sizeof(uint64_t);
        s->buf[0] = s->buf[words - 1] = s->seq;
        tput_pull_in_t in = {.bulk = s->bulk,
                             .seq = s->seq,
                             .seed = s->seed,
                             .size = (uint32_t)cl.cfg->pull_size,
                             .target = s->target};
        r = HG_Forward(s->h, pull_done, s, &in);
    }
    if (r != HG_SUCCESS)
        fprintf(stderr, "hgx-tput client %d: HG_Forward: %s\n", cl.cfg->client_id,
                HG_Error_to_string(r));
    return r == HG_SUCCESS ? 0 : -1;
}

/* n RPCs with the window kept full; -1 on an error. */
static int run(long n)
{
    long started = 0, target = cl.completed + n;
    cl.nready = 0;
    for (int i = 0; i < cl.cfg->window && started < n; i++, started++)
        if (forward(&cl.slot[i]))
            return -1;
    while (cl.completed < target) {
        unsigned int k = 0;
        hg_return_t r = HG_Trigger(cl.ctx, 0, 64, &k);
        if (r != HG_SUCCESS && r != HG_TIMEOUT)
            return -1;
        while (cl.nready > 0 && started < n) {
            started++;
            if (forward(&cl.slot[cl.ready[--cl.nready]]))
                return -1;
        }
        cl.nready = started < n ? cl.nready : 0;
        if (k == 0 && cl.completed < target) {
            r = HG_Progress(cl.ctx, 100);
            if (r != HG_SUCCESS && r != HG_TIMEOUT) {
                fprintf(stderr, "hgx-tput client %d: HG_Progress: %s\n",
                        cl.cfg->client_id, HG_Error_to_string(r));
                return -1;
            }
        }
    }
    return 0;
}

static void phase_end(void)
{
    for (int i = 0; i < cl.cfg->window; i++) {
        struct slot *s = &cl.slot[i];
        if (s->h)
            HG_Destroy(s->h);
        if (s->bulk)
            HG_Bulk_free(s->bulk);
        free(s->buf);
        *s = (struct slot){0};
    }
}

/* Handles aimed at the contexts in turn (client k starts at context k, so
 * that windows smaller than the context count still cover them all), and
 * for pulls a registered buffer each, filled with its pattern. */
static int phase_begin(enum tput_kind kind)
{
    const struct tput_config *cfg = cl.cfg;
    size_t words = cfg->pull_size / sizeof(uint64_t);
    cl.kind = kind;
    for (int i = 0; i < cfg->window; i++) {
        struct slot *s = &cl.slot[i];
        s->target = (uint32_t)((cfg->client_id + i) % cfg->contexts);
        s->seq = (uint64_t)cfg->client_id << 48 | (uint64_t)i << 40;
        s->seed = (uint64_t)cfg->client_id << 32 | (uint64_t)i;
        hg_id_t id = kind == TPUT_RPC ? cl.ids.rpc : cl.ids.pull;
        if (HG_Create(cl.ctx, cl.server, id, &s->h) != HG_SUCCESS ||
            HG_Set_target_id(s->h, (hg_uint8_t)s->target) != HG_SUCCESS)
            return -1;
        if (kind != TPUT_PULL)
            continue;
        void *buf = s->buf = malloc(cfg->pull_size);
        hg_size_t size = cfg->pull_size;
        if (!buf || HG_Bulk_create(cl.cls, 1, &buf, &size, HG_BULK_READ_ONLY, &s->bulk) !=
                        HG_SUCCESS)
            return -1;
        for (size_t w = 1; w + 1 < words; w++)
            s->buf[w] = tput_word(s->seed, w);
    }
    return 0;
}

/* Warm up (handles and connections set up, buffers touched): 8 RPCs per
 * window slot, untimed. */
static int phase_warm(enum tput_kind kind)
{
    if (phase_begin(kind) || run(8L * cl.cfg->window))
        return -1;
    atomic_store(&cl.me->done, 0);
    memset(cl.me->lat_hist, 0, sizeof(cl.me->lat_hist));
    cl.me->lat_max = 0;
    return 0;
}

static int phase_timed(void)
{
    double cpu0 = tput_cpu_seconds(), t0 = tput_now();
    if (run(cl.cfg->iters[cl.kind]))
        return -1;
    cl.me->wall = tput_now() - t0;
    cl.me->cpu = tput_cpu_seconds() - cpu0;
    phase_end();
    return 0;
}

/* Commands until QUIT: WARM kind, then GO, per phase. */
static int obey(const struct tput_chan *ch)
{
    char c, kind;
    while (tput_recv(ch, &c) == 0) {
        int r;
        if (c == TPUT_CMD_QUIT)
            return 0;
        if (c == TPUT_CMD_WARM && tput_recv(ch, &kind) == 0 && kind >= 0 &&
            kind < TPUT_NKINDS)
            r = phase_warm((enum tput_kind)kind) ? -1 : tput_send(ch, TPUT_ANS_READY);
        else if (c == TPUT_CMD_GO)
            r = phase_timed() ? -1 : tput_send(ch, TPUT_ANS_DONE);
        else
            r = -1;
        if (r) {
            tput_send(ch, TPUT_ANS_FAIL);
            return -1;
        }
    }
    return -1;
}

int tput_client(const struct tput_config *cfg, struct tput_shared *sh,
                const struct tput_chan *ch)
{
    char addr[256];
    int ret = 1;
    cl.cfg = cfg;
    cl.me = &sh->client[cfg->client_id];
    cl.server = HG_ADDR_NULL;
    if (tput_recv_str(ch, addr, sizeof(addr)) || !addr[0])
        return 1; /* the server failed and said so */
    /* A target id is the server's context, passed on unchecked: a plain
     * client class reaches every context of the server. */
    cl.cls = HG_Init(cfg->info, HG_FALSE);
    cl.ctx = cl.cls ? HG_Context_create(cl.cls) : NULL;
    if (!cl.ctx) {
        fprintf(stderr, "hgx-tput client %d: HG_Init(%s) failed\n", cfg->client_id,
                cfg->info);
        tput_send(ch, TPUT_ANS_FAIL);
    } else if (tput_register(cl.cls, &cl.ids, NULL, NULL),
               HG_Addr_lookup2(cl.cls, addr, &cl.server) != HG_SUCCESS) {
        fprintf(stderr, "hgx-tput client %d: lookup of %s failed\n", cfg->client_id,
                addr);
        tput_send(ch, TPUT_ANS_FAIL);
    } else {
        ret = obey(ch) ? 1 : 0;
    }
    phase_end();
    if (cl.server != HG_ADDR_NULL)
        HG_Addr_free(cl.cls, cl.server);
    if (cl.ctx)
        HG_Context_destroy(cl.ctx);
    if (cl.cls)
        HG_Finalize(cl.cls);
    return ret;
}
