/**
 * \file mercury_proc.h
 * Serialization processors ("procs") for RPC arguments.
 *
 * A proc walks a buffer in one of three modes (hg_proc_op_t): HG_ENCODE copies
 * values into the buffer, HG_DECODE copies them out, HG_FREE releases what a
 * decode allocated. Every proc routine has the shape
 *     hg_return_t hg_proc_<type>(hg_proc_t proc, void *data)
 * so routines for structs are built from routines for their members
 * (see mercury_macros.h).
 *
 * Wire format (hgx): integers are fixed width, little-endian; hg_proc_bytes()
 * copies bytes as they are. When an encode runs past the buffer given to
 * hg_proc_reset(), the proc continues in an internally allocated "extra" buffer
 * that holds everything encoded so far (hg_proc_get_extra_buf()). A decode never
 * reads past its buffer: it fails with HG_OVERFLOW.
 *
 * Checksums: a proc created with a hash method other than HG_NOHASH keeps a CRC
 * (CRC-64/XZ; HG_CRC32 and HG_CRC16 use its low 32 or 16 bits) of every byte
 * encoded or decoded; hg_proc_flush() fixes its value for hg_proc_checksum_get()
 * and hg_proc_checksum_verify().
 *
 * API and names follow Mercury 2.4.
 */
#ifndef MERCURY_PROC_H
#define MERCURY_PROC_H

#include "mercury_types.h"

/* Mercury's header makes memcpy visible: encoders written for it call it
 * with no include of their own. */
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Hash methods for the proc checksum. */
typedef enum { HG_CRC16, HG_CRC32, HG_CRC64, HG_NOHASH } hg_proc_hash_t;

/* Flags (hg_proc_set_flags()); cleared by hg_proc_reset(). */
#define HG_PROC_SM (1 << 0)         /**< peer reached through shared memory */
#define HG_PROC_BULK_EAGER (1 << 1) /**< bulk data may travel inside the RPC */

/**
 * Create a processor with no buffer; give it one with hg_proc_reset().
 *
 * \param[in] hg_class HG class, returned by hg_proc_get_class() (may be NULL)
 * \param[in] hash checksum method, HG_NOHASH for none
 * \param[out] proc_p new processor
 *
 * \return HG_SUCCESS, HG_INVALID_ARG (NULL proc_p or unknown hash) or HG_NOMEM
 */
HG_PUBLIC hg_return_t hg_proc_create(hg_class_t *hg_class, hg_proc_hash_t hash,
                                     hg_proc_t *proc_p);

/**
 * Create a processor and attach a buffer to it (hg_proc_create() then
 * hg_proc_reset()).
 *
 * \param[in] hg_class HG class (may be NULL)
 * \param[in] buf buffer to encode into or decode from (NULL allowed for HG_FREE)
 * \param[in] buf_size its size in bytes
 * \param[in] op HG_ENCODE, HG_DECODE or HG_FREE
 * \param[in] hash checksum method, HG_NOHASH for none
 * \param[out] proc_p new processor
 *
 * \return HG_SUCCESS, HG_INVALID_ARG or HG_NOMEM
 */
HG_PUBLIC hg_return_t hg_proc_create_set(hg_class_t *hg_class, void *buf,
                                         hg_size_t buf_size, hg_proc_op_t op,
                                         hg_proc_hash_t hash, hg_proc_t *proc_p);

/**
 * Free a processor and the extra buffer it owns.
 *
 * \param[in,out] proc processor, or HG_PROC_NULL (no-op)
 *
 * \return HG_SUCCESS
 */
HG_PUBLIC hg_return_t hg_proc_free(hg_proc_t proc);

/**
 * Start a new pass: attach a buffer, set the operation, drop the extra buffer
 * (unless given away), clear the flags and restart the checksum.
 *
 * \param[in,out] proc processor
 * \param[in] buf buffer (NULL allowed for HG_FREE)
 * \param[in] buf_size its size in bytes
 * \param[in] op HG_ENCODE, HG_DECODE or HG_FREE
 *
 * \return HG_SUCCESS or HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t hg_proc_reset(hg_proc_t proc, void *buf, hg_size_t buf_size,
                                    hg_proc_op_t op);

/**
 * Get the HG class of a processor.
 * \param[in] proc processor (not NULL)
 * \return the HG class given at creation
 */
