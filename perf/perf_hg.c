/*
 * perf_hg.c -- the hgx side of hgx-perf: the server's RPCs and the client's
 * patterns over the public HG / bulk / hgx request API.
 */
#include "config.h"
#include "perf.h"

#include "hgx.h"
#include "mercury.h"
#include "mercury_bulk.h"
#include "mercury_macros.h"
#include "mercury_proc.h"
#include "mercury_proc_bulk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* ------------------------------------------------------------------ RPCs */

/* Input of perf_lat: a byte string; decoded in place (no allocation). */
typedef struct {
    uint64_t len;
    void *buf;
} perf_bytes_t;

static hg_return_t hg_proc_perf_bytes_t(hg_proc_t proc, void *data)
{
    perf_bytes_t *b = data;
    hg_return_t ret = hg_proc_uint64_t(proc, &b->len);
    if (ret != HG_SUCCESS || b->len == 0)
        return ret;
    switch (hg_proc_get_op(proc)) {
    case HG_ENCODE:
        return hg_proc_bytes(proc, b->buf, b->len);
    case HG_DECODE:
        b->buf = hg_proc_save_ptr(proc, b->len);
        return b->buf ? hg_proc_restore_ptr(proc, b->buf, b->len) : HG_OVERFLOW;
    default:
        return HG_SUCCESS;
    }
}

MERCURY_GEN_PROC(perf_expose_in_t, ((uint64_t)(size)))
MERCURY_GEN_PROC(perf_expose_out_t, ((hg_bulk_t)(bulk)))
MERCURY_GEN_PROC(perf_idle_in_t, ((uint32_t)(phase)))
MERCURY_GEN_PROC(perf_idle_out_t, ((uint64_t)(cpu_ppm)))

struct perf_ids {
    hg_id_t lat, hold, expose, idle, quit;
};

struct srv_state {
    int quit; /* clients that said they are done */
    void *region;
    hg_bulk_t bulk;
    double idle_wall, idle_cpu;
};
static struct srv_state srv;

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static hg_return_t lat_rpc(hg_handle_t h)
{
    perf_bytes_t in;
    HG_Get_input(h, &in);
    HG_Free_input(h, &in);
    HG_Respond(h, NULL, NULL, NULL);
    return HG_Destroy(h);
}

/* Never answers: the client cancels. */
static hg_return_t hold_rpc(hg_handle_t h)
{
    return HG_Destroy(h);
}

static hg_return_t expose_rpc(hg_handle_t h)
{
    perf_expose_in_t in;
    perf_expose_out_t out;
    HG_Get_input(h, &in);
    if (srv.bulk)
        HG_Bulk_free(srv.bulk);
    free(srv.region);
    hg_size_t size = in.size;
    srv.region = perf_page_alloc(size);
    if (srv.region)
        memset(srv.region, 0x5a, size);
    HG_Bulk_create(HG_Get_info(h)->hg_class, 1, &srv.region, &size, HG_BULK_READWRITE,
                   &srv.bulk);
    out.bulk = srv.bulk;
    HG_Free_input(h, &in);
    HG_Respond(h, NULL, NULL, &out);
    return HG_Destroy(h);
}

static hg_return_t idle_rpc(hg_handle_t h)
{
    perf_idle_in_t in;
    perf_idle_out_t out = {0};
    HG_Get_input(h, &in);
    if (in.phase == 0) {
        srv.idle_wall = perf_now();
        srv.idle_cpu = cpu_seconds();
    } else {
        double wall = perf_now() - srv.idle_wall, cpu = cpu_seconds() - srv.idle_cpu;
        out.cpu_ppm = (uint64_t)(cpu / wall * 1e6);
    }
    HG_Free_input(h, &in);
    HG_Respond(h, NULL, NULL, &out);
    return HG_Destroy(h);
}

static hg_return_t quit_rpc(hg_handle_t h)
{
    srv.quit++;
    return HG_Destroy(h);
}

