/**
 * \file na.h
 * The NA (network abstraction) layer: classes, contexts, addresses,
 * two-sided messages, memory handles, one-sided put/get, progress and cancel.
 *
 * Calls that return na_return_t give NA_SUCCESS or an error code and log
 * the reason under the "na" subsystem (see HG_LOG_LEVEL / HG_LOG_SUBSYS).
 * Completion of non-blocking calls is reported through callbacks that are
 * queued on the context and run by NA_Trigger().
 *
 * Threads: by default any thread may post, progress and trigger on a class
 * and its contexts (the calls take locks). A class initialized with
 * na_init_info.thread_mode = NA_THREAD_MODE_SINGLE takes none: the program
 * must then use the class and all its contexts from one thread at a time.
 * An operation id serves one operation at a time.
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

/**
 * Free a list returned by NA_Get_protocol_info().
 * \param[in] na_protocol_info list, or NULL
 */
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
 * \param[in] info_string "plugin+protocol[://host[:port]]", e.g. "ofi+tcp"
 * \param[in] listen accept unexpected messages from peers that look us up
 * \param[in] na_init_info optional, NULL for defaults
 * \return the class, or NULL (the reason is logged)
 */
NA_PUBLIC na_class_t *
NA_Initialize_opt(const char *info_string, bool listen,
                  const struct na_init_info *na_init_info) NA_WARN_UNUSED_RESULT;

/**
 * NA_Initialize_opt() with an explicit version of the init info struct.
 * \param[in] info_string "plugin+protocol[://host[:port]]", e.g. "ofi+tcp"
 * \param[in] listen accept unexpected messages from peers that look us up
 * \param[in] version NA_VERSION(major, minor) the caller was built against
 * \param[in] na_init_info options, NULL for defaults
 * \return the class, or NULL (the reason is logged)
 */
NA_PUBLIC na_class_t *
NA_Initialize_opt2(const char *info_string, bool listen, unsigned int version,
                   const struct na_init_info *na_init_info) NA_WARN_UNUSED_RESULT;

/**
 * Finalize a class. Fails with NA_BUSY, leaving the class usable, while
 * contexts created from it are alive (an operation pending keeps its context
 * alive). Addresses and memory handles not freed are reported with a warning.
 * \param[in] na_class NA class, or NULL (no-op)
 * \return NA_SUCCESS; NA_BUSY; or the plugin's error
 */
NA_PUBLIC na_return_t NA_Finalize(na_class_t *na_class);

/** Remove temporary files left behind by classes that did not finalize. */
NA_PUBLIC void NA_Cleanup(void);

/**
 * True if the class supports all optional features in flags (NA_OPT_*).
 * \param[in] na_class NA class
 * \param[in] flags NA_OPT_* flags
 * \return true if every feature in flags is supported (only flags 0 is: no
 *         hgx plugin offers NA_OPT_MULTI_RECV)
 */
NA_PUBLIC bool NA_Has_opt_feature(na_class_t *na_class, unsigned long flags);

/**
 * Set the log level of the NA subsystems: "none", "error", "warning", "debug".
 * \param[in] level "none", "error", "warning" or "debug"
 */
NA_PUBLIC void NA_Set_log_level(const char *level);

/**
 * Name of the plugin ("ofi", "ucx", "mpi"), or NULL.
 * \param[in] na_class NA class
 * \return the plugin name, or NULL for a NULL class
 */
NA_PUBLIC const char *NA_Get_class_name(const na_class_t *na_class);

/**
 * Protocol of the class ("tcp", "shm", ...), or NULL.
 * \param[in] na_class NA class
 * \return the protocol name, or NULL for a NULL class
 */
NA_PUBLIC const char *NA_Get_class_protocol(const na_class_t *na_class);

/**
 * True if the class was initialized with listen set.
 * \param[in] na_class NA class
 * \return true if listening, false otherwise or for a NULL class
 */
NA_PUBLIC bool NA_Is_listening(const na_class_t *na_class);

