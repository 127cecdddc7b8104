/*
 * test_na_ucx_conn.c -- the UCX plugin's table of connection-state moves is
 * the one docs/na-ucx.md gives ("States"): every listed move is legal, every
 * other pair and every state out of range is refused (ucx_peer_move asserts
 * on it).
 */
#include "hgx_test_hooks.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

enum { IDLE, CONNECTING, UP, FAILED, STATES };

static void test_table(void **state)
{
    (void)state;
    static const int moves[][2] = {
        {IDLE, CONNECTING}, /* first operation */
        {IDLE, UP},         /* accepted client, or the class's own peer */
        {IDLE, FAILED},     /* accepting failed */
        {CONNECTING, UP},   /* wire-up done */
        {CONNECTING, IDLE}, /* wire-up failed, timed out, dropped, forgotten */
        {UP, IDLE},         /* outgoing peer's connection gone */
        {UP, FAILED},       /* accepted peer's connection gone */
        {UP, UP},           /* accepted client connected again */
        {FAILED, UP},       /* accepted client connected again */
    };
    bool legal[STATES][STATES] = {{false}};
    for (size_t i = 0; i < sizeof(moves) / sizeof(moves[0]); i++)
        legal[moves[i][0]][moves[i][1]] = true;
    for (int from = 0; from < STATES; from++)
        for (int to = 0; to < STATES; to++)
            if (na_ucx_conn_legal(from, to) != legal[from][to])
                fail_msg("move %d -> %d: table says %s, docs say %s", from, to,
                         legal[from][to] ? "illegal" : "legal",
                         legal[from][to] ? "legal" : "illegal");
    assert_false(na_ucx_conn_legal(-1, UP));
    assert_false(na_ucx_conn_legal(UP, STATES));
    assert_false(na_ucx_conn_legal(STATES, IDLE));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_table)};
    return cmocka_run_group_tests_name("na_ucx_conn", tests, NULL, NULL);
}
