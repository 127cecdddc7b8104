/*
 * na_ipaddr.c -- peers' IP socket addresses: resolve, parse and print
 * (getaddrinfo, inet_ntop).
 */
#include "na_ipaddr.h"

#include "hgx_log.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define NA_IPADDR_HOST_MAX 256
#define NA_IPADDR_PORT_DIGITS 5

int na_ipaddr_family(enum na_addr_format format)
{
    switch (format) {
    case NA_ADDR_IPV4:
        return AF_INET;
    case NA_ADDR_IPV6:
        return AF_INET6;
    default:
        return AF_UNSPEC;
    }
}

int na_ipaddr_port(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
    if (sa->sa_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
    return 0;
}

void na_ipaddr_set_port(struct sockaddr *sa, int port)
{
    if (sa->sa_family == AF_INET)
        ((struct sockaddr_in *)(void *)sa)->sin_port = htons((uint16_t)port);
    else if (sa->sa_family == AF_INET6)
        ((struct sockaddr_in6 *)(void *)sa)->sin6_port = htons((uint16_t)port);
}

bool na_ipaddr_same_host(const struct sockaddr *a, const struct sockaddr *b)
{
    if (a->sa_family != b->sa_family)
        return false;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)(const void *)b)->sin_addr.s_addr;
    if (a->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)(const void *)b)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
    return false;
}

int na_ipaddr_resolve(const char *host, int family, int port, struct sockaddr_storage *ss,
                      socklen_t *len)
{
    struct addrinfo hints = {.ai_family = family, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    const struct addrinfo *pick = NULL;
    for (const struct addrinfo *ai = rc == 0 ? res : NULL; ai; ai = ai->ai_next)
        if (ai->ai_family == AF_INET || (ai->ai_family == AF_INET6 && !pick)) {
            pick = ai;
            if (ai->ai_family == AF_INET)
                break;
        }
    if (pick) {
        memset(ss, 0, sizeof(*ss));
        memcpy(ss, pick->ai_addr, pick->ai_addrlen);
        *len = pick->ai_addrlen;
        na_ipaddr_set_port((struct sockaddr *)ss, port);
    }
    if (res)
        freeaddrinfo(res);
    return rc ? rc : pick ? 0 : EAI_NONAME;
}

/* "1" .. "65535", digits only (no sign, no spaces). */
static int ipaddr_port(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > NA_IPADDR_PORT_DIGITS || strspn(s, "0123456789") != n)
        return -1;
    int port = 0;
    for (size_t i = 0; i < n; i++)
        port = port * 10 + (s[i] - '0');
    return port >= 1 && port <= 65535 ? port : -1;
}

/* Whether host is an IPv6 literal (a "%scope" suffix allowed). */
static bool ipaddr_is_v6_literal(const char *host)
{
    struct addrinfo hints = {
        .ai_family = AF_INET6, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST};
    struct addrinfo *res = NULL;
    bool ok = getaddrinfo(host, NULL, &hints, &res) == 0;
    if (res)
        freeaddrinfo(res);
    return ok;
}

static const char *ipaddr_family_word(int family)
{
    return family == AF_INET ? "an IPv4 " : family == AF_INET6 ? "an IPv6 " : "an IP ";
}

na_return_t na_ipaddr_parse(const char *hp, int family, struct sockaddr_storage *ss,
                            socklen_t *len)
{
    char host[NA_IPADDR_HOST_MAX];
    const char *host_start = hp, *host_end, *colon;

    if (hp[0] == '[') {
        host_start = hp + 1;
        host_end = strchr(host_start, ']');
        if (!host_end || host_end[1] != ':')
            return NA_INVALID_ARG;
        colon = host_end + 1;
    } else {
        colon = strrchr(hp, ':');
        if (!colon)
            return NA_INVALID_ARG;
        host_end = colon;
    }
    size_t n = (size_t)(host_end - host_start);
    int port = ipaddr_port(colon + 1);
    if (n == 0 || n >= sizeof(host) || port < 0)
        return NA_INVALID_ARG;
    memcpy(host, host_start, n);
    host[n] = '\0';
    if (hp[0] == '[' && !ipaddr_is_v6_literal(host))
        return NA_INVALID_ARG;

    int rc = na_ipaddr_resolve(host, family, port, ss, len);
    if (rc != 0) {
        HGX_LOG_ERROR(NA, "cannot resolve host \"%s\" to %saddress: %s", host,
                      ipaddr_family_word(family), gai_strerror(rc));
        return NA_ADDRNOTAVAIL;
    }
    return NA_SUCCESS;
}

size_t na_ipaddr_string(const struct sockaddr *sa, char *buf, size_t size)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    bool v6 = sa->sa_family == AF_INET6;
    if (v6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
                  ip, sizeof(ip));
    else if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, ip,
                  sizeof(ip));
    int n = snprintf(buf, size, v6 ? "[%s]:%d" : "%s:%d", ip, na_ipaddr_port(sa));
    return n > 0 ? (size_t)n : 0;
}
