/*
 * test_hgx.c -- MPI-style hgx requests over real HG RPCs and bulk transfers,
 * against a forked server, one cmocka group per transport.
 */
#include "hgx.h"
#include "hgx_test_rpc.h"
#include "test_common.h"

#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

struct st {
    const char *info;
    struct test_server srv;
    hg_class_t *cls;
    hg_context_t *ctx;
    hg_addr_t server;
    struct hgx_test_ids ids;
};

static const char *current_info;

static int group_setup(void **state)
{
    struct st *s = calloc(1, sizeof(*s));
    s->info = current_info;
    if (!test_server_start(&s->srv, s->info, hgx_test_server_main))
        return -1;
    s->cls = HG_Init(s->info, HG_FALSE);
    if (!s->cls || !(s->ctx = HG_Context_create(s->cls)))
        return -1;
    hgx_test_register(s->cls, &s->ids, false);
    if (HG_Addr_lookup2(s->cls, s->srv.addr, &s->server) != HG_SUCCESS)
        return -1;
    *state = s;
    return 0;
}

static int group_teardown(void **state)
{
    struct st *s = *state;
    hg_handle_t h;
    hgx_request_t r;
    HG_Create(s->ctx, s->server, s->ids.quit, &h);
    if (hgx_iforward(h, NULL, &r) == HG_SUCCESS)
        hgx_wait(&r, HGX_STATUS_IGNORE);
    HG_Destroy(h);
    int rc = test_server_wait(&s->srv, 10000);
    HG_Addr_free(s->cls, s->server);
    assert_int_equal(HG_Context_destroy(s->ctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(s->cls), HG_SUCCESS);
    free(s);
    return rc == 0 ? 0 : -1;
}

static hg_handle_t make(struct st *s, hg_id_t id)
{
    hg_handle_t h = HG_HANDLE_NULL;
    assert_int_equal(HG_Create(s->ctx, s->server, id, &h), HG_SUCCESS);
    return h;
}

/* Null and inactive requests complete at once with an empty status. */
static void test_null_and_inactive(void **state)
{
    struct st *s = *state;
    hgx_request_t r = HGX_REQUEST_NULL,
                  reqs[3] = {HGX_REQUEST_NULL, HGX_REQUEST_NULL, HGX_REQUEST_NULL};
    hgx_status_t st;
    int flag = 0, index = 0, outcount = 0, indices[3];

    assert_int_equal(hgx_wait(&r, &st), HG_SUCCESS);
    assert_int_equal(st.error, HG_SUCCESS);
    assert_int_equal(st.count, 0);
    assert_int_equal(hgx_test(&r, &flag, &st), HG_SUCCESS);
    assert_int_equal(flag, 1);
    assert_int_equal(hgx_waitany(3, reqs, &index, &st), HG_SUCCESS);
    assert_int_equal(index, HGX_UNDEFINED);
    assert_int_equal(hgx_testany(3, reqs, &index, &flag, &st), HG_SUCCESS);
    assert_int_equal(flag, 1);
    assert_int_equal(index, HGX_UNDEFINED);
    assert_int_equal(hgx_waitsome(3, reqs, &outcount, indices, HGX_STATUSES_IGNORE),
                     HG_SUCCESS);
    assert_int_equal(outcount, HGX_UNDEFINED);
    assert_int_equal(hgx_waitall(3, reqs, HGX_STATUSES_IGNORE), HG_SUCCESS);
    assert_int_equal(hgx_testall(3, reqs, &flag, HGX_STATUSES_IGNORE), HG_SUCCESS);
    assert_int_equal(flag, 1);
    assert_int_equal(hgx_cancel(&r), HG_SUCCESS);
    assert_int_equal(hgx_request_free(&r), HG_SUCCESS);

    /* An inactive persistent request behaves like a null one. */
    hgx_add_in_t in = {1, 2};
    hg_handle_t h = make(s, s->ids.add);
    assert_int_equal(hgx_forward_init(h, &in, &r), HG_SUCCESS);
    assert_int_equal(hgx_wait(&r, &st), HG_SUCCESS);
    assert_non_null(r);
    assert_int_equal(hgx_waitany(1, &r, &index, &st), HG_SUCCESS);
    assert_int_equal(index, HGX_UNDEFINED);
    assert_int_equal(hgx_request_free(&r), HG_SUCCESS);
    assert_null(r);
    HG_Destroy(h);

    assert_int_equal(hgx_wait(NULL, &st), HG_INVALID_ARG);
    assert_int_equal(hgx_start(&r), HG_INVALID_ARG);
    assert_int_equal(hgx_test_cancelled(NULL, &flag), HG_INVALID_ARG);
}

/* The parameter list: the core's parameters first, each described, the
 * environment's value shown, HG_NOENTRY past the end, NULL refused. */
static void test_param_info(void **state)
{
    (void)state;
    struct hgx_param_info p;
    unsigned int n = 0;
    bool spin_seen = false;

    assert_int_equal(setenv("HGX_NA_SPIN_US", "42", 1), 0);
    while (hgx_param_get_info(n, &p) == HG_SUCCESS) {
        assert_non_null(p.name);
        assert_non_null(p.scope);
        assert_non_null(p.type);
        assert_non_null(p.help);
        if (n == 0)
            assert_string_equal(p.scope, "core");
        if (strcmp(p.name, "HGX_NA_SPIN_US") == 0) {
            spin_seen = true;
            assert_string_equal(p.type, "int");
            assert_non_null(p.value);
            assert_string_equal(p.value, "42");
            assert_true(p.min <= p.def && p.def <= p.max);
        }
        n++;
    }
    assert_int_equal(unsetenv("HGX_NA_SPIN_US"), 0);
    assert_true(spin_seen);
    assert_int_equal(hgx_param_get_info(n, &p), HG_NOENTRY);
    assert_int_equal(hgx_param_get_info(0, NULL), HG_INVALID_ARG);
}

/* iforward + wait: output readable with HG_Get_output, request freed. */
static void test_forward_wait(void **state)
{
    struct st *s = *state;
    hg_handle_t h = make(s, s->ids.add);
    hgx_add_in_t in = {40, 2};
    hgx_add_out_t out;
    hgx_request_t r;
    hgx_status_t st;
    int flag = 1;

    assert_int_equal(hgx_iforward(h, &in, &r), HG_SUCCESS);
    assert_int_equal(hgx_wait(&r, &st), HG_SUCCESS);
    assert_null(r);
    assert_int_equal(st.error, HG_SUCCESS);
    hgx_test_cancelled(&st, &flag);
    assert_int_equal(flag, 0);
    assert_int_equal(HG_Get_output(h, &out), HG_SUCCESS);
    assert_int_equal(out.sum, 42);
    HG_Free_output(h, &out);
    HG_Destroy(h);
}

/* Many in flight; waitsome/testany/waitany/testall over mixed states. */
static void test_families(void **state)
{
    struct st *s = *state;
    enum { N = 16 };
    hg_handle_t h[N];
    hgx_add_in_t in[N];
    hgx_request_t r[N];
    hgx_status_t st[N];
    int done[N] = {0}, ndone = 0, idx[N], out;

    for (int i = 0; i < N; i++) {
        h[i] = make(s, s->ids.add);
        in[i] = (hgx_add_in_t){i, 1000};
        assert_int_equal(hgx_iforward(h[i], &in[i], &r[i]), HG_SUCCESS);
    }
    /* Cancel one at once, and put a null request in the set. */
    hgx_cancel(&r[3]);
    hgx_request_free(&r[5]);
    done[5] = 1;
    ndone = 1;
    while (ndone < N) {
        assert_int_equal(hgx_waitsome(N, r, &out, idx, st), HG_SUCCESS);
        assert_true(out >= 1);
        for (int k = 0; k < out; k++) {
            int i = idx[k], c;
            assert_false(done[i]);
            done[i] = 1;
            ndone++;
            assert_null(r[i]);
            hgx_test_cancelled(&st[k], &c);
            if (!c) {
                hgx_add_out_t o;
                assert_int_equal(st[k].error, HG_SUCCESS);
                assert_int_equal(HG_Get_output(h[i], &o), HG_SUCCESS);
                assert_int_equal(o.sum, i + 1000);
                HG_Free_output(h[i], &o);
            } else {
                assert_int_equal(i, 3);
                assert_int_equal(st[k].error, HG_CANCELED);
            }
        }
    }
    assert_int_equal(hgx_waitsome(N, r, &out, idx, st), HG_SUCCESS);
    assert_int_equal(out, HGX_UNDEFINED);

    /* testany until each completes, then waitany, then testall. */
    for (int i = 0; i < 4; i++)
        assert_int_equal(hgx_iforward(h[i], &in[i], &r[i]), HG_SUCCESS);
    int index, flag = 0;
    do
        assert_int_equal(hgx_testany(4, r, &index, &flag, &st[0]), HG_SUCCESS);
    while (!flag);
    assert_true(index >= 0 && index < 4);
    assert_null(r[index]);
    assert_int_equal(hgx_waitany(4, r, &index, &st[0]), HG_SUCCESS);
    assert_true(index >= 0 && index < 4);
    do
        assert_int_equal(hgx_testall(4, r, &flag, st), HG_SUCCESS);
    while (!flag);
    for (int i = 0; i < 4; i++)
        assert_null(r[i]);
    for (int i = 0; i < N; i++)
        HG_Destroy(h[i]);
}

/* Persistent requests: start, complete, cancel, start again. */
static void test_persistent(void **state)
{
    struct st *s = *state;
    hg_handle_t h = make(s, s->ids.add);
    hgx_add_in_t in = {5, 6};
    hgx_request_t r;
    hgx_status_t st;
    int c;

    assert_int_equal(hgx_forward_init(h, &in, &r), HG_SUCCESS);
    for (int round = 0; round < 5; round++) {
        in.a = round;
        assert_int_equal(hgx_start(&r), HG_SUCCESS);
        assert_int_equal(hgx_start(&r), HG_BUSY);
        if (round == 2)
            hgx_cancel(&r);
        assert_int_equal(hgx_wait(&r, &st), HG_SUCCESS);
        assert_non_null(r);
        hgx_test_cancelled(&st, &c);
        if (!c) {
            hgx_add_out_t o;
            assert_int_equal(HG_Get_output(h, &o), HG_SUCCESS);
            assert_int_equal(o.sum, round + 6);
            HG_Free_output(h, &o);
        }
    }
    hgx_request_t all[1] = {r};
    assert_int_equal(hgx_startall(1, all), HG_SUCCESS);
    assert_int_equal(hgx_waitall(1, all, &st), HG_SUCCESS);
    assert_int_equal(st.error, HG_SUCCESS);
    assert_int_equal(hgx_request_free(&r), HG_SUCCESS);
    HG_Destroy(h);
}

/* wait_timeout leaves the request active; a deadline cancels with HG_TIMEOUT. */
static void test_timeouts(void **state)
{
    struct st *s = *state;
    hg_handle_t h = make(s, s->ids.stall);
    hgx_stall_in_t in = {.ms = 600};
    hgx_request_t r;
    hgx_status_t st;
    int c;

    assert_int_equal(hgx_iforward(h, &in, &r), HG_SUCCESS);
    assert_int_equal(hgx_wait_timeout(&r, 50, &st), HG_TIMEOUT);
    assert_non_null(r);
    assert_int_equal(hgx_wait(&r, &st), HG_SUCCESS);
    assert_int_equal(st.error, HG_SUCCESS);

    double t0 = test_now();
    assert_int_equal(hgx_iforward(h, &in, &r), HG_SUCCESS);
    assert_int_equal(hgx_request_set_timeout(r, 100), HG_SUCCESS);
    assert_int_equal(hgx_wait(&r, &st), HG_SUCCESS);
    double dt = test_now() - t0;
    hgx_test_cancelled(&st, &c);
    assert_int_equal(c, 1);
    assert_int_equal(st.error, HG_TIMEOUT);
    print_message("# %s: deadline 100 ms fired, request completed after %.0f ms\n",
                  s->info, dt * 1e3);
    assert_true(dt < 0.5);
    /* The server is still busy with the stalled call; let it drain. */
    in.ms = 0;
    assert_int_equal(hgx_iforward(h, &in, &r), HG_SUCCESS);
    assert_int_equal(hgx_wait(&r, &st), HG_SUCCESS);
    assert_int_equal(st.error, HG_SUCCESS);
    HG_Destroy(h);
}

/* Bulk pull as a request; cancel racing completion never gives both. */
static void test_bulk_cancel_race(void **state)
{
    struct st *s = *state;
    hg_handle_t h = make(s, s->ids.expose);
    hgx_expose_in_t in = {.size = 1 << 20, .seed = 3};
    hgx_expose_out_t out;
    hgx_request_t r;
    hgx_status_t st;
    assert_int_equal(hgx_iforward(h, &in, &r), HG_SUCCESS);
    assert_int_equal(hgx_wait(&r, &st), HG_SUCCESS);
    assert_int_equal(HG_Get_output(h, &out), HG_SUCCESS);

    size_t size = in.size;
    void *buf = malloc(size);
    hg_size_t bsize = size;
    hg_bulk_t local;
    assert_int_equal(HG_Bulk_create(s->cls, 1, &buf, &bsize, HG_BULK_READWRITE, &local),
                     HG_SUCCESS);
    int cancelled = 0, completed = 0;
    for (int trial = 0; trial < 200; trial++) {
        size_t len = 1 + (size_t)rand() % size;
        memset(buf, 0, size);
        assert_int_equal(hgx_ibulk_transfer(s->ctx, HG_BULK_PULL, s->server, out.bulk, 0,
                                            local, 0, len, &r),
                         HG_SUCCESS);
        int spins = rand() % 4, flag = 0;
        for (int i = 0; i < spins && !flag; i++)
            hgx_test(&r, &flag, &st);
        if (!flag) {
            hgx_cancel(&r);
            hgx_wait(&r, &st);
        }
        int c;
        hgx_test_cancelled(&st, &c);
        if (c) {
            /* Cancelled: the local region must be untouched. */
            cancelled++;
            for (size_t i = 0; i < size; i++)
                if (((char *)buf)[i] != 0)
                    fail_msg("trial %d: cancelled pull wrote byte %zu", trial, i);
        } else {
            completed++;
            assert_int_equal(st.error, HG_SUCCESS);
            assert_int_equal(st.count, len);
            assert_true(test_check(buf, len, 3));
        }
    }
    print_message("# %s: 200 pulls, %d cancelled, %d completed\n", s->info, cancelled,
                  completed);
    HG_Bulk_free(local);
    free(buf);
    HG_Free_output(h, &out);
    HG_Destroy(h);
}

/* Free of an active request: it completes in the background. */
static void test_free_active(void **state)
{
    struct st *s = *state;
    hg_handle_t h = make(s, s->ids.add);
    hgx_add_in_t in = {1, 1};
    hgx_request_t r, r2;
    hgx_status_t st;
    assert_int_equal(hgx_iforward(h, &in, &r), HG_SUCCESS);
    assert_int_equal(hgx_request_free(&r), HG_SUCCESS);
    assert_null(r);
    HG_Destroy(h);
    /* Progress still completes it; a later request on a new handle works. */
    h = make(s, s->ids.add);
    assert_int_equal(hgx_iforward(h, &in, &r2), HG_SUCCESS);
    assert_int_equal(hgx_wait(&r2, &st), HG_SUCCESS);
    assert_int_equal(st.error, HG_SUCCESS);
    HG_Destroy(h);
}

/* Deadlines on many requests: O(log n) heap, all fire or complete. */
static void test_many_deadlines(void **state)
{
    struct st *s = *state;
    const int N = 1000;
    hg_handle_t *h = calloc(N, sizeof(*h));
    hgx_request_t *r = calloc(N, sizeof(*r));
    hgx_add_in_t in = {1, 2};
    for (int i = 0; i < N; i++) {
        h[i] = make(s, s->ids.add);
        assert_int_equal(hgx_iforward(h[i], &in, &r[i]), HG_SUCCESS);
        assert_int_equal(hgx_request_set_timeout(r[i], 5000 + (unsigned)(i % 97)),
                         HG_SUCCESS);
    }
    hgx_status_t *st = calloc(N, sizeof(*st));
    assert_int_equal(hgx_waitall(N, r, st), HG_SUCCESS);
    for (int i = 0; i < N; i++) {
        assert_null(r[i]);
        assert_int_equal(st[i].error, HG_SUCCESS);
        HG_Destroy(h[i]);
    }
    free(st);
    free(r);
    free(h);
}

/* Deadlines armed out of expiry order, re-armed and removed: none fires early,
 * all that remain fire, a removed one lets the operation complete. */
static void test_deadline_order(void **state)
{
    struct st *s = *state;
    enum { N = 6 };
    /* ms per request; request 3 is armed at 5 ms then moved to 60 ms, request 5
     * is armed at 15 ms then removed. Request 0 stalls the server meanwhile. */
    const unsigned int ms[N] = {40, 10, 30, 60, 20, 0};
    hg_handle_t h[N];
    hgx_stall_in_t in[N];
    hgx_request_t r[N];
    hgx_status_t st;
    double t0 = test_now();
    for (int i = 0; i < N; i++) {
        h[i] = make(s, s->ids.stall);
        in[i].ms = i == 0 ? 250 : 0;
        assert_int_equal(hgx_iforward(h[i], &in[i], &r[i]), HG_SUCCESS);
        unsigned int first = i == 3 ? 5 : i == 5 ? 15 : ms[i];
        assert_int_equal(hgx_request_set_timeout(r[i], first), HG_SUCCESS);
    }
    assert_int_equal(hgx_request_set_timeout(r[3], ms[3]), HG_SUCCESS);
    assert_int_equal(hgx_request_set_timeout(r[5], 0), HG_SUCCESS);
    for (int k = 0; k < N; k++) {
        int i, c;
        assert_int_equal(hgx_waitany(N, r, &i, &st), HG_SUCCESS);
        assert_true(i >= 0 && i < N);
        double dt = test_now() - t0;
        hgx_test_cancelled(&st, &c);
        if (ms[i] == 0) {
            assert_int_equal(c, 0);
            assert_int_equal(st.error, HG_SUCCESS);
        } else {
            assert_int_equal(c, 1);
            assert_int_equal(st.error, HG_TIMEOUT);
            if (dt < ms[i] / 1000.0)
                fail_msg("request %d: deadline %u ms fired after %.1f ms", i, ms[i],
                         dt * 1e3);
        }
    }
    for (int i = 0; i < N; i++)
        HG_Destroy(h[i]);
}

/* One set over two contexts: completions of both reach the set. */
static void test_two_contexts(void **state)
{
    struct st *s = *state;
    enum { N = 8 };
    hg_context_t *ctx2 = HG_Context_create(s->cls);
    assert_non_null(ctx2);
    hg_handle_t h[N];
    hgx_add_in_t in[N];
    hgx_request_t r[N];
    hgx_status_t st[N];
    for (int i = 0; i < N; i++)
        assert_int_equal(HG_Create(i % 2 ? ctx2 : s->ctx, s->server, s->ids.add, &h[i]),
                         HG_SUCCESS);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            in[i] = (hgx_add_in_t){i, 100 * round};
            assert_int_equal(hgx_iforward(h[i], &in[i], &r[i]), HG_SUCCESS);
            assert_int_equal(hgx_request_set_timeout(r[i], 30000), HG_SUCCESS);
        }
        if (round == 0) {
            assert_int_equal(hgx_waitall(N, r, st), HG_SUCCESS);
        } else {
            int left = N, out, idx[N];
            while (left > 0) {
                if (round == 1) {
                    assert_int_equal(hgx_waitsome(N, r, &out, idx, st), HG_SUCCESS);
                } else {
                    out = 1;
                    assert_int_equal(hgx_waitany(N, r, &idx[0], &st[0]), HG_SUCCESS);
                }
                assert_true(out >= 1 && out <= left);
                for (int k = 0; k < out; k++)
                    assert_int_equal(st[k].error, HG_SUCCESS);
                left -= out;
            }
        }
        for (int i = 0; i < N; i++) {
            hgx_add_out_t o;
            assert_null(r[i]);
            assert_int_equal(HG_Get_output(h[i], &o), HG_SUCCESS);
            assert_int_equal(o.sum, i + 100 * round);
            HG_Free_output(h[i], &o);
        }
    }
    for (int i = 0; i < N; i++)
        HG_Destroy(h[i]);
    assert_int_equal(HG_Context_destroy(ctx2), HG_SUCCESS);
}