/**
 * Create a context (completion queue) with id 0. NULL on failure.
 * \param[in] na_class NA class
 * \return the context, or NULL
 */
NA_PUBLIC na_context_t *NA_Context_create(na_class_t *na_class) NA_WARN_UNUSED_RESULT;

/**
 * Create a context with an id below the class's max_contexts.
 * \param[in] na_class NA class
 * \param[in] id context id, below the max_contexts of the class options
 * \return the context, or NULL (bad id, out of memory)
 */
NA_PUBLIC na_context_t *NA_Context_create_id(na_class_t *na_class,
                                             uint8_t id) NA_WARN_UNUSED_RESULT;

/**
 * Destroy a context. Fails with NA_BUSY while its completion queue holds
 * callbacks not yet triggered or operations on it are pending.
 * \param[in] na_class NA class
 * \param[in] context context to destroy
 * \return NA_SUCCESS (also for a NULL context); NA_INVALID_ARG (NULL class, a
 *         context of another class); NA_BUSY; or the plugin's error
 */
NA_PUBLIC na_return_t NA_Context_destroy(na_class_t *na_class, na_context_t *context);

/**
 * Number of callbacks waiting in the context's completion queue.
 * \param[in] context context
 * \return the number of queued callbacks, 0 for a NULL context
 */
NA_PUBLIC unsigned int NA_Context_get_completion_count(const na_context_t *context);

/**
 * Allocate an operation id. One id serves one pending operation at a time and
 * can be reused after its callback has run. Free it with NA_Op_destroy().
 * \param[in] na_class NA class
 * \param[in] flags NA_OP_SINGLE (NA_OP_MULTI is not supported)
 * \return the id, or NULL
 */
NA_PUBLIC na_op_id_t *NA_Op_create(na_class_t *na_class,
                                   unsigned long flags) NA_WARN_UNUSED_RESULT;

/**
 * Free an operation id; refused (logged) while its operation is pending.
 * \param[in] na_class NA class
 * \param[in] op_id id from NA_Op_create()
 */
NA_PUBLIC void NA_Op_destroy(na_class_t *na_class, na_op_id_t *op_id);

/**
 * Resolve a peer address string (as printed by NA_Addr_to_string()).
 * \param[in] na_class NA class
 * \param[in] name "plugin+protocol://..." or the bare "protocol://..." part
 * \param[out] addr_p the address, freed with NA_Addr_free()
 * \return NA_SUCCESS, NA_INVALID_ARG (malformed), NA_PROTONOSUPPORT (other
 *         plugin/protocol), NA_ADDRNOTAVAIL (cannot be resolved), NA_NOMEM
 */
NA_PUBLIC na_return_t NA_Addr_lookup(na_class_t *na_class, const char *name,
                                     na_addr_t **addr_p);

/**
 * Release an address (reference counted; NULL is ignored).
 * \param[in] na_class NA class
 * \param[in] addr address
 */
NA_PUBLIC void NA_Addr_free(na_class_t *na_class, na_addr_t *addr);

/**
 * Hint that the peer is gone: drop its cached connection state.
 * \param[in] na_class NA class
 * \param[in] addr address of the peer that is gone
 * \return NA_SUCCESS; NA_INVALID_ARG; or the plugin's error
 */
NA_PUBLIC na_return_t NA_Addr_set_remove(na_class_t *na_class, na_addr_t *addr);

/**
 * Get this class's own address (freed with NA_Addr_free()).
 * \param[in] na_class NA class
 * \param[out] addr_p the address, freed with NA_Addr_free()
 * \return NA_SUCCESS; NA_INVALID_ARG; NA_NOMEM or another plugin error
 */
NA_PUBLIC na_return_t NA_Addr_self(na_class_t *na_class, na_addr_t **addr_p);