static void register_rpcs(hg_class_t *cls, struct perf_ids *ids, int server)
{
    ids->lat = HG_Register_name(cls, "perf_lat", hg_proc_perf_bytes_t, NULL,
                                server ? lat_rpc : NULL);
    ids->hold = HG_Register_name(cls, "perf_hold", NULL, NULL, server ? hold_rpc : NULL);
    ids->expose = MERCURY_REGISTER(cls, "perf_expose", perf_expose_in_t,
                                   perf_expose_out_t, server ? expose_rpc : NULL);
    ids->idle = MERCURY_REGISTER(cls, "perf_idle", perf_idle_in_t, perf_idle_out_t,
                                 server ? idle_rpc : NULL);
    ids->quit = HG_Register_name(cls, "perf_quit", NULL, NULL, server ? quit_rpc : NULL);
    HG_Registered_disable_response(cls, ids->quit, HG_TRUE);
}

/* ---------------------------------------------------------------- client */

struct client {
    hg_class_t *cls;
    hg_context_t *ctx;
    hg_addr_t addr;
    struct perf_ids ids;
};

static hg_return_t count_cb(const struct hg_cb_info *info)
{
    (*(long *)info->arg)++;
    return HG_SUCCESS;
}

/* HG_Progress's timeout: 100 ms, or 0 with --poll (a program polling from its
 * own loop). */
static unsigned int progress_ms = 100;

/* Drive progress until *counter reaches target. */
static int wait_count(hg_context_t *ctx, long *counter, long target)
{
    while (*counter < target) {
        unsigned int n;
        do {
            n = 0;
            HG_Trigger(ctx, 0, 64, &n);
        } while (n && *counter < target);
        if (*counter >= target)
            break;
        hg_return_t r = HG_Progress(ctx, progress_ms);
        if (r != HG_SUCCESS && r != HG_TIMEOUT) {
            fprintf(stderr, "hgx-perf: HG_Progress: %s\n", HG_Error_to_string(r));
            return -1;
        }
    }
    return 0;
}

static int forward_wait(struct client *c, hg_handle_t h, void *in)
{
    long done = 0;
    hg_return_t r = HG_Forward(h, count_cb, &done, in);
    if (r != HG_SUCCESS) {
        fprintf(stderr, "hgx-perf: HG_Forward: %s\n", HG_Error_to_string(r));
        return -1;
    }
    return wait_count(c->ctx, &done, 1);
}

static double lat(struct client *c, size_t size, long iters, char *payload)
{
    hg_handle_t h;
    double *t = malloc((size_t)iters * sizeof(*t));
    if (!t || HG_Create(c->ctx, c->addr, c->ids.lat, &h) != HG_SUCCESS) {
        free(t);
        return -1;
    }
    perf_bytes_t in = {.len = size, .buf = payload};
    double m = -1;
    for (long i = -(iters / 10 + 1); i < iters; i++) {
        double t0 = perf_now();
        if (forward_wait(c, h, &in))
            goto out;
        if (i >= 0)
            t[i] = (perf_now() - t0) * 1e6;
    }
    m = perf_median(t, iters);
out:
    HG_Destroy(h);
    free(t);
    return m;
}

struct rate_slot {
    long *done;
    int ready;
};

static hg_return_t rate_cb(const struct hg_cb_info *info)
{
    struct rate_slot *s = info->arg;
    (*s->done)++;
    s->ready = 1;
    return HG_SUCCESS;
}

static double rate(struct client *c, int k, long total)
{
    hg_handle_t h[64];
    struct rate_slot s[64];
    perf_bytes_t in = {.len = 0, .buf = NULL};
    long done = 0, started = 0;
    for (int i = 0; i < k; i++)
        if (HG_Create(c->ctx, c->addr, c->ids.lat, &h[i]) != HG_SUCCESS)
            return -1;
    if (perf_clients_barrier()) /* other clients start this point now too */
        return -1;
    double t0 = perf_now();
    for (int i = 0; i < k; i++, started++) {
        s[i] = (struct rate_slot){.done = &done};
        if (HG_Forward(h[i], rate_cb, &s[i], &in) != HG_SUCCESS)
            return -1;
    }
    while (done < total) {
        long before = done;
        if (wait_count(c->ctx, &done, before + 1))
            return -1;
        for (int i = 0; i < k && started < total; i++)
            if (s[i].ready) {
                s[i].ready = 0;
                started++;
                if (HG_Forward(h[i], rate_cb, &s[i], &in) != HG_SUCCESS)
                    return -1;
            }
    }
    double v = (double)total / (perf_now() - t0);
    if (wait_count(c->ctx, &done, started))
        return -1;
    for (int i = 0; i < k; i++)
        HG_Destroy(h[i]);
    return v;
}

