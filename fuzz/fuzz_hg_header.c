/*
 * fuzz_hg_header.c -- libFuzzer target for the RPC wire header decoder
 * (src/hg/hg_header.c).
 *
 * Input: byte 0 selects how many of the following bytes the decoder is told
 * belong to the header (so short and long header buffers are both tried); the
 * rest is the header, then the payload the checksum may cover.
 *
 * Oracles: no out-of-bounds read (each piece is copied into an exact-size heap
 * block), and every header the decoder accepts re-encodes to exactly the same
 * 40 bytes (the wire format has a single encoding: reserved bytes and an
 * unused checksum must be zero) and decodes again to the same fields.
 */
#include "hg_header.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t n = size - 1;
    size_t hlen = data[0] < 0x80 ? (n < HG_HEADER_SIZE ? n : HG_HEADER_SIZE)
                                 : (size_t)(data[0] & 0x7f) % (HG_HEADER_SIZE + 1);
    if (hlen > n)
        hlen = n;
    size_t plen = n - hlen;
    unsigned char *hbuf = malloc(hlen ? hlen : 1);
    unsigned char *pbuf = plen ? malloc(plen) : NULL;
    if (!hbuf || (plen && !pbuf))
        abort();
    memcpy(hbuf, data + 1, hlen);
    if (plen)
        memcpy(pbuf, data + 1 + hlen, plen);

    struct hg_header hdr;
    memset(&hdr, 0x5a, sizeof(hdr));
    int rc = hg_header_decode(hbuf, hlen, &hdr, pbuf, plen);
    if (rc != 0 && rc != -1 && rc != -2)
        abort();
    if (rc == 0) {
        if (hlen < HG_HEADER_SIZE)
            abort(); /* accepted a short header */
        if (hdr.kind < HG_HEADER_REQUEST || hdr.kind > HG_HEADER_ACK ||
            (hdr.flags & ~HG_HEADER_FLAGS_ALL) != 0)
            abort();
        unsigned char again[HG_HEADER_SIZE];
        hg_header_encode(again, &hdr, pbuf, plen);
        if (memcmp(again, hbuf, HG_HEADER_SIZE) != 0)
            abort(); /* two encodings of one header were accepted */
        struct hg_header hdr2;
        if (hg_header_decode(again, sizeof(again), &hdr2, pbuf, plen) != 0 ||
            hdr2.kind != hdr.kind || hdr2.flags != hdr.flags ||
            hdr2.status != hdr.status || hdr2.context_id != hdr.context_id ||
            hdr2.origin_id != hdr.origin_id || hdr2.cookie != hdr.cookie ||
            hdr2.rpc_id != hdr.rpc_id || hdr2.payload_size != hdr.payload_size)
            abort();
    }
    free(hbuf);
    free(pbuf);
    return 0;
}
