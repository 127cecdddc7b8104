/*
 * test_na_netif.c -- the local address helper the TCP plugins share: interface
 * names, address literals, ports, ip_subnet, the transport's interface
 * variable, and the error that lists the interfaces. Only "lo" is assumed.
 */
#include "na_netif.h"
#include "na_ipaddr.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <setjmp.h>

#include <cmocka.h>

struct pick {
    na_return_t ret;
    struct sockaddr_storage ss;
    socklen_t len;
    char ifname[IF_NAMESIZE];
    char ip[INET6_ADDRSTRLEN];
    int port;
    char log[4096]; /* what the helper logged */
};

/* Run the helper with stderr (the log) captured. */
static void pick(const struct na_netif_spec *spec, struct pick *p)
{
    memset(p, 0, sizeof(*p));
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    p->ret = na_netif_select(spec, &p->ss, &p->len, p->ifname);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(p->log, 1, sizeof(p->log) - 1, tmp);
    p->log[n] = '\0';
    fclose(tmp);
    if (p->ret != NA_SUCCESS)
        return;
    if (p->ss.ss_family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&p->ss;
        assert_int_equal(p->len, sizeof(*sin));
        inet_ntop(AF_INET, &sin->sin_addr, p->ip, sizeof(p->ip));
        p->port = ntohs(sin->sin_port);
    } else {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&p->ss;
        assert_int_equal(p->ss.ss_family, AF_INET6);
        assert_int_equal(p->len, sizeof(*sin6));
        inet_ntop(AF_INET6, &sin6->sin6_addr, p->ip, sizeof(p->ip));
        p->port = ntohs(sin6->sin6_port);
    }
}

static void test_iface_name(void **state)
{
    (void)state;
    struct pick p;
    pick(&(struct na_netif_spec){.host = "lo", .family = AF_UNSPEC}, &p);
    assert_int_equal(p.ret, NA_SUCCESS);
    assert_string_equal(p.ip, "127.0.0.1"); /* IPv4 before ::1 */
    assert_int_equal(p.port, 0);
    assert_string_equal(p.ifname, "lo");
    pick(&(struct na_netif_spec){.host = "lo", .port = 4321, .family = AF_INET}, &p);
    assert_int_equal(p.ret, NA_SUCCESS);
    assert_string_equal(p.ip, "127.0.0.1");
    assert_int_equal(p.port, 4321);
}

static void test_unknown_iface_lists(void **state)
{
    (void)state;
    struct pick p;
    pick(&(struct na_netif_spec){.host = "nosuchif0", .port = 1, .family = AF_UNSPEC},
         &p);
    assert_int_equal(p.ret, NA_ADDRNOTAVAIL);
    assert_non_null(strstr(p.log, "nosuchif0"));
    assert_non_null(strstr(p.log, "interfaces here:"));
    assert_non_null(strstr(p.log, "lo 127.0.0.1"));
}

static void test_literals(void **state)
{
    (void)state;
    struct pick p;
    pick(&(struct na_netif_spec){.host = "127.0.0.1", .port = 99, .family = AF_UNSPEC},
         &p);
    assert_int_equal(p.ret, NA_SUCCESS);
    assert_string_equal(p.ip, "127.0.0.1");
    assert_int_equal(p.port, 99);
    assert_string_equal(p.ifname, "lo"); /* the interface that owns it */

    pick(&(struct na_netif_spec){.host = "::1", .port = 7, .family = AF_UNSPEC}, &p);
    assert_int_equal(p.ret, NA_SUCCESS);
    assert_int_equal(p.ss.ss_family, AF_INET6);
    assert_string_equal(p.ip, "::1");
    assert_int_equal(p.port, 7);

    /* An IPv4-only transport refuses an IPv6 literal. */
    pick(&(struct na_netif_spec){.host = "::1", .port = 7, .family = AF_INET}, &p);
    assert_int_equal(p.ret, NA_ADDRNOTAVAIL);
    assert_non_null(strstr(p.log, "IPv4"));
}

