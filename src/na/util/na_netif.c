/*
 * na_netif.c -- choose a plugin's local address: interface names, host names,
 * address literals, a subnet or the first routable interface (getifaddrs).
 */
#include "na_netif.h"

#include "hgx_log.h"
#include "na_ipaddr.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NETIF_LIST_MAX 1024

struct netif_subnet {
    int family;
    unsigned char addr[16];
    unsigned int bits;
};

typedef bool (*netif_match_t)(const struct ifaddrs *ifa, const void *arg);

/* The raw IP bytes of an AF_INET / AF_INET6 address and their count. */
static size_t netif_ip_bytes(const struct sockaddr *sa, const unsigned char **bytes)
{
    if (sa->sa_family == AF_INET) {
        *bytes = (const unsigned char *)&((const struct sockaddr_in *)(const void *)sa)
                     ->sin_addr;
        return 4;
    }
    *bytes = (const unsigned char *)&((const struct sockaddr_in6 *)(const void *)sa)
                 ->sin6_addr;
    return 16;
}

/* Up, with an IP address of the wanted family; IPv6 link-local addresses need
 * a scope a peer cannot know, so they are never chosen. */
static bool netif_usable(const struct ifaddrs *ifa, int family)
{
    if (!ifa->ifa_addr || !(ifa->ifa_flags & IFF_UP))
        return false;
    int f = ifa->ifa_addr->sa_family;
    if ((f != AF_INET && f != AF_INET6) || (family != AF_UNSPEC && f != family))
        return false;
    const unsigned char *b;
    netif_ip_bytes(ifa->ifa_addr, &b);
    return f == AF_INET || !(b[0] == 0xfe && (b[1] & 0xc0) == 0x80);
}

/* First usable address that match accepts, IPv4 before IPv6. */
static const struct ifaddrs *netif_find(const struct ifaddrs *list, int family,
                                        netif_match_t match, const void *arg)
{
    const struct ifaddrs *v6 = NULL;
    for (const struct ifaddrs *ifa = list; ifa; ifa = ifa->ifa_next) {
        if (!netif_usable(ifa, family) || !match(ifa, arg))
            continue;
        if (ifa->ifa_addr->sa_family == AF_INET)
            return ifa;
        if (!v6)
            v6 = ifa;
    }
    return v6;
}

static bool netif_match_name(const struct ifaddrs *ifa, const void *name)
{
    return strcmp(ifa->ifa_name, name) == 0;
}

static bool netif_match_routable(const struct ifaddrs *ifa, const void *arg)
{
    (void)arg;
    return !(ifa->ifa_flags & IFF_LOOPBACK);
}

static bool netif_match_any(const struct ifaddrs *ifa, const void *arg)
{
    (void)ifa;
    (void)arg;
    return true;
}

static bool netif_match_subnet(const struct ifaddrs *ifa, const void *arg)
{
    const struct netif_subnet *net = arg;
    const unsigned char *b;
    if (ifa->ifa_addr->sa_family != net->family)
        return false;
    netif_ip_bytes(ifa->ifa_addr, &b);
    unsigned int full = net->bits / 8, rest = net->bits % 8;
    if (memcmp(b, net->addr, full) != 0)
        return false;
    unsigned char mask = (unsigned char)(0xff00 >> rest);
    return rest == 0 || (b[full] & mask) == (net->addr[full] & mask);
}

/* "a.b.c.d/n", "a.b.c.d" or an IPv6 prefix "x::/n". */
static bool netif_subnet_parse(const char *s, struct netif_subnet *net)
{
    char ip[INET6_ADDRSTRLEN];
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    if (n == 0 || n >= sizeof(ip))
        return false;
    memcpy(ip, s, n);
    ip[n] = '\0';
    net->family = inet_pton(AF_INET, ip, net->addr) == 1    ? AF_INET
                  : inet_pton(AF_INET6, ip, net->addr) == 1 ? AF_INET6
                                                            : AF_UNSPEC;
    unsigned int max = net->family == AF_INET ? 32 : 128;
    net->bits = max;
    if (net->family == AF_UNSPEC)
        return false;
    if (!slash)
        return true;
    char *end;
    unsigned long bits = strtoul(slash + 1, &end, 10);
    if (slash[1] < '0' || slash[1] > '9' || *end != '\0' || bits > max)
        return false;
    net->bits = (unsigned int)bits;
    return true;
}

