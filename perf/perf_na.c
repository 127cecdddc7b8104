/*
 * perf_na.c -- hgx-perf --na: the round trip of the NA layer alone, the
 * messages of an RPC without HG. The client sends an unexpected message of
 * the point's payload and then posts the expected receive of the reply, as
 * HG_Forward does; the server answers each request with an empty expected
 * message to its source and tag, and posts its receive again from the
 * callback. Both sides progress as HG_Progress does: NA_Trigger, then
 * NA_Poll_wait. Between raw and hgx, this row tells what NA with its plugin
 * costs and what HG adds on top.
 */
#include "config.h"
#include "perf.h"

#include <na.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NA_PERF_POSTS 4   /* server: unexpected receives kept posted */
#define NA_PERF_REPLIES 8 /* server: replies that may be in flight at once */
#define NA_PERF_TAG_QUIT 0
#define NA_PERF_TAG_MAX 1000000u

struct na_perf {
    na_class_t *cls;
    na_context_t *ctx;
    size_t max_msg; /* payload bytes a request may carry (after the header) */
    long handled;   /* server: requests answered */
    int posted;     /* server: receives posted */
    bool quit;
    bool failed;
};

struct na_perf_post {
    struct na_perf *np;
    void *buf, *plugin;
    size_t size;
    na_op_id_t *op;
};

struct na_perf_reply {
    struct na_perf *np;
    void *buf, *plugin;
    na_op_id_t *op;
    na_addr_t *dest;
    bool busy;
};

static struct na_perf_reply replies[NA_PERF_REPLIES];

/* One pass of HG_Progress's shape: callbacks first, then wait for more. */
static int na_perf_progress(struct na_perf *np, unsigned int timeout_ms)
{
    NA_Trigger(np->ctx, UINT32_MAX, NULL);
    na_return_t ret = NA_Poll_wait(np->cls, np->ctx, timeout_ms, NULL);
    if (ret != NA_SUCCESS && ret != NA_TIMEOUT) {
        fprintf(stderr, "hgx-perf na: NA_Poll_wait: %s\n", NA_Error_to_string(ret));
        return -1;
    }
    NA_Trigger(np->ctx, UINT32_MAX, NULL);
    return np->failed ? -1 : 0;
}

static int na_perf_open(struct na_perf *np, const struct perf_config *cfg, bool listen)
{
    struct na_init_info info = NA_INIT_INFO_INITIALIZER;
    if (cfg->no_block)
        info.progress_mode = NA_NO_BLOCK;
    if (!cfg->thread_safe)
        info.thread_mode = NA_THREAD_MODE_SINGLE;
    np->cls = NA_Initialize_opt(cfg->info, listen, &info);
    np->ctx = np->cls ? NA_Context_create(np->cls) : NULL;
    if (!np->ctx) {
        fprintf(stderr, "hgx-perf na: NA_Initialize(%s) failed\n", cfg->transport);
        return -1;
    }
    size_t hdr = NA_Msg_get_unexpected_header_size(np->cls);
    np->max_msg = NA_Msg_get_max_unexpected_size(np->cls) - hdr;
    return 0;
}

static void na_perf_close(struct na_perf *np)
{
    if (np->ctx)
        NA_Context_destroy(np->cls, np->ctx);
    if (np->cls)
        NA_Finalize(np->cls);
}

/* ---------------------------------------------------------------- server */

static void reply_cb(const struct na_cb_info *info)
{
    struct na_perf_reply *r = info->arg;
    if (info->ret != NA_SUCCESS) {
        fprintf(stderr, "hgx-perf na server: reply: %s\n", NA_Error_to_string(info->ret));
        r->np->failed = true;
    }
    NA_Addr_free(r->np->cls, r->dest);
    r->dest = NULL;
    r->busy = false;
}

static void request_cb(const struct na_cb_info *info);

static int post_request(struct na_perf_post *p)
{
    na_return_t ret = NA_Msg_recv_unexpected(p->np->cls, p->np->ctx, request_cb, p,
                                             p->buf, p->size, p->plugin, p->op);
    if (ret != NA_SUCCESS) {
        fprintf(stderr, "hgx-perf na server: receive: %s\n", NA_Error_to_string(ret));
        return -1;
    }
    p->np->posted++;
    return 0;
}

