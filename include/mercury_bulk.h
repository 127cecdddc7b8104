/**
 * \file mercury_bulk.h
 * Bulk descriptors and one-sided transfers (HG bulk layer).
 *
 * A bulk handle describes local memory (one or more segments) with the access
 * a remote peer is granted. Serialized and sent inside an RPC, it lets the
 * target pull (NA_Get) or push (NA_Put) data. Names and signatures follow
 * Mercury 2.4.
 */
#ifndef MERCURY_BULK_H
#define MERCURY_BULK_H

#include "mercury_types.h"

#ifndef HG_BULK_READ_ONLY
#define HG_BULK_READ_ONLY (1 << 0)
#define HG_BULK_WRITE_ONLY (1 << 1)
#define HG_BULK_READWRITE (HG_BULK_READ_ONLY | HG_BULK_WRITE_ONLY)
#endif

/* Serialization flags, with Mercury's values (bits 0 and 1 are the access flags
 * above, so a flags word may carry both kinds). */
/** Serialization flag: a readable local handle's descriptor carries its data, so that
 * the holder's pulls need no RMA. */
#define HG_BULK_EAGER (1 << 2)
/** Serialization flag: the peer is reached through shared memory (no effect in hgx). */
#define HG_BULK_SM (1 << 3)

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Create a bulk handle over count segments. With buf_ptrs NULL (or a NULL
 * entry) the memory is allocated, zeroed, and freed with the handle.
 * \param[in] hg_class class
 * \param[in] count number of segments (> 0)
 * \param[in] buf_ptrs segment addresses, or NULL
 * \param[in] buf_sizes segment sizes
 * \param[in] flags HG_BULK_READ_ONLY, HG_BULK_WRITE_ONLY or HG_BULK_READWRITE:
 *        what a remote peer may do to the memory
 * \param[out] handle bulk handle, freed with HG_Bulk_free()
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_NOMEM, or the NA registration error
 */
HG_PUBLIC hg_return_t HG_Bulk_create(hg_class_t *hg_class, uint32_t count,
                                     void **buf_ptrs, const hg_size_t *buf_sizes,
                                     uint8_t flags, hg_bulk_t *handle);

/**
 * HG_Bulk_create() with memory attributes (host memory only in hgx).
 * \param[in] hg_class HG class
 * \param[in] count number of segments (> 0)
 * \param[in] buf_ptrs segment addresses, or NULL to have the memory allocated
 * \param[in] buf_sizes segment sizes
 * \param[in] flags HG_BULK_READ_ONLY, HG_BULK_WRITE_ONLY or HG_BULK_READWRITE: what a
 *        remote peer may do to the memory
 * \param[in] attrs attributes (not NULL)
 * \param[out] handle bulk handle, freed with HG_Bulk_free()
 * \return as HG_Bulk_create(); HG_OPNOTSUPPORTED for device memory
 */
HG_PUBLIC hg_return_t HG_Bulk_create_attr(hg_class_t *hg_class, uint32_t count,
                                          void **buf_ptrs, const hg_size_t *buf_sizes,
                                          uint8_t flags, const struct hg_bulk_attr *attrs,
                                          hg_bulk_t *handle);

/**
 * Drop a reference; at 0 the memory is deregistered (remote peers are refused
 * from then on) and internally allocated memory is freed. HG_BULK_NULL is ignored.
 * \param[in] handle bulk handle
 * \return HG_SUCCESS (always)
 */
HG_PUBLIC hg_return_t HG_Bulk_free(hg_bulk_t handle);

/**
 * Take another reference to a bulk handle.
 * \param[in] handle bulk handle
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Bulk_ref_incr(hg_bulk_t handle);

/**
 * Get the local segments covering [offset, offset + size) of a local handle.
 * \param[in] handle local bulk handle
 * \param[in] offset offset of the range in the handle
 * \param[in] size size of the range
 * \param[in] flags access the caller means to make; as in Mercury, not
 *                  checked against the handle's flags (the memory is the caller's)
 * \param[in] max_count room in buf_ptrs / buf_sizes
 * \param[out] buf_ptrs segment pointers
 * \param[out] buf_sizes segment sizes (optional)
 * \param[out] actual_count segments returned (optional)
 * \return HG_SUCCESS, HG_INVALID_ARG (remote handle, out of bounds)
 */
HG_PUBLIC hg_return_t HG_Bulk_access(hg_bulk_t handle, hg_size_t offset, hg_size_t size,
                                     uint8_t flags, uint32_t max_count, void **buf_ptrs,
                                     hg_size_t *buf_sizes, uint32_t *actual_count);

