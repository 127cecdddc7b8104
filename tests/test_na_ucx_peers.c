/*
 * test_na_ucx_peers.c -- one UCX peer id can name two peers of a class: the
 * one it connected to (lookup) and the one that connected to it (accepted),
 * when two listening classes each look the other up. The plugin finds both
 * through its peer map (the second is the first one's twin). Three listening
 * classes in one process, over ucx+tcp and ucx+shm: A and B look each other
 * up before any traffic, then exchange messages both ways, each answered
 * through the source address of the message it answers; C sends to A first,
 * so A's lookup of C finds the accepted peer, and A answers through it.
 * Every message and answer must arrive once, intact, from the right id.
 */
#include "na_test_proto.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define PEERS_ROUNDS 20
#define PEERS_MSG 64

struct peers_node {
    na_class_t *cls;
    na_context_t *ctx;
    na_op_id_t *rop, *sop;
    char addr[TEST_ADDR_MAX];
};

static struct peers_node peers_nodes[3];

/* Progress every class until done->count reaches 1 (10 s at most). */
static bool peers_wait(struct na_test_done *done)
{
    double deadline = test_now() + 10.0;
    while (done->count < 1 && test_now() < deadline) {
        for (int i = 0; i < 3; i++) {
            unsigned int count = 0;
            NA_Poll(peers_nodes[i].cls, peers_nodes[i].ctx, NULL);
            NA_Trigger(peers_nodes[i].ctx, 16, &count);
        }
    }
    return done->count == 1 && done->ret == NA_SUCCESS;
}

/* from sends an unexpected message to its address of `to` (dest); `to`
 * answers with an expected message to the message's source; from receives
 * the answer from dest. The message and the answer carry seed. */
static void peers_exchange(int from, int to, na_addr_t *dest, unsigned int seed)
{
    struct peers_node *f = &peers_nodes[from], *t = &peers_nodes[to];
    size_t uh = NA_Msg_get_unexpected_header_size(f->cls);
    size_t eh = NA_Msg_get_expected_header_size(f->cls);
    char out[PEERS_MSG], in[PEERS_MSG], ans[PEERS_MSG], back[PEERS_MSG];
    struct na_test_done got = {0}, sent = {0}, answered = {0}, back_got = {0};
    na_tag_t tag = (na_tag_t)seed;

    NA_Msg_init_unexpected(f->cls, out, sizeof(out));
    test_fill(out + uh, sizeof(out) - uh, seed);
    assert_int_equal(NA_Msg_recv_unexpected(t->cls, t->ctx, na_test_cb, &got, in,
                                            sizeof(in), NULL, t->rop),
                     NA_SUCCESS);
    assert_int_equal(NA_Msg_send_unexpected(f->cls, f->ctx, na_test_cb, &sent, out,
                                            sizeof(out), NULL, dest, 0, tag, f->sop),
                     NA_SUCCESS);
    assert_true(peers_wait(&got));
    assert_true(peers_wait(&sent));
    assert_int_equal(got.size, sizeof(out));
    assert_int_equal(got.tag, tag);
    assert_true(test_check(in + uh, sizeof(in) - uh, seed));

    /* The answer goes to the source the plugin found for the sender. */
    assert_int_equal(NA_Msg_recv_expected(f->cls, f->ctx, na_test_cb, &back_got, back,
                                          sizeof(back), NULL, dest, 0, tag + 1, f->rop),
                     NA_SUCCESS);
    NA_Msg_init_expected(t->cls, ans, sizeof(ans));
    test_fill(ans + eh, sizeof(ans) - eh, seed + 1);
    assert_int_equal(NA_Msg_send_expected(t->cls, t->ctx, na_test_cb, &answered, ans,
                                          sizeof(ans), NULL, got.source, 0, tag + 1,
                                          t->sop),
                     NA_SUCCESS);
    assert_true(peers_wait(&answered));
    assert_true(peers_wait(&back_got));
    assert_int_equal(back_got.size, sizeof(ans));
    assert_true(test_check(back + eh, sizeof(back) - eh, seed + 1));
    NA_Addr_free(t->cls, got.source);
}