static void test_port_only(void **state)
{
    (void)state;
    struct pick p;
    /* ":PORT": the automatic choice with that port. */
    pick(&(struct na_netif_spec){.port = 5678, .family = AF_UNSPEC}, &p);
    assert_int_equal(p.ret, NA_SUCCESS);
    assert_int_equal(p.port, 5678);
    assert_true(p.ifname[0] != '\0');
}

static void test_subnet(void **state)
{
    (void)state;
    static const char *const lo_nets[] = {"127.0.0.0/8", "127.0.0.1", "127.0.0.1/32",
                                          "0.0.0.0/0"};
    struct pick p;
    for (size_t i = 0; i < sizeof(lo_nets) / sizeof(*lo_nets); i++) {
        /* 0.0.0.0/0 matches every interface: only its family is known. */
        pick(&(struct na_netif_spec){.subnet = lo_nets[i], .family = AF_INET}, &p);
        assert_int_equal(p.ret, NA_SUCCESS);
        if (i < 3) {
            assert_string_equal(p.ip, "127.0.0.1");
            assert_string_equal(p.ifname, "lo");
        }
    }
    /* A subnet no interface is in (TEST-NET-3 is never assigned here). */
    pick(&(struct na_netif_spec){.subnet = "203.0.113.0/24", .family = AF_UNSPEC}, &p);
    assert_int_equal(p.ret, NA_ADDRNOTAVAIL);
    assert_non_null(strstr(p.log, "203.0.113.0/24"));
    assert_non_null(strstr(p.log, "lo 127.0.0.1"));

    static const char *const bad[] = {"abc",        "300.1.1.1/8", "127.0.0.0/33",
                                      "127.0.0.0/", "/8",          "127.0.0.0/8x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        pick(&(struct na_netif_spec){.subnet = bad[i], .family = AF_UNSPEC}, &p);
        assert_int_equal(p.ret, NA_INVALID_ARG);
        assert_non_null(strstr(p.log, "ip_subnet"));
    }
}

static void test_env_iface(void **state)
{
    (void)state;
    struct pick p;
    const struct na_netif_spec spec = {
        .env_name = "HGX_TEST_NETIF", .port = 3, .family = AF_INET};
    setenv("HGX_TEST_NETIF", "lo", 1);
    pick(&spec, &p);
    assert_int_equal(p.ret, NA_SUCCESS);
    assert_string_equal(p.ip, "127.0.0.1");
    assert_int_equal(p.port, 3);
    /* UCX_NET_DEVICES form: a list, devices with a port suffix. */
    setenv("HGX_TEST_NETIF", "lo:1,nosuchif0", 1);
    pick(&spec, &p);
    assert_string_equal(p.ifname, "lo");
    /* A device that is no network interface: chosen automatically, warned. */
    setenv("HGX_TEST_NETIF", "mlx5_0:1", 1);
    pick(&spec, &p);
    assert_int_equal(p.ret, NA_SUCCESS);
    /* A host in the info string wins over the variable. */
    setenv("HGX_TEST_NETIF", "nosuchif0", 1);
    pick(&(struct na_netif_spec){.host = "lo", .env_name = "HGX_TEST_NETIF"}, &p);
    assert_string_equal(p.ifname, "lo");
    unsetenv("HGX_TEST_NETIF");
}

static void test_is_local(void **state)
{
    (void)state;
    struct sockaddr_in sin = {.sin_family = AF_INET};
    struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6,
                                .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
    assert_true(na_netif_is_local((struct sockaddr *)&sin));
    inet_pton(AF_INET, "127.3.4.5", &sin.sin_addr);
    assert_true(na_netif_is_local((struct sockaddr *)&sin));
    assert_true(na_netif_is_local((struct sockaddr *)&sin6));
    inet_pton(AF_INET, "203.0.113.77", &sin.sin_addr);
    assert_false(na_netif_is_local((struct sockaddr *)&sin));

    char list[1024];
    na_netif_list(list, sizeof(list));
    assert_non_null(strstr(list, "lo 127.0.0.1"));
    na_netif_list(list, 4); /* truncated, terminated */
    assert_true(strlen(list) <= 3);
}

/* A peer's "HOST:PORT" / "[IPV6]:PORT": parsed, resolved in the family
 * asked for and printed back in one form. */
