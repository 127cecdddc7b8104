/**
 * \file na.h
 * The NA (network abstraction) layer: classes, contexts, addresses,
 * two-sided messages, memory handles, one-sided put/get, progress and cancel.
 *
 * Every call returns NA_SUCCESS or a negative-free na_return_t error code and
 * logs the reason under the "na" subsystem (see HG_LOG_LEVEL / HG_LOG_SUBSYS).
 * Completion of non-blocking calls is reported through callbacks that are
 * queued on the context and run by NA_Trigger().
 */
#ifndef NA_H
#define NA_H

#include "na_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Get the NA version (hgx reports the Mercury API version it implements).
 * \param[out] major major version
 * \param[out] minor minor
 * \param[out] patch patch
 */
NA_PUBLIC void NA_Version_get(unsigned int *major, unsigned int *minor,
                              unsigned int *patch);

/**
 * List the protocols the built plugins support.
 * \param[in] info_string NULL for all, or "plugin" / "plugin+protocol" to filter
 * \param[out] na_protocol_info_p list, freed with NA_Free_protocol_info()
 * \return NA_SUCCESS, NA_INVALID_ARG, NA_NOMEM
 */
NA_PUBLIC na_return_t NA_Get_protocol_info(const char *info_string,
                                           struct na_protocol_info **na_protocol_info_p);

/** Free a list returned by NA_Get_protocol_info(). */
NA_PUBLIC void NA_Free_protocol_info(struct na_protocol_info *na_protocol_info);

/**
 * Initialize a class. info_string is "plugin+protocol[://host[:port]]", e.g.
 * "ofi+tcp", "ofi+tcp://127.0.0.1:1234", "ofi+shm", "ucx+tcp", "mpi+static".
 * \param[in] info_string what transport to open
 * \param[in] listen accept unexpected messages from peers that look us up
 * \return the class, or NULL (the reason is logged)
 */
NA_PUBLIC na_class_t *NA_Initialize(const char *info_string,
                                    bool listen) NA_WARN_UNUSED_RESULT;

/**
 * NA_Initialize() with options.
 * \param[in] na_init_info optional, NULL for defaults
 */
NA_PUBLIC na_class_t *
NA_Initialize_opt(const char *info_string, bool listen,
                  const struct na_init_info *na_init_info) NA_WARN_UNUSED_RESULT;

/**
 * NA_Initialize_opt() with an explicit version of the init info struct.
 * \param[in] version NA_VERSION(major, minor) the caller was built against
 */
NA_PUBLIC na_class_t *
NA_Initialize_opt2(const char *info_string, bool listen, unsigned int version,
                   const struct na_init_info *na_init_info) NA_WARN_UNUSED_RESULT;

/**
 * Finalize a class. Fails with NA_BUSY, leaving the class usable, while
 * contexts or addresses/memory handles created from it are still alive or
 * operations are pending.
 * \return NA_SUCCESS, NA_BUSY, NA_INVALID_ARG
 */
NA_PUBLIC na_return_t NA_Finalize(na_class_t *na_class);

/** Remove temporary files left behind by classes that did not finalize. */
NA_PUBLIC void NA_Cleanup(void);

/** True if the class supports all optional features in flags (NA_OPT_*). */
NA_PUBLIC bool NA_Has_opt_feature(na_class_t *na_class, unsigned long flags);

/** Set the log level of the NA subsystems: "none", "error", "warning", "debug". */
NA_PUBLIC void NA_Set_log_level(const char *level);

/** Name of the plugin ("ofi", "ucx", "mpi"), or NULL. */
NA_PUBLIC const char *NA_Get_class_name(const na_class_t *na_class);

/** Protocol of the class ("tcp", "shm", ...), or NULL. */
NA_PUBLIC const char *NA_Get_class_protocol(const na_class_t *na_class);

/** True if the class was initialized with listen set. */
NA_PUBLIC bool NA_Is_listening(const na_class_t *na_class);