/**
 * Bind a local handle to this process's address and a context, so that its
 * serialized descriptor carries them: a process that receives it (directly
 * or passed on by another) can transfer with HG_Bulk_bind_transfer() without
 * knowing the owner. Binding adds the address to the descriptor.
 * \param[in] handle local bulk handle
 * \param[in] context context
 * \return HG_SUCCESS; HG_INVALID_ARG (NULL, or a deserialized handle); HG_NOMEM or
 *         another error of HG_Addr_self()
 */
HG_PUBLIC hg_return_t HG_Bulk_bind(hg_bulk_t handle, hg_context_t *context);

/**
 * Get the address a bulk handle is bound to.
 * \param[in] handle bulk handle
 * \return the address it is bound to (local: this process; deserialized: the
 *         owner's), valid while the handle lives; HG_ADDR_NULL if not bound
 */
HG_PUBLIC hg_addr_t HG_Bulk_get_addr(hg_bulk_t handle);

/**
 * Get the context id a bulk handle is bound to.
 * \param[in] handle bulk handle
 * \return the context id it is bound to, 0 if not bound
 */
HG_PUBLIC uint8_t HG_Bulk_get_context_id(hg_bulk_t handle);

/**
 * Get the total size of the memory a bulk handle describes.
 * \param[in] handle bulk handle
 * \return total bytes described by the handle, 0 for HG_BULK_NULL
 */
HG_PUBLIC hg_size_t HG_Bulk_get_size(hg_bulk_t handle);

/**
 * Get the number of segments of a bulk handle.
 * \param[in] handle bulk handle
 * \return number of segments of the handle, 0 for HG_BULK_NULL
 */
HG_PUBLIC uint32_t HG_Bulk_get_segment_count(hg_bulk_t handle);

/**
 * Get the permission flags of a bulk handle.
 * \param[in] handle bulk handle
 * \return the permission flags of the handle, 0 for HG_BULK_NULL
 */
HG_PUBLIC uint8_t HG_Bulk_get_flags(hg_bulk_t handle);

/**
 * Get the size of the descriptor HG_Bulk_serialize() writes with the same flags.
 * \param[in] handle bulk handle
 * \param[in] flags HG_BULK_EAGER: include the data of a readable local handle
 *        (8 bytes and its size more); HG_BULK_SM: no effect
 * \return bytes HG_Bulk_serialize() writes, 0 for HG_BULK_NULL
 */
HG_PUBLIC hg_size_t HG_Bulk_get_serialize_size(hg_bulk_t handle, unsigned long flags);

/**
 * Write a descriptor of the handle that a peer can deserialize. For a
 * deserialized (remote) handle it is the descriptor the handle was made from,
 * so the handle can be passed on to a third process (as in Mercury); access
 * is still checked by the owner of the memory. With HG_BULK_EAGER, a local
 * handle whose flags include HG_BULK_READ_ONLY (read-only or read-write)
 * copies its bytes into the descriptor: the handle made from it keeps them
 * and serves pulls from them with no RMA (later changes to the memory are
 * not seen); pushes still go to the owner.
 * \param[out] buf destination
 * \param[in] buf_size its size
 * \param[in] flags HG_BULK_EAGER: carry the data (see above); HG_BULK_SM: no effect
 * \param[in] handle bulk handle, local or deserialized
 * \return HG_SUCCESS; HG_OVERFLOW (buf too small); HG_INVALID_ARG; or the NA error
 *         of serializing the memory handle
 */
HG_PUBLIC hg_return_t HG_Bulk_serialize(void *buf, hg_size_t buf_size,
                                        unsigned long flags, hg_bulk_t handle);

/**
 * Rebuild a handle from untrusted bytes (every field is validated).
 * \param[in] hg_class HG class
 * \param[out] handle remote bulk handle, freed with HG_Bulk_free()
 * \param[in] buf bytes received (untrusted)
 * \param[in] buf_size their number
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_PROTOCOL_ERROR (malformed, including
 *         data of an eager descriptor whose length is not the handle's or runs past
 *         buf_size), HG_NOMEM
 */
HG_PUBLIC hg_return_t HG_Bulk_deserialize(hg_class_t *hg_class, hg_bulk_t *handle,
                                          const void *buf, hg_size_t buf_size);