static void test_ipaddr_parse(void **state)
{
    static const struct {
        const char *in;
        int family;
        na_return_t ret;
        const char *out; /* na_ipaddr_string of the result */
    } cases[] = {
        {"127.0.0.1:5", AF_UNSPEC, NA_SUCCESS, "127.0.0.1:5"},
        {"[::1]:65535", AF_UNSPEC, NA_SUCCESS, "[::1]:65535"},
        {"[0:0::1]:7", AF_INET6, NA_SUCCESS, "[::1]:7"},
        {"[2001:DB8::1]:7", AF_UNSPEC, NA_SUCCESS, "[2001:db8::1]:7"},
        {"localhost:9", AF_INET, NA_SUCCESS, "127.0.0.1:9"},
        {"[::1]:7", AF_INET, NA_ADDRNOTAVAIL, NULL},
        {"127.0.0.1:7", AF_INET6, NA_ADDRNOTAVAIL, NULL},
        {"[::1", AF_UNSPEC, NA_INVALID_ARG, NULL},
        {"[::1]x", AF_UNSPEC, NA_INVALID_ARG, NULL},
        {"[::1]:", AF_UNSPEC, NA_INVALID_ARG, NULL},
        {"[zz::]:1", AF_UNSPEC, NA_INVALID_ARG, NULL},
        {"[127.0.0.1]:1", AF_UNSPEC, NA_INVALID_ARG, NULL},
        {"[]:1", AF_UNSPEC, NA_INVALID_ARG, NULL},
        {"127.0.0.1", AF_UNSPEC, NA_INVALID_ARG, NULL},
        {":5", AF_UNSPEC, NA_INVALID_ARG, NULL},
        {"127.0.0.1:0", AF_UNSPEC, NA_INVALID_ARG, NULL},
        {"127.0.0.1:65536", AF_UNSPEC, NA_INVALID_ARG, NULL},
        {"127.0.0.1:+5", AF_UNSPEC, NA_INVALID_ARG, NULL},
        {"127.0.0.1: 5", AF_UNSPEC, NA_INVALID_ARG, NULL},
        {"127.0.0.1:5x", AF_UNSPEC, NA_INVALID_ARG, NULL},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        struct sockaddr_storage ss;
        socklen_t len = 0;
        char out[NA_IPADDR_STR_MAX];
        na_return_t ret = na_ipaddr_parse(cases[i].in, cases[i].family, &ss, &len);
        if (ret != cases[i].ret)
            fail_msg("\"%s\": %d, want %d", cases[i].in, (int)ret, (int)cases[i].ret);
        if (!cases[i].out)
            continue;
        assert_int_equal(len, ss.ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                                      : sizeof(struct sockaddr_in6));
        na_ipaddr_string((struct sockaddr *)&ss, out, sizeof(out));
        assert_string_equal(out, cases[i].out);
    }
}

/* The longest address fits NA_IPADDR_STR_MAX; a short buffer is cut and
 * terminated, and the whole length is told. */
static void test_ipaddr_string(void **state)
{
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(65535)};
    char out[NA_IPADDR_STR_MAX], small[8];
    (void)state;
    assert_int_equal(inet_pton(AF_INET6, "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
                               &in6.sin6_addr),
                     1);
    size_t n = na_ipaddr_string((struct sockaddr *)&in6, out, sizeof(out));
    assert_int_equal(n, strlen(out));
    assert_true(n < sizeof(out));
    assert_int_equal(out[0], '[');
    assert_int_equal(na_ipaddr_string((struct sockaddr *)&in6, small, sizeof(small)), n);
    assert_int_equal(strlen(small), sizeof(small) - 1);
}

int main(void)
{
    setenv("HG_LOG_LEVEL", "warning", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iface_name),    cmocka_unit_test(test_unknown_iface_lists),
        cmocka_unit_test(test_literals),      cmocka_unit_test(test_port_only),
        cmocka_unit_test(test_subnet),        cmocka_unit_test(test_env_iface),
        cmocka_unit_test(test_is_local),      cmocka_unit_test(test_ipaddr_parse),
        cmocka_unit_test(test_ipaddr_string),
    };
    return cmocka_run_group_tests_name("na_netif", tests, NULL, NULL);
}