#define RATE_ROUNDS 7

/* The rate pattern again with hgx requests: hgx_iforward + hgx_waitany refill,
 * to price the request layer against HG_Forward with a callback. */
static double rate_hgx(struct client *c, int k, long total)
{
    hg_handle_t h[64];
    hgx_request_t req[64];
    perf_bytes_t in = {.len = 0, .buf = NULL};
    long done = 0, started = 0;
    for (int i = 0; i < k; i++)
        if (HG_Create(c->ctx, c->addr, c->ids.lat, &h[i]) != HG_SUCCESS)
            return -1;
    if (perf_clients_barrier()) /* other clients start this point now too */
        return -1;
    double t0 = perf_now();
    for (int i = 0; i < k; i++, started++)
        if (hgx_iforward(h[i], &in, &req[i]) != HG_SUCCESS)
            return -1;
    while (done < total) {
        int index;
        hgx_status_t st;
        if (hgx_waitany(k, req, &index, &st) != HG_SUCCESS || index == HGX_UNDEFINED ||
            st.error != HG_SUCCESS)
            return -1;
        done++;
        if (started < total) {
            started++;
            if (hgx_iforward(h[index], &in, &req[index]) != HG_SUCCESS)
                return -1;
        }
    }
    double v = (double)total / (perf_now() - t0);
    if (hgx_waitall(k, req, HGX_STATUSES_IGNORE) != HG_SUCCESS)
        return -1;
    for (int i = 0; i < k; i++)
        HG_Destroy(h[i]);
    return v;
}

static double bw(struct client *c, hg_bulk_t remote, hg_bulk_t local, int put,
                 size_t size, long iters)
{
    long done = 0;
    double t0 = 0;
    for (long i = -1; i < iters; i++) {
        if (i == 0)
            t0 = perf_now();
        hg_return_t r =
            HG_Bulk_transfer(c->ctx, count_cb, &done, put ? HG_BULK_PUSH : HG_BULK_PULL,
                             c->addr, remote, 0, local, 0, size, HG_OP_ID_IGNORE);
        if (r != HG_SUCCESS) {
            fprintf(stderr, "hgx-perf: HG_Bulk_transfer: %s\n", HG_Error_to_string(r));
            return -1;
        }
        if (wait_count(c->ctx, &done, i + 2))
            return -1;
    }
    return (double)size * (double)iters / (perf_now() - t0) / (1024.0 * 1024.0);
}

/* Forward n hold RPCs (fewer if the transport runs out of posted receives:
 * *posted says how many), let them leave, cancel all; microseconds from the
 * first HG_Cancel until every callback ran. */
static double cancel_storm(struct client *c, hg_handle_t *h, int n, int *posted)
{
    long done = 0;
    int k;
    for (k = 0; k < n; k++) {
        hg_return_t r = HG_Forward(h[k], count_cb, &done, NULL);
        if (r == HG_AGAIN && k > 0)
            break;
        if (r != HG_SUCCESS)
            return -1;
    }
    *posted = k;
    double t = perf_now();
    while (perf_now() - t < (k > 1 ? 0.05 : 0.001))
        HG_Progress(c->ctx, 0);
    double t0 = perf_now();
    for (int i = 0; i < k; i++)
        HG_Cancel(h[i]);
    if (wait_count(c->ctx, &done, k))
        return -1;
    return (perf_now() - t0) * 1e6;
}

/* One round: n hgx forward requests with a deadline each, then hgx_waitall. */
static int scale_round(hg_handle_t *h, hgx_request_t *req, int n)
{
    perf_bytes_t in = {.len = 0, .buf = NULL};
    for (int i = 0; i < n; i++) {
        if (hgx_iforward(h[i], &in, &req[i]) != HG_SUCCESS ||
            hgx_request_set_timeout(req[i], 60000) != HG_SUCCESS) {
            fprintf(stderr, "hgx-perf: hgx_iforward/set_timeout failed at %d\n", i);
            return -1;
        }
    }
    return hgx_waitall(n, req, HGX_STATUSES_IGNORE) == HG_SUCCESS ? 0 : -1;
}

