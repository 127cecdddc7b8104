/*
 * test_common.h -- helpers shared by the cmocka tests: which transports to
 * run (and the groups run over them), a server child process reached through
 * pipes, loopback sockets that answer nothing.
 */
#ifndef TEST_COMMON_H
#define TEST_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TEST_ADDR_MAX 256

/* Transports to test: $HGX_TEST_TRANSPORTS (space separated) or the default list;
 * TCP-capable ones named without a host come pinned to loopback
 * ("ofi+tcp://127.0.0.1"): test traffic stays on this host's lo. */
size_t test_transports(const char *const **list);

/* test_transports() with, by default, also the info strings Mercury programs
 * hard-code and hgx serves through an alias ("na+sm"): for the tests of the
 * calls such a program makes (NA, HG, Margo's). */
size_t test_transports_mercury(const char *const **list);

struct CMUnitTest;

/* Run the cmocka group tests[0..count), with setup and teardown (or NULL),
 * once over each of transports[0..n) but those whose info string starts with
 * skip (NULL: none): named "suite/TRANSPORT" after a banner, with *info
 * pointing at the transport's info string while it runs. Returns the
 * program's exit code: 1 if a group failed, else 0. */
int test_run_groups(const char *suite, const char *const *transports, size_t n,
                    const char *skip, const char **info, const struct CMUnitTest *tests,
                    size_t count, int (*setup)(void **state),
                    int (*teardown)(void **state));

/* Run the cmocka group tests[0..count), with setup and teardown (or NULL),
 * once over each transport to test whose info string starts with prefix (""
 * for all): named "suite/TRANSPORT" after a banner, with *info pointing at the
 * transport's info string while it runs. Returns the program's exit code: 1
 * if a group failed, 77 (SKIP, the reason printed) if no transport matched,
 * else 0. */
int test_run_per_transport(const char *suite, const char *prefix, const char **info,
                           const struct CMUnitTest *tests, size_t count,
                           int (*setup)(void **state), int (*teardown)(void **state));

/* The info string of a client of the server at addr: "ofi+tcp" for
 * "ofi+tcp://IP:PORT", "ofi+tcp://127.0.0.1" for a server on loopback. */
void test_client_info(const char *addr, char *info, size_t size);

/* A forked server: it writes its address string to the parent, then serves. */
struct test_server {
    pid_t pid;
    char addr[TEST_ADDR_MAX];
};

/* Body of a server child: publish addr with test_server_publish(), serve, return exit
 * code. */
typedef int (*test_server_main_t)(const char *info, int publish_fd);

/* Fork a child running server_main(info); wait until it published its address. */
bool test_server_start(struct test_server *srv, const char *info,
                       test_server_main_t server_main);
void test_server_publish(int publish_fd, const char *addr);
/* Wait for the child to exit (killing it after timeout_ms); its exit status, or -1. */
int test_server_wait(struct test_server *srv, unsigned int timeout_ms);

/* A TCP socket on a free loopback port (*port) that never accepts; -1 on
 * error. Listening, it completes a peer's handshake in the kernel and then
 * answers nothing (a peer that never wires up); closed without listening, it
 * leaves a port where nothing listens (a refused peer). */
int test_loopback_socket(bool listening, unsigned *port);

/* "PLUGIN+PROTOCOL://127.0.0.1:PORT" in the plugin and protocol of info. */
void test_loopback_addr(const char *info, unsigned port, char *out, size_t size);

/* Fill buf with a pattern derived from seed; check it. */
void test_fill(void *buf, size_t len, unsigned int seed);
bool test_check(const void *buf, size_t len, unsigned int seed);

/* Announce a cmocka group (e.g. "na/ofi+tcp") so logs show which transport ran. */
void test_group_banner(const char *name);

/* Monotonic time in seconds. */
double test_now(void);

#endif /* TEST_COMMON_H */