/**
 * Move size bytes between the origin's region and a local one:
 * HG_BULK_PULL reads origin_handle at origin_offset into local_handle at
 * local_offset, HG_BULK_PUSH writes the other way. Large transfers are split
 * into several NA operations. When origin_addr is this class's own address,
 * or for a pull from a handle made from an eager descriptor (HG_BULK_EAGER),
 * the transfer is a copy. callback runs once from HG_Trigger().
 * \param[in] context context whose progress runs the transfer and its callback
 * \param[in] callback completion callback (info.bulk), run once by HG_Trigger(); may be
 *        NULL
 * \param[in] arg argument passed to the callback
 * \param[in] op HG_BULK_PULL or HG_BULK_PUSH
 * \param[in] origin_addr address of the process that owns origin_handle
 * \param[in] origin_handle bulk handle of the origin (deserialized), or a local one when
 *        origin_addr is this class's own address
 * \param[in] origin_offset offset in origin_handle
 * \param[in] local_handle local bulk handle
 * \param[in] local_offset offset in local_handle
 * \param[in] size bytes to move
 * \param[out] op_id id for HG_Bulk_cancel(), valid until the callback ran
 *        (may be NULL or HG_OP_ID_IGNORE)
 * \return HG_SUCCESS (an error of the network operations, such as a
 *         permission refused by the owner, is reported to the callback);
 *         HG_INVALID_ARG (NULL argument, out of bounds, a local origin_handle
 *         with a remote origin_addr); HG_PERMISSION (origin_handle's flags forbid
 *         the operation, as in Mercury; for a transfer to self, the live handle's);
 *         HG_NOMEM; HG_NOENTRY (transfer to self, origin handle freed)
 */
HG_PUBLIC hg_return_t HG_Bulk_transfer(hg_context_t *context, hg_cb_t callback, void *arg,
                                       hg_bulk_op_t op, hg_addr_t origin_addr,
                                       hg_bulk_t origin_handle, hg_size_t origin_offset,
                                       hg_bulk_t local_handle, hg_size_t local_offset,
                                       hg_size_t size, hg_op_id_t *op_id);

/**
 * HG_Bulk_transfer() towards a given context id of the origin.
 * \param[in] context context whose progress runs the transfer and its callback
 * \param[in] callback completion callback (info.bulk), run once by HG_Trigger(); may be
 *        NULL
 * \param[in] arg argument passed to the callback
 * \param[in] op HG_BULK_PULL or HG_BULK_PUSH
 * \param[in] origin_addr address of the process that owns origin_handle
 * \param[in] origin_id context id at the origin
 * \param[in] origin_handle bulk handle of the origin (deserialized), or a local one when
 *        origin_addr is this class's own address
 * \param[in] origin_offset offset in origin_handle
 * \param[in] local_handle local bulk handle
 * \param[in] local_offset offset in local_handle
 * \param[in] size bytes to move
 * \param[out] op_id id for HG_Bulk_cancel(), valid until the callback ran (may be NULL or
 *        HG_OP_ID_IGNORE)
 * \return as HG_Bulk_transfer()
 */
HG_PUBLIC hg_return_t HG_Bulk_transfer_id(hg_context_t *context, hg_cb_t callback,
                                          void *arg, hg_bulk_op_t op,
                                          hg_addr_t origin_addr, uint8_t origin_id,
                                          hg_bulk_t origin_handle,
                                          hg_size_t origin_offset, hg_bulk_t local_handle,
                                          hg_size_t local_offset, hg_size_t size,
                                          hg_op_id_t *op_id);

/**
 * HG_Bulk_transfer_id() towards the owner origin_handle is bound to
 * (HG_Bulk_bind()): its address and context id come from the handle.
 * \param[in] context context whose progress runs the transfer and its callback
 * \param[in] callback completion callback (info.bulk), run once by HG_Trigger(); may be
 *        NULL
 * \param[in] arg argument passed to the callback
 * \param[in] op HG_BULK_PULL or HG_BULK_PUSH
 * \param[in] origin_handle bulk handle bound by its owner with HG_Bulk_bind()
 * \param[in] origin_offset offset in origin_handle
 * \param[in] local_handle local bulk handle
 * \param[in] local_offset offset in local_handle
 * \param[in] size bytes to move
 * \param[out] op_id id for HG_Bulk_cancel(), valid until the callback ran (may be NULL or
 *        HG_OP_ID_IGNORE)
 * \return as HG_Bulk_transfer(); HG_INVALID_ARG if origin_handle is not bound
 */
HG_PUBLIC hg_return_t HG_Bulk_bind_transfer(
    hg_context_t *context, hg_cb_t callback, void *arg, hg_bulk_op_t op,
    hg_bulk_t origin_handle, hg_size_t origin_offset, hg_bulk_t local_handle,
    hg_size_t local_offset, hg_size_t size, hg_op_id_t *op_id);

/**
 * Cancel a transfer: all its NA operations are cancelled; the callback runs
 * once with HG_CANCELED (or the real result if it completed first).
 * \param[in] op_id id set by the transfer call
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Bulk_cancel(hg_op_id_t op_id);

#ifdef __cplusplus
}
#endif

#endif /* MERCURY_BULK_H */
