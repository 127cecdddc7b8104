/*
 * perf_raw.c -- the raw baseline's patterns (ping-pong, in-flight window,
 * outstanding batches, cancels, RMA) over a struct raw_transport.
 */
#include "perf_raw.h"
#include "hgx_spin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLL_MAX 64

size_t perf_raw_big_size(const struct perf_config *cfg)
{
    size_t m = 4096;
    if (cfg->mode == PERF_BW)
        for (int i = 0; i < cfg->nsizes; i++)
            if (cfg->sizes[i] > m)
                m = cfg->sizes[i];
    return m;
}

/* This client's bits in its request tags (see perf_raw.h). */
static uint64_t client_bits;

/* Per-slot completion state of the client. */
static unsigned char sent_done[PERF_RAW_NSLOTS], recv_done[PERF_RAW_NSLOTS];
static size_t recv_len[PERF_RAW_NSLOTS];

static int pump(struct raw_transport *rt, long *nrecv, long *ncancel, int *rma_done)
{
    struct raw_completion c[POLL_MAX];
    int n = rt->poll(rt->t, c, POLL_MAX);
    if (n < 0)
        return -1;
    if (n == 0)
        hgx_spin_pause(); /* 2 cores, 2 spinning processes: let the peer run */
    for (int i = 0; i < n; i++) {
        switch (c[i].ev) {
        case RAW_EV_SEND:
            sent_done[c[i].slot] = 1;
            break;
        case RAW_EV_RECV:
            recv_done[c[i].slot] = 1;
            recv_len[c[i].slot] = c[i].len;
            if (nrecv)
                (*nrecv)++;
            break;
        case RAW_EV_CANCELLED:
            recv_done[c[i].slot] = 2;
            if (ncancel)
                (*ncancel)++;
            break;
        case RAW_EV_RMA:
            if (rma_done)
                *rma_done = 1;
            break;
        }
    }
    return n;
}

/* ---------------------------------------------------------------- server */

static int serve(struct raw_transport *rt, int nclients)
{
    char *bufs = rt->msg;
    int ret = 0, quit = 0, quits = 0;
    long sendctr = 0;
    const int posted = PERF_RAW_SRV_POSTED(nclients);
    for (int s = 0; s < posted; s++)
        if (rt->recv(rt->t, s, bufs + (size_t)s * PERF_RAW_MSG_MAX, PERF_RAW_MSG_MAX, 0,
                     1))
            return -1;
    while (!quit) {
        struct raw_completion c[POLL_MAX];
        int n = rt->poll(rt->t, c, POLL_MAX);
        if (n < 0)
            return -1;
        if (n == 0)
            hgx_spin_pause();
        for (int i = 0; i < n && !ret; i++) {
            if (c[i].ev != RAW_EV_RECV)
                continue;
            unsigned cmd = (unsigned)(c[i].tag >> 16) & 0xffffu;
            unsigned cslot = (unsigned)(c[i].tag & 0xffff);
            uint64_t peer = c[i].tag >> RAW_TAG_CLIENT_SHIFT;
            if (peer >= (uint64_t)nclients) {
                fprintf(stderr, "hgx-perf raw server: tag %#llx from no client\n",
                        (unsigned long long)c[i].tag);
                ret = -1;
                break;
            }
            int sslot = PERF_RAW_SEND_BASE +
                        (int)(sendctr++ % (PERF_RAW_NSLOTS - 1 - PERF_RAW_SEND_BASE));
            char *mbuf = c[i].slot < PERF_RAW_SRV_RECVS
                             ? bufs + (size_t)c[i].slot * PERF_RAW_MSG_MAX
                             : NULL;
            switch (cmd) {
            case RAW_CMD_ECHO:
                ret = rt->send(rt->t, (int)peer, sslot, rt->big, 0,
                               RAW_TAG(RAW_CMD_REPLY, cslot));
                break;
            case RAW_CMD_PULL: {
                uint64_t sz = 0;
                memcpy(&sz, mbuf, sizeof(sz));
                ret = rt->send(rt->t, (int)peer, sslot, rt->big, (size_t)sz,
                               RAW_TAG(RAW_CMD_REPLY, cslot));
                break;
            }
            case RAW_CMD_PUSHREQ: {
                uint64_t sz = 0;
                memcpy(&sz, mbuf, sizeof(sz));
                /* the data lands in big; slot PERF_RAW_SRV_RECVS + client slot */
                ret = rt->recv(rt->t, PERF_RAW_SRV_RECVS + (int)cslot, rt->big,
                               (size_t)sz, RAW_TAG(RAW_CMD_PUSHDATA, cslot), 0);
                break;
            }
            case RAW_CMD_PUSHDATA:
                ret = rt->send(rt->t, (int)peer, sslot, rt->big, 0,
                               RAW_TAG(RAW_CMD_REPLY, cslot));
                break;
            case RAW_CMD_QUIT:
                quit = ++quits >= nclients;
                break;
            default:
                fprintf(stderr, "hgx-perf raw server: unexpected tag %#llx\n",
                        (unsigned long long)c[i].tag);
                ret = -1;
            }
            if (!ret && c[i].slot < PERF_RAW_SRV_RECVS && !quit)
                ret = rt->recv(rt->t, c[i].slot, mbuf, PERF_RAW_MSG_MAX, 0, 1);
        }
        if (ret)
            return -1;
    }
    /* cancel the wildcard receives still posted, then drain */
    for (int s = 0; s < posted; s++)
        rt->cancel(rt->t, s);
    double t0 = perf_now();
    while (perf_now() - t0 < 0.2)
        if (rt->poll(rt->t, (struct raw_completion[POLL_MAX]){{0}}, POLL_MAX) < 0)
            break;
    return 0;
}