HG_PUBLIC hg_class_t *hg_proc_get_class(hg_proc_t proc);

/**
 * Associate an RPC handle with the processor, for proc routines that need it.
 *
 * \param[in] proc processor (not NULL)
 * \param[in] handle handle
 */
HG_PUBLIC void hg_proc_set_handle(hg_proc_t proc, hg_handle_t handle);

/**
 * Get the RPC handle associated with a processor.
 * \param[in] proc processor (not NULL)
 * \return the handle set by hg_proc_set_handle(), or HG_HANDLE_NULL
 */
HG_PUBLIC hg_handle_t hg_proc_get_handle(hg_proc_t proc);

/**
 * Get the operation of the current pass.
 * \param[in] proc processor (not NULL)
 * \return the current operation: HG_ENCODE, HG_DECODE or HG_FREE
 */
HG_PUBLIC hg_proc_op_t hg_proc_get_op(hg_proc_t proc);

/**
 * Set the HG_PROC_* flags until the next hg_proc_reset().
 *
 * \param[in] proc processor (not NULL)
 * \param[in] flags flags
 */
HG_PUBLIC void hg_proc_set_flags(hg_proc_t proc, uint8_t flags);

/**
 * Get the flags of the current pass.
 * \param[in] proc processor (not NULL)
 * \return the flags set by hg_proc_set_flags()
 */
HG_PUBLIC uint8_t hg_proc_get_flags(hg_proc_t proc);

/**
 * Get the size of the buffer in use.
 * \param[in] proc processor (not NULL)
 * \return size of the buffer in use (the extra buffer once an encode outgrew the first)
 */
HG_PUBLIC hg_size_t hg_proc_get_size(hg_proc_t proc);

/**
 * Get the number of bytes processed so far.
 * \param[in] proc processor (not NULL)
 * \return bytes encoded or decoded so far, counted from the start of the buffer in use
 */
HG_PUBLIC hg_size_t hg_proc_get_size_used(hg_proc_t proc);

/**
 * Make room for at least buf_size bytes in total, moving to (or growing) the
 * extra buffer; the bytes already encoded are kept. Only while encoding.
 *
 * \param[in,out] proc processor
 * \param[in] buf_size total size wanted; no-op if already that large
 *
 * \return HG_SUCCESS, HG_INVALID_ARG (NULL proc, not encoding, or the extra
 *         buffer was handed over) or HG_NOMEM
 */
HG_PUBLIC hg_return_t hg_proc_set_size(hg_proc_t proc, hg_size_t buf_size);

/**
 * Get the number of bytes left in the buffer in use.
 * \param[in] proc processor (not NULL)
 * \return bytes left after the current position in the buffer in use
 */
HG_PUBLIC hg_size_t hg_proc_get_size_left(hg_proc_t proc);

/**
 * Reserve data_size bytes at the current position for manual encoding or
 * decoding and move past them. Those bytes enter the checksum only when passed
 * to hg_proc_restore_ptr(). While encoding, the pointer is valid until the next
 * proc call that may grow the buffer.
 *
 * \param[in,out] proc processor
 * \param[in] data_size bytes to reserve
 *
 * \return pointer to the reserved bytes, or NULL (no proc, HG_FREE, decode past
 *         the end of the buffer, or out of memory)
 */
HG_PUBLIC void *hg_proc_save_ptr(hg_proc_t proc, hg_size_t data_size);

/**
 * Finish a manual encode/decode started with hg_proc_save_ptr(): feed the
 * bytes to the checksum.
 *
 * \param[in,out] proc processor
 * \param[in] data pointer returned by hg_proc_save_ptr()
 * \param[in] data_size size given to hg_proc_save_ptr()
 *
 * \return HG_SUCCESS or HG_INVALID_ARG (NULL proc or HG_FREE)
 */
