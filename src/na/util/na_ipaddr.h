/*
 * na_ipaddr.h -- IP socket addresses of the TCP-based plugins' peers: host
 * names resolved, "HOST:PORT" / "[IPV6]:PORT" text parsed (untrusted) and
 * printed in one canonical form (private).
 */
#ifndef NA_IPADDR_H
#define NA_IPADDR_H

#include "na_types.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/** Room for "[IPV6]:PORT" or "IPV4:PORT" and its NUL. */
#define NA_IPADDR_STR_MAX (INET6_ADDRSTRLEN + 8)

/**
 * The address family na_init_info.addr_format asks for, as Mercury's
 * plugins read it: IPv4 or IPv6 alone; unspecified and native leave it open
 * (IPv4 preferred where a host has both).
 *
 * \param format [IN] na_init_info.addr_format
 * \return AF_INET, AF_INET6 or AF_UNSPEC
 */
int na_ipaddr_family(enum na_addr_format format);

/**
 * Resolve a host name or address literal to one address, IPv4 preferred
 * when family leaves both open. Logs nothing.
 *
 * \param host   [IN]  host name, IPv4 literal or IPv6 literal (no brackets)
 * \param family [IN]  AF_INET, AF_INET6 or AF_UNSPEC
 * \param port   [IN]  port to put in the address
 * \param ss     [OUT] the address
 * \param len    [OUT] its length
 * \return 0, or getaddrinfo's error code (EAI_NONAME when the host has no
 *         address of the family)
 */
int na_ipaddr_resolve(const char *host, int family, int port, struct sockaddr_storage *ss,
                      socklen_t *len);

/**
 * Parse a peer's "HOST:PORT" or "[IPV6]:PORT" (the part of an address
 * string after "://") and resolve HOST. Inside brackets only an IPv6
 * literal is accepted; PORT is 1..65535 in decimal digits.
 *
 * \param hp     [IN]  the text, untrusted
 * \param family [IN]  AF_INET or AF_INET6 to accept that family only, else
 *                     AF_UNSPEC (IPv4 preferred for a name with both)
 * \param ss     [OUT] the address with its port
 * \param len    [OUT] its length
 * \return NA_SUCCESS; NA_INVALID_ARG for malformed text (not logged: the
 *         caller names the whole string); NA_ADDRNOTAVAIL when the host has
 *         no address of the family (logged)
 */
na_return_t na_ipaddr_parse(const char *hp, int family, struct sockaddr_storage *ss,
                            socklen_t *len);

/**
 * Print an AF_INET address as "a.b.c.d:PORT" and an AF_INET6 one as
 * "[x::y]:PORT", in inet_ntop's form, so that equal addresses give equal
 * strings (a peer id may be derived from them).
 *
 * \param sa   [IN]  the address (another family prints "?:0")
 * \param buf  [OUT] text, truncated to size and always terminated
 * \param size [IN]  size of buf; NA_IPADDR_STR_MAX always suffices
 * \return the length of the whole text, as snprintf
 */
size_t na_ipaddr_string(const struct sockaddr *sa, char *buf, size_t size);

/**
 * The port of an AF_INET or AF_INET6 address.
 *
 * \param sa [IN] the address
 * \return the port in host order (0 for another family)
 */
int na_ipaddr_port(const struct sockaddr *sa);

/**
 * Set the port of an AF_INET or AF_INET6 address (another family is left
 * as it is).
 *
 * \param sa   [IN/OUT] the address
 * \param port [IN]     port in host order, 0..65535
 */
void na_ipaddr_set_port(struct sockaddr *sa, int port);

/**
 * Whether two AF_INET or AF_INET6 addresses name the same host, ports aside.
 *
 * \param a [IN] an address
 * \param b [IN] another
 * \return true when both have the same family and IP address
 */
bool na_ipaddr_same_host(const struct sockaddr *a, const struct sockaddr *b);

#endif /* NA_IPADDR_H */