/* ---------------------------------------------------------------- client */

/* Post a request on slot s and its reply receive; tag carries cmd. */
static int post_pair(struct raw_transport *rt, int s, unsigned cmd, const void *buf,
                     size_t len, void *rbuf, size_t rlen)
{
    sent_done[PERF_RAW_SEND_BASE + s] = 0;
    recv_done[s] = 0;
    if (rt->recv(rt->t, s, rbuf, rlen, RAW_TAG(RAW_CMD_REPLY, s), 0))
        return -1;
    return rt->send(rt->t, 0, PERF_RAW_SEND_BASE + s, buf, len,
                    client_bits | RAW_TAG(cmd, s));
}

static int wait_pair(struct raw_transport *rt, int s)
{
    while (!recv_done[s] || !sent_done[PERF_RAW_SEND_BASE + s])
        if (pump(rt, NULL, NULL, NULL) < 0)
            return -1;
    return 0;
}

static double pingpong(struct raw_transport *rt, size_t size, long iters, long warm)
{
    char *sbuf = rt->msg, *rbuf = rt->msg + PERF_RAW_MSG_MAX;
    double *t = malloc((size_t)iters * sizeof(*t));
    if (!t)
        return -1;
    for (long i = -warm; i < iters; i++) {
        double t0 = perf_now();
        if (post_pair(rt, 0, RAW_CMD_ECHO, sbuf, size, rbuf, 0) || wait_pair(rt, 0)) {
            free(t);
            return -1;
        }
        if (i >= 0)
            t[i] = (perf_now() - t0) * 1e6;
    }
    double m = perf_median(t, iters);
    free(t);
    return m;
}

static double rate(struct raw_transport *rt, int k, long total)
{
    char *sbuf = rt->msg, *rbuf = rt->msg + PERF_RAW_MSG_MAX;
    long started = 0, done = 0;
    if (perf_clients_barrier()) /* other clients start this point now too */
        return -1;
    double t0 = perf_now();
    for (int s = 0; s < k; s++, started++)
        if (post_pair(rt, s, RAW_CMD_ECHO, sbuf, 0, rbuf, 0))
            return -1;
    while (done < total) {
        if (pump(rt, NULL, NULL, NULL) < 0)
            return -1;
        for (int s = 0; s < k; s++) {
            if (recv_done[s] == 1 && sent_done[PERF_RAW_SEND_BASE + s]) {
                recv_done[s] = 3;
                done++;
                if (started < total) {
                    started++;
                    if (post_pair(rt, s, RAW_CMD_ECHO, sbuf, 0, rbuf, 0))
                        return -1;
                }
            }
        }
    }
    return (double)total / (perf_now() - t0);
}

