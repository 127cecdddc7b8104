/*
 * na_test_server.c -- the NA tests' server: answers na_test_cmd requests.
 */
#include "na_test_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void na_test_cb(const struct na_cb_info *info)
{
    struct na_test_done *done = info->arg;
    done->count++;
    done->ret = info->ret;
    if (info->type == NA_CB_RECV_UNEXPECTED) {
        done->size = info->info.recv_unexpected.actual_buf_size;
        done->source = info->info.recv_unexpected.source;
        done->tag = info->info.recv_unexpected.tag;
    } else if (info->type == NA_CB_RECV_EXPECTED) {
        done->size = info->info.recv_expected.actual_buf_size;
    }
}

bool na_test_wait(na_class_t *cls, na_context_t *ctx, struct na_test_done *done, int n,
                  unsigned int timeout_ms)
{
    double deadline = test_now() + timeout_ms / 1000.0;
    while (done->count < n) {
        unsigned int count = 0;
        NA_Trigger(ctx, 64, &count);
        if (done->count >= n)
            break;
        if (test_now() > deadline)
            return false;
        NA_Progress(cls, ctx, 50);
    }
    return true;
}

bool na_test_self_message(na_class_t *cls, na_context_t *ctx, na_addr_t *self,
                          na_op_id_t *rop, na_op_id_t *sop, na_tag_t tag,
                          unsigned int seed)
{
    size_t h = NA_Msg_get_unexpected_header_size(cls);
    size_t size = NA_Msg_get_max_unexpected_size(cls);
    void *pd = NULL;
    char *out = NA_Msg_buf_alloc(cls, size, NA_SEND, &pd), *in = malloc(size);
    struct na_test_done r = {0}, s = {0};
    bool ok = out && in;
    if (ok) {
        test_fill(out + h, size - h, seed);
        NA_Msg_init_unexpected(cls, out, size);
        ok = NA_Msg_recv_unexpected(cls, ctx, na_test_cb, &r, in, size, NULL, rop) ==
                 NA_SUCCESS &&
             NA_Msg_send_unexpected(cls, ctx, na_test_cb, &s, out, size, pd, self, 0, tag,
                                    sop) == NA_SUCCESS &&
             na_test_wait(cls, ctx, &r, 1, 10000) && na_test_wait(cls, ctx, &s, 1, 10000);
    }
    ok = ok && r.ret == NA_SUCCESS && s.ret == NA_SUCCESS && r.size == size &&
         r.tag == tag && NA_Addr_cmp(cls, r.source, self) &&
         test_check(in + h, size - h, seed);
    if (r.source)
        NA_Addr_free(cls, r.source);
    NA_Msg_buf_free(cls, out, pd);
    free(in);
    return ok;
}

struct na_test_server {
    na_class_t *cls;
    na_context_t *ctx;
    void *buf; /* unexpected receive buffer */
    size_t buf_size;
    char *region; /* exposed memory */
    size_t region_size;
    struct na_segment segs[4];
    na_mem_handle_t *mh;
};

static void server_reply(struct na_test_server *s, na_addr_t *dest, uint32_t tag,
                         const void *data, size_t len)
{
    size_t eh = NA_Msg_get_expected_header_size(s->cls);
    char *out = malloc(eh + len + 1);
    struct na_test_done done = {0};
    na_op_id_t *op = NA_Op_create(s->cls, NA_OP_SINGLE);
    NA_Msg_init_expected(s->cls, out, eh + len);
    memcpy(out + eh, data, len);
    if (NA_Msg_send_expected(s->cls, s->ctx, na_test_cb, &done, out, eh + len, NULL, dest,
                             0, tag, op) == NA_SUCCESS)
        na_test_wait(s->cls, s->ctx, &done, 1, 10000);
    NA_Op_destroy(s->cls, op);
    free(out);
}

