/*
 * test_na_ucx_late.c -- expected messages that reach a UCX class after their
 * receive was cancelled (a response to a forward that timed out) are taken
 * from UCX and dropped, not kept by UCX until finalize (src/na/ucx/ucx_late.c).
 * Two classes of one process, over each UCX transport tested:
 * - a receive cancelled, then its message sent: dropped once it arrives, and a
 *   later receive of the same tag takes the next message of that tag;
 * - a receive cancelled and posted again before its message comes: the
 *   message reaches it, nothing is dropped;
 * - a message no receive was ever posted for: dropped at finalize, and UCX
 *   prints no "not matched" warning.
 */
#include "hgx_test_hooks.h"
#include "na_test_proto.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define LATE_MSG 64
#define LATE_WAIT_MS 5000

static const char *late_info; /* the transport of the running group */

struct side {
    na_class_t *cls;
    na_context_t *ctx;
    na_op_id_t *op;
};

/* The receiving class a, the sending class b, and a's view of b. */
struct pair {
    struct side a, b;
    na_addr_t *a_at_b; /* a, looked up by b */
    na_addr_t *b_at_a; /* b, as the source of its first message to a */
};

static void side_open(struct side *s, const char *info, bool listen)
{
    s->cls = NA_Initialize(info, listen);
    assert_non_null(s->cls);
    s->ctx = NA_Context_create(s->cls);
    assert_non_null(s->ctx);
    s->op = NA_Op_create(s->cls, NA_OP_SINGLE);
    assert_non_null(s->op);
}

