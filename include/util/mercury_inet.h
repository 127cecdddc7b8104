/**
 * @file mercury_inet.h
 * Mercury's network byte order header: the socket and byte-order headers
 * (<arpa/inet.h> for htonl and ntohl, <netinet/in.h>, <endian.h>,
 * mercury_byteswap.h) and the 64-bit conversions htonll(x) and ntohll(x),
 * defined here only when the system has not defined them. Network order is
 * big-endian: on a little-endian host they reverse the 8 bytes of @p x
 * (bswap_64), on a big-endian host they give @p x unchanged.
 */
#ifndef MERCURY_INET_H
#define MERCURY_INET_H

#include "mercury_util_config.h"

#include "mercury_byteswap.h"

#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>

/* Under a strict ISO mode glibc's <endian.h> keeps only the reserved names. */
#if !defined(BYTE_ORDER)
#if defined(__BYTE_ORDER) && defined(__LITTLE_ENDIAN) && defined(__BIG_ENDIAN)
#define BYTE_ORDER __BYTE_ORDER
#define LITTLE_ENDIAN __LITTLE_ENDIAN
#define BIG_ENDIAN __BIG_ENDIAN
#else
#error "mercury_inet.h: the byte order of this host is unknown"
#endif
#endif

#if BYTE_ORDER == LITTLE_ENDIAN
#ifndef htonll
/** @p x, a 64-bit integer in host order, in network (big-endian) order. */
#define htonll(x) bswap_64(x)
#endif
#ifndef ntohll
/** @p x, a 64-bit integer in network (big-endian) order, in host order. */
#define ntohll(x) bswap_64(x)
#endif
#else
#ifndef htonll
#define htonll(x) (x)
#endif
#ifndef ntohll
#define ntohll(x) (x)
#endif
#endif

#endif /* MERCURY_INET_H */