/* us per op over rounds of n outstanding, after one untimed round: HG sets
 * up a handle's buffers at its first forward, which would otherwise be
 * charged to the (few) rounds of the largest n only. */
static double scale(hg_handle_t *h, hgx_request_t *req, int n, long rounds)
{
    if (scale_round(h, req, n))
        return -1;
    double t0 = perf_now();
    for (long r = 0; r < rounds; r++)
        if (scale_round(h, req, n))
            return -1;
    return (perf_now() - t0) / ((double)n * (double)rounds) * 1e6;
}

static double idle_cpu(struct client *c)
{
    hg_handle_t h;
    perf_idle_in_t in = {.phase = 0};
    perf_idle_out_t out;
    if (HG_Create(c->ctx, c->addr, c->ids.idle, &h) != HG_SUCCESS ||
        forward_wait(c, h, &in))
        return -1;
    struct timespec ts = {1, 0};
    nanosleep(&ts, NULL);
    in.phase = 1;
    if (forward_wait(c, h, &in) || HG_Get_output(h, &out) != HG_SUCCESS)
        return -1;
    double pct = (double)out.cpu_ppm / 1e4;
    HG_Free_output(h, &out);
    HG_Destroy(h);
    return pct;
}

static hg_handle_t *create_handles(struct client *c, hg_id_t id, int n)
{
    hg_handle_t *h = calloc((size_t)n, sizeof(*h));
    for (int i = 0; h && i < n; i++)
        if (HG_Create(c->ctx, c->addr, id, &h[i]) != HG_SUCCESS)
            return NULL;
    return h;
}

static void destroy_handles(hg_handle_t *h, int n)
{
    for (int i = 0; h && i < n; i++)
        if (h[i])
            HG_Destroy(h[i]);
    free(h);
}

