/*
 * test_na_progress_util.c -- the clock, the idle back-off policy and the
 * cancel-deadline watcher that progress loops share.
 */
#include "hgx_clock.h"
#include "hgx_param.h"
#include "na_backoff.h"
#include "na_cancel_watch.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <setjmp.h>

#include <cmocka.h>

static void test_clock(void **state)
{
    (void)state;
    uint64_t a = hgx_clock_now_ns();
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    uint64_t b = hgx_clock_now_ns();
    assert_true(b >= a + 2000000);
    assert_true(hgx_clock_now_ms() >= b / HGX_NS_PER_MS);
    assert_true(hgx_clock_now_us() >= b / HGX_NS_PER_US);
    uint64_t d = hgx_clock_after_ms(1000, 5);
    assert_int_equal(d, 1000 + 5 * HGX_NS_PER_MS);
    assert_false(hgx_clock_passed(d - 1, d));
    assert_true(hgx_clock_passed(d, d));
    /* Rounded up: waiting that long never ends early. */
    assert_int_equal(hgx_clock_left_ms(d - 1, d), 1);
    assert_int_equal(hgx_clock_left_ms(d - HGX_NS_PER_MS - 1, d), 2);
    assert_int_equal(hgx_clock_left_ms(d, d), 0);
    assert_int_equal(hgx_clock_left_ms(d + 7, d), 0);
    struct timespec at = hgx_clock_timespec(3 * 1000000000ull + 999999999u);
    assert_int_equal(at.tv_sec, 3);
    assert_int_equal(at.tv_nsec, 999999999);
    /* The same clock: CLOCK_MONOTONIC read now lies at or after a converted earlier
     * reading. */
    struct timespec mono;
    at = hgx_clock_timespec(hgx_clock_now_ns());
    clock_gettime(CLOCK_MONOTONIC, &mono);
    assert_true(mono.tv_sec > at.tv_sec ||
                (mono.tv_sec == at.tv_sec && mono.tv_nsec >= at.tv_nsec));
}

static void test_backoff(void **state)
{
    (void)state;
    assert_int_equal(na_backoff_step_ns(0), NA_BACKOFF_MIN_NS);
    assert_int_equal(na_backoff_step_ns(800000), 100000);
    assert_int_equal(na_backoff_step_ns(UINT64_MAX), NA_BACKOFF_MAX_NS);
    /* Monotonic in the idle time. */
    for (uint64_t t = 0, prev = 0; t < 100000000; t += 777777) {
        uint64_t s = na_backoff_step_ns(t);
        assert_true(s >= prev);
        prev = s;
    }
    /* A sleep lasts the step given (1 ms here, the longest step cut to what
     * is left); 0 returns at once. */
    uint64_t t0 = hgx_clock_now_ns();
    na_backoff_sleep(1000000);
    uint64_t slept = hgx_clock_now_ns() - t0;
    assert_true(slept >= 1000000);
    assert_true(slept < NA_BACKOFF_MAX_NS + 50000000); /* scheduling slack */
    t0 = hgx_clock_now_ns();
    na_backoff_sleep(0);
    assert_true(hgx_clock_now_ns() - t0 < 50000000);
}

static void test_spin_window(void **state)
{
    (void)state;
    /* Read once, from HGX_NA_SPIN_US (set by main before the first read). */
    assert_int_equal(na_backoff_spin_ns(), 70 * HGX_NS_PER_US);
    setenv("HGX_NA_SPIN_US", "5", 1);
    assert_int_equal(na_backoff_spin_ns(), 70 * HGX_NS_PER_US);
}

struct op {
    int id;
    struct na_cancel_watch watch;
};

