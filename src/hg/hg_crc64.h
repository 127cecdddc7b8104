/*
 * hg_crc64.h -- CRC-64 used for RPC checksums (private).
 *
 * Algorithm: CRC-64/XZ, i.e. the ECMA-182 polynomial 0x42F0E1EBA9EA3693 in
 * reflected form, initial value and final XOR all ones. Check value:
 * CRC of the ASCII bytes "123456789" = 0x995DC9BBDF1939FA.
 * This is the same CRC as ISA-L's crc64_ecma_refl(), which hgx_crc64() uses
 * when configure found ISA-L (HGX_HAVE_ISAL).
 *
 * Incremental use: start from 0 and feed each piece with the previous result;
 *   crc = hgx_crc64(hgx_crc64(0, a, na), b, nb) == hgx_crc64(0, a||b, na + nb)
 */
#ifndef HG_CRC64_H
#define HG_CRC64_H

#include <stddef.h>
#include <stdint.h>

/** Check value of "123456789", for self-tests. */
#define HGX_CRC64_CHECK UINT64_C(0x995DC9BBDF1939FA)

/**
 * Extend a CRC-64/XZ over len bytes (fastest available implementation).
 *
 * \param crc [IN]  CRC of the bytes before buf, or 0 for the first piece
 * \param buf [IN]  data (may be NULL when len is 0)
 * \param len [IN]  number of bytes
 *
 * \return CRC of everything fed so far
 */
uint64_t hgx_crc64(uint64_t crc, const void *buf, size_t len);

/**
 * Same as hgx_crc64(), always with the portable slicing-by-8 tables; used when
 * ISA-L is absent and to cross-check ISA-L in the tests.
 */
uint64_t hgx_crc64_sw(uint64_t crc, const void *buf, size_t len);

#endif /* HG_CRC64_H */