static double batch(struct raw_transport *rt, int n, long rounds)
{
    char *sbuf = rt->msg, *rbuf = rt->msg + PERF_RAW_MSG_MAX;
    double t0 = perf_now();
    for (long r = 0; r < rounds; r++) {
        long got = 0;
        for (int s = 0; s < n; s++)
            if (post_pair(rt, s, RAW_CMD_ECHO, sbuf, 0, rbuf, 0))
                return -1;
        while (got < n)
            if (pump(rt, &got, NULL, NULL) < 0)
                return -1;
        for (int s = 0; s < n; s++)
            if (wait_pair(rt, s))
                return -1;
    }
    return (perf_now() - t0) / ((double)n * (double)rounds) * 1e6;
}

static double cancel_storm(struct raw_transport *rt, int n)
{
    char *rbuf = rt->msg + PERF_RAW_MSG_MAX;
    long nc = 0;
    for (int s = 0; s < n; s++) {
        recv_done[s] = 0;
        if (rt->recv(rt->t, s, rbuf, 8, RAW_TAG(RAW_CMD_NEVER, s), 0))
            return -1;
    }
    pump(rt, NULL, NULL, NULL);
    double t0 = perf_now();
    for (int s = 0; s < n; s++)
        if (rt->cancel(rt->t, s))
            return -1;
    while (nc < n)
        if (pump(rt, NULL, &nc, NULL) < 0)
            return -1;
    return (perf_now() - t0) * 1e6;
}

static double bulk(struct raw_transport *rt, int put, size_t size, long iters,
                   char *local)
{
    double t0 = 0;
    for (long i = -1; i < iters; i++) {
        if (i == 0)
            t0 = perf_now();
        if (rt->rma) {
            int done = 0;
            if (rt->rma(rt->t, put, local, size))
                return -1;
            while (!done)
                if (pump(rt, NULL, NULL, &done) < 0)
                    return -1;
        } else if (put) {
            uint64_t sz = size;
            memcpy(rt->msg, &sz, sizeof(sz));
            sent_done[PERF_RAW_SEND_BASE + 1] = 0;
            if (post_pair(rt, 0, RAW_CMD_PUSHREQ, rt->msg, sizeof(sz),
                          rt->msg + PERF_RAW_MSG_MAX, 0) ||
                rt->send(rt->t, 0, PERF_RAW_SEND_BASE + 1, local, size,
                         client_bits | RAW_TAG(RAW_CMD_PUSHDATA, 0)) ||
                wait_pair(rt, 0))
                return -1;
            while (!sent_done[PERF_RAW_SEND_BASE + 1])
                if (pump(rt, NULL, NULL, NULL) < 0)
                    return -1;
        } else {
            uint64_t sz = size;
            memcpy(rt->msg, &sz, sizeof(sz));
            if (post_pair(rt, 0, RAW_CMD_PULL, rt->msg, sizeof(sz), local, size) ||
                wait_pair(rt, 0))
                return -1;
        }
    }
    return (double)size * (double)iters / (perf_now() - t0) / (1024.0 * 1024.0);
}

