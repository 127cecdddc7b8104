/*
 * na_conformance_msg.c -- conformance cases of the message calls, sent to
 * the class's own address: sizes 0, header only, max and max + 1, receives
 * too small for what arrives, NULL and foreign arguments, a buffer allocated
 * by another class.
 */
#include "na_conformance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One message to self and its receive: the codes of both sides and whether
 * the message arrived whole. */
struct exchange {
    bool expected;                  /* expected message, else unexpected */
    uint8_t dest_id;                /* the context id the message is sent to */
    const char *buf;                /* what to send, NULL: a pattern of size bytes */
    void *plugin_data;              /* with buf */
    size_t size, recv_size;         /* bytes sent, receive buffer size */
    na_return_t send_ret, recv_ret; /* results */
    bool intact;                    /* the payload after the header arrived unchanged */
};

static void exchange(const struct conf *c, struct exchange *x)
{
    size_t h = x->expected ? NA_Msg_get_expected_header_size(c->cls)
                           : NA_Msg_get_unexpected_header_size(c->cls);
    char *own = x->buf ? NULL : calloc(1, x->size + 1), *in = calloc(1, x->recv_size + 1);
    const char *out = x->buf ? x->buf : own;
    na_op_id_t *rop = NA_Op_create(c->cls, NA_OP_SINGLE);
    na_op_id_t *sop = NA_Op_create(c->cls, NA_OP_SINGLE);
    struct na_test_done r = {0}, s = {0};
    na_tag_t tag = 4242;

    if (own && x->size >= h) {
        if (x->expected)
            NA_Msg_init_expected(c->cls, own, x->size);
        else
            NA_Msg_init_unexpected(c->cls, own, x->size);
        test_fill(own + h, x->size - h, 5);
    }
    na_return_t rret =
        x->expected ? NA_Msg_recv_expected(c->cls, c->ctx, na_test_cb, &r, in,
                                           x->recv_size, NULL, c->self, 0, tag, rop)
                    : NA_Msg_recv_unexpected(c->cls, c->ctx, na_test_cb, &r, in,
                                             x->recv_size, NULL, rop);
    na_return_t sret =
        x->expected
            ? NA_Msg_send_expected(c->cls, c->ctx, na_test_cb, &s, out, x->size,
                                   x->plugin_data, c->self, x->dest_id, tag, sop)
            : NA_Msg_send_unexpected(c->cls, c->ctx, na_test_cb, &s, out, x->size,
                                     x->plugin_data, c->self, x->dest_id, tag, sop);
    x->send_ret = conf_finish(c, sret, sop, &s);
    if (rret == NA_SUCCESS && sret != NA_SUCCESS)
        NA_Cancel(c->cls, c->ctx, rop);
    x->recv_ret = conf_finish(c, rret, rop, &r);
    x->intact = x->recv_ret == NA_SUCCESS && r.size == x->size &&
                (x->size < h || memcmp(in + h, out + h, x->size - h) == 0);
    if (r.source)
        NA_Addr_free(c->cls, r.source);
    NA_Op_destroy(c->cls, rop);
    NA_Op_destroy(c->cls, sop);
    free(own);
    free(in);
}

/* Record an exchange's three answers under prefix. */
static void record(const struct conf *c, const char *prefix, const struct exchange *x,
                   na_return_t send_want, na_return_t recv_want)
{
    char name[96];
    snprintf(name, sizeof(name), "%s.send", prefix);
    conf_code(c, name, x->send_ret, send_want);
    snprintf(name, sizeof(name), "%s.recv", prefix);
    conf_code(c, name, x->recv_ret, recv_want);
    if (recv_want == NA_SUCCESS) {
        snprintf(name, sizeof(name), "%s.data", prefix);
        conf_true(c, name, x->intact, "every byte received");
    }
}