/**
 * Take another reference to an address (freed with NA_Addr_free()).
 * \param[in] na_class NA class
 * \param[in] addr address
 * \param[out] new_addr_p the new reference, freed with NA_Addr_free()
 * \return NA_SUCCESS; NA_INVALID_ARG
 */
NA_PUBLIC na_return_t NA_Addr_dup(na_class_t *na_class, na_addr_t *addr,
                                  na_addr_t **new_addr_p);

/**
 * True if both addresses name the same peer.
 * \param[in] na_class NA class
 * \param[in] addr1 first address
 * \param[in] addr2 second address
 * \return true if both name the same peer
 */
NA_PUBLIC bool NA_Addr_cmp(na_class_t *na_class, na_addr_t *addr1, na_addr_t *addr2);

/**
 * True if addr is this class's own address.
 * \param[in] na_class NA class
 * \param[in] addr address
 * \return true if addr is this class's own address, false otherwise or for NULL
 */
NA_PUBLIC bool NA_Addr_is_self(na_class_t *na_class, na_addr_t *addr);

/**
 * Print an address, terminating NUL included. With buf NULL only the size is
 * returned in *buf_size; a too small buffer gives NA_OVERFLOW and the size.
 * \param[in] na_class NA class
 * \param[out] buf destination, or NULL to get the size only
 * \param[in,out] buf_size size of buf; set to the size needed
 * \param[in] addr address
 * \return NA_SUCCESS; NA_OVERFLOW (buf too small: *buf_size is the size
 *         needed); NA_INVALID_ARG; or the plugin's error
 */
NA_PUBLIC na_return_t NA_Addr_to_string(na_class_t *na_class, char *buf, size_t *buf_size,
                                        na_addr_t *addr);

/**
 * Bytes NA_Addr_serialize() needs for addr.
 * \param[in] na_class NA class
 * \param[in] addr address
 * \return the size in bytes, 0 for a NULL argument
 */
NA_PUBLIC size_t NA_Addr_get_serialize_size(na_class_t *na_class, na_addr_t *addr);

/**
 * Serialize an address into buf, for a peer to NA_Addr_deserialize().
 * \param[in] na_class NA class
 * \param[out] buf destination
 * \param[in] buf_size its size, at least NA_Addr_get_serialize_size()
 * \param[in] addr address
 * \return NA_SUCCESS; NA_OVERFLOW (buf too small); NA_INVALID_ARG; or the
 *         plugin's error
 */
NA_PUBLIC na_return_t NA_Addr_serialize(na_class_t *na_class, void *buf, size_t buf_size,
                                        na_addr_t *addr);

/**
 * Rebuild an address from untrusted bytes.
 * \param[in] na_class NA class
 * \param[out] addr_p the address, freed with NA_Addr_free()
 * \param[in] buf bytes received (untrusted)
 * \param[in] buf_size their number
 * \return NA_SUCCESS, NA_INVALID_ARG / NA_PROTOCOL_ERROR for malformed input
 */
NA_PUBLIC na_return_t NA_Addr_deserialize(na_class_t *na_class, na_addr_t **addr_p,
                                          const void *buf, size_t buf_size);

/**
 * Largest unexpected message, plugin header included.
 * \param[in] na_class NA class
 * \return the size in bytes, 0 for a NULL class
 */
NA_PUBLIC size_t NA_Msg_get_max_unexpected_size(const na_class_t *na_class);

/**
 * Largest expected message, plugin header included.
 * \param[in] na_class NA class
 * \return the size in bytes, 0 for a NULL class
 */
NA_PUBLIC size_t NA_Msg_get_max_expected_size(const na_class_t *na_class);

/**
 * Bytes the plugin reserves at the start of an unexpected message buffer.
 * \param[in] na_class NA class
 * \return the size in bytes, 0 for a NULL class
 */
NA_PUBLIC size_t NA_Msg_get_unexpected_header_size(const na_class_t *na_class);

/**
 * Bytes the plugin reserves at the start of an expected message buffer.
 * \param[in] na_class NA class
 * \return the size in bytes, 0 for a NULL class
 */