static int client(const struct perf_config *cfg, struct raw_transport *rt,
                  struct perf_results *res)
{
    double v;
    switch (cfg->mode) {
    case PERF_LAT:
        for (int i = 0; i < cfg->nsizes; i++) {
            long it = perf_iters_for(cfg, cfg->sizes[i], 0);
            perf_progress(cfg, "raw lat %zu B", cfg->sizes[i]);
            if ((v = pingpong(rt, cfg->sizes[i], it, it / 10 + 1)) < 0)
                return -1;
            perf_add(res->raw, &res->nraw, "rpc-rtt-us", cfg->sizes[i], it, v);
        }
        break;
    case PERF_RATE:
        /* Wire-up (UCX connects lazily) before the first timed point. */
        if (pingpong(rt, 0, 1, 100) < 0)
            return -1;
        for (int i = 0; i < perf_rate_n; i++) {
            long it = perf_iters_for(cfg, 0, 0) * 4;
            perf_progress(cfg, "raw rate %zu in flight", perf_rate_inflight[i]);
            if ((v = rate(rt, (int)perf_rate_inflight[i], it)) < 0)
                return -1;
            perf_add(res->raw, &res->nraw, "rate-ops/s", perf_rate_inflight[i], it, v);
        }
        break;
    case PERF_BW: {
        char *local = rt->big; /* client's own region, registered */
        for (int put = 0; put < 2; put++)
            for (int i = 0; i < cfg->nsizes; i++) {
                long it = perf_iters_for(cfg, cfg->sizes[i], 1);
                perf_progress(cfg, "raw %s %zu B", put ? "push" : "pull", cfg->sizes[i]);
                if ((v = bulk(rt, put, cfg->sizes[i], it, local)) < 0)
                    return -1;
                perf_add(res->raw, &res->nraw, put ? "push-MiB/s" : "pull-MiB/s",
                         cfg->sizes[i], it, v);
            }
        break;
    }
    case PERF_CANCEL: {
        long it = perf_iters_for(cfg, 0, 0);
        double sum = 0;
        perf_progress(cfg, "raw cancel");
        for (long i = 0; i < it; i++) {
            if ((v = cancel_storm(rt, 1)) < 0)
                return -1;
            sum += v;
        }
        perf_add(res->raw, &res->nraw, "cancel-us", 1, it, sum / (double)it);
        int n = rt->max_recvs && rt->max_recvs - 8 < PERF_STORM ? rt->max_recvs - 8
                                                                : PERF_STORM;
        perf_progress(cfg, "raw cancel storm of %d", n);
        if ((v = cancel_storm(rt, n)) < 0)
            return -1;
        perf_add(res->raw, &res->nraw, "storm-us/op", PERF_STORM, n, v / n);
        break;
    }
    case PERF_SCALE:
        for (int i = 0; i < perf_scale_n; i++) {
            int n = (int)perf_scale_counts[i];
            long rounds = perf_iters_for(cfg, (size_t)n, 0);
            if (rt->max_outstanding && n > rt->max_outstanding) {
                fprintf(stderr,
                        "hgx-perf: raw %s scale stops at %d outstanding (the provider "
                        "stalls past it); no raw figure for %d\n",
                        cfg->transport, rt->max_outstanding, n);
                continue;
            }
            perf_progress(cfg, "raw scale %d outstanding", n);
            if ((v = batch(rt, n, rounds)) < 0)
                return -1;
            perf_add(res->raw, &res->nraw, "per-op-us", (size_t)n, rounds * n, v);
        }
        break;
    }
    return 0;
}

int perf_raw_drive(const struct perf_config *cfg, struct raw_transport *rt,
                   struct perf_results *res)
{
    if (cfg->server)
        return serve(rt, cfg->clients);
    client_bits = (uint64_t)cfg->client_id << RAW_TAG_CLIENT_SHIFT;
    int ret = client(cfg, rt, res);
    /* tell the server to stop (even after a failure, so it does not hang) */
    sent_done[PERF_RAW_SEND_BASE] = 0;
    if (rt->send(rt->t, 0, PERF_RAW_SEND_BASE, rt->msg, 0,
                 client_bits | RAW_TAG(RAW_CMD_QUIT, 0)) == 0)
        while (!sent_done[PERF_RAW_SEND_BASE])
            if (pump(rt, NULL, NULL, NULL) < 0)
                break;
    return ret;
}