/* Sizes: header only, 0, max, max + 1, a receive shorter than the message. */
static void cases_sizes(const struct conf *c, bool expected)
{
    const char *kind = expected ? "expected" : "unexpected";
    size_t h = expected ? NA_Msg_get_expected_header_size(c->cls)
                        : NA_Msg_get_unexpected_header_size(c->cls);
    size_t max = expected ? NA_Msg_get_max_expected_size(c->cls)
                          : NA_Msg_get_max_unexpected_size(c->cls);
    char prefix[64];
    struct exchange x;

    x = (struct exchange){.expected = expected, .size = h, .recv_size = max};
    exchange(c, &x);
    snprintf(prefix, sizeof(prefix), "%s.header_only", kind);
    record(c, prefix, &x, NA_SUCCESS, NA_SUCCESS);

    /* Size 0 is a message without a header: refused where there is one. */
    x = (struct exchange){.expected = expected, .size = 0, .recv_size = max};
    exchange(c, &x);
    snprintf(prefix, sizeof(prefix), "%s.size_0", kind);
    conf_code(c, prefix, x.send_ret, h ? NA_INVALID_ARG : NA_SUCCESS);

    x = (struct exchange){.expected = expected, .size = max, .recv_size = max};
    exchange(c, &x);
    snprintf(prefix, sizeof(prefix), "%s.size_max", kind);
    record(c, prefix, &x, NA_SUCCESS, NA_SUCCESS);

    x = (struct exchange){.expected = expected, .size = max + 1, .recv_size = max + 1};
    exchange(c, &x);
    snprintf(prefix, sizeof(prefix), "%s.size_max_plus_1", kind);
    conf_code(c, prefix, x.send_ret, NA_MSGSIZE);

    x = (struct exchange){.expected = expected, .size = h + 64, .recv_size = h + 8};
    exchange(c, &x);
    snprintf(prefix, sizeof(prefix), "%s.recv_too_small", kind);
    record(c, prefix, &x, NA_SUCCESS, NA_MSGSIZE);

    /* What a receive too small leaves behind must not reach the next one. */
    x = (struct exchange){.expected = expected, .size = h + 16, .recv_size = max};
    exchange(c, &x);
    snprintf(prefix, sizeof(prefix), "%s.after_too_small", kind);
    record(c, prefix, &x, NA_SUCCESS, NA_SUCCESS);
}

/* A buffer and its plugin data from another class's NA_Msg_buf_alloc. */
static void cases_foreign_buffer(const struct conf *c)
{
    size_t h = NA_Msg_get_unexpected_header_size(c->cls), size = h + 100;
    void *pd = NULL;
    char *buf = NA_Msg_buf_alloc(c->other, size, NA_SEND, &pd);
    struct exchange x = {.buf = buf, .plugin_data = pd, .size = size, .recv_size = size};

    NA_Msg_init_unexpected(c->cls, buf, size);
    test_fill(buf + h, size - h, 5);
    exchange(c, &x);
    record(c, "unexpected.foreign_buffer", &x, NA_SUCCESS, NA_SUCCESS);
    NA_Msg_buf_free(c->other, buf, pd);
}

/* Buffers shorter than the plugin's header, where it has one. */
static void cases_short(const struct conf *c, char *buf, na_op_id_t *op,
                        struct na_test_done *d)
{
    size_t h = NA_Msg_get_unexpected_header_size(c->cls);
    size_t eh = NA_Msg_get_expected_header_size(c->cls);

    if (h == 0) {
        conf_na(c, "unexpected.short_buffer", "no unexpected header");
    } else {
        conf_code(
            c, "recv_unexpected.short_buffer",
            NA_Msg_recv_unexpected(c->cls, c->ctx, na_test_cb, d, buf, h - 1, NULL, op),
            NA_INVALID_ARG);
        conf_code(c, "init_unexpected.short_buffer",
                  NA_Msg_init_unexpected(c->cls, buf, h - 1), NA_INVALID_ARG);
    }
    if (eh == 0)
        conf_na(c, "expected.short_buffer", "no expected header");
    else
        conf_code(c, "recv_expected.short_buffer",
                  NA_Msg_recv_expected(c->cls, c->ctx, na_test_cb, d, buf, eh - 1, NULL,
                                       c->self, 0, 0, op),
                  NA_INVALID_ARG);
}