NA_PUBLIC size_t NA_Msg_get_expected_header_size(const na_class_t *na_class);

/**
 * Largest tag a message may carry.
 * \param[in] na_class NA class
 * \return the largest tag, 0 for a NULL class
 */
NA_PUBLIC na_tag_t NA_Msg_get_max_tag(const na_class_t *na_class);

/**
 * Allocate a message buffer (possibly pre-registered with the transport).
 * \param[in] na_class NA class
 * \param[in] buf_size size in bytes
 * \param[in] flags NA_SEND and/or NA_RECV
 * \param[out] plugin_data_p pass it to the send/recv calls and to NA_Msg_buf_free()
 * \return the buffer, or NULL (size 0, out of memory)
 */
NA_PUBLIC void *NA_Msg_buf_alloc(na_class_t *na_class, size_t buf_size,
                                 unsigned long flags,
                                 void **plugin_data_p) NA_WARN_UNUSED_RESULT;

/**
 * Free a buffer from NA_Msg_buf_alloc(); NULL is ignored.
 * \param[in] na_class NA class
 * \param[in] buf buffer from NA_Msg_buf_alloc(), or NULL
 * \param[in] plugin_data what NA_Msg_buf_alloc() returned with it
 */
NA_PUBLIC void NA_Msg_buf_free(na_class_t *na_class, void *buf, void *plugin_data);

/**
 * Write the plugin's unexpected header into buf before a send.
 * \param[in] na_class NA class
 * \param[out] buf message buffer
 * \param[in] buf_size its size
 * \return NA_SUCCESS; NA_INVALID_ARG (NULL argument, buffer shorter than the
 *         header); or the plugin's error
 */
NA_PUBLIC na_return_t NA_Msg_init_unexpected(na_class_t *na_class, void *buf,
                                             size_t buf_size);

/**
 * Send an unexpected message; it needs no matching receive and completes
 * locally. The callback is queued on context when done.
 * \param[in] na_class NA class
 * \param[in] context context whose completion queue receives the callback
 * \param[in] callback completion callback, run once by NA_Trigger()
 * \param[in] arg argument passed to the callback in its na_cb_info
 * \param[in] buf message buffer (from NA_Msg_buf_alloc() or the caller's)
 * \param[in] buf_size bytes to send, header included; above the max size the
 *        call fails with NA_MSGSIZE and nothing is sent
 * \param[in] plugin_data what NA_Msg_buf_alloc() returned with buf, or NULL
 * \param[in] dest_addr target address
 * \param[in] dest_id target context id
 * \param[in] tag message tag, at most NA_Msg_get_max_tag()
 * \param[in] op_id id from NA_Op_create(), not in use by another operation
 * \return NA_SUCCESS (posted: the callback reports the outcome); NA_INVALID_ARG
 *         (NULL or foreign argument, buffer shorter than the header, bad
 *         context id or tag); NA_MSGSIZE; NA_BUSY (op_id in use); or the
 *         plugin's error (NA_AGAIN, NA_PROTOCOL_ERROR, ...)
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
 * \param[in] na_class NA class
 * \param[in] context context whose completion queue receives the callback
 * \param[in] callback completion callback, run once by NA_Trigger()
 * \param[in] arg argument passed to the callback in its na_cb_info
 * \param[out] buf receive buffer
 * \param[in] buf_size its size
 * \param[in] plugin_data what NA_Msg_buf_alloc() returned with buf, or NULL
 * \param[in] op_id id from NA_Op_create(), not in use by another operation
 * \return NA_SUCCESS (posted: the callback reports the outcome); NA_INVALID_ARG
 *         (NULL or foreign argument, buffer shorter than the header); NA_BUSY
 *         (op_id in use); or the plugin's error
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
 * \param[in] na_class NA class
 * \param[in] context context whose completion queue receives the callback
 * \param[in] callback completion callback, run once by NA_Trigger()
 * \param[in] arg argument passed to the callback in its na_cb_info
 * \param[out] buf receive buffer
 * \param[in] buf_size its size
 * \param[in] plugin_data what NA_Msg_buf_alloc() returned with buf, or NULL
 * \param[in] op_id id from NA_Op_create(), not in use by another operation
 * \return NA_OPNOTSUPPORTED, with a log line
 */
