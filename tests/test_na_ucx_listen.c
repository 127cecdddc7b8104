/*
 * test_na_ucx_listen.c -- a UCX class that listens on any port (port 0).
 * The plugin picks a free port first (the class id derives from it and the
 * worker needs the id), and binds its listener to it later; another socket
 * can take the port in between, since outgoing connections draw from the
 * same ephemeral range. This test takes it. Its own ucp_listener_create
 * comes before UCX's for libhgx, and on a listen it is told to spoil it
 * binds a listening socket to the requested address and then calls UCX's,
 * which finds the port in use. A class on port 0 must come up on another
 * port, and a peer that looks it up must reach it. A class asked for an
 * explicit port that is taken must fail, with no other port tried.
 */
#include "na_test_proto.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <ucp/api/ucp.h>

#define TAG 42u

static int spoil;      /* listens left to spoil */
static int calls;      /* ucp_listener_create calls */
static int taken = -1; /* the socket that took a port */
static int taken_port;

typedef ucs_status_t (*listener_create_fn)(ucp_worker_h, const ucp_listener_params_t *,
                                           ucp_listener_h *);

static int take(const struct sockaddr *sa, socklen_t len)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, sa, len) != 0 || listen(fd, 1) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

ucs_status_t ucp_listener_create(ucp_worker_h worker, const ucp_listener_params_t *params,
                                 ucp_listener_h *listener_p)
{
    listener_create_fn real = (listener_create_fn)dlsym(RTLD_NEXT, "ucp_listener_create");
    calls++;
    if (spoil > 0 && (params->field_mask & UCP_LISTENER_PARAM_FIELD_SOCK_ADDR)) {
        spoil--;
        taken = take(params->sockaddr.addr, params->sockaddr.addrlen);
        taken_port = ntohs(((const struct sockaddr_in *)params->sockaddr.addr)->sin_port);
    }
    return real(worker, params, listener_p);
}

static void release_taken(void)
{
    if (taken >= 0)
        close(taken);
    taken = -1;
}

/* The port of a "ucx+tcp://IP:PORT" address string. */
static int port_of(const char *s)
{
    const char *colon = strrchr(s, ':');
    return colon ? atoi(colon + 1) : -1;
}

static void test_port0_taken(void **state)
{
    (void)state;
    calls = 0;
    spoil = 1;
    na_class_t *srv = NA_Initialize("ucx+tcp://127.0.0.1", true);
    assert_non_null(srv);
    assert_true(taken >= 0);    /* the port the plugin picked was taken */
    assert_int_equal(calls, 2); /* and the plugin picked another */
    na_context_t *sctx = NA_Context_create(srv);
    assert_non_null(sctx);
    na_addr_t *self = NULL;
    char name[128];
    size_t len = sizeof(name);
    assert_int_equal(NA_Addr_self(srv, &self), NA_SUCCESS);
    assert_int_equal(NA_Addr_to_string(srv, name, &len, self), NA_SUCCESS);
    NA_Addr_free(srv, self);
    assert_int_not_equal(port_of(name), taken_port);
    release_taken();

    /* A peer looks the class up by its string and reaches it: the lookup
     * only records the peer, the send connects while both sides progress. */
    na_class_t *cli = NA_Initialize("ucx+tcp://127.0.0.1", false);
    assert_non_null(cli);
    na_context_t *cctx = NA_Context_create(cli);
    assert_non_null(cctx);
    na_addr_t *dest = NULL;
    assert_int_equal(NA_Addr_lookup(cli, name, &dest), NA_SUCCESS);

    size_t size = NA_Msg_get_max_unexpected_size(srv);
    void *rplug = NULL, *splug = NULL;
    void *rbuf = NA_Msg_buf_alloc(srv, size, NA_RECV, &rplug);
    size_t slen = NA_Msg_get_unexpected_header_size(cli) + 16;
    void *sbuf = NA_Msg_buf_alloc(cli, slen, NA_SEND, &splug);
    assert_non_null(rbuf);
    assert_non_null(sbuf);
    memset(sbuf, 0x3c, slen);
    assert_int_equal(NA_Msg_init_unexpected(cli, sbuf, slen), NA_SUCCESS);
    na_op_id_t *rop = NA_Op_create(srv, NA_OP_SINGLE);
    na_op_id_t *sop = NA_Op_create(cli, NA_OP_SINGLE);
    struct na_test_done rdone = {0}, sdone = {0};
    assert_int_equal(
        NA_Msg_recv_unexpected(srv, sctx, na_test_cb, &rdone, rbuf, size, rplug, rop),
        NA_SUCCESS);
    assert_int_equal(NA_Msg_send_unexpected(cli, cctx, na_test_cb, &sdone, sbuf, slen,
                                            splug, dest, 0, TAG, sop),
                     NA_SUCCESS);
    for (int i = 0; i < 10000 && (rdone.count < 1 || sdone.count < 1); i++) {
        na_test_wait(cli, cctx, &sdone, 1, 1);
        na_test_wait(srv, sctx, &rdone, 1, 1);
    }
    assert_int_equal(sdone.count, 1);
    assert_int_equal(sdone.ret, NA_SUCCESS);
    assert_int_equal(rdone.count, 1);
    assert_int_equal(rdone.ret, NA_SUCCESS);
    assert_int_equal(rdone.size, slen);
    assert_int_equal(rdone.tag, TAG);
    assert_non_null(rdone.source);
    NA_Addr_free(srv, rdone.source);

    NA_Op_destroy(srv, rop);
    NA_Op_destroy(cli, sop);
    NA_Msg_buf_free(srv, rbuf, rplug);
    NA_Msg_buf_free(cli, sbuf, splug);
    NA_Addr_free(cli, dest);
    assert_int_equal(NA_Context_destroy(cli, cctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(cli), NA_SUCCESS);
    assert_int_equal(NA_Context_destroy(srv, sctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(srv), NA_SUCCESS);
}

/* An explicit port that is taken: the class fails, nothing else is tried. */
static void test_explicit_port_taken(void **state)
{
    (void)state;
    struct sockaddr_in sin = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
    int fd = take((struct sockaddr *)&sin, sizeof(sin));
    assert_true(fd >= 0);
    socklen_t len = sizeof(sin);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    char info[64];
    snprintf(info, sizeof(info), "ucx+tcp://127.0.0.1:%d", ntohs(sin.sin_port));
    calls = 0;
    spoil = 0;
    na_class_t *cls = NA_Initialize(info, true);
    assert_null(cls);
    assert_int_equal(calls, 1);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_port0_taken),
        cmocka_unit_test(test_explicit_port_taken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