static void server_expose(struct na_test_server *s, na_addr_t *src,
                          const struct na_test_cmd *c)
{
    size_t size = (size_t)c->a;
    unsigned long flags = c->b & 0xff;
    bool segmented = (c->b >> 8) & 1;

    if (s->mh) {
        NA_Mem_deregister(s->cls, s->mh);
        NA_Mem_handle_free(s->cls, s->mh);
        s->mh = NULL;
    }
    free(s->region);
    s->region = malloc(size);
    s->region_size = size;
    test_fill(s->region, size, NA_TEST_SEED_SERVER);
    na_return_t ret;
    if (segmented) {
        /* Four uneven pieces of the one allocation, listed as separate segments. */
        size_t cut[5] = {0, size / 7, size / 2, size - size / 5, size};
        for (int i = 0; i < 4; i++)
            s->segs[i] = (struct na_segment){s->region + cut[i], cut[i + 1] - cut[i]};
        ret = NA_Mem_handle_create_segments(s->cls, s->segs, 4, flags, &s->mh);
    } else {
        ret = NA_Mem_handle_create(s->cls, s->region, size, flags, &s->mh);
    }
    if (ret == NA_SUCCESS)
        ret = NA_Mem_register(s->cls, s->mh, NA_MEM_TYPE_HOST, 0);
    char ser[1024] = {0};
    size_t n = ret == NA_SUCCESS ? NA_Mem_handle_get_serialize_size(s->cls, s->mh) : 0;
    if (ret != NA_SUCCESS || n > sizeof(ser) ||
        NA_Mem_handle_serialize(s->cls, ser, n, s->mh) != NA_SUCCESS)
        n = 0;
    server_reply(s, src, c->tag, ser, n);
}

/* Run one command; false when asked to quit. */
static bool server_handle(struct na_test_server *s, na_addr_t *src, const char *payload,
                          size_t len)
{
    struct na_test_cmd c;
    if (len < sizeof(c))
        return true;
    memcpy(&c, payload, sizeof(c));
    switch (c.op) {
    case CMD_ECHO:
        server_reply(s, src, c.tag, payload, len);
        break;
    case CMD_EXPOSE:
        server_expose(s, src, &c);
        break;
    case CMD_VERIFY: {
        uint8_t ok = s->region && test_check(s->region, s->region_size, (unsigned)c.a);
        server_reply(s, src, c.tag, &ok, 1);
        break;
    }
    case CMD_BIG_REPLY: {
        char *big = calloc(1, (size_t)c.a);
        server_reply(s, src, c.tag, big, (size_t)c.a);
        free(big);
        break;
    }
    case CMD_STALL:
        usleep((useconds_t)(c.a * 1000));
        break;
    case CMD_QUIT:
        return false;
    default:
        break;
    }
    return true;
}

int na_test_server_main(const char *info, int publish_fd)
{
    struct na_test_server s = {0};
    char addr[TEST_ADDR_MAX] = "";
    size_t addr_len = sizeof(addr);
    na_addr_t *self = NULL;
    int rc = 1;

    s.cls = NA_Initialize(info, true);
    if (!s.cls || !(s.ctx = NA_Context_create(s.cls)) ||
        NA_Addr_self(s.cls, &self) != NA_SUCCESS ||
        NA_Addr_to_string(s.cls, addr, &addr_len, self) != NA_SUCCESS) {
        test_server_publish(publish_fd, "");
        return 1;
    }
    NA_Addr_free(s.cls, self);
    s.buf_size = NA_Msg_get_max_unexpected_size(s.cls);
    s.buf = malloc(s.buf_size);
    na_op_id_t *op = NA_Op_create(s.cls, NA_OP_SINGLE);
    test_server_publish(publish_fd, addr);

    for (bool running = true; running;) {
        struct na_test_done done = {0};
        if (NA_Msg_recv_unexpected(s.cls, s.ctx, na_test_cb, &done, s.buf, s.buf_size,
                                   NULL, op) != NA_SUCCESS)
            break;
        if (!na_test_wait(s.cls, s.ctx, &done, 1, 60000)) {
            fprintf(stderr, "# na test server: no request for 60 s, exiting\n");
            NA_Cancel(s.cls, s.ctx, op);
            na_test_wait(s.cls, s.ctx, &done, 1, 5000);
            break;
        }
        if (done.ret == NA_SUCCESS) {
            size_t h = NA_Msg_get_unexpected_header_size(s.cls);
            running = server_handle(&s, done.source, (char *)s.buf + h, done.size - h);
        }
        NA_Addr_free(s.cls, done.source);
        rc = running ? 1 : 0;
    }
    NA_Op_destroy(s.cls, op);
    if (s.mh) {
        NA_Mem_deregister(s.cls, s.mh);
        NA_Mem_handle_free(s.cls, s.mh);
    }
    free(s.region);
    free(s.buf);
    NA_Context_destroy(s.cls, s.ctx);
    if (NA_Finalize(s.cls) != NA_SUCCESS)
        rc = 1;
    return rc;
}