/** Create a context (completion queue) with id 0. NULL on failure. */
NA_PUBLIC na_context_t *NA_Context_create(na_class_t *na_class) NA_WARN_UNUSED_RESULT;

/**
 * Create a context with an id below the class's max_contexts.
 * \return the context, or NULL (bad id, out of memory)
 */
NA_PUBLIC na_context_t *NA_Context_create_id(na_class_t *na_class,
                                             uint8_t id) NA_WARN_UNUSED_RESULT;

/**
 * Destroy a context. Fails with NA_BUSY while its completion queue holds
 * callbacks not yet triggered or operations on it are pending.
 */
NA_PUBLIC na_return_t NA_Context_destroy(na_class_t *na_class, na_context_t *context);

/** Number of callbacks waiting in the context's completion queue. */
NA_PUBLIC unsigned int NA_Context_get_completion_count(const na_context_t *context);

/**
 * Allocate an operation id. One id serves one pending operation at a time and
 * can be reused after its callback has run. Free it with NA_Op_destroy().
 * \param[in] flags NA_OP_SINGLE (NA_OP_MULTI is not supported)
 * \return the id, or NULL
 */
NA_PUBLIC na_op_id_t *NA_Op_create(na_class_t *na_class,
                                   unsigned long flags) NA_WARN_UNUSED_RESULT;

/** Free an operation id; refused (logged) while its operation is pending. */
NA_PUBLIC void NA_Op_destroy(na_class_t *na_class, na_op_id_t *op_id);

/**
 * Resolve a peer address string (as printed by NA_Addr_to_string()).
 * \param[in] name "plugin+protocol://..." or the bare "protocol://..." part
 * \param[out] addr_p the address, freed with NA_Addr_free()
 * \return NA_SUCCESS, NA_INVALID_ARG (malformed), NA_PROTONOSUPPORT (other
 *         plugin/protocol), NA_ADDRNOTAVAIL (cannot be resolved), NA_NOMEM
 */
NA_PUBLIC na_return_t NA_Addr_lookup(na_class_t *na_class, const char *name,
                                     na_addr_t **addr_p);

/** Release an address (reference counted; NULL is ignored). */
NA_PUBLIC void NA_Addr_free(na_class_t *na_class, na_addr_t *addr);

/** Hint that the peer is gone: drop its cached connection state. */
NA_PUBLIC na_return_t NA_Addr_set_remove(na_class_t *na_class, na_addr_t *addr);

/** Get this class's own address (freed with NA_Addr_free()). */
NA_PUBLIC na_return_t NA_Addr_self(na_class_t *na_class, na_addr_t **addr_p);

/** Take another reference to an address (freed with NA_Addr_free()). */
NA_PUBLIC na_return_t NA_Addr_dup(na_class_t *na_class, na_addr_t *addr,
                                  na_addr_t **new_addr_p);

/** True if both addresses name the same peer. */
NA_PUBLIC bool NA_Addr_cmp(na_class_t *na_class, na_addr_t *addr1, na_addr_t *addr2);

/** True if addr is this class's own address. */
NA_PUBLIC bool NA_Addr_is_self(na_class_t *na_class, na_addr_t *addr);

/**
 * Print an address, terminating NUL included. With buf NULL only the size is
 * returned in *buf_size; a too small buffer gives NA_OVERFLOW and the size.
 */
NA_PUBLIC na_return_t NA_Addr_to_string(na_class_t *na_class, char *buf, size_t *buf_size,
                                        na_addr_t *addr);

/** Bytes NA_Addr_serialize() needs for addr. */
NA_PUBLIC size_t NA_Addr_get_serialize_size(na_class_t *na_class, na_addr_t *addr);

/** Serialize addr into buf. \return NA_SUCCESS, NA_OVERFLOW, NA_INVALID_ARG */
NA_PUBLIC na_return_t NA_Addr_serialize(na_class_t *na_class, void *buf, size_t buf_size,
                                        na_addr_t *addr);

