/*
 * test_na_ucx_ctx.c -- the UCX plugin delivers an unexpected message only to
 * the context whose id its sender named (NA_Msg_send_unexpected's dest_id):
 * a server class with two contexts (NA_Context_create_id) gets messages for
 * ids 0 and 1, interleaved, both while no receive is posted (kept, then
 * taken in arrival order per context) and with a receive posted on each
 * context. Each must complete on its own context, with its tag and data. A
 * message for an id the server does not have (the client's class allows
 * more contexts) must reach no context, be counted as dropped and not be
 * kept. Cancelling a receive on one context leaves the other's posted.
 * Runs over ucx+tcp and ucx+shm, client and server in one process.
 */
#include "hgx_test_hooks.h"
#include "na_test_proto.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define CTX_SERVER 2     /* contexts of the server class */
#define CTX_CLIENT 8     /* the client's class allows more ids */
#define CTX_BAD_ID 7     /* a target id the server does not have */
#define CTX_ROUNDS 3     /* rounds of posted receives */
#define CTX_TIMEOUT_S 10 /* bound on waiting for any one event */

struct pair {
    na_class_t *srv, *cli;
    na_context_t *sctx[CTX_SERVER], *cctx;
    na_addr_t *server;
    na_op_id_t *rop[CTX_SERVER], *sop;
    char *rbuf[CTX_SERVER], *sbuf;
    void *spd;
    size_t size, h;
    struct na_test_done got[CTX_SERVER];
};

/* One pass of progress and trigger over both classes and every context. */
static void pump(struct pair *p)
{
    NA_Progress(p->cli, p->cctx, 0);
    NA_Trigger(p->cctx, 16, NULL);
    for (int i = 0; i < CTX_SERVER; i++) {
        NA_Progress(p->srv, p->sctx[i], 0);
        NA_Trigger(p->sctx[i], 16, NULL);
    }
}

/* Pump until *flag reaches want or the bound passes; true if reached. */
static bool pump_until(struct pair *p, const int *flag, int want)
{
    double deadline = test_now() + CTX_TIMEOUT_S;
    while (*flag < want && test_now() < deadline)
        pump(p);
    return *flag >= want;
}

static void pair_open(struct pair *p, const char *proto)
{
    char info[64];
    snprintf(info, sizeof(info), "ucx+%s://127.0.0.1", proto);
    struct na_init_info si = {.max_contexts = CTX_SERVER},
                        ci = {.max_contexts = CTX_CLIENT};
    p->srv = NA_Initialize_opt(info, true, &si);
    assert_non_null(p->srv);
    snprintf(info, sizeof(info), "ucx+%s", proto);
    p->cli = NA_Initialize_opt(info, false, &ci);
    assert_non_null(p->cli);
    for (uint8_t i = 0; i < CTX_SERVER; i++) {
        p->sctx[i] = NA_Context_create_id(p->srv, i);
        assert_non_null(p->sctx[i]);
        p->rop[i] = NA_Op_create(p->srv, NA_OP_SINGLE);
        assert_non_null(p->rop[i]);
    }
    p->cctx = NA_Context_create(p->cli);
    assert_non_null(p->cctx);
    p->sop = NA_Op_create(p->cli, NA_OP_SINGLE);
    assert_non_null(p->sop);

    na_addr_t *self = NULL;
    char addr[TEST_ADDR_MAX];
    size_t addr_len = sizeof(addr);
    assert_int_equal(NA_Addr_self(p->srv, &self), NA_SUCCESS);
    assert_int_equal(NA_Addr_to_string(p->srv, addr, &addr_len, self), NA_SUCCESS);
    NA_Addr_free(p->srv, self);
    assert_int_equal(NA_Addr_lookup(p->cli, addr, &p->server), NA_SUCCESS);

    p->size = NA_Msg_get_max_unexpected_size(p->srv);
    p->h = NA_Msg_get_unexpected_header_size(p->cli);
    p->sbuf = NA_Msg_buf_alloc(p->cli, p->size, NA_SEND, &p->spd);
    assert_non_null(p->sbuf);
    for (int i = 0; i < CTX_SERVER; i++) {
        p->rbuf[i] = malloc(p->size);
        assert_non_null(p->rbuf[i]);
    }
}

