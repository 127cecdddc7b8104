/*
 * test_emul_state.c -- the tables of legal moves of the put/get emulation's
 * state machines (src/mpi_emul/emul_state.h), checked against the moves
 * docs/mpi-emul-cancel.md draws: each listed move is accepted, every other
 * pair of states (self-moves and out-of-range states included) is refused;
 * and the check every move goes through: it logs both state names, and
 * asserts an illegal move (builds without NDEBUG).
 */
#include "emul_state.h"
#include "hgx_log.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <setjmp.h>

#include <cmocka.h>

struct move {
    unsigned from, to;
};

/* Check machine m against exactly the moves listed. */
static void check_table(enum hgx_emul_machine m, unsigned nstates, const struct move *mv,
                        size_t nmv)
{
    assert_int_equal(hgx_emul_nstates(m), nstates);
    unsigned accepted = 0;
    for (unsigned from = 0; from <= nstates; from++)
        for (unsigned to = 0; to <= nstates; to++) {
            bool listed = false;
            for (size_t i = 0; i < nmv; i++)
                listed |= mv[i].from == from && mv[i].to == to;
            bool legal = hgx_emul_move_legal(m, from, to);
            if (legal != listed)
                fail_msg("%s -> %s: table says %s", hgx_emul_state_name(m, from),
                         hgx_emul_state_name(m, to), legal ? "legal" : "illegal");
            accepted += legal;
        }
    assert_int_equal(accepted, nmv);
}

/* Every state has a name of its own, and out-of-range states have none. */
static void check_names(enum hgx_emul_machine m)
{
    unsigned n = hgx_emul_nstates(m);
    for (unsigned a = 0; a < n; a++) {
        assert_string_not_equal(hgx_emul_state_name(m, a), "?");
        for (unsigned b = a + 1; b < n; b++)
            assert_string_not_equal(hgx_emul_state_name(m, a), hgx_emul_state_name(m, b));
    }
    assert_string_equal(hgx_emul_state_name(m, n), "?");
}

static void test_origin_transfer(void **state)
{
    (void)state;
    static const struct move mv[] = {
        {HGX_EMUL_OX_WAIT_CTS, HGX_EMUL_OX_SENDING},  /* CTS */
        {HGX_EMUL_OX_WAIT_CTS, HGX_EMUL_OX_ABORTED},  /* CTS after a local cancel */
        {HGX_EMUL_OX_WAIT_CTS, HGX_EMUL_OX_REPLIED},  /* ERR: refused */
        {HGX_EMUL_OX_SENDING, HGX_EMUL_OX_ABORTED},   /* local cancel, send error */
        {HGX_EMUL_OX_SENDING, HGX_EMUL_OX_REPLIED},   /* ACK */
        {HGX_EMUL_OX_RECEIVING, HGX_EMUL_OX_REPLIED}, /* get: ERR */
        {HGX_EMUL_OX_ABORTED, HGX_EMUL_OX_REPLIED},   /* ACK that crossed ABORT */
    };
    check_table(HGX_EMUL_M_OXFER, HGX_EMUL_OX_N, mv, sizeof(mv) / sizeof(mv[0]));
    check_names(HGX_EMUL_M_OXFER);
}

static void test_origin_cancel(void **state)
{
    (void)state;
    static const struct move mv[] = {
        {HGX_EMUL_OC_NONE, HGX_EMUL_OC_SENT},          /* NA_Cancel */
        {HGX_EMUL_OC_SENT, HGX_EMUL_OC_YES},           /* CANCELYES in time */
        {HGX_EMUL_OC_SENT, HGX_EMUL_OC_NO},            /* CANCELNO in time */
        {HGX_EMUL_OC_SENT, HGX_EMUL_OC_ZOMBIE},        /* no answer in time */
        {HGX_EMUL_OC_ZOMBIE, HGX_EMUL_OC_ZOMBIE_YES},  /* late CANCELYES */
        {HGX_EMUL_OC_ZOMBIE, HGX_EMUL_OC_ZOMBIE_NO},   /* late CANCELNO */
        {HGX_EMUL_OC_ZOMBIE, HGX_EMUL_OC_EXPIRED},     /* zombie life over */
        {HGX_EMUL_OC_ZOMBIE_YES, HGX_EMUL_OC_EXPIRED}, /* ... its sends still held */
        {HGX_EMUL_OC_ZOMBIE_NO, HGX_EMUL_OC_EXPIRED},  /* ... a get's chunks missing */
    };
    check_table(HGX_EMUL_M_OCANCEL, HGX_EMUL_OC_N, mv, sizeof(mv) / sizeof(mv[0]));
    check_names(HGX_EMUL_M_OCANCEL);
}

static void test_target(void **state)
{
    (void)state;
    static const struct move mv[] = {
        {HGX_EMUL_T_RECEIVED, HGX_EMUL_T_APPLYING}, /* end of the control batch */
        {HGX_EMUL_T_RECEIVED, HGX_EMUL_T_DONE},     /* CANCEL, ABORT or refused */
        {HGX_EMUL_T_APPLYING, HGX_EMUL_T_ABORTED},  /* put: ABORT */
        {HGX_EMUL_T_APPLYING, HGX_EMUL_T_DONE},     /* all data moved, or idle */
        {HGX_EMUL_T_ABORTED, HGX_EMUL_T_DONE},      /* late chunks all came */
    };
    check_table(HGX_EMUL_M_TARGET, HGX_EMUL_T_N, mv, sizeof(mv) / sizeof(mv[0]));
    check_names(HGX_EMUL_M_TARGET);
}

/* Make one move of request 7 (rank 3) in a child whose stderr (the log, at
 * debug level) goes to a temporary file; its wait status and its log. */
static int move_in_child(enum hgx_emul_machine m, unsigned from, unsigned to, char *log,
                         size_t n)
{
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fileno(tmp), 2);
        hgx_log_set_level("mpi_emul", "debug");
        hgx_emul_move(m, from, to, 7, 3);
        fflush(stderr);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    rewind(tmp);
    size_t k = fread(log, 1, n - 1, tmp);
    log[k] = '\0';
    fclose(tmp);
    return status;
}

static void test_move_traced(void **state)
{
    (void)state;
    char log[4096];
    int st = move_in_child(HGX_EMUL_M_OCANCEL, HGX_EMUL_OC_SENT, HGX_EMUL_OC_ZOMBIE, log,
                           sizeof(log));
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (!strstr(log, "request 7 (rank 3): CANCEL_SENT -> ZOMBIE"))
        fail_msg("no debug line naming both states: \"%s\"", log);
}

static void test_illegal_move(void **state)
{
    (void)state;
    char log[4096];
    int st = move_in_child(HGX_EMUL_M_TARGET, HGX_EMUL_T_DONE, HGX_EMUL_T_APPLYING, log,
                           sizeof(log));
#ifndef NDEBUG
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
#else
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
#endif
    if (!strstr(log, "illegal target move of request 7 (rank 3): DONE -> APPLYING"))
        fail_msg("no error line naming both states: \"%s\"", log);
}

static void test_unknown_machine(void **state)
{
    (void)state;
    assert_int_equal(hgx_emul_nstates(HGX_EMUL_M_N), 0);
    assert_false(hgx_emul_move_legal(HGX_EMUL_M_N, 0, 0));
    assert_string_equal(hgx_emul_state_name(HGX_EMUL_M_N, 0), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_origin_transfer), cmocka_unit_test(test_origin_cancel),
        cmocka_unit_test(test_target),          cmocka_unit_test(test_unknown_machine),
        cmocka_unit_test(test_move_traced),     cmocka_unit_test(test_illegal_move),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