static void peers_start(const char *info)
{
    for (int i = 0; i < 3; i++) {
        struct peers_node *n = &peers_nodes[i];
        na_addr_t *self = NULL;
        size_t len = sizeof(n->addr);
        n->cls = NA_Initialize(info, true);
        assert_non_null(n->cls);
        n->ctx = NA_Context_create(n->cls);
        assert_non_null(n->ctx);
        n->rop = NA_Op_create(n->cls, NA_OP_SINGLE);
        n->sop = NA_Op_create(n->cls, NA_OP_SINGLE);
        assert_int_equal(NA_Addr_self(n->cls, &self), NA_SUCCESS);
        assert_int_equal(NA_Addr_to_string(n->cls, n->addr, &len, self), NA_SUCCESS);
        NA_Addr_free(n->cls, self);
    }
}

static void peers_stop(void)
{
    for (int i = 0; i < 3; i++) {
        struct peers_node *n = &peers_nodes[i];
        NA_Op_destroy(n->cls, n->rop);
        NA_Op_destroy(n->cls, n->sop);
        assert_int_equal(NA_Context_destroy(n->cls, n->ctx), NA_SUCCESS);
        assert_int_equal(NA_Finalize(n->cls), NA_SUCCESS);
    }
}

static void test_peers(void **state)
{
    const char *info = *state;
    struct peers_node *a = &peers_nodes[0], *b = &peers_nodes[1], *c = &peers_nodes[2];
    na_addr_t *a_b = NULL, *b_a = NULL, *c_a = NULL, *a_c = NULL;
    peers_start(info);

    /* A and B look each other up first: each ends with an outgoing peer and,
     * once the other connected, its accepted twin. */
    assert_int_equal(NA_Addr_lookup(a->cls, b->addr, &a_b), NA_SUCCESS);
    assert_int_equal(NA_Addr_lookup(b->cls, a->addr, &b_a), NA_SUCCESS);
    for (unsigned int r = 0; r < PEERS_ROUNDS; r++) {
        peers_exchange(0, 1, a_b, 10 * r + 100);
        peers_exchange(1, 0, b_a, 10 * r + 105);
    }

    /* C reaches A first; A's lookup of C then finds C's accepted peer. */
    assert_int_equal(NA_Addr_lookup(c->cls, a->addr, &c_a), NA_SUCCESS);
    peers_exchange(2, 0, c_a, 1000);
    assert_int_equal(NA_Addr_lookup(a->cls, c->addr, &a_c), NA_SUCCESS);
    for (unsigned int r = 0; r < PEERS_ROUNDS; r++) {
        peers_exchange(0, 2, a_c, 10 * r + 2000);
        peers_exchange(2, 0, c_a, 10 * r + 2005);
        peers_exchange(0, 1, a_b, 10 * r + 3000); /* B's runs interleave */
    }
    print_message("# %s: %d exchanges between three classes\n", info,
                  4 * PEERS_ROUNDS + 1);

    NA_Addr_free(a->cls, a_b);
    NA_Addr_free(b->cls, b_a);
    NA_Addr_free(c->cls, c_a);
    NA_Addr_free(a->cls, a_c);
    peers_stop();
}

int main(void)
{
    static const char *const infos[] = {"ucx+tcp://127.0.0.1", "ucx+shm"};
    struct CMUnitTest tests[] = {
        {"peers/ucx+tcp", test_peers, NULL, NULL, (void *)infos[0]},
        {"peers/ucx+shm", test_peers, NULL, NULL, (void *)infos[1]},
    };
    return _cmocka_run_group_tests("na_ucx_peers", tests, sizeof(tests) / sizeof(*tests),
                                   NULL, NULL);
}