static void netif_set(const struct sockaddr *sa, int port, struct sockaddr_storage *ss,
                      socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
    *len = sa->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                    : sizeof(struct sockaddr_in6);
    memcpy(ss, sa, *len);
    na_ipaddr_set_port((struct sockaddr *)ss, port);
}

static void netif_list_of(const struct ifaddrs *list, char *buf, size_t size)
{
    size_t off = 0;
    buf[0] = '\0';
    for (const struct ifaddrs *ifa = list; ifa && off < size; ifa = ifa->ifa_next) {
        if (!ifa->ifa_addr ||
            (ifa->ifa_addr->sa_family != AF_INET && ifa->ifa_addr->sa_family != AF_INET6))
            continue;
        char ip[INET6_ADDRSTRLEN];
        const unsigned char *b;
        netif_ip_bytes(ifa->ifa_addr, &b);
        inet_ntop(ifa->ifa_addr->sa_family, b, ip, sizeof(ip));
        int n = snprintf(buf + off, size - off, "%s%s %s%s", off ? ", " : "",
                         ifa->ifa_name, ip, (ifa->ifa_flags & IFF_UP) ? "" : " (down)");
        off += n > 0 ? (size_t)n : 0;
    }
    if (off == 0)
        snprintf(buf, size, "none");
}

void na_netif_list(char *buf, size_t size)
{
    struct ifaddrs *list = NULL;
    if (size == 0)
        return;
    if (getifaddrs(&list) != 0) {
        snprintf(buf, size, "unknown (getifaddrs failed)");
        return;
    }
    netif_list_of(list, buf, size);
    freeifaddrs(list);
}

/* "IPv4 " / "IPv6 " for a family asked for, else any. */
static const char *netif_family_word(int family, const char *any)
{
    return family == AF_INET ? "IPv4 " : family == AF_INET6 ? "IPv6 " : any;
}

/* A host that is no interface name: an address literal or a host name. */
static na_return_t netif_resolve(const struct na_netif_spec *spec,
                                 const struct ifaddrs *list, struct sockaddr_storage *ss,
                                 socklen_t *len)
{
    int rc = na_ipaddr_resolve(spec->host, spec->family, spec->port, ss, len);
    if (rc == 0)
        return NA_SUCCESS;
    char ifs[NETIF_LIST_MAX];
    netif_list_of(list, ifs, sizeof(ifs));
    HGX_LOG_ERROR(NA,
                  "\"%s\" is no network interface and no %shost address (%s); "
                  "interfaces here: %s",
                  spec->host, netif_family_word(spec->family, ""), gai_strerror(rc), ifs);
    return NA_ADDRNOTAVAIL;
}

/* The interface the transport's own variable names, if any has an address. */
static const struct ifaddrs *netif_from_env(const struct na_netif_spec *spec,
                                            const struct ifaddrs *list)
{
    const char *val = spec->env_name ? getenv(spec->env_name) : NULL;
    char name[IF_NAMESIZE + 8];
    if (!val || !*val)
        return NULL;
    size_t n = strcspn(val, ",:");
    if (n >= sizeof(name))
        n = sizeof(name) - 1;
    memcpy(name, val, n);
    name[n] = '\0';
    if (n == 0 || strcmp(name, "all") == 0)
        return NULL;
    const struct ifaddrs *ifa = netif_find(list, spec->family, netif_match_name, name);
    if (!ifa)
        HGX_LOG_WARNING(NA,
                        "%s=%s names no up network interface with an address: "
                        "choosing one",
                        spec->env_name, val);
    return ifa;
}

/* No host given: the variable's interface, the subnet's, a routable one. */
static na_return_t netif_auto(const struct na_netif_spec *spec,
                              const struct ifaddrs *list, const struct ifaddrs **pick)
{
    struct netif_subnet net;
    if (spec->subnet && *spec->subnet) {
        if (!netif_subnet_parse(spec->subnet, &net)) {
            HGX_LOG_ERROR(NA, "malformed ip_subnet \"%s\" (want a.b.c.d/n)",
                          spec->subnet);
            return NA_INVALID_ARG;
        }
        *pick = netif_find(list, spec->family, netif_match_subnet, &net);
        if (*pick)
            return NA_SUCCESS;
        char ifs[NETIF_LIST_MAX];
        netif_list_of(list, ifs, sizeof(ifs));
        HGX_LOG_ERROR(NA, "no up interface in subnet %s; interfaces here: %s",
                      spec->subnet, ifs);
        return NA_ADDRNOTAVAIL;
    }
    *pick = netif_find(list, spec->family, netif_match_routable, NULL);
    if (*pick)
        return NA_SUCCESS;
    *pick = netif_find(list, spec->family, netif_match_any, NULL);
    if (*pick) {
        HGX_LOG_WARNING(NA,
                        "no up non-loopback interface: using %s, which other hosts "
                        "cannot reach",
                        (*pick)->ifa_name);
        return NA_SUCCESS;
    }
    HGX_LOG_ERROR(NA, "no up interface with an IP address");
    return NA_ADDRNOTAVAIL;
}