static void pair_close(struct pair *p)
{
    NA_Addr_free(p->cli, p->server);
    NA_Msg_buf_free(p->cli, p->sbuf, p->spd);
    NA_Op_destroy(p->cli, p->sop);
    assert_int_equal(NA_Context_destroy(p->cli, p->cctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(p->cli), NA_SUCCESS);
    for (int i = 0; i < CTX_SERVER; i++) {
        free(p->rbuf[i]);
        NA_Op_destroy(p->srv, p->rop[i]);
        assert_int_equal(NA_Context_destroy(p->srv, p->sctx[i]), NA_SUCCESS);
    }
    assert_int_equal(NA_Finalize(p->srv), NA_SUCCESS);
}

/* Payload of the message with tag: its bytes derive from the tag. */
static size_t payload(char *out, size_t h, na_tag_t tag)
{
    size_t len = h + 40 + tag % 64;
    for (size_t k = h; k < len; k++)
        out[k] = (char)(k * 13 + tag);
    return len;
}

/* Send one unexpected message for context id and wait until it left. */
static void send_to(struct pair *p, uint8_t id, na_tag_t tag)
{
    struct na_test_done sent = {0};
    size_t len = payload(p->sbuf, p->h, tag);
    NA_Msg_init_unexpected(p->cli, p->sbuf, len);
    assert_int_equal(NA_Msg_send_unexpected(p->cli, p->cctx, na_test_cb, &sent, p->sbuf,
                                            len, p->spd, p->server, id, tag, p->sop),
                     NA_SUCCESS);
    assert_true(pump_until(p, &sent.count, 1));
    assert_int_equal(sent.ret, NA_SUCCESS);
}

static void post_on(struct pair *p, int i)
{
    p->got[i] = (struct na_test_done){0};
    assert_int_equal(NA_Msg_recv_unexpected(p->srv, p->sctx[i], na_test_cb, &p->got[i],
                                            p->rbuf[i], p->size, NULL, p->rop[i]),
                     NA_SUCCESS);
}

/* Context i's receive completed with tag (and no other context's did). */
static void expect_on(struct pair *p, int i, na_tag_t tag)
{
    assert_true(pump_until(p, &p->got[i].count, 1));
    assert_int_equal(p->got[i].count, 1);
    assert_int_equal(p->got[i].ret, NA_SUCCESS);
    assert_int_equal(p->got[i].tag, tag);
    char want[256];
    size_t len = payload(want, p->h, tag);
    assert_int_equal(p->got[i].size, len);
    assert_memory_equal(p->rbuf[i] + p->h, want + p->h, len - p->h);
    assert_non_null(p->got[i].source);
    NA_Addr_free(p->srv, p->got[i].source);
    p->got[i].source = NULL;
}

/* Messages for both ids, and one for CTX_BAD_ID, arrive before any receive:
 * kept per context and taken in arrival order by each context's receives. */
static void check_kept(struct pair *p)
{
    long dropped = na_ucx_misaddressed_count();
    send_to(p, 1, 10);
    send_to(p, 0, 20);
    send_to(p, CTX_BAD_ID, 99);
    send_to(p, 1, 11);
    send_to(p, 0, 21);
    double deadline = test_now() + CTX_TIMEOUT_S;
    while ((na_ucx_held_count(NULL) < 4 || na_ucx_misaddressed_count() == dropped) &&
           test_now() < deadline)
        pump(p);
    assert_int_equal(na_ucx_held_count(NULL), 4);
    assert_int_equal(na_ucx_misaddressed_count(), dropped + 1);

    const struct {
        int ctx;
        na_tag_t tag;
    } order[] = {{1, 10}, {1, 11}, {0, 20}, {0, 21}};
    for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
        post_on(p, order[k].ctx);
        expect_on(p, order[k].ctx, order[k].tag);
    }
    assert_int_equal(na_ucx_held_count(NULL), 0);
}

/* A receive posted on each context: each message goes to its id's receive,
 * the out-of-range one to none. */
static void check_posted(struct pair *p)
{
    for (na_tag_t r = 0; r < CTX_ROUNDS; r++) {
        long dropped = na_ucx_misaddressed_count();
        post_on(p, 0);
        post_on(p, 1);
        send_to(p, CTX_BAD_ID, 200 + r);
        send_to(p, 1, 100 + r);
        expect_on(p, 1, 100 + r);
        assert_int_equal(p->got[0].count, 0);
        send_to(p, 0, 300 + r);
        expect_on(p, 0, 300 + r);
        assert_int_equal(na_ucx_misaddressed_count(), dropped + 1);
        assert_int_equal(na_ucx_held_count(NULL), 0);
    }
}

/* A receive cancelled on context 1 leaves context 0's posted: the next
 * message for id 1 is kept, not handed to context 0. */
static void check_cancel(struct pair *p)
{
    post_on(p, 0);
    post_on(p, 1);
    assert_int_equal(NA_Cancel(p->srv, p->sctx[1], p->rop[1]), NA_SUCCESS);
    assert_true(pump_until(p, &p->got[1].count, 1));
    assert_int_equal(p->got[1].ret, NA_CANCELED);
    send_to(p, 1, 400);
    double deadline = test_now() + CTX_TIMEOUT_S;
    while (na_ucx_held_count(NULL) < 1 && test_now() < deadline)
        pump(p);
    assert_int_equal(na_ucx_held_count(NULL), 1);
    assert_int_equal(p->got[0].count, 0);
    post_on(p, 1);
    expect_on(p, 1, 400);
    assert_int_equal(NA_Cancel(p->srv, p->sctx[0], p->rop[0]), NA_SUCCESS);
    assert_true(pump_until(p, &p->got[0].count, 1));
    assert_int_equal(p->got[0].ret, NA_CANCELED);
}

static void run(const char *proto)
{
    struct pair p = {0};
    pair_open(&p, proto);
    check_kept(&p);
    check_posted(&p);
    check_cancel(&p);
    pair_close(&p);
}

static void test_tcp(void **state)
{
    (void)state;
    run("tcp");
}

static void test_shm(void **state)
{
    (void)state;
    run("shm");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_tcp),
                                       cmocka_unit_test(test_shm)};
    return cmocka_run_group_tests_name("na_ucx_ctx", tests, NULL, NULL);
}