NA_PUBLIC na_return_t NA_Msg_multi_recv_unexpected(na_class_t *na_class,
                                                   na_context_t *context,
                                                   na_cb_t callback, void *arg, void *buf,
                                                   size_t buf_size, void *plugin_data,
                                                   na_op_id_t *op_id);

/**
 * Write the plugin's expected header into buf before a send.
 * \param[in] na_class NA class
 * \param[out] buf message buffer
 * \param[in] buf_size its size
 * \return NA_SUCCESS; NA_INVALID_ARG (NULL argument, buffer shorter than the
 *         header)
 */
NA_PUBLIC na_return_t NA_Msg_init_expected(na_class_t *na_class, void *buf,
                                           size_t buf_size);

/**
 * Send an expected message: it completes once the peer posted a matching receive.
 * \param[in] na_class NA class
 * \param[in] context context whose completion queue receives the callback
 * \param[in] callback completion callback, run once by NA_Trigger()
 * \param[in] arg argument passed to the callback in its na_cb_info
 * \param[in] buf message buffer (from NA_Msg_buf_alloc() or the caller's)
 * \param[in] buf_size its size in bytes, header included
 * \param[in] plugin_data what NA_Msg_buf_alloc() returned with buf, or NULL
 * \param[in] dest_addr target address
 * \param[in] dest_id target context id
 * \param[in] tag message tag, at most NA_Msg_get_max_tag()
 * \param[in] op_id id from NA_Op_create(), not in use by another operation
 * \return NA_SUCCESS (posted: the callback reports the outcome); NA_INVALID_ARG
 *         (NULL or foreign argument, buffer shorter than the header, bad context id
 *         or tag); NA_MSGSIZE (above NA_Msg_get_max_expected_size()); NA_BUSY
 *         (op_id in use); or the plugin's error
 */
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
 * \param[in] na_class NA class
 * \param[in] context context whose completion queue receives the callback
 * \param[in] callback completion callback, run once by NA_Trigger()
 * \param[in] arg argument passed to the callback in its na_cb_info
 * \param[out] buf receive buffer
 * \param[in] buf_size its size
 * \param[in] plugin_data what NA_Msg_buf_alloc() returned with buf, or NULL
 * \param[in] source_addr address of the sender
 * \param[in] source_id context id of the sender
 * \param[in] tag message tag, at most NA_Msg_get_max_tag()
 * \param[in] op_id id from NA_Op_create(), not in use by another operation
 * \return NA_SUCCESS (posted: the callback reports the outcome); NA_INVALID_ARG
 *         (NULL or foreign argument, buffer shorter than the header, bad context id
 *         or tag); NA_BUSY (op_id in use); or the plugin's error
 */
NA_PUBLIC na_return_t NA_Msg_recv_expected(na_class_t *na_class, na_context_t *context,
                                           na_cb_t callback, void *arg, void *buf,
                                           size_t buf_size, void *plugin_data,
                                           na_addr_t *source_addr, uint8_t source_id,
                                           na_tag_t tag, na_op_id_t *op_id);

/**
 * Describe a contiguous region for put/get.
 * \param[in] na_class NA class
 * \param[in] buf start of the region
 * \param[in] buf_size its length in bytes
 * \param[in] flags NA_MEM_READ_ONLY, NA_MEM_WRITE_ONLY or NA_MEM_READWRITE:
 *        what a remote peer may do to it
 * \param[out] mem_handle_p the handle, freed with NA_Mem_handle_free()
 * \return NA_SUCCESS; NA_INVALID_ARG; NA_NOMEM or another plugin error
 */