/**
 * Rebuild an address from untrusted bytes.
 * \return NA_SUCCESS, NA_INVALID_ARG / NA_PROTOCOL_ERROR for malformed input
 */
NA_PUBLIC na_return_t NA_Addr_deserialize(na_class_t *na_class, na_addr_t **addr_p,
                                          const void *buf, size_t buf_size);

/** Largest unexpected message, plugin header included. */
NA_PUBLIC size_t NA_Msg_get_max_unexpected_size(const na_class_t *na_class);

/** Largest expected message, plugin header included. */
NA_PUBLIC size_t NA_Msg_get_max_expected_size(const na_class_t *na_class);

/** Bytes the plugin reserves at the start of an unexpected message buffer. */
NA_PUBLIC size_t NA_Msg_get_unexpected_header_size(const na_class_t *na_class);

/** Bytes the plugin reserves at the start of an expected message buffer. */
NA_PUBLIC size_t NA_Msg_get_expected_header_size(const na_class_t *na_class);

/** Largest tag a message may carry. */
NA_PUBLIC na_tag_t NA_Msg_get_max_tag(const na_class_t *na_class);

/**
 * Allocate a message buffer (possibly pre-registered with the transport).
 * \param[in] flags NA_SEND and/or NA_RECV
 * \param[out] plugin_data_p pass it to the send/recv calls and to NA_Msg_buf_free()
 * \return the buffer, or NULL (size 0, out of memory)
 */
NA_PUBLIC void *NA_Msg_buf_alloc(na_class_t *na_class, size_t buf_size,
                                 unsigned long flags,
                                 void **plugin_data_p) NA_WARN_UNUSED_RESULT;

/** Free a buffer from NA_Msg_buf_alloc(); NULL is ignored. */
NA_PUBLIC void NA_Msg_buf_free(na_class_t *na_class, void *buf, void *plugin_data);

/** Write the plugin's unexpected header into buf before a send. */
NA_PUBLIC na_return_t NA_Msg_init_unexpected(na_class_t *na_class, void *buf,
                                             size_t buf_size);

/**
 * Send an unexpected message; it needs no matching receive and completes
 * locally. The callback is queued on context when done.
 * \param[in] buf_size bytes to send, header included; above the max size the
 *        call fails with NA_MSGSIZE and nothing is sent
 * \param[in] dest_id target context id
 * \param[in] op_id id from NA_Op_create(), not in use by another operation
 * \return NA_SUCCESS (posted), NA_INVALID_ARG, NA_MSGSIZE, NA_BUSY (op_id in use),
 *         NA_AGAIN, NA_PROTOCOL_ERROR
 */
NA_PUBLIC na_return_t NA_Msg_send_unexpected(na_class_t *na_class, na_context_t *context,
                                             na_cb_t callback, void *arg, const void *buf,
                                             size_t buf_size, void *plugin_data,
                                             na_addr_t *dest_addr, uint8_t dest_id,
                                             na_tag_t tag, na_op_id_t *op_id);

/**
 * Post a receive for the next unexpected message. The callback info gives
 * its size, tag and source (which the callback must free).
 * A message longer than buf_size is reported as NA_MSGSIZE, never truncated.
 */
NA_PUBLIC na_return_t NA_Msg_recv_unexpected(na_class_t *na_class, na_context_t *context,
                                             na_cb_t callback, void *arg, void *buf,
                                             size_t buf_size, void *plugin_data,
                                             na_op_id_t *op_id);

/**
 * Post a multi-receive buffer for unexpected messages. Multi-receive is one of
 * Mercury's optional NA features: a caller checks
 * NA_Has_opt_feature(class, NA_OPT_MULTI_RECV) first and posts single receives
 * (NA_Msg_recv_unexpected) when it is absent, as HG does. No hgx plugin offers
 * it (libfabric 1.17's shm and rxm/tcp, UCX tag matching and MPI all deliver one
 * message per posted receive), so NA_Has_opt_feature() says false for it.
 * \return NA_OPNOTSUPPORTED, with a log line
 */