HG_PUBLIC hg_return_t hg_proc_restore_ptr(hg_proc_t proc, void *data,
                                          hg_size_t data_size);

struct XDR; /* <rpc/xdr.h>'s XDR */

/**
 * Mercury declares this only with HG_HAS_XDR; hgx never encodes with XDR
 * (HG_HAS_XDR is not set) and declares it always.
 * \param[in] proc processor
 * \return NULL: there is no XDR stream
 */
HG_PUBLIC struct XDR *hg_proc_get_xdr_ptr(hg_proc_t proc);

/**
 * Get the extra buffer an encode moved to.
 * \param[in] proc processor (not NULL)
 * \return the extra buffer (holding everything encoded) or NULL if none was needed
 */
HG_PUBLIC void *hg_proc_get_extra_buf(hg_proc_t proc);

/**
 * Get the size of the extra buffer.
 * \param[in] proc processor (not NULL)
 * \return size of the extra buffer, 0 if none
 */
HG_PUBLIC hg_size_t hg_proc_get_extra_size(hg_proc_t proc);

/**
 * Take ownership of the extra buffer: once set, hg_proc_reset() and
 * hg_proc_free() no longer free it and the caller releases it with free().
 *
 * \param[in,out] proc processor
 * \param[in] mine true: the caller owns it; false: the proc owns it
 *
 * \return HG_SUCCESS or HG_INVALID_ARG (NULL proc or no extra buffer)
 */
HG_PUBLIC hg_return_t hg_proc_set_extra_buf_is_mine(hg_proc_t proc, uint8_t mine);

/**
 * End a pass: fix the checksum of everything processed so far.
 *
 * \param[in,out] proc processor
 *
 * \return HG_SUCCESS or HG_INVALID_ARG (NULL proc)
 */
HG_PUBLIC hg_return_t hg_proc_flush(hg_proc_t proc);

/**
 * Copy the checksum fixed by hg_proc_flush(): 2, 4 or 8 bytes for HG_CRC16,
 * HG_CRC32 or HG_CRC64, little-endian.
 *
 * \param[in] proc processor
 * \param[out] hash where to write it
 * \param[in] hash_size room at hash
 *
 * \return HG_SUCCESS or HG_INVALID_ARG (NULL argument, HG_NOHASH, hash_size too small)
 */
HG_PUBLIC hg_return_t hg_proc_checksum_get(hg_proc_t proc, void *hash,
                                           hg_size_t hash_size);

/**
 * Compare a received checksum with the one fixed by hg_proc_flush().
 *
 * \param[in] proc processor
 * \param[in] hash checksum received, as written by hg_proc_checksum_get()
 * \param[in] hash_size its size
 *
 * \return HG_SUCCESS if equal, HG_CHECKSUM_ERROR if not, HG_INVALID_ARG (NULL
 *         argument, HG_NOHASH, hash_size too small)
 */
HG_PUBLIC hg_return_t hg_proc_checksum_verify(hg_proc_t proc, const void *hash,
                                              hg_size_t hash_size);

/**
 * Feed extra bytes to the checksum (no-op with HG_NOHASH or HG_FREE).
 *
 * \param[in,out] proc processor
 * \param[in] data bytes
 * \param[in] data_size their number
 */
HG_PUBLIC void hg_proc_checksum_update(hg_proc_t proc, void *data, hg_size_t data_size);

/**
 * Proc routines for fixed-width integers; data points to a value of that type.
 * HG_FREE does nothing.
 *
 * \param[in,out] proc processor
 * \param[in,out] data the integer
 *
 * \return HG_SUCCESS, HG_INVALID_ARG (NULL argument), HG_OVERFLOW (decode past
 *         the end) or HG_NOMEM (encode could not grow the buffer)
 */