static int client_modes(const struct perf_config *cfg, struct client *c,
                        struct perf_results *res)
{
    double v;
    switch (cfg->mode) {
    case PERF_LAT: {
        char *payload = calloc(
            1, 65536 > cfg->sizes[cfg->nsizes - 1] ? 65536 : cfg->sizes[cfg->nsizes - 1]);
        if (!payload)
            return -1;
        for (int i = 0; i < cfg->nsizes; i++) {
            long it = perf_iters_for(cfg, cfg->sizes[i], 0);
            perf_progress(cfg, "hgx lat %zu B", cfg->sizes[i]);
            if ((v = lat(c, cfg->sizes[i], it, payload)) < 0) {
                free(payload);
                return -1;
            }
            perf_add(res->hg, &res->nhg, "rpc-rtt-us", cfg->sizes[i], it, v);
        }
        free(payload);
        break;
    }
    case PERF_RATE:
        for (int i = 0; i < perf_rate_n; i++) {
            int k = (int)perf_rate_inflight[i];
            long it = perf_iters_for(cfg, 0, 0) * 4;
            double hg[RATE_ROUNDS], req[RATE_ROUNDS], ratio[RATE_ROUNDS];
            perf_progress(cfg, "hgx rate %d in flight (HG_Forward, then hgx requests)",
                          k);
            /* Alternating rounds, medians: the two figures are compared to a
             * few percent, closer than the drift of a 2-core machine. */
            for (int r = 0; r < RATE_ROUNDS; r++) {
                if ((hg[r] = rate(c, k, it / RATE_ROUNDS)) < 0 ||
                    (req[r] = rate_hgx(c, k, it / RATE_ROUNDS)) < 0)
                    return -1;
                ratio[r] = req[r] / hg[r];
            }
            perf_add(res->hg, &res->nhg, "rate-ops/s", k, it,
                     perf_median(hg, RATE_ROUNDS));
            perf_add(res->hg, &res->nhg, "rate-req-ops/s", k, it,
                     perf_median(req, RATE_ROUNDS));
            perf_add(res->hg, &res->nhg, "rate-req/hg", k, it,
                     perf_median(ratio, RATE_ROUNDS));
        }
        break;
    case PERF_BW: {
        size_t max = 4096;
        for (int i = 0; i < cfg->nsizes; i++)
            max = cfg->sizes[i] > max ? cfg->sizes[i] : max;
        hg_handle_t h;
        perf_expose_in_t in = {.size = max};
        perf_expose_out_t out;
        void *buf = perf_page_alloc(max);
        hg_size_t bsize = max;
        hg_bulk_t local = HG_BULK_NULL;
        if (!buf || HG_Create(c->ctx, c->addr, c->ids.expose, &h) != HG_SUCCESS ||
            forward_wait(c, h, &in) || HG_Get_output(h, &out) != HG_SUCCESS ||
            HG_Bulk_create(c->cls, 1, &buf, &bsize, HG_BULK_READWRITE, &local) !=
                HG_SUCCESS) {
            free(buf);
            return -1;
        }
        memset(buf, 0xa5, max);
        int ret = 0;
        for (int put = 0; put < 2 && !ret; put++)
            for (int i = 0; i < cfg->nsizes && !ret; i++) {
                long it = perf_iters_for(cfg, cfg->sizes[i], 1);
                perf_progress(cfg, "hgx %s %zu B", put ? "push" : "pull", cfg->sizes[i]);
                if ((v = bw(c, out.bulk, local, put, cfg->sizes[i], it)) < 0)
                    ret = -1;
                else
                    perf_add(res->hg, &res->nhg, put ? "push-MiB/s" : "pull-MiB/s",
                             cfg->sizes[i], it, v);
            }
        HG_Bulk_free(local);
        HG_Free_output(h, &out);
        HG_Destroy(h);
        free(buf);
        if (ret)
            return -1;
        break;
    }
    case PERF_CANCEL: {
        long it = perf_iters_for(cfg, 0, 0);
        double sum = 0;
        hg_handle_t *h = create_handles(c, c->ids.hold, PERF_STORM);
        if (!h)
            return -1;
        perf_progress(cfg, "hgx cancel");
        for (long i = 0; i < it; i++) {
            int one;
            if ((v = cancel_storm(c, h, 1, &one)) < 0) {
                destroy_handles(h, PERF_STORM);
                return -1;
            }
            sum += v;
        }
        perf_add(res->hg, &res->nhg, "cancel-us", 1, it, sum / (double)it);
        perf_progress(cfg, "hgx cancel storm");
        int posted = 0;
        v = cancel_storm(c, h, PERF_STORM, &posted);
        destroy_handles(h, PERF_STORM);
        if (v < 0)
            return -1;
        if (posted < PERF_STORM)
            fprintf(stderr,
                    "hgx-perf: HG_Forward returned HG_AGAIN after %d outstanding; "
                    "storm cut to %d\n",
                    posted, posted);
        perf_add(res->hg, &res->nhg, "storm-us/op", PERF_STORM, posted, v / posted);
        break;
    }
    case PERF_SCALE: {
        hg_handle_t *h = create_handles(c, c->ids.lat, PERF_STORM);
        hgx_request_t *req = calloc(PERF_STORM, sizeof(*req));
        if (!h || !req) {
            free(req);
            destroy_handles(h, PERF_STORM);
            return -1;
        }
        int ret = 0;
        for (int i = 0; i < perf_scale_n && !ret; i++) {
            int n = (int)perf_scale_counts[i];
            long rounds = perf_iters_for(cfg, (size_t)n, 0);
            perf_progress(cfg, "hgx scale %d outstanding", n);
            if ((v = scale(h, req, n, rounds)) < 0)
                ret = -1;
            else
                perf_add(res->hg, &res->nhg, "per-op-us", (size_t)n, rounds * n, v);
        }
        free(req);
        destroy_handles(h, PERF_STORM);
        if (ret)
            return -1;
        break;
    }
    }
    perf_progress(cfg, "hgx idle server CPU");
    res->idle_cpu_pct = idle_cpu(c);
    return 0;
}

/* ------------------------------------------------------------------ run */

