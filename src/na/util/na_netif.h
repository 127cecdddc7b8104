/*
 * na_netif.h -- the local address a TCP-based plugin binds or listens on,
 * chosen as Mercury users expect from an info string's host part,
 * na_init_info.ip_subnet and the transport's own interface setting (private).
 */
#ifndef NA_NETIF_H
#define NA_NETIF_H

#include "na_types.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/** What the caller asks for. */
struct na_netif_spec {
    /** Host part of the info string: an interface name, a host name, an IPv4
     * literal or an IPv6 literal without brackets; NULL to choose. */
    const char *host;
    /** Port to put in the address; 0 lets the kernel pick. */
    int port;
    /** na_init_info.ip_subnet ("a.b.c.d/n" or "a.b.c.d"), or NULL. */
    const char *subnet;
    /** Name of the transport's own interface variable ("FI_TCP_IFACE",
     * "UCX_NET_DEVICES"), or NULL. Its first entry (a ":N" suffix dropped)
     * names the interface when host is NULL; "all" or an entry that is no
     * network interface leaves the choice automatic. */
    const char *env_name;
    /** AF_INET or AF_INET6 when the transport or na_init_info.addr_format
     * takes one family only, else AF_UNSPEC. */
    int family;
};

/**
 * Choose the local address described by spec.
 *
 * With no host: the interface the transport's variable names, else the
 * first up interface in spec->subnet, else the first up non-loopback
 * interface (IPv4 preferred, IPv6 link-local skipped), else loopback with a
 * warning. A host is first looked up as an interface name, then as an
 * address literal or host name.
 *
 * \param spec   [IN]  request (port and family included)
 * \param ss     [OUT] chosen address with spec->port
 * \param len    [OUT] its length
 * \param ifname [OUT] NULL, or IF_NAMESIZE bytes for the name of the
 *                     interface that owns the address ("" if none does)
 * \return NA_SUCCESS; NA_INVALID_ARG for a malformed subnet; NA_ADDRNOTAVAIL
 *         when no interface or address matches (the error line lists the
 *         interfaces there are); NA_NOMEM
 */
na_return_t na_netif_select(const struct na_netif_spec *spec, struct sockaddr_storage *ss,
                            socklen_t *len, char *ifname);

/**
 * Whether sa's IP address belongs to this host (an address of one of its
 * interfaces, or any loopback address). False when unknown.
 *
 * \param sa [IN] an AF_INET or AF_INET6 address
 */
bool na_netif_is_local(const struct sockaddr *sa);

/**
 * Write "name address, ..." of every interface with an IP address into buf
 * (truncated to size, always terminated).
 *
 * \param buf  [OUT] text
 * \param size [IN]  size of buf
 */
void na_netif_list(char *buf, size_t size);

#endif /* NA_NETIF_H */
