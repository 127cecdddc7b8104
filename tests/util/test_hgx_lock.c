/*
 * test_hgx_lock.c -- the lock in its three modes: mutual exclusion of spin
 * and mutex locks under contention, trylock, a statically initialized mutex,
 * and the single-thread mode that takes nothing.
 */
#include "hgx_lock.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <setjmp.h>

#include <cmocka.h>

#define THREADS 4
#define ROUNDS 100000

struct shared {
    hgx_lock_t lock;
    unsigned long counter; /* plain: only the lock keeps increments whole */
};

static void *hammer(void *arg)
{
    struct shared *s = arg;
    for (int i = 0; i < ROUNDS; i++) {
        hgx_lock(&s->lock);
        s->counter++;
        hgx_unlock(&s->lock);
    }
    return NULL;
}

static void contend(enum hgx_lock_mode mode)
{
    struct shared s = {.counter = 0};
    pthread_t t[THREADS];
    hgx_lock_init_as(&s.lock, mode);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hammer, &s), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(s.counter, (unsigned long)THREADS * ROUNDS);
    hgx_lock_fini(&s.lock);
}

static void test_spin(void **state)
{
    (void)state;
    contend(HGX_LOCK_SPIN);
}

static void test_mutex(void **state)
{
    (void)state;
    contend(HGX_LOCK_MUTEX);
}

static void test_trylock(void **state)
{
    (void)state;
    const enum hgx_lock_mode modes[] = {HGX_LOCK_SPIN, HGX_LOCK_MUTEX};
    for (size_t i = 0; i < 2; i++) {
        hgx_lock_t lock;
        hgx_lock_init_as(&lock, modes[i]);
        assert_true(hgx_trylock(&lock));
        assert_false(hgx_trylock(&lock));
        hgx_unlock(&lock);
        assert_true(hgx_trylock(&lock));
        hgx_unlock(&lock);
        hgx_lock_fini(&lock);
    }
}

/* A process-wide lock from HGX_LOCK_MUTEX_INITIALIZER: a mutex, no init call. */
static struct shared static_shared = {.lock = HGX_LOCK_MUTEX_INITIALIZER};

static void test_static_mutex(void **state)
{
    (void)state;
    assert_int_equal(static_shared.lock.mode, HGX_LOCK_MUTEX);
    assert_true(hgx_trylock(&static_shared.lock));
    assert_false(hgx_trylock(&static_shared.lock));
    hgx_unlock(&static_shared.lock);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hammer, &static_shared), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(static_shared.counter, (unsigned long)THREADS * ROUNDS);
}

static void test_none(void **state)
{
    (void)state;
    hgx_lock_t lock;
    hgx_lock_init_mode(&lock, true);
    assert_int_equal(lock.mode, HGX_LOCK_NONE);
    /* Nothing is taken: a second lock does not wait. */
    hgx_lock(&lock);
    hgx_lock(&lock);
    assert_true(hgx_trylock(&lock));
    hgx_unlock(&lock);
    hgx_lock_fini(&lock);
    hgx_lock_init_mode(&lock, false);
    assert_int_equal(lock.mode, HGX_LOCK_SPIN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spin),    cmocka_unit_test(test_mutex),
        cmocka_unit_test(test_trylock), cmocka_unit_test(test_static_mutex),
        cmocka_unit_test(test_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
