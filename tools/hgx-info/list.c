/*
 * list.c -- the protocols built in (from the NA plugin table, through
 * HG_Get_na_protocol_info) and the network interfaces they can use.
 */
#define _DEFAULT_SOURCE /* getifaddrs, NI_MAXHOST */

#include "hgx_info.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* What a protocol runs over, by its name; ip: it binds an IP interface. */
struct medium {
    const char *protocol, *text;
    bool ip;
};

static const struct medium *protocol_medium(const char *protocol)
{
    static const struct medium media[] = {
        {"tcp", "IP interfaces that are up:", true},
        {"tcp;ofi_rxm", "Mercury's name for ofi+tcp; IP interfaces that are up:", true},
        {"sockets", "IP interfaces that are up:", true},
        {"all", "this host (shared memory) and IP interfaces that are up:", true},
        {"shm", "this host only (shared memory)", false},
        {"sm",
         "this host only (Mercury's shared memory: served by ucx+shm, else ofi+shm)",
         false},
        {"static", "the processes of one mpirun (address: rank)", false},
        {"dynamic", "MPI ports (MPI_Open_port / MPI_Comm_connect)", false},
    };
    static const struct medium unknown = {"", "unknown medium", false};
    for (size_t i = 0; i < sizeof media / sizeof *media; i++)
        if (strcmp(protocol, media[i].protocol) == 0)
            return &media[i];
    return &unknown;
}

static bool has_ip(const struct ifaddrs *ifa)
{
    return ifa->ifa_addr &&
           (ifa->ifa_addr->sa_family == AF_INET || ifa->ifa_addr->sa_family == AF_INET6);
}

/* The first entry of ifa's name in the list, so each interface prints once. */
static bool first_of_name(const struct ifaddrs *list, const struct ifaddrs *ifa)
{
    for (const struct ifaddrs *p = list; p != ifa; p = p->ifa_next)
        if (has_ip(p) && strcmp(p->ifa_name, ifa->ifa_name) == 0)
            return false;
    return true;
}

static void print_interfaces(const struct ifaddrs *list)
{
    printf("interfaces:\n");
    for (const struct ifaddrs *ifa = list; ifa; ifa = ifa->ifa_next) {
        if (!has_ip(ifa) || !first_of_name(list, ifa))
            continue;
        printf("  %-12s %-4s%s", ifa->ifa_name, ifa->ifa_flags & IFF_UP ? "up" : "down",
               ifa->ifa_flags & IFF_LOOPBACK ? " loopback" : "");
        for (const struct ifaddrs *a = ifa; a; a = a->ifa_next) {
            char host[NI_MAXHOST];
            socklen_t len = a->ifa_addr && a->ifa_addr->sa_family == AF_INET6
                                ? sizeof(struct sockaddr_in6)
                                : sizeof(struct sockaddr_in);
            if (!has_ip(a) || strcmp(a->ifa_name, ifa->ifa_name) != 0 ||
                getnameinfo(a->ifa_addr, len, host, sizeof host, NULL, 0,
                            NI_NUMERICHOST) != 0)
                continue;
            printf(" %s", host);
        }
        printf("\n");
    }
}

/* The names of the interfaces an IP protocol can bind: up and with an address. */
static void print_usable(const struct ifaddrs *list)
{
    int n = 0;
    for (const struct ifaddrs *ifa = list; ifa; ifa = ifa->ifa_next)
        if (has_ip(ifa) && (ifa->ifa_flags & IFF_UP) && first_of_name(list, ifa))
            printf("%s%s", n++ ? ", " : " ", ifa->ifa_name);
    printf("%s\n", n ? "" : " none");
}

/* In the plugin table's order: the list comes newest first. */
static void print_protocols(const struct na_protocol_info *p, const struct ifaddrs *ifs)
{
    if (!p)
        return;
    print_protocols(p->next, ifs);
    const struct medium *m = protocol_medium(p->protocol_name);
    int pad = 15 - (int)strlen(p->class_name); /* "class+protocol" in 16 columns */
    printf("  %s+%-*s %s", p->class_name, pad > 0 ? pad : 0, p->protocol_name, m->text);
    if (m->ip)
        print_usable(ifs);
    else
        printf("\n");
}

int hgx_info_list_protocols(void)
{
    struct na_protocol_info *protocols = NULL;
    struct ifaddrs *ifs = NULL;
    hg_return_t ret = HG_Get_na_protocol_info(NULL, &protocols);

    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hgx-info: cannot list the protocols: %s\n",
                HG_Error_to_string(ret));
        return 1;
    }
    if (getifaddrs(&ifs) != 0) {
        perror("hgx-info: getifaddrs");
        ifs = NULL;
    }
    printf("protocols:\n");
    print_protocols(protocols, ifs);
    if (!protocols)
        printf("  none\n");
    print_interfaces(ifs);
    if (ifs)
        freeifaddrs(ifs);
    HG_Free_na_protocol_info(protocols);
    return 0;
}