static void test_cancel_watch(void **state)
{
    (void)state;
    setenv("HGX_NA_CANCEL_TIMEOUT_MS", "10", 1);
    struct na_cancel_watcher w;
    struct op a = {1, {{0}, 0}}, b = {2, {{0}, 0}}, c = {3, {{0}, 0}};
    na_cancel_watcher_init(&w);
    assert_int_equal(w.timeout_ns, 10 * HGX_NS_PER_MS);
    na_cancel_watch_init(&a.watch);
    na_cancel_watch_init(&b.watch);
    na_cancel_watch_init(&c.watch);
    assert_int_equal(na_cancel_watcher_next_ms(&w, 0), UINT64_MAX);
    assert_null(na_cancel_watcher_expired(&w, UINT64_MAX));

    uint64_t t = 1000 * HGX_NS_PER_MS;
    na_cancel_watch_start(&w, &a.watch, t);
    na_cancel_watch_start(&w, &b.watch, t + 4 * HGX_NS_PER_MS);
    na_cancel_watch_start(&w, &c.watch, t + 6 * HGX_NS_PER_MS);
    /* A second cancel keeps the first deadline. */
    na_cancel_watch_start(&w, &a.watch, t + 9 * HGX_NS_PER_MS);
    assert_true(na_cancel_watch_running(&b.watch));
    assert_int_equal(na_cancel_watcher_next_ms(&w, t), 10);
    /* b is confirmed by the transport. */
    na_cancel_watch_stop(&b.watch);
    assert_false(na_cancel_watch_running(&b.watch));

    assert_null(na_cancel_watcher_expired(&w, t + 10 * HGX_NS_PER_MS - 1));
    struct na_cancel_watch *x = na_cancel_watcher_expired(&w, t + 10 * HGX_NS_PER_MS);
    assert_non_null(x);
    assert_int_equal(hgx_list_entry(x, struct op, watch)->id, 1);
    assert_false(na_cancel_watch_running(&a.watch));
    assert_null(na_cancel_watcher_expired(&w, t + 10 * HGX_NS_PER_MS));
    assert_int_equal(na_cancel_watcher_next_ms(&w, t + 10 * HGX_NS_PER_MS), 6);
    x = na_cancel_watcher_expired(&w, t + 20 * HGX_NS_PER_MS);
    assert_int_equal(hgx_list_entry(x, struct op, watch)->id, 3);
    assert_null(na_cancel_watcher_expired(&w, UINT64_MAX));
    /* Stopping a watch that already fired is harmless. */
    na_cancel_watch_stop(&c.watch);
}

/* A plugin whose escalation costs more keeps its own deadline parameter. */
static void test_cancel_watch_param(void **state)
{
    (void)state;
    static const struct hgx_param own = {.name = "HGX_TEST_ESCALATE_MS",
                                         .type = HGX_PARAM_INT,
                                         .def = 250,
                                         .min = 0,
                                         .max = 3600000,
                                         .help = "test deadline"};
    struct na_cancel_watcher w;
    struct op a = {1, {{0}, 0}};
    setenv("HGX_NA_CANCEL_TIMEOUT_MS", "10", 1);
    unsetenv("HGX_TEST_ESCALATE_MS");
    na_cancel_watcher_init_param(&w, &own);
    assert_int_equal(w.timeout_ns, 250 * HGX_NS_PER_MS);
    setenv("HGX_TEST_ESCALATE_MS", "30", 1);
    na_cancel_watcher_init_param(&w, &own);
    assert_int_equal(w.timeout_ns, 30 * HGX_NS_PER_MS);
    na_cancel_watch_init(&a.watch);
    na_cancel_watch_start(&w, &a.watch, 0);
    assert_null(na_cancel_watcher_expired(&w, 30 * HGX_NS_PER_MS - 1));
    assert_ptr_equal(na_cancel_watcher_expired(&w, 30 * HGX_NS_PER_MS), &a.watch);
    /* Out of range: the default, not the core's timeout. */
    setenv("HGX_TEST_ESCALATE_MS", "-1", 1);
    na_cancel_watcher_init_param(&w, &own);
    assert_int_equal(w.timeout_ns, 250 * HGX_NS_PER_MS);
}

int main(void)
{
    setenv("HGX_NA_SPIN_US", "70", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clock),
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_spin_window),
        cmocka_unit_test(test_cancel_watch),
        cmocka_unit_test(test_cancel_watch_param),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
