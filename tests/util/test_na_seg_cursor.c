/*
 * test_na_seg_cursor.c -- runs of a put/get over two segment lists: offsets
 * into both, segment boundaries on either side, empty segments, zero size,
 * and refusal of transfers longer than a list.
 */
#include "na_seg_cursor.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <setjmp.h>

#include <cmocka.h>

/* Two plugin-like layouts: a local pointer with size_t length, and a remote
 * 64-bit address with a 32-bit length. */
struct lseg {
    void *base;
    size_t len;
};
struct rseg {
    uint64_t addr;
    uint32_t key;
    uint32_t len;
};

/* Move bytes along the runs, as a plugin posting one op per run would, and
 * compare with a flat copy. */
static void check_copy(const struct lseg *l, size_t nl, size_t loff, const struct rseg *r,
                       size_t nr, size_t roff, size_t size, size_t expect_runs)
{
    unsigned char lflat[256], rflat[256], want[256];
    size_t ltotal = 0, rtotal = 0;
    for (size_t i = 0; i < nl; i++)
        ltotal += l[i].len;
    for (size_t i = 0; i < nr; i++)
        rtotal += r[i].len;
    for (size_t i = 0; i < sizeof(lflat); i++) {
        lflat[i] = (unsigned char)i;
        rflat[i] = 0;
    }
    memcpy(want, rflat, sizeof(want));
    memcpy(want + roff, lflat + loff, size); /* a put of the flat views */

    /* Segment starts inside the flat buffers. */
    size_t lstart[8], rstart[8];
    for (size_t i = 0, s = 0; i < nl; s += l[i].len, i++)
        lstart[i] = s;
    for (size_t i = 0, s = 0; i < nr; s += r[i].len, i++)
        rstart[i] = s;

    struct na_seg_cursor cur;
    assert_true(na_seg_cursor_init(&cur, NA_SEG_LIST(l, nl, len), loff,
                                   NA_SEG_LIST(r, nr, len), roff, size));
    assert_int_equal(na_seg_cursor_count(&cur), expect_runs);
    struct na_seg_run run;
    size_t moved = 0, runs = 0;
    while (na_seg_cursor_next(&cur, &run)) {
        assert_true(run.len > 0);
        assert_true(run.local_offset + run.len <= l[run.local_index].len);
        assert_true(run.remote_offset + run.len <= r[run.remote_index].len);
        memcpy(rflat + rstart[run.remote_index] + run.remote_offset,
               lflat + lstart[run.local_index] + run.local_offset, run.len);
        moved += run.len;
        runs++;
    }
    assert_int_equal(moved, size);
    assert_int_equal(runs, expect_runs);
    assert_memory_equal(rflat, want, sizeof(want));
    assert_true(ltotal >= loff + size && rtotal >= roff + size);
}

static void test_single(void **state)
{
    (void)state;
    struct lseg l[] = {{NULL, 100}};
    struct rseg r[] = {{0, 0, 100}};
    check_copy(l, 1, 0, r, 1, 0, 100, 1);
    check_copy(l, 1, 10, r, 1, 30, 50, 1);
}

static void test_boundaries(void **state)
{
    (void)state;
    /* Local boundaries at 10, 30; remote at 15, 20, 40. */
    struct lseg l[] = {{NULL, 10}, {NULL, 20}, {NULL, 30}};
    struct rseg r[] = {{0, 0, 15}, {0, 0, 5}, {0, 0, 20}, {0, 0, 20}};
    /* Whole: cuts at 10, 15, 20, 30, 40 -> 6 runs over 60 bytes. */
    check_copy(l, 3, 0, r, 4, 0, 60, 6);
    /* From local 12 to remote 3 for 40 bytes: local cuts at 30-12=18,
     * remote cuts at 15-3=12, 20-3=17, 40-3=37 -> 5 runs. */
    check_copy(l, 3, 12, r, 4, 3, 40, 5);
    /* Offsets exactly on boundaries. */
    check_copy(l, 3, 10, r, 4, 15, 20, 2);
}

static void test_empty_segments(void **state)
{
    (void)state;
    struct lseg l[] = {{NULL, 0}, {NULL, 8}, {NULL, 0}, {NULL, 8}};
    struct rseg r[] = {{0, 0, 16}, {0, 0, 0}};
    check_copy(l, 4, 0, r, 2, 0, 16, 2);
    check_copy(l, 4, 8, r, 2, 0, 8, 1);
}

static void test_zero_and_bounds(void **state)
{
    (void)state;
    struct lseg l[] = {{NULL, 10}, {NULL, 10}};
    struct rseg r[] = {{0, 0, 16}};
    struct na_seg_cursor cur;
    struct na_seg_run run;
    /* Zero bytes, even at the very end: valid, no runs. */
    assert_true(na_seg_cursor_init(&cur, NA_SEG_LIST(l, 2, len), 20,
                                   NA_SEG_LIST(r, 1, len), 16, 0));
    assert_false(na_seg_cursor_next(&cur, &run));
    /* One byte too many on either side, an offset past the end, overflow. */
    assert_false(na_seg_cursor_init(&cur, NA_SEG_LIST(l, 2, len), 5,
                                    NA_SEG_LIST(r, 1, len), 0, 16));
    assert_false(na_seg_cursor_init(&cur, NA_SEG_LIST(l, 2, len), 0,
                                    NA_SEG_LIST(r, 1, len), 1, 16));
    assert_false(na_seg_cursor_init(&cur, NA_SEG_LIST(l, 2, len), 21,
                                    NA_SEG_LIST(r, 1, len), 0, 0));
    assert_false(na_seg_cursor_init(&cur, NA_SEG_LIST(l, 2, len), UINT64_MAX,
                                    NA_SEG_LIST(r, 1, len), 0, 2));
    /* No segments at all. */
    assert_true(na_seg_cursor_init(&cur, NA_SEG_LIST(l, 0, len), 0,
                                   NA_SEG_LIST(r, 0, len), 0, 0));
    assert_false(na_seg_cursor_next(&cur, &run));
    assert_false(na_seg_cursor_init(&cur, NA_SEG_LIST(l, 0, len), 0,
                                    NA_SEG_LIST(r, 1, len), 0, 1));
}

/* A cut run resumes where the cut left it, and the cut never crosses a
 * boundary the uncut run would not. */
static void test_next_max(void **state)
{
    (void)state;
    struct lseg l[] = {{NULL, 10}, {NULL, 20}};
    struct rseg r[] = {{0, 0, 30}};
    struct na_seg_cursor cur;
    struct na_seg_run run;
    assert_true(na_seg_cursor_init(&cur, NA_SEG_LIST(l, 2, len), 2,
                                   NA_SEG_LIST(r, 1, len), 0, 25));
    const struct {
        size_t li, lo, ro, len;
    } want[] = {{0, 2, 0, 4},  {0, 6, 4, 4},   {1, 0, 8, 4},  {1, 4, 12, 4},
                {1, 8, 16, 4}, {1, 12, 20, 4}, {1, 16, 24, 1}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        assert_true(na_seg_cursor_next_max(&cur, 4, &run));
        assert_int_equal(run.local_index, want[i].li);
        assert_int_equal(run.local_offset, want[i].lo);
        assert_int_equal(run.remote_index, 0);
        assert_int_equal(run.remote_offset, want[i].ro);
        assert_int_equal(run.len, want[i].len);
    }
    assert_false(na_seg_cursor_next_max(&cur, 4, &run));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single),         cmocka_unit_test(test_boundaries),
        cmocka_unit_test(test_empty_segments), cmocka_unit_test(test_zero_and_bounds),
        cmocka_unit_test(test_next_max),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
