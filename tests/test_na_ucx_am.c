/*
 * test_na_ucx_am.c -- unexpected messages of the UCX plugin are active
 * messages whose data leads with a header the plugin parses: untrusted
 * bytes. A raw UCP client (no hgx) connects to an hgx UCX listener and
 * sends, on the plugin's active message id, messages no hgx peer sends: data
 * shorter than the header, a header naming an unknown sender, an active
 * message header (the plugin's messages have none), a payload above the
 * message size limit, and a rendezvous message. Each must be dropped
 * without reaching the posted receive; well formed messages sent last, one
 * short and one of the largest size, must arrive intact, with their tags
 * and source. Then the client ignores flow control: with no receive posted,
 * the listener keeps its messages up to the client's credits and drops the
 * rest; and credit returns for messages never sent are dropped.
 */
#include "hgx_test_hooks.h"
#include "na_test_proto.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <ucp/api/ucp.h>

#define AM_UNEXP 1  /* the plugin's active message id of unexpected messages */
#define AM_CREDIT 4 /* its id of credit returns */
#define FORGED 8    /* messages sent past the credits */
#define RAW_CLIENT_ID 0x1234u
#define GOOD_TAG 77u

#define HDR 12 /* the plugin's header: sender id, tag, target context id */

/* The header of a message for context 0. */
static void put_hdr(unsigned char *p, uint32_t sender, uint32_t tag)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (unsigned char)(sender >> (8 * i));
        p[4 + i] = (unsigned char)(tag >> (8 * i));
        p[8 + i] = 0;
    }
}

struct raw_client {
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_ep_h ep;
};

/* Progress both sides for about ms milliseconds, or until *stop is set. */
static void progress_both(na_class_t *cls, na_context_t *ctx, struct raw_client *rc,
                          int ms, const int *stop)
{
    for (int i = 0; i < ms && !(stop && *stop); i++) {
        ucp_worker_progress(rc->worker);
        NA_Progress(cls, ctx, 1);
        NA_Trigger(ctx, 16, NULL);
    }
}

static void raw_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)arg;
    (void)ep;
    (void)status;
}

static void raw_connect(struct raw_client *rc, const char *addr)
{
    unsigned port = 0;
    assert_int_equal(sscanf(addr, "ucx+tcp://127.0.0.1:%u", &port), 1);
    ucp_config_t *config;
    assert_int_equal(ucp_config_read(NULL, NULL, &config), UCS_OK);
    assert_int_equal(ucp_config_modify(config, "TLS", "tcp,self"), UCS_OK);
    /* Large messages by rendezvous, whatever the receiver's threshold. */
    assert_int_equal(ucp_config_modify(config, "RNDV_THRESH", "1024"), UCS_OK);
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features = UCP_FEATURE_AM};
    assert_int_equal(ucp_init(&params, config, &rc->ctx), UCS_OK);
    ucp_config_release(config);
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE |
                                            UCP_WORKER_PARAM_FIELD_CLIENT_ID,
                              .thread_mode = UCS_THREAD_MODE_SINGLE,
                              .client_id = RAW_CLIENT_ID};
    assert_int_equal(ucp_worker_create(rc->ctx, &wp, &rc->worker), UCS_OK);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
    /* The listener's endpoints handle peer failure: so must ours. */
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER | UCP_EP_PARAMS_FLAGS_SEND_CLIENT_ID,
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = {.cb = raw_ep_error},
        .sockaddr = {.addr = (const struct sockaddr *)&sin, .addrlen = sizeof(sin)}};
    assert_int_equal(ucp_ep_create(rc->worker, &ep, &rc->ep), UCS_OK);
}

static void raw_send_done(void *request, ucs_status_t status, void *user_data)
{
    (void)request;
    (void)status;
    *(int *)user_data = 1;
}

/* Send one active message on the plugin's id am and wait until it left. */
static void raw_send_am(na_class_t *cls, na_context_t *ctx, struct raw_client *rc,
                        unsigned am, const void *hdr, size_t hlen, const void *data,
                        size_t len, bool eager)
{
    if (hlen == 0)
        hdr = NULL;
    int done = 0;
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                                 UCP_OP_ATTR_FIELD_USER_DATA |
                                                 UCP_OP_ATTR_FIELD_FLAGS,
                                 .cb.send = raw_send_done,
                                 .user_data = &done,
                                 .flags = eager ? UCP_AM_SEND_FLAG_EAGER : 0};
    ucs_status_ptr_t sp = ucp_am_send_nbx(rc->ep, am, hdr, hlen, data, len, &param);
    assert_false(UCS_PTR_IS_ERR(sp));
    if (sp) {
        progress_both(cls, ctx, rc, 10000, &done);
        assert_true(done);
        ucp_request_free(sp);
    }
}

/* An unexpected message: on the plugin's id of those. */
static void raw_send(na_class_t *cls, na_context_t *ctx, struct raw_client *rc,
                     const void *hdr, size_t hlen, const void *data, size_t len,
                     bool eager)
{
    raw_send_am(cls, ctx, rc, AM_UNEXP, hdr, hlen, data, len, eager);
}

/* A flood past the credits: the listener keeps what the credits allow (its
 * account of this client already owes the consumed messages) and drops the
 * rest, logged and counted. Returns of credits never spent, from an unknown
 * id, or malformed, are dropped and counted. */