NA_PUBLIC na_return_t NA_Msg_multi_recv_unexpected(na_class_t *na_class,
                                                   na_context_t *context,
                                                   na_cb_t callback, void *arg, void *buf,
                                                   size_t buf_size, void *plugin_data,
                                                   na_op_id_t *op_id);

/** Write the plugin's expected header into buf before a send. */
NA_PUBLIC na_return_t NA_Msg_init_expected(na_class_t *na_class, void *buf,
                                           size_t buf_size);

/** Send an expected message: it completes once the peer posted a matching receive. */
NA_PUBLIC na_return_t NA_Msg_send_expected(na_class_t *na_class, na_context_t *context,
                                           na_cb_t callback, void *arg, const void *buf,
                                           size_t buf_size, void *plugin_data,
                                           na_addr_t *dest_addr, uint8_t dest_id,
                                           na_tag_t tag, na_op_id_t *op_id);

/**
 * Receive the expected message with tag from source_addr. An expected message
 * that arrives before its receive is posted is held by the plugin, in arrival
 * order per source and tag, and the receive posted later takes it (every
 * plugin here; tests/test_na.c test_expected_early, mpitests/test_na_mpi.c).
 */
NA_PUBLIC na_return_t NA_Msg_recv_expected(na_class_t *na_class, na_context_t *context,
                                           na_cb_t callback, void *arg, void *buf,
                                           size_t buf_size, void *plugin_data,
                                           na_addr_t *source_addr, uint8_t source_id,
                                           na_tag_t tag, na_op_id_t *op_id);

/**
 * Describe a contiguous region for put/get.
 * \param[in] flags NA_MEM_READ_ONLY, NA_MEM_WRITE_ONLY or NA_MEM_READWRITE:
 *        what a remote peer may do to it
 */
NA_PUBLIC na_return_t NA_Mem_handle_create(na_class_t *na_class, void *buf,
                                           size_t buf_size, unsigned long flags,
                                           na_mem_handle_t **mem_handle_p);

/** Describe a list of regions as one handle (offsets run across the segments). */
NA_PUBLIC na_return_t NA_Mem_handle_create_segments(na_class_t *na_class,
                                                    struct na_segment *segments,
                                                    size_t segment_count,
                                                    unsigned long flags,
                                                    na_mem_handle_t **mem_handle_p);

/** Free a memory handle (deregister it first). */
NA_PUBLIC void NA_Mem_handle_free(na_class_t *na_class, na_mem_handle_t *mem_handle);

/** Largest segment count NA_Mem_handle_create_segments() accepts. */
NA_PUBLIC size_t NA_Mem_handle_get_max_segments(const na_class_t *na_class);

/** Register a handle with the transport; remote access is possible only after this. */
NA_PUBLIC na_return_t NA_Mem_register(na_class_t *na_class, na_mem_handle_t *mem_handle,
                                      enum na_mem_type mem_type, uint64_t device);

/** Deregister: remote peers holding the old descriptor are refused from now on. */
NA_PUBLIC na_return_t NA_Mem_deregister(na_class_t *na_class,
                                        na_mem_handle_t *mem_handle);

/** Bytes NA_Mem_handle_serialize() needs. */
NA_PUBLIC size_t NA_Mem_handle_get_serialize_size(na_class_t *na_class,
                                                  na_mem_handle_t *mem_handle);

/** Serialize a registered handle so a peer can put/get it. */
NA_PUBLIC na_return_t NA_Mem_handle_serialize(na_class_t *na_class, void *buf,
                                              size_t buf_size,
                                              na_mem_handle_t *mem_handle);

/**
 * Rebuild a remote handle from untrusted bytes (validated: sizes, segment
 * count, flags). \return NA_SUCCESS, NA_INVALID_ARG, NA_PROTOCOL_ERROR, NA_NOMEM
 */