/* Refused before anything is sent: NULL and foreign arguments and tags. */
static void cases_refused(const struct conf *c)
{
    size_t h = NA_Msg_get_unexpected_header_size(c->cls), size = h + 8;
    char *buf = calloc(1, size);
    na_op_id_t *op = NA_Op_create(c->cls, NA_OP_SINGLE);
    na_op_id_t *oop = NA_Op_create(c->other, NA_OP_SINGLE);
    na_tag_t max_tag = NA_Msg_get_max_tag(c->cls);
    struct na_test_done d = {0};
    void *pd = NULL;

#define SEND(ctx, b, addr, id, tag, o)                                                   \
    NA_Msg_send_unexpected(c->cls, ctx, na_test_cb, &d, b, size, NULL, addr, id, tag, o)
    conf_code(c, "send.null_buffer", SEND(c->ctx, NULL, c->self, 0, 0, op),
              NA_INVALID_ARG);
    conf_code(c, "send.null_addr", SEND(c->ctx, buf, NULL, 0, 0, op), NA_INVALID_ARG);
    conf_code(c, "send.foreign_addr", SEND(c->ctx, buf, c->oself, 0, 0, op),
              NA_INVALID_ARG);
    conf_code(c, "send.null_context", SEND(NULL, buf, c->self, 0, 0, op), NA_INVALID_ARG);
    conf_code(c, "send.foreign_context", SEND(c->octx, buf, c->self, 0, 0, op),
              NA_INVALID_ARG);
    conf_code(c, "send.null_op", SEND(c->ctx, buf, c->self, 0, 0, NULL), NA_INVALID_ARG);
    conf_code(c, "send.foreign_op", SEND(c->ctx, buf, c->self, 0, 0, oop),
              NA_INVALID_ARG);
    if (max_tag < UINT32_MAX)
        conf_code(c, "send.tag_past_max", SEND(c->ctx, buf, c->self, 0, max_tag + 1, op),
                  NA_INVALID_ARG);
    else
        conf_na(c, "send.tag_past_max", "every 32-bit tag is valid");
#undef SEND
    conf_code(c, "recv_expected.null_addr",
              NA_Msg_recv_expected(c->cls, c->ctx, na_test_cb, &d, buf, size, NULL, NULL,
                                   0, 0, op),
              NA_INVALID_ARG);
    conf_code(c, "recv_expected.foreign_addr",
              NA_Msg_recv_expected(c->cls, c->ctx, na_test_cb, &d, buf, size, NULL,
                                   c->oself, 0, 0, op),
              NA_INVALID_ARG);
    conf_code(
        c, "recv_unexpected.null_buffer",
        NA_Msg_recv_unexpected(c->cls, c->ctx, na_test_cb, &d, NULL, size, NULL, op),
        NA_INVALID_ARG);
    conf_code(
        c, "multi_recv.unsupported",
        NA_Msg_multi_recv_unexpected(c->cls, c->ctx, na_test_cb, &d, buf, size, NULL, op),
        NA_OPNOTSUPPORTED);
    cases_short(c, buf, op, &d);
    conf_true(c, "posts.refused_no_callback", d.count == 0, "no callback ran");
    conf_code(c, "init_unexpected.null_buffer",
              NA_Msg_init_unexpected(c->cls, NULL, size), NA_INVALID_ARG);
    conf_code(c, "init_expected.null_buffer", NA_Msg_init_expected(c->cls, NULL, size),
              NA_INVALID_ARG);
    conf_true(c, "buf_alloc.size_0", NA_Msg_buf_alloc(c->cls, 0, NA_SEND, &pd) == NULL,
              "NULL buffer");
    NA_Op_destroy(c->cls, op);
    NA_Op_destroy(c->other, oop);
    free(buf);
}

/* A context id names a context of the peer, which a sender cannot know (it
 * is passed on unchecked): a class of one context takes messages sent to
 * any id on its context 0, as Mercury's do. */
