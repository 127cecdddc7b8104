/*
 * hg_header.c -- encode / decode / checksum of the RPC wire header.
 *
 * Layout (little-endian):
 *   0 magic u8 | 1 version u8 | 2 kind u8 | 3 flags u8 | 4 status u8 |
 *   5 context_id u8 | 6 origin_id u8 | 7 reserved u8 (0) | 8 cookie u32 | 12 reserved u32
 * (0) | 16 rpc_id u64 | 24 payload_size u64 | 32 crc64 u64 (0 when unused) The crc is
 * computed with its own field zeroed.
 */
#include "hg_header.h"
#include "hgx_wire.h"

#include "hg_crc64.h"

#include <string.h>

#define HG_HEADER_CRC_OFFSET 32

static uint64_t header_crc(const unsigned char *hdr_bytes, bool with_payload,
                           const void *payload, size_t payload_len)
{
    unsigned char copy[HG_HEADER_SIZE];

    memcpy(copy, hdr_bytes, sizeof(copy));
    memset(copy + HG_HEADER_CRC_OFFSET, 0, 8);
    uint64_t crc = hgx_crc64(0, copy, sizeof(copy));
    if (with_payload)
        crc = hgx_crc64(crc, payload, payload_len);
    return crc;
}

void hg_header_encode(void *buf, const struct hg_header *hdr, const void *payload,
                      size_t payload_len)
{
    unsigned char *p = buf;

    memset(p, 0, HG_HEADER_SIZE);
    p[0] = HG_HEADER_MAGIC;
    p[1] = HG_HEADER_VERSION;
    p[2] = hdr->kind;
    p[3] = hdr->flags;
    p[4] = hdr->status;
    p[5] = hdr->context_id;
    p[6] = hdr->origin_id;
    hgx_put_u32(p + 8, hdr->cookie);
    hgx_put_u64(p + 16, hdr->rpc_id);
    hgx_put_u64(p + 24, hdr->payload_size);
    if (hdr->flags & HG_HEADER_CHECKSUM)
        hgx_put_u64(
            p + HG_HEADER_CRC_OFFSET,
            header_crc(p, hdr->flags & HG_HEADER_CHECKSUM_PAYLOAD, payload, payload_len));
}

int hg_header_decode(const void *buf, size_t len, struct hg_header *hdr,
                     const void *payload, size_t payload_len)
{
    const unsigned char *p = buf;

    if (len < HG_HEADER_SIZE || p[0] != HG_HEADER_MAGIC || p[1] != HG_HEADER_VERSION)
        return -1;
    hdr->kind = p[2];
    hdr->flags = p[3];
    hdr->status = p[4];
    hdr->context_id = p[5];
    hdr->origin_id = p[6];
    hdr->cookie = hgx_get_u32(p + 8);
    hdr->rpc_id = hgx_get_u64(p + 16);
    hdr->payload_size = hgx_get_u64(p + 24);
    /* Verify the checksum before trusting any other field. */
    if (hdr->flags & HG_HEADER_CHECKSUM) {
        uint64_t want = hgx_get_u64(p + HG_HEADER_CRC_OFFSET);
        if (header_crc(p, hdr->flags & HG_HEADER_CHECKSUM_PAYLOAD, payload,
                       payload_len) != want)
            return -2;
    }
    if (hdr->kind < HG_HEADER_REQUEST || hdr->kind > HG_HEADER_ACK ||
        (hdr->flags & ~HG_HEADER_FLAGS_ALL) != 0)
        return -1;
    if ((hdr->flags & HG_HEADER_CHECKSUM_PAYLOAD) && !(hdr->flags & HG_HEADER_CHECKSUM))
        return -1;
    /* One encoding per header: reserved bytes and an unused checksum are zero. */
    if (p[7] != 0 || hgx_get_u32(p + 12) != 0 ||
        (!(hdr->flags & HG_HEADER_CHECKSUM) &&
         hgx_get_u64(p + HG_HEADER_CRC_OFFSET) != 0))
        return -1;
    return 0;
}