NA_PUBLIC na_return_t NA_Mem_handle_deserialize(na_class_t *na_class,
                                                na_mem_handle_t **mem_handle_p,
                                                const void *buf, size_t buf_size);

/**
 * Write data_size bytes of the local handle at local_offset into the remote
 * handle at remote_offset. Bounds and permissions are checked locally
 * (NA_INVALID_ARG / NA_PERMISSION) and by the target's transport.
 */
NA_PUBLIC na_return_t NA_Put(na_class_t *na_class, na_context_t *context,
                             na_cb_t callback, void *arg,
                             na_mem_handle_t *local_mem_handle, na_offset_t local_offset,
                             na_mem_handle_t *remote_mem_handle,
                             na_offset_t remote_offset, size_t data_size,
                             na_addr_t *remote_addr, uint8_t remote_id,
                             na_op_id_t *op_id);

/** Read data_size bytes of the remote handle into the local handle. See NA_Put(). */
NA_PUBLIC na_return_t NA_Get(na_class_t *na_class, na_context_t *context,
                             na_cb_t callback, void *arg,
                             na_mem_handle_t *local_mem_handle, na_offset_t local_offset,
                             na_mem_handle_t *remote_mem_handle,
                             na_offset_t remote_offset, size_t data_size,
                             na_addr_t *remote_addr, uint8_t remote_id,
                             na_op_id_t *op_id);

/** File descriptor that becomes readable when the context has work, or -1
 * (no wait object: the transport has none, or the class is NA_NO_BLOCK). */
NA_PUBLIC int NA_Poll_get_fd(na_class_t *na_class, na_context_t *context);

/** True if it is safe to block on the fd of NA_Poll_get_fd(). */
NA_PUBLIC bool NA_Poll_try_wait(na_class_t *na_class, na_context_t *context);

/**
 * Make progress without blocking.
 * \param[out] count_p optional: callbacks now waiting in the completion queue
 */
NA_PUBLIC na_return_t NA_Poll(na_class_t *na_class, na_context_t *context,
                              unsigned int *count_p);

/**
 * Make progress, blocking on the transport's wait object for at most
 * timeout_ms until something completes.
 * \return NA_SUCCESS when callbacks are queued, NA_TIMEOUT otherwise
 */
NA_PUBLIC na_return_t NA_Poll_wait(na_class_t *na_class, na_context_t *context,
                                   unsigned int timeout_ms, unsigned int *count_p);

/** NA_Poll_wait() without the count (the older call). */
NA_PUBLIC na_return_t NA_Progress(na_class_t *na_class, na_context_t *context,
                                  unsigned int timeout_ms);

/**
 * Run up to max_count queued callbacks. As in Mercury 2.4.1 (NA 6.0), an empty
 * queue is not an error: NA_SUCCESS with a count of 0 (NA 4.x said NA_TIMEOUT).
 * \param[out] actual_count optional: how many ran
 * \return NA_SUCCESS, NA_INVALID_ARG (NULL context)
 */
NA_PUBLIC na_return_t NA_Trigger(na_context_t *context, unsigned int max_count,
                                 unsigned int *actual_count);

/**
 * Cancel a pending operation. Local: it never waits for the peer. The
 * operation's callback then runs once, with NA_CANCELED, or with its real
 * result if it completed first. Cancelling a completed operation is a no-op.
 * \return NA_SUCCESS, NA_INVALID_ARG
 */
NA_PUBLIC na_return_t NA_Cancel(na_class_t *na_class, na_context_t *context,
                                na_op_id_t *op_id);

/** Name of a return code, e.g. "NA_CANCELED" -> "canceled"-style text. */
NA_PUBLIC const char *NA_Error_to_string(na_return_t errnum) NA_WARN_UNUSED_RESULT;

#ifdef __cplusplus
}
#endif

#endif /* NA_H */