NA_PUBLIC na_return_t NA_Mem_handle_create(na_class_t *na_class, void *buf,
                                           size_t buf_size, unsigned long flags,
                                           na_mem_handle_t **mem_handle_p);

/**
 * Describe a list of regions as one handle (offsets run across the segments).
 * \param[in] na_class NA class
 * \param[in] segments the regions
 * \param[in] segment_count their number, at most NA_Mem_handle_get_max_segments()
 * \param[in] flags NA_MEM_READ_ONLY, NA_MEM_WRITE_ONLY or NA_MEM_READWRITE:
 *        what a remote peer may do to the memory
 * \param[out] mem_handle_p the handle, freed with NA_Mem_handle_free()
 * \return NA_SUCCESS; NA_INVALID_ARG (also too many segments); NA_NOMEM or
 *         another plugin error
 */
NA_PUBLIC na_return_t NA_Mem_handle_create_segments(na_class_t *na_class,
                                                    struct na_segment *segments,
                                                    size_t segment_count,
                                                    unsigned long flags,
                                                    na_mem_handle_t **mem_handle_p);

/**
 * Free a memory handle (deregister it first).
 * \param[in] na_class NA class
 * \param[in] mem_handle handle, deregistered
 */
NA_PUBLIC void NA_Mem_handle_free(na_class_t *na_class, na_mem_handle_t *mem_handle);

/**
 * Largest segment count NA_Mem_handle_create_segments() accepts.
 * \param[in] na_class NA class
 * \return the largest segment count, 0 for a NULL class
 */
NA_PUBLIC size_t NA_Mem_handle_get_max_segments(const na_class_t *na_class);

/**
 * Register a handle with the transport; remote access is possible only after this.
 * \param[in] na_class NA class
 * \param[in] mem_handle memory handle
 * \param[in] mem_type memory type (NA_MEM_TYPE_HOST only)
 * \param[in] device device id (unused for host memory)
 * \return NA_SUCCESS (also when already registered); NA_INVALID_ARG;
 *         NA_OPNOTSUPPORTED (device memory); or the plugin's error
 */
NA_PUBLIC na_return_t NA_Mem_register(na_class_t *na_class, na_mem_handle_t *mem_handle,
                                      enum na_mem_type mem_type, uint64_t device);

/**
 * Deregister: remote peers holding the old descriptor are refused from now on.
 *
 * Over ofi+shm a region that peers accessed repeatedly within the last 50 ms
 * may be under a lease (docs/na-ofi.md, "ofi+shm: the RMA check and its
 * leases"): the call then waits until the lease ends, at most 10 ms, so that
 * no transfer can start after it returns. Other transports do not wait.
 * \param[in] na_class NA class
 * \param[in] mem_handle memory handle
 * \return NA_SUCCESS (also when not registered); NA_INVALID_ARG; or the plugin's
 *         error
 */
NA_PUBLIC na_return_t NA_Mem_deregister(na_class_t *na_class,
                                        na_mem_handle_t *mem_handle);

/**
 * Bytes NA_Mem_handle_serialize() needs.
 * \param[in] na_class NA class
 * \param[in] mem_handle memory handle
 * \return the size in bytes, 0 for a NULL argument
 */
NA_PUBLIC size_t NA_Mem_handle_get_serialize_size(na_class_t *na_class,
                                                  na_mem_handle_t *mem_handle);

/**
 * Serialize a registered handle so a peer can put/get it.
 * \param[in] na_class NA class
 * \param[out] buf destination
 * \param[in] buf_size its size
 * \param[in] mem_handle memory handle
 * \return NA_SUCCESS; NA_OVERFLOW (buf too small); NA_INVALID_ARG; or the
 *         plugin's error
 */
NA_PUBLIC na_return_t NA_Mem_handle_serialize(na_class_t *na_class, void *buf,
                                              size_t buf_size,
                                              na_mem_handle_t *mem_handle);

