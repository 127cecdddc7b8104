/*
 * hgx_wire.h -- little-endian field access for every wire format of the
 * project (headers, descriptors, control packets), independent of the host's
 * byte order and alignment (private). memcpy plus a byte-order conversion
 * compiles to one unaligned load or store (and a bswap on big-endian hosts);
 * byte loops did not, and cost ~200 instructions per RPC header.
 */
#ifndef HGX_WIRE_H
#define HGX_WIRE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline void hgx_put_u16(unsigned char *p, uint16_t v)
{
    v = htole16(v);
    memcpy(p, &v, sizeof(v));
}

static inline void hgx_put_u32(unsigned char *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, sizeof(v));
}

static inline void hgx_put_u64(unsigned char *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, sizeof(v));
}

static inline uint16_t hgx_get_u16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return le16toh(v);
}

static inline uint32_t hgx_get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return le32toh(v);
}

static inline uint64_t hgx_get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return le64toh(v);
}

#endif /* HGX_WIRE_H */
