/*
 * test_na_peer_map.c -- the peer hash map: find, insert, duplicates, removal,
 * growth past many buckets, keys of different lengths.
 */
#include "na_peer_map.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <setjmp.h>

#include <cmocka.h>

#define NPEERS 5000

static void count_value(void *value, void *arg)
{
    (void)value;
    (*(size_t *)arg)++;
}

static void test_basic(void **state)
{
    (void)state;
    struct na_peer_map map;
    int a, b;
    na_peer_map_init(&map);
    assert_null(na_peer_map_find(&map, "x", 1));
    assert_null(na_peer_map_remove(&map, "x", 1));
    assert_int_equal(na_peer_map_insert(&map, "peer-a", 6, &a), NA_SUCCESS);
    assert_int_equal(na_peer_map_insert(&map, "peer-a", 6, &b), NA_EXIST);
    /* A prefix is another key. */
    assert_int_equal(na_peer_map_insert(&map, "peer-a", 5, &b), NA_SUCCESS);
    assert_ptr_equal(na_peer_map_find(&map, "peer-a", 6), &a);
    assert_ptr_equal(na_peer_map_find(&map, "peer-", 5), &b);
    assert_int_equal(map.count, 2);
    assert_ptr_equal(na_peer_map_remove(&map, "peer-a", 6), &a);
    assert_null(na_peer_map_find(&map, "peer-a", 6));
    assert_ptr_equal(na_peer_map_find(&map, "peer-", 5), &b);
    na_peer_map_fini(&map);
    assert_int_equal(map.count, 0);
}

static void test_many(void **state)
{
    (void)state;
    static int values[NPEERS];
    struct na_peer_map map;
    na_peer_map_init(&map);
    for (uint64_t i = 0; i < NPEERS; i++)
        assert_int_equal(na_peer_map_insert(&map, &i, sizeof(i), &values[i]), NA_SUCCESS);
    assert_int_equal(map.count, NPEERS);
    assert_true(map.nbuckets >= NPEERS);
    size_t seen = 0;
    na_peer_map_for_each(&map, count_value, &seen);
    assert_int_equal(seen, NPEERS);
    for (uint64_t i = 0; i < NPEERS; i++)
        assert_ptr_equal(na_peer_map_find(&map, &i, sizeof(i)), &values[i]);
    for (uint64_t i = 0; i < NPEERS; i += 2)
        assert_ptr_equal(na_peer_map_remove(&map, &i, sizeof(i)), &values[i]);
    for (uint64_t i = 0; i < NPEERS; i++)
        assert_ptr_equal(na_peer_map_find(&map, &i, sizeof(i)),
                         i % 2 ? &values[i] : NULL);
    assert_int_equal(map.count, NPEERS / 2);
    na_peer_map_fini(&map);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