/* The host names an interface: its address, or an error if it has none. */
static na_return_t netif_named(const struct na_netif_spec *spec,
                               const struct ifaddrs *list, const struct ifaddrs **pick)
{
    *pick = netif_find(list, spec->family, netif_match_name, spec->host);
    if (*pick)
        return NA_SUCCESS;
    for (const struct ifaddrs *ifa = list; ifa; ifa = ifa->ifa_next)
        if (strcmp(ifa->ifa_name, spec->host) == 0) {
            char ifs[NETIF_LIST_MAX];
            netif_list_of(list, ifs, sizeof(ifs));
            HGX_LOG_ERROR(NA,
                          "interface %s is down or has no usable %saddress; "
                          "interfaces here: %s",
                          spec->host, netif_family_word(spec->family, "IP "), ifs);
            return NA_ADDRNOTAVAIL;
        }
    return NA_NOENTRY; /* not an interface name */
}

/* The interface that owns ss's address, for a host given as an address. */
static bool netif_match_addr(const struct ifaddrs *ifa, const void *sa)
{
    const unsigned char *a, *b;
    size_t n = netif_ip_bytes(ifa->ifa_addr, &a);
    return ifa->ifa_addr->sa_family == ((const struct sockaddr *)sa)->sa_family &&
           netif_ip_bytes(sa, &b) == n && memcmp(a, b, n) == 0;
}

na_return_t na_netif_select(const struct na_netif_spec *spec, struct sockaddr_storage *ss,
                            socklen_t *len, char *ifname)
{
    struct ifaddrs *list = NULL;
    const struct ifaddrs *pick = NULL;
    na_return_t ret;

    if (getifaddrs(&list) != 0) {
        HGX_LOG_ERROR(NA, "getifaddrs failed: cannot list the network interfaces");
        return NA_NOMEM;
    }
    if (spec->host) {
        ret = netif_named(spec, list, &pick);
        if (ret == NA_NOENTRY && (ret = netif_resolve(spec, list, ss, len)) == NA_SUCCESS)
            pick = netif_find(list, AF_UNSPEC, netif_match_addr, ss);
        else if (ret == NA_SUCCESS)
            netif_set(pick->ifa_addr, spec->port, ss, len);
    } else {
        pick = netif_from_env(spec, list);
        ret = pick ? NA_SUCCESS : netif_auto(spec, list, &pick);
        if (ret == NA_SUCCESS)
            netif_set(pick->ifa_addr, spec->port, ss, len);
    }
    if (ifname)
        snprintf(ifname, IF_NAMESIZE, "%s",
                 ret == NA_SUCCESS && pick ? pick->ifa_name : "");
    if (ret == NA_SUCCESS)
        HGX_LOG_DEBUG(NA, "chose %s",
                      pick ? pick->ifa_name : "an address of no interface");
    freeifaddrs(list);
    return ret;
}

bool na_netif_is_local(const struct sockaddr *sa)
{
    const unsigned char *b, *c;
    size_t n = netif_ip_bytes(sa, &b);
    static const unsigned char v6_loopback[16] = {[15] = 1};
    if ((sa->sa_family == AF_INET && b[0] == 127) ||
        (sa->sa_family == AF_INET6 && memcmp(b, v6_loopback, 16) == 0))
        return true;
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0)
        return false;
    bool found = false;
    for (const struct ifaddrs *ifa = list; ifa && !found; ifa = ifa->ifa_next)
        if (ifa->ifa_addr && ifa->ifa_addr->sa_family == sa->sa_family) {
            netif_ip_bytes(ifa->ifa_addr, &c);
            found = memcmp(b, c, n) == 0;
        }
    freeifaddrs(list);
    return found;
}