static void cases_context_id(const struct conf *c)
{
    static const uint8_t ids[] = {1, 3, UINT8_MAX};
    size_t h = NA_Msg_get_unexpected_header_size(c->cls);
    size_t eh = NA_Msg_get_expected_header_size(c->cls);
    char prefix[64];

    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        struct exchange x = {.dest_id = ids[i], .size = h + 32, .recv_size = h + 32};
        exchange(c, &x);
        snprintf(prefix, sizeof(prefix), "unexpected.context_id_%u", ids[i]);
        record(c, prefix, &x, NA_SUCCESS, NA_SUCCESS);
        x = (struct exchange){
            .expected = true, .dest_id = ids[i], .size = eh + 32, .recv_size = eh + 32};
        exchange(c, &x);
        snprintf(prefix, sizeof(prefix), "expected.context_id_%u", ids[i]);
        record(c, prefix, &x, NA_SUCCESS, NA_SUCCESS);
    }
}

/* More unexpected messages than receives, to every context id in turn, all
 * queued by the transport before a receive takes them: every one arrives
 * once, whatever id it was sent to (ofi+shm matches a queued message with
 * the ignore mask its queue entry kept: none may be lost that way). */
static void case_context_id_flood(const struct conf *c)
{
    enum { N = 2000, P = 4 };
    size_t h = NA_Msg_get_unexpected_header_size(c->cls), len = h + sizeof(uint32_t);
    char *out = calloc(N, len), *in = calloc(P, len);
    unsigned char *seen = calloc(N, 1);
    na_op_id_t *sop[N], *rop[P];
    bool ok[N];
    struct na_test_done *sent = calloc(N, sizeof(*sent)), got[P] = {{0}};
    int posted = 0, received = 0, bad = 0;

    for (uint32_t i = 0; i < N; i++) {
        NA_Msg_init_unexpected(c->cls, out + i * len, len);
        memcpy(out + i * len + h, &i, sizeof(i));
        sop[i] = NA_Op_create(c->cls, NA_OP_SINGLE);
        ok[i] = NA_Msg_send_unexpected(c->cls, c->ctx, na_test_cb, &sent[i],
                                       out + i * len, len, NULL, c->self, (uint8_t)i, i,
                                       sop[i]) == NA_SUCCESS;
        posted += ok[i];
    }
    for (int k = 0; k < P; k++) {
        rop[k] = NA_Op_create(c->cls, NA_OP_SINGLE);
        NA_Msg_recv_unexpected(c->cls, c->ctx, na_test_cb, &got[k], in + k * len, len,
                               NULL, rop[k]);
    }
    for (double end = test_now() + 30; received + bad < posted && test_now() < end;) {
        unsigned int n = 0;
        NA_Progress(c->cls, c->ctx, 10);
        NA_Trigger(c->ctx, 256, &n);
        for (int k = 0; k < P; k++) {
            if (!got[k].count)
                continue;
            uint32_t i = UINT32_MAX;
            memcpy(&i, in + k * len + h, sizeof(i));
            if (got[k].ret == NA_SUCCESS && i < N && !seen[i] && got[k].tag == i) {
                seen[i] = 1;
                received++;
            } else {
                bad++;
            }
            if (got[k].source)
                NA_Addr_free(c->cls, got[k].source);
            got[k] = (struct na_test_done){0};
            NA_Msg_recv_unexpected(c->cls, c->ctx, na_test_cb, &got[k], in + k * len, len,
                                   NULL, rop[k]);
        }
    }
    char detail[96];
    snprintf(detail, sizeof(detail), "%d of %d received once, intact (%d posted)",
             received, N, posted);
    conf_true(c, "unexpected.context_id_flood", received == N && bad == 0, detail);
    for (int k = 0; k < P; k++) {
        NA_Cancel(c->cls, c->ctx, rop[k]);
        na_test_wait(c->cls, c->ctx, &got[k], 1, 10000);
        if (got[k].source)
            NA_Addr_free(c->cls, got[k].source);
        NA_Op_destroy(c->cls, rop[k]);
    }
    for (int i = 0; i < N; i++) {
        if (ok[i])
            na_test_wait(c->cls, c->ctx, &sent[i], 1, 10000);
        NA_Op_destroy(c->cls, sop[i]);
    }
    free(sent);
    free(seen);
    free(in);
    free(out);
}

void conf_cases_msg(const struct conf *c)
{
    conf_drain(c->cls, c->ctx);
    cases_sizes(c, false);
    cases_sizes(c, true);
    cases_foreign_buffer(c);
    cases_refused(c);
    cases_context_id(c);
    case_context_id_flood(c);
}