int perf_hg_run(const struct perf_config *cfg, struct perf_oob *oob,
                struct perf_results *res)
{
    struct perf_ids ids;
    struct hg_init_info init = HG_INIT_INFO_INITIALIZER;
    progress_ms = cfg->poll ? 0 : 100;
    if (cfg->no_block)
        init.na_init_info.progress_mode = NA_NO_BLOCK;
    /* Each process drives hgx from one thread, as the raw loops do. */
    if (!cfg->thread_safe)
        init.na_init_info.thread_mode = NA_THREAD_MODE_SINGLE;
    hg_class_t *cls = HG_Init_opt(cfg->info, cfg->server ? HG_TRUE : HG_FALSE, &init);
    hg_context_t *ctx = cls ? HG_Context_create(cls) : NULL;
    char addr[256] = "";
    size_t alen = 0;
    int ret = -1;

    if (cfg->server) {
        hg_addr_t self = HG_ADDR_NULL;
        hg_size_t len = sizeof(addr);
        if (!ctx || HG_Addr_self(cls, &self) != HG_SUCCESS ||
            HG_Addr_to_string(cls, addr, &len, self) != HG_SUCCESS) {
            fprintf(stderr, "hgx-perf server: HG_Init(%s) failed\n", cfg->transport);
            addr[0] = '\0';
        }
        if (self != HG_ADDR_NULL)
            HG_Addr_free(cls, self);
        for (int k = 0; k < cfg->clients; k++)
            perf_oob_send_blob(&oob[k], addr, strlen(addr) + 1);
        if (!addr[0])
            goto out;
        srv = (struct srv_state){0}; /* a fresh run (--repeat) */
        register_rpcs(cls, &ids, 1);
        perf_oob_barrier(cfg, oob); /* RPCs registered before a client forwards */
        /* Gives up after 300 s without a request. Idle time is counted in
         * progress timeouts, not read from the clock: a clock read between a
         * request's arrival and its handler would delay every reply (the raw
         * server reads none). */
        unsigned int idle_ms = 0, empty = 0;
        double idle_since = 0;
        bool done = false;
        while (!done && idle_ms < 300000) {
            unsigned int n = 0;
            do {
                n = 0;
                HG_Trigger(ctx, 0, 64, &n);
                if (n)
                    idle_ms = empty = 0;
                done = srv.quit >= cfg->clients;
            } while (n && !done);
            if (done || HG_Progress(ctx, progress_ms) != HG_TIMEOUT) {
                empty = 0;
                continue;
            }
            if (progress_ms)
                idle_ms += progress_ms;
            else if (empty++ % 4096 == 0) { /* polled: a clock read now and then */
                if (empty == 1)
                    idle_since = perf_now();
                idle_ms = (unsigned int)((perf_now() - idle_since) * 1e3);
            }
        }
        if (srv.bulk)
            HG_Bulk_free(srv.bulk);
        free(srv.region);
        ret = done ? 0 : -1;
    } else {
        struct client c = {.cls = cls, .ctx = ctx, .addr = HG_ADDR_NULL};
        if (perf_oob_recv_blob(oob, addr, sizeof(addr) - 1, &alen) || !addr[0]) {
            fprintf(stderr, "hgx-perf: server did not start %s\n", cfg->transport);
            goto out;
        }
        addr[alen < sizeof(addr) ? alen : sizeof(addr) - 1] = '\0';
        perf_oob_barrier(cfg, oob);
        if (!ctx) {
            fprintf(stderr, "hgx-perf: HG_Init(%s) failed\n", cfg->transport);
            goto out;
        }
        register_rpcs(cls, &c.ids, 0);
        ids = c.ids;
        if (HG_Addr_lookup2(cls, addr, &c.addr) != HG_SUCCESS) {
            fprintf(stderr, "hgx-perf: lookup of %s failed\n", addr);
            goto out;
        }
        ret = client_modes(cfg, &c, res);
        hg_handle_t q;
        if (HG_Create(ctx, c.addr, ids.quit, &q) == HG_SUCCESS) {
            long done = 0;
            if (HG_Forward(q, count_cb, &done, NULL) == HG_SUCCESS)
                wait_count(ctx, &done, 1);
            HG_Destroy(q);
        }
        HG_Addr_free(cls, c.addr);
    }
out:
    perf_oob_barrier(cfg, oob);
    if (ctx)
        HG_Context_destroy(ctx);
    if (cls)
        HG_Finalize(cls);
    return ret;
}
