/*
 * test_hgx_assert.c -- HGX_ASSERT: a true condition passes without effect, a
 * false one logs file:line and the condition and aborts (in a child), and the
 * condition is evaluated exactly once.
 */
#include "hgx_assert.h"

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>

#include <cmocka.h>

static void test_pass(void **state)
{
    (void)state;
    int evaluated = 0;
    HGX_ASSERT(++evaluated == 1);
    assert_int_equal(evaluated, 1);
}

static void test_fail(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        int answer = 41;
        HGX_ASSERT(answer == 42);
        _exit(0); /* not reached when assertions work */
    }
    close(fds[1]);
    char out[1024];
    ssize_t n, total = 0;
    while ((n = read(fds[0], out + total, sizeof(out) - 1 - (size_t)total)) > 0)
        total += n;
    out[total] = '\0';
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    assert_non_null(strstr(out, "test_hgx_assert.c:"));
    assert_non_null(strstr(out, "answer == 42"));
}

int main(void)
{
#ifdef NDEBUG
    printf("SKIP: built with NDEBUG, HGX_ASSERT is compiled out\n");
    return 77;
#endif
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pass),
        cmocka_unit_test(test_fail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
