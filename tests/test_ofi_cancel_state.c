/*
 * test_ofi_cancel_state.c -- the table of legal moves of the OFI cancel
 * escalation (src/na/ofi/ofi_cancel_state.h), checked against the moves the
 * plugin makes: each listed move is accepted, every other pair of stages
 * (staying put and out-of-range stages included) is refused; and each stage
 * has its own name.
 */
#include "ofi_cancel_state.h"

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <setjmp.h>

#include <cmocka.h>

static void test_moves(void **state)
{
    (void)state;
    static const struct {
        enum ofi_cst from, to;
    } moves[] = {
        {OFI_CST_NONE, OFI_CST_WATCHED},      /* NA_Cancel of an op the provider has */
        {OFI_CST_WATCHED, OFI_CST_ESCALATED}, /* HGX_NA_CANCEL_TIMEOUT_MS passed */
        {OFI_CST_WATCHED, OFI_CST_NONE},      /* the provider completed it */
        {OFI_CST_ESCALATED, OFI_CST_FORCED},  /* the policy completes it itself */
        {OFI_CST_ESCALATED, OFI_CST_NONE},    /* the provider completed it */
    };
    size_t accepted = 0;
    for (unsigned from = 0; from <= OFI_CST_COUNT; from++)
        for (unsigned to = 0; to <= OFI_CST_COUNT; to++) {
            bool listed = false;
            for (size_t i = 0; i < sizeof(moves) / sizeof(moves[0]); i++)
                listed |= moves[i].from == from && moves[i].to == to;
            bool legal = ofi_cst_move_legal((enum ofi_cst)from, (enum ofi_cst)to);
            if (legal != listed)
                fail_msg("move %u -> %u: legal %d, expected %d", from, to, legal, listed);
            accepted += legal;
        }
    assert_int_equal(accepted, sizeof(moves) / sizeof(moves[0]));
}

/* Only the two waiting stages are on a cancel list. */
static void test_listed(void **state)
{
    (void)state;
    assert_false(ofi_cst_listed(OFI_CST_NONE));
    assert_true(ofi_cst_listed(OFI_CST_WATCHED));
    assert_true(ofi_cst_listed(OFI_CST_ESCALATED));
    assert_false(ofi_cst_listed(OFI_CST_FORCED));
}

static void test_names(void **state)
{
    (void)state;
    for (unsigned a = 0; a < OFI_CST_COUNT; a++) {
        assert_string_not_equal(ofi_cst_name((enum ofi_cst)a), "?");
        for (unsigned b = a + 1; b < OFI_CST_COUNT; b++)
            assert_string_not_equal(ofi_cst_name((enum ofi_cst)a),
                                    ofi_cst_name((enum ofi_cst)b));
    }
    assert_string_equal(ofi_cst_name(OFI_CST_COUNT), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moves),
        cmocka_unit_test(test_listed),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
