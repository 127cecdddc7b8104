/*
 * test_common.c -- transport list and groups, forked server, loopback
 * sockets, data patterns.
 */
#include "test_common.h"

#include "na.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* The most transports one run tests. */
#define TEST_TRANSPORTS_MAX 16

/* Tests run on one host: a TCP-capable transport named without a host is
 * pinned to loopback, as a plain string would take a routable interface. */
static const char *test_pin_loopback(const char *transport, char *buf, size_t size)
{
    if (strstr(transport, "://") || strstr(transport, "shm") ||
        strstr(transport, "+sm") || strchr(transport, '+') == NULL ||
        strncmp(transport, "mpi+", 4) == 0)
        return transport;
    snprintf(buf, size, "%s://127.0.0.1", transport);
    return buf;
}

/* The transports to test: $HGX_TEST_TRANSPORTS, or those of candidates[0..n)
 * built into the library. */
static size_t test_transports_of(const char *const *candidates, size_t n_candidates,
                                 const char *const **list)
{
    static const char *chosen[TEST_TRANSPORTS_MAX];
    static char pinned[TEST_TRANSPORTS_MAX][64];
    static char buf[512];
    const char *env = getenv("HGX_TEST_TRANSPORTS");
    size_t n = 0;

    if (!env || !*env) {
        /* Every transport of every plugin built into the library. */
        for (size_t i = 0; i < n_candidates; i++) {
            struct na_protocol_info *info = NULL;
            if (NA_Get_protocol_info(candidates[i], &info) == NA_SUCCESS && info)
                chosen[n++] = candidates[i];
            NA_Free_protocol_info(info);
        }
    } else {
        snprintf(buf, sizeof(buf), "%s", env);
        for (char *save = NULL, *t = strtok_r(buf, " ,", &save);
             t && n < TEST_TRANSPORTS_MAX; t = strtok_r(NULL, " ,", &save))
            chosen[n++] = t;
    }
    for (size_t i = 0; i < n; i++)
        chosen[i] = test_pin_loopback(chosen[i], pinned[i], sizeof(pinned[i]));
    *list = chosen;
    return n;
}

/* hgx's own transports, then the aliases Mercury programs name: na+sm, and
 * Mercury's spelling of ofi+tcp with the rxm provider. */
static const char *const test_candidates[] = {"ofi+tcp",        "ofi+shm", "ofi+sockets",
                                              "ucx+tcp",        "ucx+shm", "na+sm",
                                              "ofi+tcp;ofi_rxm"};
#define TEST_N_ALIASES 2

size_t test_transports(const char *const **list)
{
    const size_t n = sizeof(test_candidates) / sizeof(*test_candidates);
    return test_transports_of(test_candidates, n - TEST_N_ALIASES, list);
}

size_t test_transports_mercury(const char *const **list)
{
    const size_t n = sizeof(test_candidates) / sizeof(*test_candidates);
    return test_transports_of(test_candidates, n, list);
}

void test_client_info(const char *addr, char *info, size_t size)
{
    const char *sep = strstr(addr, "://");
    size_t len = sep ? (size_t)(sep - addr) : strlen(addr);
    if (sep && (strncmp(sep + 3, "127.", 4) == 0 || strncmp(sep + 3, "[::1]", 5) == 0))
        len = (size_t)(strrchr(addr, ':') - addr);
    snprintf(info, size, "%.*s", (int)len, addr);
}

void test_server_publish(int publish_fd, const char *addr)
{
    char line[TEST_ADDR_MAX] = {0};
    snprintf(line, sizeof(line), "%s", addr ? addr : "");
    if (write(publish_fd, line, sizeof(line)) != (ssize_t)sizeof(line))
        perror("test_server_publish");
    close(publish_fd);
}

