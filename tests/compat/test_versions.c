/*
 * test_versions.c -- Mercury 2.4.1 version numbers, versioned init info (HG 2.2-2.4,
 * NA 4.0-6.x), NA_Trigger on an empty queue and the config macros programs use.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "mercury.h"
#include "na.h"
#include "../test_common.h"

static const char *g_info; /* first transport of this build */

/* The config macros as Mercury's test programs use them. */
static NA_UNUSED int na_unused_helper(void)
{
    return 1;
}
static HG_UNUSED int hg_unused_helper(void)
{
    return 2;
}
NA_PRIVATE int na_private_symbol(void);
HG_PRIVATE int hg_private_symbol(void);

static int fallthrough(int n)
{
    int steps = 0;
    switch (n) {
    case 2:
        steps++;
        NA_FALLTHROUGH;
    case 1:
        steps++;
        HG_FALLTHROUGH;
    default:
        break;
    }
    return steps;
}

static void test_version_numbers(void **state)
{
    (void)state;
    unsigned int major = 0, minor = 0, patch = 0;

    assert_int_equal(HG_Version_get(&major, &minor, &patch), HG_SUCCESS);
    assert_int_equal(major, 2);
    assert_int_equal(minor, 4);
    assert_int_equal(patch, 1);
    assert_int_equal(HG_VERSION_PATCH, 1);
    NA_Version_get(&major, &minor, &patch);
    assert_int_equal(major, 6);
    assert_int_equal(minor, 0);
    assert_int_equal(patch, 0);
    assert_int_equal(NA_VERSION_MAJOR * 100 + NA_VERSION_MINOR * 10 + NA_VERSION_PATCH,
                     600);
    assert_int_equal(fallthrough(2), 2);
    assert_int_equal(fallthrough(1), 1);
}

static void na_init_expect(unsigned int version, bool ok)
{
    struct na_init_info init = NA_INIT_INFO_INITIALIZER;
    init.traffic_class = NA_TC_BEST_EFFORT;
    na_class_t *na = NA_Initialize_opt2(g_info, false, version, &init);
    if (!ok) {
        assert_null(na);
        return;
    }
    assert_non_null(na);
    assert_int_equal(NA_Finalize(na), NA_SUCCESS);
}

static void test_na_init_versions(void **state)
{
    (void)state;
    na_init_expect(NA_VERSION(4, 0), true);
    na_init_expect(NA_VERSION(4, 1), true);
    na_init_expect(NA_VERSION(5, 0), true);
    na_init_expect(NA_VERSION(6, 0), true);
    na_init_expect(NA_VERSION(NA_VERSION_MAJOR, NA_VERSION_MINOR), true);
    na_init_expect(0, false); /* Mercury: version 0 with an info is an error */
    na_init_expect(NA_VERSION(3, 9), false);
    na_init_expect(NA_VERSION(7, 0), false);
    /* Without an info the version does not matter. */
    na_class_t *na = NA_Initialize_opt2(g_info, false, 0, NULL);
    assert_non_null(na);
    assert_int_equal(NA_Finalize(na), NA_SUCCESS);
}

static void hg_init_expect(unsigned int version, bool ok)
{
    struct hg_init_info init = HG_INIT_INFO_INITIALIZER;
    /* Garbage past the end of a 2.2 caller's struct: the class must still come up. */
    init.no_multi_recv = 0x5a;
    init.multi_recv_op_max = 7;
    hg_class_t *cls = HG_Init_opt2(g_info, HG_FALSE, version, &init);
    if (!ok) {
        assert_null(cls);
        return;
    }
    assert_non_null(cls);
    assert_int_equal(HG_Finalize(cls), HG_SUCCESS);
}

static void test_hg_init_versions(void **state)
{
    (void)state;
    hg_init_expect(HG_VERSION(2, 2), true);
    hg_init_expect(HG_VERSION(2, 3), true);
    hg_init_expect(HG_VERSION(2, 4), true);
    hg_init_expect(0, false);
    hg_init_expect(HG_VERSION(3, 0), false);
}

static void test_na_trigger_empty(void **state)
{
    (void)state;
    na_class_t *na = NA_Initialize(g_info, false);
    assert_non_null(na);
    na_context_t *ctx = NA_Context_create(na);
    assert_non_null(ctx);
    unsigned int count = 99;
    assert_int_equal(NA_Trigger(ctx, 16, &count), NA_SUCCESS);
    assert_int_equal(count, 0);
    assert_int_equal(NA_Trigger(ctx, 16, NULL), NA_SUCCESS);
    assert_int_equal(NA_Trigger(NULL, 16, &count), NA_INVALID_ARG);
    assert_int_equal(NA_Context_destroy(na, ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(na), NA_SUCCESS);
}

int main(void)
{
    const char *const *transports;
    if (test_transports(&transports) == 0) {
        printf("SKIP: no transport built\n");
        return 77;
    }
    g_info = transports[0];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_numbers),
        cmocka_unit_test(test_na_init_versions),
        cmocka_unit_test(test_hg_init_versions),
        cmocka_unit_test(test_na_trigger_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