static void side_close(struct side *s)
{
    NA_Op_destroy(s->cls, s->op);
    assert_int_equal(NA_Context_destroy(s->cls, s->ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(s->cls), NA_SUCCESS);
}

/* Progress both classes until done->count >= n (or the bound). */
static bool pump(struct pair *p, struct na_test_done *done, int n, unsigned ms)
{
    for (double end = test_now() + ms / 1000.0; test_now() < end;) {
        NA_Progress(p->a.cls, p->a.ctx, 0);
        NA_Trigger(p->a.ctx, UINT32_MAX, NULL);
        NA_Progress(p->b.cls, p->b.ctx, 0);
        NA_Trigger(p->b.ctx, UINT32_MAX, NULL);
        if (done && done->count >= n)
            return true;
    }
    return done == NULL;
}

/* b sends an expected message of tag to a, filled from seed. */
static void send_expected(struct pair *p, na_tag_t tag, unsigned seed)
{
    char buf[LATE_MSG];
    test_fill(buf, sizeof(buf), seed);
    struct na_test_done sent = {0};
    assert_int_equal(NA_Msg_send_expected(p->b.cls, p->b.ctx, na_test_cb, &sent, buf,
                                          sizeof(buf), NULL, p->a_at_b, 0, tag, p->b.op),
                     NA_SUCCESS);
    assert_true(pump(p, &sent, 1, LATE_WAIT_MS));
    assert_int_equal(sent.ret, NA_SUCCESS);
}

/* a posts a receive of tag from b into buf. */
static void post_expected(struct pair *p, struct na_test_done *done, char *buf,
                          na_tag_t tag)
{
    assert_int_equal(NA_Msg_recv_expected(p->a.cls, p->a.ctx, na_test_cb, done, buf,
                                          LATE_MSG, NULL, p->b_at_a, 0, tag, p->a.op),
                     NA_SUCCESS);
}

/* Open a and b; b sends a an unexpected message, which gives a b's address. */
static void pair_open(struct pair *p, const char *info)
{
    memset(p, 0, sizeof(*p));
    side_open(&p->a, info, true);
    side_open(&p->b, info, false);
    na_addr_t *self = NULL;
    char name[256];
    size_t len = sizeof(name);
    assert_int_equal(NA_Addr_self(p->a.cls, &self), NA_SUCCESS);
    assert_int_equal(NA_Addr_to_string(p->a.cls, name, &len, self), NA_SUCCESS);
    NA_Addr_free(p->a.cls, self);
    assert_int_equal(NA_Addr_lookup(p->b.cls, name, &p->a_at_b), NA_SUCCESS);

    size_t size = NA_Msg_get_max_unexpected_size(p->a.cls);
    char *rbuf = calloc(1, size), *sbuf = calloc(1, size);
    assert_true(rbuf && sbuf);
    struct na_test_done got = {0}, sent = {0};
    assert_int_equal(NA_Msg_recv_unexpected(p->a.cls, p->a.ctx, na_test_cb, &got, rbuf,
                                            size, NULL, p->a.op),
                     NA_SUCCESS);
    size_t h = NA_Msg_get_unexpected_header_size(p->b.cls);
    assert_int_equal(NA_Msg_init_unexpected(p->b.cls, sbuf, size), NA_SUCCESS);
    assert_int_equal(NA_Msg_send_unexpected(p->b.cls, p->b.ctx, na_test_cb, &sent, sbuf,
                                            h + 8, NULL, p->a_at_b, 0, 1, p->b.op),
                     NA_SUCCESS);
    assert_true(pump(p, &got, 1, LATE_WAIT_MS));
    assert_true(pump(p, &sent, 1, LATE_WAIT_MS));
    assert_int_equal(got.ret, NA_SUCCESS);
    assert_non_null(got.source);
    p->b_at_a = got.source;
    free(rbuf);
    free(sbuf);
}

static void pair_close(struct pair *p)
{
    NA_Addr_free(p->a.cls, p->b_at_a);
    NA_Addr_free(p->b.cls, p->a_at_b);
    side_close(&p->b);
    side_close(&p->a);
}

/* Cancel the receive just posted on a: it ends NA_CANCELED. */
static void cancel_expected(struct pair *p, struct na_test_done *done)
{
    assert_int_equal(NA_Cancel(p->a.cls, p->a.ctx, p->a.op), NA_SUCCESS);
    assert_true(pump(p, done, 1, LATE_WAIT_MS));
    assert_int_equal(done->ret, NA_CANCELED);
}

static void test_late_dropped(void **state)
{
    struct pair p;
    char buf[LATE_MSG], want[LATE_MSG];
    (void)state;
    pair_open(&p, late_info);

    long before = na_ucx_late_dropped_count();
    struct na_test_done cancelled = {0};
    post_expected(&p, &cancelled, buf, 100);
    cancel_expected(&p, &cancelled);
    send_expected(&p, 100, 1); /* the late message */
    for (double end = test_now() + LATE_WAIT_MS / 1000.0;
         na_ucx_late_dropped_count() == before && test_now() < end;)
        pump(&p, NULL, 0, 10);
    assert_int_equal(na_ucx_late_dropped_count(), before + 1);

    /* The tag is free again: its next message reaches a new receive. */
    struct na_test_done got = {0};
    memset(buf, 0, sizeof(buf));
    post_expected(&p, &got, buf, 100);
    send_expected(&p, 100, 2);
    assert_true(pump(&p, &got, 1, LATE_WAIT_MS));
    assert_int_equal(got.ret, NA_SUCCESS);
    assert_int_equal(got.size, LATE_MSG);
    test_fill(want, sizeof(want), 2);
    assert_memory_equal(buf, want, sizeof(want));
    assert_int_equal(na_ucx_late_dropped_count(), before + 1);
    pair_close(&p);
}

static void test_posted_again(void **state)
{
    struct pair p;
    char buf[LATE_MSG], want[LATE_MSG];
    (void)state;
    pair_open(&p, late_info);

    long before = na_ucx_late_dropped_count();
    struct na_test_done cancelled = {0}, got = {0};
    post_expected(&p, &cancelled, buf, 200);
    cancel_expected(&p, &cancelled);
    memset(buf, 0, sizeof(buf));
    post_expected(&p, &got, buf, 200);
    send_expected(&p, 200, 3);
    assert_true(pump(&p, &got, 1, LATE_WAIT_MS));
    assert_int_equal(got.ret, NA_SUCCESS);
    test_fill(want, sizeof(want), 3);
    assert_memory_equal(buf, want, sizeof(want));
    assert_int_equal(na_ucx_late_dropped_count(), before);
    pair_close(&p);
}

/* Whether the file holds text. */
static bool file_has(FILE *f, const char *text)
{
    char line[1024];
    rewind(f);
    while (fgets(line, sizeof(line), f))
        if (strstr(line, text))
            return true;
    return false;
}

static void test_finalize_drops(void **state)
{
    struct pair p;
    (void)state;
    pair_open(&p, late_info);

    long before = na_ucx_late_dropped_count();
    send_expected(&p, 300, 4); /* no receive is ever posted for it */
    pump(&p, NULL, 0, 100);    /* a's UCX has taken it by now */
    assert_int_equal(na_ucx_late_dropped_count(), before);
    NA_Addr_free(p.a.cls, p.b_at_a);
    NA_Addr_free(p.b.cls, p.a_at_b);
    side_close(&p.b);

    /* UCX writes its warnings to stdout or stderr: catch both. */
    FILE *log = tmpfile();
    assert_non_null(log);
    fflush(stdout);
    fflush(stderr);
    int out = dup(STDOUT_FILENO), err = dup(STDERR_FILENO);
    assert_true(out >= 0 && err >= 0);
    assert_true(dup2(fileno(log), STDOUT_FILENO) >= 0 &&
                dup2(fileno(log), STDERR_FILENO) >= 0);
    side_close(&p.a);
    fflush(stdout);
    fflush(stderr);
    assert_true(dup2(out, STDOUT_FILENO) >= 0 && dup2(err, STDERR_FILENO) >= 0);
    close(out);
    close(err);
    bool warned = file_has(log, "not matched");
    fclose(log);
    assert_false(warned);
    assert_int_equal(na_ucx_late_dropped_count(), before + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_late_dropped),
        cmocka_unit_test(test_posted_again),
        cmocka_unit_test(test_finalize_drops),
    };
    return test_run_per_transport("na_ucx_late", "ucx+", &late_info, tests,
                                  sizeof(tests) / sizeof(tests[0]), NULL, NULL);
}