/* A request: answer it to its source with its tag, then receive the next. */
static void request_cb(const struct na_cb_info *info)
{
    struct na_perf_post *p = info->arg;
    struct na_perf *np = p->np;
    na_addr_t *source = info->info.recv_unexpected.source;

    np->posted--;
    if (info->ret != NA_SUCCESS) {
        if (info->ret != NA_CANCELED) {
            fprintf(stderr, "hgx-perf na server: request: %s\n",
                    NA_Error_to_string(info->ret));
            np->failed = true;
        }
        if (source)
            NA_Addr_free(np->cls, source);
        return;
    }
    struct na_perf_reply *r = NULL;
    while (!r && !np->failed) {
        for (int i = 0; i < NA_PERF_REPLIES && !r; i++)
            if (!replies[i].busy)
                r = &replies[i];
        if (!r)
            na_perf_progress(np, 0); /* an earlier reply still going out */
    }
    if (!r) {
        NA_Addr_free(np->cls, source);
        return;
    }
    na_tag_t tag = info->info.recv_unexpected.tag;
    size_t len = NA_Msg_get_expected_header_size(np->cls);
    NA_Msg_init_expected(np->cls, r->buf, len);
    r->busy = true;
    r->dest = source;
    na_return_t ret = NA_Msg_send_expected(np->cls, np->ctx, reply_cb, r, r->buf, len,
                                           r->plugin, source, 0, tag, r->op);
    if (ret != NA_SUCCESS) {
        fprintf(stderr, "hgx-perf na server: reply: %s\n", NA_Error_to_string(ret));
        NA_Addr_free(np->cls, source);
        r->dest = NULL;
        r->busy = false;
        np->failed = true;
        return;
    }
    np->handled++;
    if (tag == NA_PERF_TAG_QUIT)
        np->quit = true;
    else if (post_request(p))
        np->failed = true;
}

static int serve(struct na_perf *np, struct perf_oob *oob)
{
    struct na_perf_post posts[NA_PERF_POSTS] = {{0}};
    int ret = -1;
    size_t size = NA_Msg_get_max_unexpected_size(np->cls);

    for (int i = 0; i < NA_PERF_REPLIES; i++) {
        size_t len = NA_Msg_get_expected_header_size(np->cls);
        replies[i] = (struct na_perf_reply){.np = np};
        replies[i].buf =
            NA_Msg_buf_alloc(np->cls, len ? len : 1, NA_SEND, &replies[i].plugin);
        replies[i].op = NA_Op_create(np->cls, NA_OP_SINGLE);
        if (!replies[i].buf || !replies[i].op)
            goto out;
    }
    for (int i = 0; i < NA_PERF_POSTS; i++) {
        posts[i] = (struct na_perf_post){.np = np, .size = size};
        posts[i].buf = NA_Msg_buf_alloc(np->cls, size, NA_RECV, &posts[i].plugin);
        posts[i].op = NA_Op_create(np->cls, NA_OP_SINGLE);
        if (!posts[i].buf || !posts[i].op || post_request(&posts[i]))
            goto out;
    }
    /* Receives posted before the client sends; it says whether it is up. */
    char up = 0;
    if (perf_oob_sync(oob) || perf_oob_recv(oob, &up, 1) || !up)
        goto out;
    /* Gives up after 300 s without a request. */
    for (unsigned int idle_ms = 0; !np->quit && !np->failed && idle_ms < 300000;) {
        long before = np->handled;
        if (na_perf_progress(np, 100))
            break;
        idle_ms = np->handled == before ? idle_ms + 100 : 0;
    }
    ret = np->quit && !np->failed ? 0 : -1;
out:
    /* The last reply leaves, the receives come back cancelled (bounded). */
    for (int i = 0; i < NA_PERF_POSTS; i++)
        if (posts[i].op)
            NA_Cancel(np->cls, np->ctx, posts[i].op);
    for (int k = 0; k < 200; k++) {
        bool busy = np->posted > 0;
        for (int i = 0; i < NA_PERF_REPLIES; i++)
            busy |= replies[i].busy;
        if (!busy)
            break;
        na_perf_progress(np, 10);
    }
    for (int i = 0; i < NA_PERF_POSTS; i++) {
        if (posts[i].op)
            NA_Op_destroy(np->cls, posts[i].op);
        NA_Msg_buf_free(np->cls, posts[i].buf, posts[i].plugin);
    }
    for (int i = 0; i < NA_PERF_REPLIES; i++) {
        if (replies[i].op)
            NA_Op_destroy(np->cls, replies[i].op);
        NA_Msg_buf_free(np->cls, replies[i].buf, replies[i].plugin);
    }
    return ret;
}

/* ---------------------------------------------------------------- client */

struct na_perf_call {
    struct na_perf *np;
    void *sbuf, *splugin, *rbuf, *rplugin;
    size_t rsize;
    na_op_id_t *sop, *rop;
    na_addr_t *server;
    int pending;
};

static void call_cb(const struct na_cb_info *info)
{
    struct na_perf_call *c = info->arg;
    if (info->ret != NA_SUCCESS) {
        fprintf(stderr, "hgx-perf na client: %s: %s\n",
                info->type == NA_CB_SEND_UNEXPECTED ? "request" : "reply",
                NA_Error_to_string(info->ret));
        c->np->failed = true;
    }
    c->pending--;
}