bool test_server_start(struct test_server *srv, const char *info,
                       test_server_main_t server_main)
{
    int fds[2];
    memset(srv, 0, sizeof(*srv));
    if (pipe(fds) != 0)
        return false;
    fflush(NULL);
    pid_t parent = getpid();
    srv->pid = fork();
    if (srv->pid < 0)
        return false;
    if (srv->pid == 0) {
        /* A test that fails before it stops its server must not leave it
         * running (a wedged one spins): the kernel kills it with us. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(127);
        close(fds[0]);
        _exit(server_main(info, fds[1]));
    }
    close(fds[1]);
    ssize_t got = 0;
    while (got < TEST_ADDR_MAX) {
        ssize_t n = read(fds[0], srv->addr + got, (size_t)(TEST_ADDR_MAX - got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += n;
    }
    close(fds[0]);
    srv->addr[TEST_ADDR_MAX - 1] = '\0';
    if (got != TEST_ADDR_MAX || srv->addr[0] == '\0') {
        test_server_wait(srv, 1000);
        return false;
    }
    return true;
}

int test_server_wait(struct test_server *srv, unsigned int timeout_ms)
{
    int status;
    double deadline = test_now() + timeout_ms / 1000.0;
    if (srv->pid <= 0)
        return -1;
    for (;;) {
        pid_t r = waitpid(srv->pid, &status, WNOHANG);
        if (r == srv->pid)
            break;
        if (r < 0)
            return -1;
        if (test_now() > deadline) {
            fprintf(stderr, "# server %d did not exit in %u ms: killed\n", (int)srv->pid,
                    timeout_ms);
            kill(srv->pid, SIGKILL);
            waitpid(srv->pid, &status, 0);
            srv->pid = 0;
            return -1;
        }
        usleep(1000);
    }
    srv->pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void test_fill(void *buf, size_t len, unsigned int seed)
{
    unsigned char *p = buf;
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
}

bool test_check(const void *buf, size_t len, unsigned int seed)
{
    const unsigned char *p = buf;
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len; i++) {
        x = x * 1103515245u + 12345u;
        if (p[i] != (unsigned char)(x >> 16)) {
            fprintf(stderr, "# pattern mismatch at byte %zu of %zu\n", i, len);
            return false;
        }
    }
    return true;
}

double test_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void test_group_banner(const char *name)
{
    printf("[----------] group %s\n", name);
    fflush(stdout);
}

int test_run_groups(const char *suite, const char *const *transports, size_t n,
                    const char *skip, const char **info, const struct CMUnitTest *tests,
                    size_t count, int (*setup)(void **state),
                    int (*teardown)(void **state))
{
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        if (skip && strncmp(transports[i], skip, strlen(skip)) == 0)
            continue;
        char name[64];
        *info = transports[i];
        snprintf(name, sizeof(name), "%s/%s", suite, transports[i]);
        test_group_banner(name);
        failed += _cmocka_run_group_tests(name, tests, count, setup, teardown);
    }
    return failed ? 1 : 0;
}

int test_run_per_transport(const char *suite, const char *prefix, const char **info,
                           const struct CMUnitTest *tests, size_t count,
                           int (*setup)(void **state), int (*teardown)(void **state))
{
    const char *const *transports;
    const char *matched[TEST_TRANSPORTS_MAX];
    size_t n = test_transports(&transports), ran = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(transports[i], prefix, strlen(prefix)) == 0)
            matched[ran++] = transports[i];
    if (!ran) {
        printf("SKIP: no %s transport among the transports to test\n", prefix);
        return 77;
    }
    return test_run_groups(suite, matched, ran, NULL, info, tests, count, setup,
                           teardown);
}

int test_loopback_socket(bool listening, unsigned *port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
        (listening && listen(fd, 16) != 0) ||
        getsockname(fd, (struct sockaddr *)&sin, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(sin.sin_port);
    return fd;
}

void test_loopback_addr(const char *info, unsigned port, char *out, size_t size)
{
    const char *sep = strstr(info, "://");
    int n = sep ? (int)(sep - info) : (int)strlen(info);
    snprintf(out, size, "%.*s://127.0.0.1:%u", n, info, port);
}
