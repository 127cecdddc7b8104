/*
 * test_wait_threads.c -- threads that wait in HG_Progress or hg_request_wait
 * are woken by work other threads finish, as Mercury's test programs expect
 * (its RPC and bulk tests over every transport):
 *
 *   - a forward to the process's own address whose handler answers from
 *     another thread (Mercury's tests hand handlers to a thread pool): the
 *     origin, asleep in HG_Progress with a long timeout, returns as soon as
 *     the answer is queued, not when the timeout ends;
 *   - threads that each forward RPCs and wait for them with hg_request_wait
 *     on one request class (Mercury's "concurrent multi RPCs"): each wait
 *     ends when its RPC is done, whichever thread ran the callback;
 *   - a forward to self forwarded again as soon as its answer came, while
 *     the thread that answered may still be inside HG_Respond: the next
 *     handler's reference is not lost (each leaked one before);
 *   - HG_Context_destroy right after a handler answered, before the send of
 *     the answer completed: it lets the send end and succeeds.
 *
 * Over each transport tested, with the server a second class of this
 * process progressed by its own thread.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mercury.h"
#include "mercury_macros.h"
#include "mercury_request.h"
#include "../test_common.h"
#include "../test_hg_done.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define WAIT_LONG_MS 10000 /* waits that must end long before this */
#define WAIT_MAX_S 3.0     /* how long one of them may take here */
#define ANSWER_DELAY_US 100000
#define THREADS 2
#define RPCS_PER_THREAD 32
#define SELF_AGAIN 500 /* forwards to self on one handle */

MERCURY_GEN_PROC(num_t, ((int32_t)(x)))

static const char *wait_info;
static unsigned int answer_delay_us; /* before a worker answers a forward to self */
static atomic_int answers_done;      /* workers that answered and destroyed */

struct env {
    hg_class_t *srv, *cli;
    hg_context_t *srv_ctx, *cli_ctx;
    hg_addr_t srv_addr, cli_self;
    hg_id_t id;
    pthread_t srv_thread;
    atomic_bool stop;
    hg_request_class_t *requests;
};

/* ---- the answering side */

static void answer(hg_handle_t h)
{
    num_t in, out;
    assert_int_equal(HG_Get_input(h, &in), HG_SUCCESS);
    out.x = in.x + 1;
    HG_Free_input(h, &in);
    assert_int_equal(HG_Respond(h, NULL, NULL, &out), HG_SUCCESS);
    HG_Destroy(h);
}

static void *late_answer(void *arg)
{
    if (answer_delay_us) /* the origin is asleep in HG_Progress by then */
        usleep(answer_delay_us);
    answer(arg);
    atomic_fetch_add(&answers_done, 1);
    return NULL;
}

/* Answers from a thread of its own for the class's own address (the test of
 * a forward to self), at once otherwise. */
static hg_return_t plus_one(hg_handle_t h)
{
    const struct env *env =
        HG_Registered_data(HG_Get_info(h)->hg_class, HG_Get_info(h)->id);
    if (env && HG_Get_info(h)->hg_class == env->cli) {
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, late_answer, h), 0);
        pthread_detach(t);
        return HG_SUCCESS;
    }
    answer(h);
    return HG_SUCCESS;
}

static void *serve(void *arg)
{
    struct env *env = arg;
    while (!atomic_load(&env->stop)) {
        unsigned int n = 0;
        do
            HG_Trigger(env->srv_ctx, 0, 16, &n);
        while (n);
        HG_Progress(env->srv_ctx, 10);
    }
    return NULL;
}

static int setup(void **state)
{
    static struct env env;
    memset(&env, 0, sizeof(env));
    env.srv = HG_Init(wait_info, HG_TRUE);
    env.cli = HG_Init(wait_info, HG_TRUE);
    assert_true(env.srv && env.cli);
    env.srv_ctx = HG_Context_create(env.srv);
    env.cli_ctx = HG_Context_create(env.cli);
    assert_true(env.srv_ctx && env.cli_ctx);
    env.id = MERCURY_REGISTER(env.srv, "wait_plus_one", num_t, num_t, plus_one);
    assert_int_equal(MERCURY_REGISTER(env.cli, "wait_plus_one", num_t, num_t, plus_one),
                     env.id);
    assert_int_equal(HG_Register_data(env.cli, env.id, &env, NULL), HG_SUCCESS);

    hg_addr_t self;
    char name[TEST_ADDR_MAX];
    hg_size_t len = sizeof(name);
    assert_int_equal(HG_Addr_self(env.srv, &self), HG_SUCCESS);
    assert_int_equal(HG_Addr_to_string(env.srv, name, &len, self), HG_SUCCESS);
    HG_Addr_free(env.srv, self);
    assert_int_equal(HG_Addr_lookup2(env.cli, name, &env.srv_addr), HG_SUCCESS);
    assert_int_equal(HG_Addr_self(env.cli, &env.cli_self), HG_SUCCESS);
    env.requests = test_hg_request_class(env.cli_ctx);
    assert_non_null(env.requests);
    atomic_init(&env.stop, false);
    assert_int_equal(pthread_create(&env.srv_thread, NULL, serve, &env), 0);
    *state = &env;
    return 0;
}

