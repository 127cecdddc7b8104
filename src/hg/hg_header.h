/*
 * hg_header.h -- the RPC wire header that precedes every request and response
 * payload (private). Encoded field by field in little-endian order, never as a
 * raw struct, and decoded as untrusted input.
 */
#ifndef HG_HEADER_H
#define HG_HEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HG_HEADER_MAGIC 0xA7
#define HG_HEADER_VERSION 1
#define HG_HEADER_SIZE 40 /* bytes on the wire */

enum hg_header_kind { HG_HEADER_REQUEST = 1, HG_HEADER_RESPONSE = 2, HG_HEADER_ACK = 3 };

/* Header flags. */
#define HG_HEADER_NO_RESPONSE (1u << 0)      /* the target sends no response */
#define HG_HEADER_BULK_PAYLOAD (1u << 1)     /* payload is a bulk descriptor to pull */
#define HG_HEADER_CHECKSUM (1u << 2)         /* crc64 covers the header */
#define HG_HEADER_CHECKSUM_PAYLOAD (1u << 3) /* crc64 also covers the eager payload */
#define HG_HEADER_FLAGS_ALL 0x0fu

struct hg_header {
    uint8_t kind;          /* enum hg_header_kind */
    uint8_t flags;         /* HG_HEADER_* */
    uint8_t status;        /* response: hg_return_t of the target */
    uint8_t context_id;    /* request: target context id */
    uint8_t origin_id;     /* request: context id of the origin, for the response */
    uint32_t cookie;       /* tag of the response / ack */
    uint64_t rpc_id;       /* hash of the RPC name */
    uint64_t payload_size; /* eager payload bytes, or bulk bytes with BULK_PAYLOAD */
};

/*
 * Write hdr at buf (HG_HEADER_SIZE bytes). When hdr->flags asks for a
 * checksum, it covers the header and, with CHECKSUM_PAYLOAD, the payload_len
 * bytes at payload.
 */
void hg_header_encode(void *buf, const struct hg_header *hdr, const void *payload,
                      size_t payload_len);

/*
 * Parse and validate len bytes at buf. payload/payload_len are the bytes that
 * followed the header in the message (checked against a payload checksum).
 * \return 0, -1 malformed (bad magic, version, kind or flags), -2 checksum mismatch
 */
int hg_header_decode(const void *buf, size_t len, struct hg_header *hdr,
                     const void *payload, size_t payload_len);

#endif /* HG_HEADER_H */