/**
 * Rebuild a remote handle from untrusted bytes (validated: sizes, segment
 * count, flags).
 * \param[in] na_class NA class
 * \param[out] mem_handle_p remote handle, freed with NA_Mem_handle_free()
 * \param[in] buf bytes received (untrusted)
 * \param[in] buf_size their number
 * \return NA_SUCCESS; NA_INVALID_ARG; NA_PROTOCOL_ERROR (malformed); NA_NOMEM
 */
NA_PUBLIC na_return_t NA_Mem_handle_deserialize(na_class_t *na_class,
                                                na_mem_handle_t **mem_handle_p,
                                                const void *buf, size_t buf_size);

/**
 * Write data_size bytes of the local handle at local_offset into the remote
 * handle at remote_offset. Bounds and permissions are checked locally
 * (NA_INVALID_ARG / NA_PERMISSION) and by the target's transport.
 * \param[in] na_class NA class
 * \param[in] context context whose completion queue receives the callback
 * \param[in] callback completion callback, run once by NA_Trigger()
 * \param[in] arg argument passed to the callback in its na_cb_info
 * \param[in] local_mem_handle registered local memory handle
 * \param[in] local_offset offset in the local handle
 * \param[in] remote_mem_handle remote handle (from NA_Mem_handle_deserialize())
 * \param[in] remote_offset offset in the remote handle
 * \param[in] data_size bytes to move
 * \param[in] remote_addr address of the process owning the remote handle
 * \param[in] remote_id context id at that process
 * \param[in] op_id id from NA_Op_create(), not in use by another operation
 * \return NA_SUCCESS (posted: the callback reports the outcome); NA_INVALID_ARG
 *         (NULL or foreign argument, unregistered or remote local handle, out of
 *         bounds, bad context id); NA_PERMISSION (the remote handle does not grant
 *         the access); NA_BUSY (op_id in use); or the plugin's error
 */
NA_PUBLIC na_return_t NA_Put(na_class_t *na_class, na_context_t *context,
                             na_cb_t callback, void *arg,
                             na_mem_handle_t *local_mem_handle, na_offset_t local_offset,
                             na_mem_handle_t *remote_mem_handle,
                             na_offset_t remote_offset, size_t data_size,
                             na_addr_t *remote_addr, uint8_t remote_id,
                             na_op_id_t *op_id);

/**
 * Read data_size bytes of the remote handle into the local handle. See NA_Put().
 * \param[in] na_class NA class
 * \param[in] context context whose completion queue receives the callback
 * \param[in] callback completion callback, run once by NA_Trigger()
 * \param[in] arg argument passed to the callback in its na_cb_info
 * \param[in] local_mem_handle registered local memory handle
 * \param[in] local_offset offset in the local handle
 * \param[in] remote_mem_handle remote handle (from NA_Mem_handle_deserialize())
 * \param[in] remote_offset offset in the remote handle
 * \param[in] data_size bytes to move
 * \param[in] remote_addr address of the process owning the remote handle
 * \param[in] remote_id context id at that process
 * \param[in] op_id id from NA_Op_create(), not in use by another operation
 * \return NA_SUCCESS (posted: the callback reports the outcome); NA_INVALID_ARG
 *         (NULL or foreign argument, unregistered or remote local handle, out of
 *         bounds, bad context id); NA_PERMISSION (the remote handle does not grant
 *         the access); NA_BUSY (op_id in use); or the plugin's error
 */
NA_PUBLIC na_return_t NA_Get(na_class_t *na_class, na_context_t *context,
                             na_cb_t callback, void *arg,
                             na_mem_handle_t *local_mem_handle, na_offset_t local_offset,
                             na_mem_handle_t *remote_mem_handle,
                             na_offset_t remote_offset, size_t data_size,
                             na_addr_t *remote_addr, uint8_t remote_id,
                             na_op_id_t *op_id);