static int teardown(void **state)
{
    struct env *env = *state;
    atomic_store(&env->stop, true);
    pthread_join(env->srv_thread, NULL);
    hg_request_finalize(env->requests, NULL);
    HG_Addr_free(env->cli, env->srv_addr);
    HG_Addr_free(env->cli, env->cli_self);
    assert_int_equal(HG_Context_destroy(env->cli_ctx), HG_SUCCESS);
    assert_int_equal(HG_Context_destroy(env->srv_ctx), HG_SUCCESS);
    assert_int_equal(HG_Finalize(env->cli), HG_SUCCESS);
    assert_int_equal(HG_Finalize(env->srv), HG_SUCCESS);
    return 0;
}

/* ---- tests */

static void test_self_answered_by_thread(void **state)
{
    struct env *env = *state;
    struct test_hg_done done = {0};
    hg_handle_t h;
    num_t in = {.x = 41};

    answer_delay_us = ANSWER_DELAY_US;
    assert_int_equal(HG_Create(env->cli_ctx, env->cli_self, env->id, &h), HG_SUCCESS);
    assert_int_equal(HG_Forward(h, test_hg_done_cb, &done, &in), HG_SUCCESS);
    double start = test_now();
    /* The handler is queued: run it, then sleep until its answer. */
    while (test_now() - start < WAIT_LONG_MS / 1e3) {
        HG_Trigger(env->cli_ctx, 0, 1, NULL);
        if (done.calls)
            break;
        HG_Progress(env->cli_ctx, WAIT_LONG_MS);
    }
    double took = test_now() - start;
    print_message("# self answer from a thread: %.3f s\n", took);
    assert_int_equal(done.calls, 1);
    assert_int_equal(done.ret, HG_SUCCESS);
    assert_true(took < WAIT_MAX_S);
    num_t out;
    assert_int_equal(HG_Get_output(h, &out), HG_SUCCESS);
    assert_int_equal(out.x, 42);
    HG_Free_output(h, &out);
    HG_Destroy(h);
}

struct waiter {
    struct env *env;
    int id;
    int done;
    double longest;
};

static hg_return_t request_done(const struct hg_cb_info *info)
{
    hg_request_complete(info->arg);
    return HG_SUCCESS;
}

static void *wait_many(void *arg)
{
    struct waiter *w = arg;
    struct env *env = w->env;
    for (int i = 0; i < RPCS_PER_THREAD; i++) {
        hg_handle_t h;
        num_t in = {.x = w->id * 1000 + i};
        hg_request_t *req = hg_request_create(env->requests);
        if (!req || HG_Create(env->cli_ctx, env->srv_addr, env->id, &h) != HG_SUCCESS)
            break;
        double start = test_now();
        unsigned int flag = 0;
        if (HG_Forward(h, request_done, req, &in) != HG_SUCCESS ||
            hg_request_wait(req, WAIT_LONG_MS, &flag) != HG_UTIL_SUCCESS || !flag) {
            HG_Destroy(h);
            hg_request_destroy(req);
            break;
        }
        double took = test_now() - start;
        if (took > w->longest)
            w->longest = took;
        num_t out;
        if (HG_Get_output(h, &out) == HG_SUCCESS) {
            w->done += out.x == in.x + 1;
            HG_Free_output(h, &out);
        }
        HG_Destroy(h);
        hg_request_destroy(req);
    }
    return NULL;
}

