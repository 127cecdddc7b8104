/**
 * @file mercury_byteswap.h
 * Mercury's byte-order reversal macros: bswap_16(x), bswap_32(x) and
 * bswap_64(x) give @p x with its 2, 4 or 8 bytes in the opposite order. They
 * are the C library's, from <byteswap.h> (glibc and musl, as hgx runs on
 * Linux).
 */
#ifndef MERCURY_BYTESWAP_H
#define MERCURY_BYTESWAP_H

#include "mercury_util_config.h"

#include <byteswap.h>

#endif /* MERCURY_BYTESWAP_H */