static void raw_forge(na_class_t *cls, na_context_t *ctx, struct raw_client *rc,
                      unsigned char *msg, long consumed)
{
    struct na_ucx_credit_counts before, after;
    na_ucx_credit_counts(&before);
    put_hdr(msg, RAW_CLIENT_ID, GOOD_TAG);
    for (long i = 0; i < before.credits + FORGED; i++)
        raw_send(cls, ctx, rc, NULL, 0, msg, HDR + 16, true);
    progress_both(cls, ctx, rc, 300, NULL);
    na_ucx_credit_counts(&after);
    assert_int_equal(na_ucx_held_count(NULL), before.credits - consumed);
    assert_int_equal(after.dropped - before.dropped, FORGED + consumed);

    unsigned char ret[3][12] = {{0}};
    put_hdr(ret[0], RAW_CLIENT_ID, 0); /* account 0, 0 credits: none spent */
    ret[0][8] = 1;                     /* 1 credit */
    put_hdr(ret[1], 0x0badbeefu, 0);   /* unknown id */
    raw_send_am(cls, ctx, rc, AM_CREDIT, NULL, 0, ret[0], 12, true);
    raw_send_am(cls, ctx, rc, AM_CREDIT, NULL, 0, ret[1], 12, true);
    raw_send_am(cls, ctx, rc, AM_CREDIT, NULL, 0, ret[2], 5, true); /* malformed */
    progress_both(cls, ctx, rc, 300, NULL);
    na_ucx_credit_counts(&after);
    assert_int_equal(after.bad_returns - before.bad_returns, 3);
}

static void test_malformed(void **state)
{
    (void)state;
    na_class_t *cls = NA_Initialize("ucx+tcp://127.0.0.1", true);
    assert_non_null(cls);
    na_context_t *ctx = NA_Context_create(cls);
    na_addr_t *self = NULL;
    char addr[TEST_ADDR_MAX];
    size_t addr_len = sizeof(addr);
    assert_int_equal(NA_Addr_self(cls, &self), NA_SUCCESS);
    assert_int_equal(NA_Addr_to_string(cls, addr, &addr_len, self), NA_SUCCESS);
    NA_Addr_free(cls, self);

    size_t size = NA_Msg_get_max_unexpected_size(cls);
    char *buf = calloc(1, size);
    assert_non_null(buf);
    na_op_id_t *op = NA_Op_create(cls, NA_OP_SINGLE);
    struct na_test_done got = {0};
    assert_int_equal(
        NA_Msg_recv_unexpected(cls, ctx, na_test_cb, &got, buf, size, NULL, op),
        NA_SUCCESS);

    struct raw_client rc = {0};
    raw_connect(&rc, addr);
    progress_both(cls, ctx, &rc, 200, NULL); /* wire-up */

    /* Messages start with the plugin's header: sender id, tag, context id
     * (little-endian). */
    size_t big = size + 1024;
    unsigned char *good = malloc(HDR + big), *stranger = malloc(HDR + 16);
    assert_non_null(good);
    assert_non_null(stranger);
    memset(good, 0xee, HDR + big);
    put_hdr(good, RAW_CLIENT_ID, GOOD_TAG);
    memset(stranger, 0xee, HDR + 16);
    put_hdr(stranger, 0x0badbeefu, GOOD_TAG);
    raw_send(cls, ctx, &rc, NULL, 0, good, 3, true);            /* shorter than header */
    raw_send(cls, ctx, &rc, NULL, 0, stranger, HDR + 16, true); /* unknown sender */
    raw_send(cls, ctx, &rc, good, HDR, good + HDR, 16, true);   /* an AM header */
    raw_send(cls, ctx, &rc, NULL, 0, good, HDR + big, true);    /* above the limit */
    raw_send(cls, ctx, &rc, NULL, 0, good, 4 * 4096, false);    /* rendezvous */
    progress_both(cls, ctx, &rc, 300, NULL);
    assert_int_equal(got.count, 0);               /* none of them reached the receive */
    assert_int_equal(na_ucx_held_count(NULL), 0); /* nor was kept */

    /* Well formed: a short message, then one of the largest size. */
    const size_t lens[2] = {12, size};
    for (int i = 0; i < 2; i++) {
        put_hdr(good, RAW_CLIENT_ID, GOOD_TAG + (uint32_t)i);
        for (size_t k = 0; k < lens[i]; k++)
            good[HDR + k] = (unsigned char)(k * 7 + (size_t)i);
        got.count = 0;
        memset(buf, 0, size);
        if (i > 0)
            assert_int_equal(
                NA_Msg_recv_unexpected(cls, ctx, na_test_cb, &got, buf, size, NULL, op),
                NA_SUCCESS);
        raw_send(cls, ctx, &rc, NULL, 0, good, HDR + lens[i], true);
        progress_both(cls, ctx, &rc, 5000, &got.count);
        assert_int_equal(got.count, 1);
        assert_int_equal(got.ret, NA_SUCCESS);
        assert_int_equal(got.size, lens[i]);
        assert_int_equal(got.tag, GOOD_TAG + (uint32_t)i);
        assert_memory_equal(buf, good + HDR, lens[i]);
        assert_non_null(got.source);
        NA_Addr_free(cls, got.source);
    }
    raw_forge(cls, ctx, &rc, good, 2);

    ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                              .flags = UCP_EP_CLOSE_FLAG_FORCE};
    ucs_status_ptr_t sp = ucp_ep_close_nbx(rc.ep, &cp);
    while (sp && !UCS_PTR_IS_ERR(sp) && ucp_request_check_status(sp) == UCS_INPROGRESS)
        progress_both(cls, ctx, &rc, 1, NULL);
    if (sp && !UCS_PTR_IS_ERR(sp))
        ucp_request_free(sp);
    ucp_worker_destroy(rc.worker);
    ucp_cleanup(rc.ctx);
    free(good);
    free(stranger);
    free(buf);
    NA_Op_destroy(cls, op);
    assert_int_equal(NA_Context_destroy(cls, ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(cls), NA_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_malformed)};
    return cmocka_run_group_tests_name("na_ucx_am", tests, NULL, NULL);
}