static void test_concurrent_request_waits(void **state)
{
    struct env *env = *state;
    struct waiter w[THREADS];
    pthread_t t[THREADS];

    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct waiter){.env = env, .id = i + 1};
        assert_int_equal(pthread_create(&t[i], NULL, wait_many, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        print_message("# thread %d: %d of %d RPCs, longest wait %.3f s\n", i, w[i].done,
                      RPCS_PER_THREAD, w[i].longest);
        assert_int_equal(w[i].done, RPCS_PER_THREAD);
        assert_true(w[i].longest < WAIT_MAX_S);
    }
}

static void test_self_forward_again(void **state)
{
    struct env *env = *state;
    hg_handle_t h;

    answer_delay_us = 0;
    atomic_store(&answers_done, 0);
    assert_int_equal(HG_Create(env->cli_ctx, env->cli_self, env->id, &h), HG_SUCCESS);
    for (int i = 0; i < SELF_AGAIN; i++) {
        struct test_hg_done done = {0};
        num_t in = {.x = i};
        assert_int_equal(HG_Forward(h, test_hg_done_cb, &done, &in), HG_SUCCESS);
        for (double end = test_now() + WAIT_MAX_S; done.calls == 0 && test_now() < end;) {
            HG_Trigger(env->cli_ctx, 0, 4, NULL);
            if (done.calls == 0)
                HG_Progress(env->cli_ctx, 10);
        }
        assert_int_equal(done.calls, 1);
        assert_int_equal(done.ret, HG_SUCCESS);
    }
    for (double end = test_now() + WAIT_MAX_S;
         atomic_load(&answers_done) < SELF_AGAIN && test_now() < end;)
        HG_Progress(env->cli_ctx, 1);
    assert_int_equal(atomic_load(&answers_done), SELF_AGAIN);
    /* Every handler gave its references back: the origin's is the last. */
    assert_int_equal(HG_Ref_get(h), 1);
    HG_Destroy(h);
}

static void test_destroy_after_answer(void **state)
{
    struct env *env = *state;
    /* A server of its own, progressed here: its handler answers, and its
     * context is destroyed as soon as the handler ran, the answer's send
     * possibly not completed (Mercury's test server does this). */
    hg_class_t *srv = HG_Init(wait_info, HG_TRUE);
    assert_non_null(srv);
    hg_context_t *ctx = HG_Context_create(srv);
    assert_non_null(ctx);
    assert_int_equal(MERCURY_REGISTER(srv, "wait_plus_one", num_t, num_t, plus_one),
                     env->id);
    hg_addr_t self, at;
    char name[TEST_ADDR_MAX];
    hg_size_t len = sizeof(name);
    assert_int_equal(HG_Addr_self(srv, &self), HG_SUCCESS);
    assert_int_equal(HG_Addr_to_string(srv, name, &len, self), HG_SUCCESS);
    HG_Addr_free(srv, self);
    assert_int_equal(HG_Addr_lookup2(env->cli, name, &at), HG_SUCCESS);

    struct test_hg_done done = {0};
    hg_handle_t h;
    num_t in = {.x = 1};
    assert_int_equal(HG_Create(env->cli_ctx, at, env->id, &h), HG_SUCCESS);
    assert_int_equal(HG_Forward(h, test_hg_done_cb, &done, &in), HG_SUCCESS);
    unsigned int ran = 0;
    for (double end = test_now() + WAIT_MAX_S; ran == 0 && test_now() < end;) {
        HG_Progress(env->cli_ctx, 0);
        HG_Progress(ctx, 10);
        HG_Trigger(ctx, 0, 1, &ran);
    }
    assert_int_equal(ran, 1);
    assert_int_equal(HG_Context_destroy(ctx), HG_SUCCESS);
    for (double end = test_now() + WAIT_MAX_S; done.calls == 0 && test_now() < end;) {
        HG_Trigger(env->cli_ctx, 0, 1, NULL);
        HG_Progress(env->cli_ctx, 10);
    }
    assert_int_equal(done.calls, 1);
    assert_int_equal(done.ret, HG_SUCCESS);
    HG_Destroy(h);
    HG_Addr_free(env->cli, at);
    assert_int_equal(HG_Finalize(srv), HG_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_answered_by_thread),
        cmocka_unit_test(test_concurrent_request_waits),
        cmocka_unit_test(test_self_forward_again),
        cmocka_unit_test(test_destroy_after_answer),
    };
    return test_run_per_transport("wait_threads", "", &wait_info, tests,
                                  sizeof(tests) / sizeof(tests[0]), setup, teardown);
}
