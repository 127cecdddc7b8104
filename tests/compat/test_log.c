/*
 * test_log.c -- the log subsystem tree of Mercury: HG_Set_log_subsys("hg,na")
 * keeps rpc, bulk, proc and every plugin; a name stands for its subtree. The
 * same list selects the program's own log outlets (mercury_log.h) by name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "hgx_log.h"
#include "mercury.h"
#include "mercury_log.h"
#include "na.h"

#include <stdio.h>
#include <string.h>

/* A program's outlets, as Mercury's test harness declares them: tl_prog
 * below the root outlet, and its subsystem "tl_sub". */
HG_LOG_DECL_REGISTER(tl_prog);
HG_LOG_SUBSYS_DECL_REGISTER(tl_sub, tl_prog);

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

/* Whether text was written to f since byte at. */
static bool written_since(FILE *f, long at, const char *text)
{
    char buf[4096];
    size_t n;
    fflush(f);
    fseek(f, at, SEEK_SET);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fseek(f, 0, SEEK_END);
    return strstr(buf, text) != NULL;
}

static void test_program_outlets(void **state)
{
    (void)state;
    FILE *err = tmpfile();
    assert_non_null(err);
    hg_log_set_stream_error(err);
    hg_log_set_level(HG_LOG_LEVEL_ERROR);

    /* As Mercury's harness sets it: its outlet and hg's subsystems. */
    HG_Set_log_subsys("hg,tl_prog");
    assert_int_equal(HG_LOG_OUTLET(tl_prog).level, HG_LOG_LEVEL_ERROR);
    assert_int_equal(HG_LOG_OUTLET(tl_prog_tl_sub).level, HG_LOG_LEVEL_ERROR);
    long at = ftell(err);
    HG_LOG_SUBSYS_WRITE(tl_sub, tl_prog, HG_LOG_LEVEL_ERROR, "to the subsystem %d", 1);
    assert_true(written_since(err, at, "[tl_sub] error"));
    assert_true(written_since(err, at, "to the subsystem 1"));

    /* Silenced by its own name; the parent still logs. */
    HG_Set_log_subsys("hg,tl_prog,~tl_sub");
    assert_int_equal(HG_LOG_OUTLET(tl_prog_tl_sub).level, HG_LOG_LEVEL_NONE);
    at = ftell(err);
    HG_LOG_SUBSYS_WRITE(tl_sub, tl_prog, HG_LOG_LEVEL_ERROR, "silenced");
    HG_LOG_WRITE(tl_prog, HG_LOG_LEVEL_ERROR, "the parent");
    assert_false(written_since(err, at, "silenced"));
    assert_true(written_since(err, at, "[tl_prog] error"));

    /* A list naming neither: both silent; "all": both log. */
    HG_Set_log_subsys("hg,na");
    assert_int_equal(HG_LOG_OUTLET(tl_prog).level, HG_LOG_LEVEL_NONE);
    assert_int_equal(HG_LOG_OUTLET(tl_prog_tl_sub).level, HG_LOG_LEVEL_NONE);
    HG_Set_log_subsys("all");
    assert_int_equal(HG_LOG_OUTLET(tl_prog_tl_sub).level, HG_LOG_LEVEL_ERROR);
    assert_string_equal(hg_log_get_subsys(), "all");

    hg_log_set_stream_error(NULL);
    fclose(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_subsys_tree),
        cmocka_unit_test(test_level_tree),
        cmocka_unit_test(test_program_outlets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