/**
 * File descriptor that becomes readable when the context has work. Where the
 * transport has no fd (ofi+shm, mpi+), it is a timer that NA_Poll_try_wait
 * sets to the step of the plugin's idle policy: it becomes readable when
 * NA_Poll_wait would poll again.
 * \param[in] na_class NA class
 * \param[in] context context
 * \return the file descriptor, or -1 for a class of NA_NO_BLOCK (busy
 *         polling has no wait fd)
 */
NA_PUBLIC int NA_Poll_get_fd(na_class_t *na_class, na_context_t *context);

/**
 * True if it is safe to block on the fd of NA_Poll_get_fd().
 * \param[in] na_class NA class
 * \param[in] context context
 * \return true if the caller may block on the fd now, false if there is work
 *         to do first (or for a NULL argument)
 */
NA_PUBLIC bool NA_Poll_try_wait(na_class_t *na_class, na_context_t *context);

/**
 * Make progress without blocking.
 * \param[in] na_class NA class
 * \param[in] context context to progress
 * \param[out] count_p optional: callbacks now waiting in the completion queue
 * \return NA_SUCCESS; NA_INVALID_ARG (NULL or foreign context); or the plugin's
 *         error
 */
NA_PUBLIC na_return_t NA_Poll(na_class_t *na_class, na_context_t *context,
                              unsigned int *count_p);

/**
 * Make progress, blocking on the transport's wait object for at most
 * timeout_ms until something completes.
 * \param[in] na_class NA class
 * \param[in] context context to progress
 * \param[in] timeout_ms longest wait in milliseconds (0: do not block)
 * \param[out] count_p callbacks now waiting in the completion queue (optional)
 * \return NA_SUCCESS when callbacks are queued; NA_TIMEOUT otherwise;
 *         NA_INVALID_ARG (NULL or foreign context); or the plugin's error
 */
NA_PUBLIC na_return_t NA_Poll_wait(na_class_t *na_class, na_context_t *context,
                                   unsigned int timeout_ms, unsigned int *count_p);

/**
 * NA_Poll_wait() without the count (the older call).
 * \param[in] na_class NA class
 * \param[in] context context to progress
 * \param[in] timeout_ms longest wait in milliseconds (0: do not block)
 * \return as NA_Poll_wait()
 */
NA_PUBLIC na_return_t NA_Progress(na_class_t *na_class, na_context_t *context,
                                  unsigned int timeout_ms);

/**
 * Run up to max_count queued callbacks. As in Mercury 2.4.1 (NA 6.0), an empty
 * queue is not an error: NA_SUCCESS with a count of 0 (NA 4.x said NA_TIMEOUT).
 * \param[in] context context
 * \param[in] max_count most callbacks to run
 * \param[out] actual_count optional: how many ran
 * \return NA_SUCCESS, NA_INVALID_ARG (NULL context)
 */
NA_PUBLIC na_return_t NA_Trigger(na_context_t *context, unsigned int max_count,
                                 unsigned int *actual_count);

/**
 * Cancel a pending operation. Local: it never waits for the peer. The
 * operation's callback then runs once, with NA_CANCELED, or with its real
 * result if it completed first. Cancelling a completed operation is a no-op.
 * \param[in] na_class NA class
 * \param[in] context context the operation was posted on
 * \param[in] op_id id of the operation
 * \return NA_SUCCESS; NA_INVALID_ARG (NULL or foreign argument); or the
 *         plugin's error
 */
NA_PUBLIC na_return_t NA_Cancel(na_class_t *na_class, na_context_t *context,
                                na_op_id_t *op_id);

/**
 * Name of a return code, e.g. "NA_CANCELED" for NA_CANCELED.
 * \param[in] errnum return code
 * \return a static string, "UNDEFINED/UNRECOGNIZED NA ERROR" if out of range
 */
NA_PUBLIC const char *NA_Error_to_string(na_return_t errnum) NA_WARN_UNUSED_RESULT;

#ifdef __cplusplus
}
#endif

#endif /* NA_H */