HG_PUBLIC hg_return_t hg_proc_int8_t(hg_proc_t proc, void *data);
/** \copydoc hg_proc_int8_t */
HG_PUBLIC hg_return_t hg_proc_uint8_t(hg_proc_t proc, void *data);
/** \copydoc hg_proc_int8_t */
HG_PUBLIC hg_return_t hg_proc_int16_t(hg_proc_t proc, void *data);
/** \copydoc hg_proc_int8_t */
HG_PUBLIC hg_return_t hg_proc_uint16_t(hg_proc_t proc, void *data);
/** \copydoc hg_proc_int8_t */
HG_PUBLIC hg_return_t hg_proc_int32_t(hg_proc_t proc, void *data);
/** \copydoc hg_proc_int8_t */
HG_PUBLIC hg_return_t hg_proc_uint32_t(hg_proc_t proc, void *data);
/** \copydoc hg_proc_int8_t */
HG_PUBLIC hg_return_t hg_proc_int64_t(hg_proc_t proc, void *data);
/** \copydoc hg_proc_int8_t */
HG_PUBLIC hg_return_t hg_proc_uint64_t(hg_proc_t proc, void *data);

/**
 * Copy data_size bytes as they are (no length is encoded: both sides must know
 * it). HG_FREE does nothing.
 *
 * \param[in,out] proc processor
 * \param[in,out] data the bytes
 * \param[in] data_size their number
 *
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_OVERFLOW or HG_NOMEM as for hg_proc_int8_t()
 */
HG_PUBLIC hg_return_t hg_proc_bytes(hg_proc_t proc, void *data, hg_size_t data_size);

/**
 * hgx extension, used by the routines MERCURY_GEN_PROC generates: after a
 * decode of data failed part-way, run proc_cb on it in HG_FREE mode (on the
 * same proc, whose operation is restored afterwards) so that members already
 * decoded are released. Members not yet decoded must be zero.
 *
 * \param[in,out] proc processor that was decoding
 * \param[in] proc_cb proc routine of data's type
 * \param[in,out] data the partly decoded value
 *
 * \return what proc_cb returned, or HG_INVALID_ARG (NULL argument)
 */
HG_PUBLIC hg_return_t hgx_proc_undo_decode(hg_proc_t proc, hg_proc_cb_t proc_cb,
                                           void *data);

/* Mercury's names for the common types. */
#define hg_proc_hg_size_t hg_proc_uint64_t /**< proc routine of hg_size_t */
#define hg_proc_hg_id_t hg_proc_uint64_t   /**< proc routine of hg_id_t (64 bits wide) */
#define hg_proc_hg_bool_t hg_proc_uint8_t  /**< proc routine of hg_bool_t */
#define hg_proc_hg_ptr_t hg_proc_uint64_t  /**< proc routine of hg_ptr_t */

/* Older Mercury names, kept for old programs. */
#define hg_proc_hg_int8_t hg_proc_int8_t     /**< older name of hg_proc_int8_t() */
#define hg_proc_hg_uint8_t hg_proc_uint8_t   /**< older name of hg_proc_uint8_t() */
#define hg_proc_hg_int16_t hg_proc_int16_t   /**< older name of hg_proc_int16_t() */
#define hg_proc_hg_uint16_t hg_proc_uint16_t /**< older name of hg_proc_uint16_t() */
#define hg_proc_hg_int32_t hg_proc_int32_t   /**< older name of hg_proc_int32_t() */
#define hg_proc_hg_uint32_t hg_proc_uint32_t /**< older name of hg_proc_uint32_t() */
#define hg_proc_hg_int64_t hg_proc_int64_t   /**< older name of hg_proc_int64_t() */
#define hg_proc_hg_uint64_t hg_proc_uint64_t /**< older name of hg_proc_uint64_t() */

/* Raw byte copies. */
#define hg_proc_memcpy hg_proc_raw /**< older name of hg_proc_bytes() */
#define hg_proc_raw hg_proc_bytes  /**< older name of hg_proc_bytes() */

#ifdef __cplusplus
}
#endif

#endif /* MERCURY_PROC_H */
