/*
 * test_na_lead.c -- the roles of na_lead.h: one poller and one blocker at a
 * time, a waiter is handed the blocker's role when the blocker leaves, a
 * thread does not sleep as a waiter while the role is free, and under a storm
 * of threads entering, blocking, sleeping and leaving, no waiter is ever left
 * asleep with the role empty (each sleep here can only end by a hand-on or
 * its timeout).
 */
#include "hgx_clock.h"
#include "na_lead.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <setjmp.h>

#include <cmocka.h>

#define STRANDED_MS 2000 /* a sleep this long was never handed the role */
#define STORM_THREADS 6
#define STORM_ROUNDS 3000

enum slept { NOT_LISTED, WOKEN, TIMED_OUT };

/* Sleep as a listed waiter until woken or timeout_ms. */
static enum slept lead_sleep(struct na_lead *lead, int timeout_ms)
{
    int fd = na_lead_thread_fd();
    assert_true(fd >= 0);
    struct na_lead_waiter w;
    if (!na_lead_sleep_begin(lead, &w, fd))
        return NOT_LISTED; /* the role was free */
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int rc = poll(&pfd, 1, timeout_ms);
    if (rc > 0)
        na_lead_fd_drain(fd);
    na_lead_sleep_end(lead, &w);
    return rc > 0 ? WOKEN : TIMED_OUT;
}

static void test_one_blocker(void **state)
{
    (void)state;
    struct na_lead lead;
    na_lead_init(&lead);
    na_lead_enter(&lead);
    na_lead_enter(&lead);
    assert_true(na_lead_try(&lead));
    assert_false(na_lead_try(&lead)); /* the second thread */
    assert_true(na_lead_poll_try(&lead));
    assert_false(na_lead_poll_try(&lead));
    na_lead_poll_done(&lead);
    assert_true(na_lead_poll_try(&lead));
    na_lead_poll_done(&lead);
    na_lead_release(&lead);
    na_lead_leave(&lead);
    assert_true(na_lead_try(&lead)); /* free again, taken by the second */
    na_lead_release(&lead);
    na_lead_leave(&lead);
    assert_int_equal(atomic_load(&lead.awake), 0);
    assert_false(atomic_load(&lead.blocked));
    na_lead_fini(&lead);
}

static void test_no_sleep_while_free(void **state)
{
    (void)state;
    struct na_lead lead;
    na_lead_init(&lead);
    na_lead_enter(&lead);
    struct na_lead_waiter w;
    assert_false(na_lead_sleep_begin(&lead, &w, na_lead_thread_fd()));
    assert_int_equal(atomic_load(&lead.asleep), 0);
    assert_int_equal(atomic_load(&lead.awake), 1);
    assert_null(lead.head);
    na_lead_leave(&lead);
    na_lead_fini(&lead);
}

struct follower {
    struct na_lead *lead;
    atomic_bool asleep;
    bool woken;
    uint64_t slept_ns;
};

static void *follower_main(void *arg)
{
    struct follower *f = arg;
    na_lead_enter(f->lead);
    assert_false(na_lead_try(f->lead));
    uint64_t t0 = hgx_clock_now_ns();
    atomic_store(&f->asleep, true);
    f->woken = lead_sleep(f->lead, STRANDED_MS) == WOKEN;
    f->slept_ns = hgx_clock_now_ns() - t0;
    /* Handed the role: it is free for this thread now. */
    bool blocker = na_lead_try(f->lead);
    if (blocker)
        na_lead_release(f->lead);
    na_lead_leave(f->lead);
    f->woken = f->woken && blocker;
    return NULL;
}

static void test_hand_on(void **state)
{
    (void)state;
    struct na_lead lead;
    na_lead_init(&lead);
    na_lead_enter(&lead);
    assert_true(na_lead_try(&lead));
    struct follower f = {.lead = &lead};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, follower_main, &f), 0);
    while (!atomic_load(&f.asleep) || atomic_load(&lead.asleep) == 0) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    na_lead_release(&lead); /* the blocker wakes and goes: the sleeper must take over */
    na_lead_leave(&lead);
    pthread_join(t, NULL);
    assert_true(f.woken);
    assert_true(f.slept_ns < (uint64_t)STRANDED_MS * HGX_NS_PER_MS / 2);
    assert_int_equal(atomic_load(&lead.awake), 0);
    assert_int_equal(atomic_load(&lead.asleep), 0);
    assert_false(atomic_load(&lead.blocked));
    na_lead_fini(&lead);
}

struct storm {
    struct na_lead lead;
    atomic_int blockers; /* threads holding the role: never above 1 */
    atomic_int max_blockers;
    atomic_int stranded; /* sleeps that ran out their timeout */
    atomic_int sleeps;   /* sleeps ended by a hand-on */
};

static void *storm_main(void *arg)
{
    struct storm *s = arg;
    unsigned int seed = (unsigned int)(uintptr_t)&seed;
    for (int round = 0; round < STORM_ROUNDS; round++) {
        na_lead_enter(&s->lead);
        bool blocker = false;
        for (int tries = 0; tries < 4 && !blocker; tries++) {
            blocker = na_lead_try(&s->lead);
            if (blocker)
                break;
            enum slept slept = lead_sleep(&s->lead, STRANDED_MS);
            if (slept != NOT_LISTED)
                atomic_fetch_add(slept == WOKEN ? &s->sleeps : &s->stranded, 1);
        }
        if (blocker) {
            int n = atomic_fetch_add(&s->blockers, 1) + 1;
            int m = atomic_load(&s->max_blockers);
            while (n > m && !atomic_compare_exchange_weak(&s->max_blockers, &m, n))
                ;
            /* Hold the role a while, at times off the CPU, so that the
             * others find it taken and go to sleep. */
            for (volatile int spin = rand_r(&seed) % 200; spin > 0; spin--)
                ;
            if (rand_r(&seed) % 4 == 0)
                sched_yield();
            atomic_fetch_sub(&s->blockers, 1);
            na_lead_release(&s->lead);
        }
        na_lead_leave(&s->lead);
    }
    return NULL;
}

static void test_storm(void **state)
{
    (void)state;
    struct storm s = {0};
    na_lead_init(&s.lead);
    pthread_t t[STORM_THREADS];
    for (int i = 0; i < STORM_THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, storm_main, &s), 0);
    for (int i = 0; i < STORM_THREADS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&s.max_blockers), 1);
    assert_int_equal(atomic_load(&s.stranded), 0);
    assert_true(atomic_load(&s.sleeps) > 0);
    print_message("%d sleeps, each ended by a hand-on\n", atomic_load(&s.sleeps));
    assert_int_equal(atomic_load(&s.lead.awake), 0);
    assert_int_equal(atomic_load(&s.lead.asleep), 0);
    assert_null(s.lead.head);
    na_lead_fini(&s.lead);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_blocker),
        cmocka_unit_test(test_no_sleep_while_free),
        cmocka_unit_test(test_hand_on),
        cmocka_unit_test(test_storm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