/* One round trip: the request, then the reply's receive, as HG_Forward. */
static int call(struct na_perf_call *c, size_t payload, na_tag_t tag)
{
    struct na_perf *np = c->np;
    size_t len = NA_Msg_get_unexpected_header_size(np->cls) + payload;

    NA_Msg_init_unexpected(np->cls, c->sbuf, len);
    c->pending = 2;
    na_return_t ret = NA_Msg_send_unexpected(np->cls, np->ctx, call_cb, c, c->sbuf, len,
                                             c->splugin, c->server, 0, tag, c->sop);
    if (ret == NA_SUCCESS)
        ret = NA_Msg_recv_expected(np->cls, np->ctx, call_cb, c, c->rbuf, c->rsize,
                                   c->rplugin, c->server, 0, tag, c->rop);
    if (ret != NA_SUCCESS) {
        fprintf(stderr, "hgx-perf na client: post: %s\n", NA_Error_to_string(ret));
        return -1;
    }
    while (c->pending > 0)
        if (na_perf_progress(np, 100))
            return -1;
    return 0;
}

static double lat(struct na_perf_call *c, size_t size, long iters, na_tag_t *tag)
{
    double *t = malloc((size_t)iters * sizeof(*t));
    if (!t)
        return -1;
    double m = -1;
    for (long i = -(iters / 10 + 1); i < iters; i++) {
        *tag = *tag % NA_PERF_TAG_MAX + 1; /* never NA_PERF_TAG_QUIT */
        double t0 = perf_now();
        if (call(c, size, *tag))
            goto out;
        if (i >= 0)
            t[i] = (perf_now() - t0) * 1e6;
    }
    m = perf_median(t, iters);
out:
    free(t);
    return m;
}

static int measure(struct na_perf *np, const struct perf_config *cfg, const char *name,
                   struct perf_results *res)
{
    struct na_perf_call c = {.np = np};
    int ret = -1;
    size_t ssize = NA_Msg_get_max_unexpected_size(np->cls);
    c.rsize = NA_Msg_get_max_expected_size(np->cls);
    c.sbuf = NA_Msg_buf_alloc(np->cls, ssize, NA_SEND, &c.splugin);
    c.rbuf = NA_Msg_buf_alloc(np->cls, c.rsize, NA_RECV, &c.rplugin);
    c.sop = NA_Op_create(np->cls, NA_OP_SINGLE);
    c.rop = NA_Op_create(np->cls, NA_OP_SINGLE);
    if (!c.sbuf || !c.rbuf || !c.sop || !c.rop) {
        fprintf(stderr, "hgx-perf na client: out of memory\n");
        goto out;
    }
    memset(c.sbuf, 0x5a, ssize); /* the payload bytes sent */
    if (NA_Addr_lookup(np->cls, name, &c.server) != NA_SUCCESS) {
        fprintf(stderr, "hgx-perf na: lookup of %s failed\n", name);
        goto out;
    }
    na_tag_t tag = 0;
    ret = 0;
    for (int i = 0; i < cfg->nsizes && !ret; i++) {
        size_t size = cfg->sizes[i];
        if (size > np->max_msg) {
            /* HG sends such inputs by bulk: no NA message to compare. */
            fprintf(stderr,
                    "hgx-perf na: points above %zu B not measured: an unexpected "
                    "message of %s carries at most that\n",
                    np->max_msg, cfg->transport);
            break;
        }
        long it = perf_iters_for(cfg, size, 0);
        perf_progress(cfg, "na lat %zu B", size);
        double v = lat(&c, size, it, &tag);
        if (v < 0)
            ret = -1;
        else
            perf_add(res->hg, &res->nhg, "rpc-rtt-us", size, it, v);
    }
    if (call(&c, 0, NA_PERF_TAG_QUIT))
        ret = -1;
out:
    if (c.server)
        NA_Addr_free(np->cls, c.server);
    if (c.sop)
        NA_Op_destroy(np->cls, c.sop);
    if (c.rop)
        NA_Op_destroy(np->cls, c.rop);
    NA_Msg_buf_free(np->cls, c.sbuf, c.splugin);
    NA_Msg_buf_free(np->cls, c.rbuf, c.rplugin);
    return ret;
}

int perf_na_run(const struct perf_config *cfg, struct perf_oob *oob,
                struct perf_results *res)
{
    struct na_perf np = {0};
    char name[256] = "";
    int ret = -1;
    bool open = na_perf_open(&np, cfg, cfg->server) == 0;

    if (cfg->server) {
        size_t len = sizeof(name);
        na_addr_t *self = NULL;
        if (open && (NA_Addr_self(np.cls, &self) != NA_SUCCESS ||
                     NA_Addr_to_string(np.cls, name, &len, self) != NA_SUCCESS))
            name[0] = '\0';
        if (self)
            NA_Addr_free(np.cls, self);
        perf_oob_send_blob(oob, name, strlen(name) + 1);
        if (name[0])
            ret = serve(&np, oob);
    } else {
        size_t len = 0;
        if (perf_oob_recv_blob(oob, name, sizeof(name) - 1, &len) || !len || !name[0]) {
            fprintf(stderr, "hgx-perf na: the server did not start %s\n", cfg->transport);
        } else {
            name[len < sizeof(name) ? len : sizeof(name) - 1] = '\0';
            char up = open;
            if (!perf_oob_sync(oob) && !perf_oob_send(oob, &up, 1) && open)
                ret = measure(&np, cfg, name, res);
        }
    }
    perf_oob_sync(oob);
    na_perf_close(&np);
    return ret;
}
