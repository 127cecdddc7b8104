/*
 * test_log.c -- the log subsystem tree of Mercury: HG_Set_log_subsys("hg,na")
 * keeps rpc, bulk, proc and every plugin; a name stands for its subtree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "hgx_log.h"
#include "mercury.h"
#include "na.h"

/* Which subsystems log errors now, as a bit mask in enum order. */
static unsigned int enabled_mask(void)
{
    unsigned int mask = 0;
    for (int i = 0; i < HGX_SUBSYS_MAX; i++)
        if (hgx_log_enabled((enum hgx_log_subsys)i, HGX_LOG_ERROR))
            mask |= 1u << i;
    return mask;
}

#define BIT(s) (1u << HGX_SUBSYS_##s)
#define NA_TREE (BIT(NA) | BIT(OFI) | BIT(UCX) | BIT(MPI) | BIT(MPI_EMUL))
#define HG_TREE (BIT(HG) | BIT(BULK) | BIT(PROC) | BIT(REQ))

static void test_subsys_tree(void **state)
{
    (void)state;
    HG_Set_log_level("error");
    HG_Set_log_subsys("all");
    assert_int_equal(enabled_mask(), NA_TREE | HG_TREE);
    HG_Set_log_subsys("hg,na");
    assert_int_equal(enabled_mask(), NA_TREE | HG_TREE);
    HG_Set_log_subsys("hg");
    assert_int_equal(enabled_mask(), HG_TREE);
    HG_Set_log_subsys("na");
    assert_int_equal(enabled_mask(), NA_TREE);
    HG_Set_log_subsys("hg,~bulk");
    assert_int_equal(enabled_mask(), HG_TREE & ~BIT(BULK));
    HG_Set_log_subsys("all,~na");
    assert_int_equal(enabled_mask(), HG_TREE);
    HG_Set_log_subsys("mpi,proc");
    assert_int_equal(enabled_mask(), BIT(MPI) | BIT(MPI_EMUL) | BIT(PROC));
    HG_Set_log_subsys("nosuch");
    assert_int_equal(enabled_mask(), 0);
    HG_Set_log_subsys("all");
}

static void test_level_tree(void **state)
{
    (void)state;
    HG_Set_log_subsys("all");
    HG_Set_log_level("none");
    NA_Set_log_level("debug");
    for (int i = 0; i < HGX_SUBSYS_MAX; i++)
        assert_int_equal(hgx_log_enabled((enum hgx_log_subsys)i, HGX_LOG_DEBUG),
                         (NA_TREE >> i) & 1);
    HG_Set_log_level("error");
    assert_false(hgx_log_enabled(HGX_SUBSYS_UCX, HGX_LOG_DEBUG));
    assert_true(hgx_log_enabled(HGX_SUBSYS_BULK, HGX_LOG_ERROR));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_subsys_tree),
        cmocka_unit_test(test_level_tree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