/* A request twice in one set is refused and left as it was. */
static void test_duplicate_in_set(void **state)
{
    struct st *s = *state;
    hg_handle_t h = make(s, s->ids.add);
    hgx_add_in_t in = {2, 3};
    hgx_request_t r[3];
    hgx_status_t st;
    int index, out, idx[3];
    assert_int_equal(hgx_iforward(h, &in, &r[0]), HG_SUCCESS);
    r[1] = HGX_REQUEST_NULL;
    r[2] = r[0];
    assert_int_equal(hgx_waitall(3, r, HGX_STATUSES_IGNORE), HG_INVALID_ARG);
    assert_int_equal(hgx_waitsome(3, r, &out, idx, HGX_STATUSES_IGNORE), HG_INVALID_ARG);
    assert_non_null(r[0]);
    assert_int_equal(hgx_waitany(2, r, &index, &st), HG_SUCCESS);
    assert_int_equal(index, 0);
    assert_int_equal(st.error, HG_SUCCESS);
    HG_Destroy(h);
}

int main(void)
{
    const char *const *transports;
    size_t n = test_transports_mercury(&transports);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_null_and_inactive), cmocka_unit_test(test_forward_wait),
        cmocka_unit_test(test_families),          cmocka_unit_test(test_persistent),
        cmocka_unit_test(test_timeouts),          cmocka_unit_test(test_bulk_cancel_race),
        cmocka_unit_test(test_free_active),       cmocka_unit_test(test_many_deadlines),
        cmocka_unit_test(test_deadline_order),    cmocka_unit_test(test_two_contexts),
        cmocka_unit_test(test_duplicate_in_set),  cmocka_unit_test(test_param_info),
    };
    return test_run_groups("hgx", transports, n, NULL, &current_info, tests,
                           sizeof(tests) / sizeof(*tests), group_setup, group_teardown);
}
