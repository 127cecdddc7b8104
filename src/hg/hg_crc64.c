/*
 * hg_crc64.c -- CRC-64/XZ (ECMA-182, reflected), slicing-by-8 or ISA-L.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "hg_crc64.h"

#include <pthread.h>
#include <string.h>

#ifdef HGX_HAVE_ISAL
#include <isa-l/crc64.h>
#endif

/* ECMA-182 polynomial 0x42F0E1EBA9EA3693, bit-reversed for the reflected CRC. */
#define HGX_CRC64_POLY_REFL UINT64_C(0xC96C5795D7870F42)

/* Table k gives the CRC contribution of a byte followed by k zero bytes, so
 * eight table look-ups consume eight input bytes at once. */
static uint64_t hgx_crc64_table[8][256];
static pthread_once_t hgx_crc64_once = PTHREAD_ONCE_INIT;

static void hgx_crc64_init_tables(void)
{
    for (unsigned int i = 0; i < 256; i++) {
        uint64_t c = i;
        for (int bit = 0; bit < 8; bit++)
            c = (c & 1) ? (c >> 1) ^ HGX_CRC64_POLY_REFL : c >> 1;
        hgx_crc64_table[0][i] = c;
    }
    for (unsigned int i = 0; i < 256; i++)
        for (int k = 1; k < 8; k++) {
            uint64_t prev = hgx_crc64_table[k - 1][i];
            hgx_crc64_table[k][i] = (prev >> 8) ^ hgx_crc64_table[0][prev & 0xff];
        }
}

static inline uint64_t hgx_crc64_load_le64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

uint64_t hgx_crc64_sw(uint64_t crc, const void *buf, size_t len)
{
    const uint64_t(*t)[256] = (const uint64_t(*)[256])hgx_crc64_table;
    const unsigned char *p = buf;

    pthread_once(&hgx_crc64_once, hgx_crc64_init_tables);
    crc = ~crc;
    for (; len >= 8; len -= 8, p += 8) {
        crc ^= hgx_crc64_load_le64(p);
        crc = t[7][crc & 0xff] ^ t[6][(crc >> 8) & 0xff] ^ t[5][(crc >> 16) & 0xff] ^
              t[4][(crc >> 24) & 0xff] ^ t[3][(crc >> 32) & 0xff] ^
              t[2][(crc >> 40) & 0xff] ^ t[1][(crc >> 48) & 0xff] ^ t[0][crc >> 56];
    }
    while (len--)
        crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

uint64_t hgx_crc64(uint64_t crc, const void *buf, size_t len)
{
#ifdef HGX_HAVE_ISAL
    return crc64_ecma_refl(crc, buf, len);
#else
    return hgx_crc64_sw(crc, buf, len);
#endif
}
