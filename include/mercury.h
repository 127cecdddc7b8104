/**
 * \file mercury.h
 * The HG RPC layer: classes, contexts, RPC registration, addresses,
 * handles, forward / respond, progress, trigger and cancel.
 *
 * Names and signatures follow Mercury 2.4. Completion of non-blocking calls is
 * reported through callbacks queued on the context; HG_Trigger() runs them,
 * HG_Progress() makes the network move. RPC handlers also run from HG_Trigger().
 *
 * Threads: by default a class and everything created from it (contexts,
 * handles, addresses, bulk handles) may be used from several threads at once;
 * for instance one thread may run HG_Progress() while another runs
 * HG_Trigger() on the same context, and callbacks then run on the thread that
 * triggers them. A class whose NA options set thread_mode to
 * NA_THREAD_MODE_SINGLE (struct na_init_info) takes no locks: the program must
 * then use it from one thread at a time. A handle carries one forward or
 * respond at a time (HG_BUSY otherwise).
 */
#ifndef MERCURY_H
#define MERCURY_H

#include "mercury_types.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Get the Mercury API version hgx implements.
 * \param[out] major_p major
 * \param[out] minor_p minor
 * \param[out] patch_p patch
 * \return HG_SUCCESS
 */
HG_PUBLIC hg_return_t HG_Version_get(unsigned int *major_p, unsigned int *minor_p,
                                     unsigned int *patch_p);

/**
 * Name of a return code.
 * \param[in] errnum code
 * \return a static string ("HG_SUCCESS", ...), "HG_UNKNOWN_ERROR" if out of range
 */
HG_PUBLIC const char *HG_Error_to_string(hg_return_t errnum);

/**
 * Initialize an HG class over a new NA class. Finalize it with HG_Finalize().
 * \param[in] na_info_string NA info string, e.g. "ofi+tcp"
 * \param[in] na_listen accept RPCs from peers
 * \return the class, or NULL (the reason is logged)
 */
HG_PUBLIC hg_class_t *HG_Init(const char *na_info_string, hg_bool_t na_listen);

/**
 * HG_Init() with options (the 2.2 shape of struct hg_init_info).
 * \param[in] na_info_string NA info string (ignored if hg_init_info->na_class is set)
 * \param[in] na_listen accept RPCs from peers
 * \param[in] hg_init_info optional options, NULL for defaults
 * \return the class, or NULL
 */
HG_PUBLIC hg_class_t *HG_Init_opt(const char *na_info_string, hg_bool_t na_listen,
                                  const struct hg_init_info *hg_init_info);

/**
 * HG_Init_opt() with the version of struct hg_init_info the caller was built with.
 * \param[in] na_info_string NA info string
 * \param[in] na_listen accept RPCs from peers
 * \param[in] version HG_VERSION(major, minor) of the caller's headers
 * \param[in] hg_init_info optional options, NULL for defaults
 * \return the class, or NULL
 */
HG_PUBLIC hg_class_t *HG_Init_opt2(const char *na_info_string, hg_bool_t na_listen,
                                   unsigned int version,
                                   const struct hg_init_info *hg_init_info);

/**
 * Finalize a class. Refused, leaving the class usable, while contexts,
 * handles, addresses or bulk handles created from it are alive.
 * \param[in] hg_class class
 * \return HG_SUCCESS; HG_BUSY (objects alive); HG_INVALID_ARG; or the NA error
 *         when the NA class cannot be finalized
 */
HG_PUBLIC hg_return_t HG_Finalize(hg_class_t *hg_class);

/** Remove temporary resources left by classes that did not finalize. */
HG_PUBLIC void HG_Cleanup(void);

/**
 * Set the log level of the HG subsystems (and NA's).
 * \param[in] level "none", "error", "warning", "debug"
 */
HG_PUBLIC void HG_Set_log_level(const char *level);

/**
 * Choose the subsystems that log: hgx's own and the program's log outlets of
 * mercury_log.h (hg_log_set_subsys), by name.
 * \param[in] subsys comma list, e.g. "hg,bulk" or "all,~na"
 */
HG_PUBLIC void HG_Set_log_subsys(const char *subsys);

/**
 * Set the function that writes every log line (Mercury 2.4.1). It is called
 * as log_func(stream, format, ...) with the stream HG_Set_log_stream() chose.
 * \param[in] log_func function, or NULL to go back to fprintf
 */
HG_PUBLIC void HG_Set_log_func(int (*log_func)(FILE *stream, const char *format, ...));

/**
 * Set the stream that lines of one level go to.
 * \param[in] level "error", "warning" or "debug" (an unknown level is logged
 *        and ignored)
 * \param[in] stream stream, or NULL to go back to stderr
 */
HG_PUBLIC void HG_Set_log_stream(const char *level, FILE *stream);

/**
 * Write the diagnostic counters of every live class (see
 * HG_Class_get_counters()) to the debug log stream, whatever the log level.
 */
HG_PUBLIC void HG_Diag_dump_counters(void);

/**
 * List the protocols the NA plugins support (NA_Get_protocol_info()).
 * \param[in] info_string NULL, "protocol" or "plugin+protocol"
 * \param[out] na_protocol_info_p list, freed with HG_Free_na_protocol_info()
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_NOMEM
 */
HG_PUBLIC hg_return_t HG_Get_na_protocol_info(
    const char *info_string, struct na_protocol_info **na_protocol_info_p);

/**
 * Free a list from HG_Get_na_protocol_info() (NULL is ignored).
 * \param[in] na_protocol_info list
 */
HG_PUBLIC void HG_Free_na_protocol_info(struct na_protocol_info *na_protocol_info);

/**
 * Name of the NA plugin a class runs on.
 * \param[in] hg_class class
 * \return the NA plugin name ("ofi", ...), or NULL
 */
HG_PUBLIC const char *HG_Class_get_name(const hg_class_t *hg_class);

/**
 * Protocol of the NA class a class runs on.
 * \param[in] hg_class class
 * \return the NA protocol ("tcp", "shm", ...), or NULL
 */
HG_PUBLIC const char *HG_Class_get_protocol(const hg_class_t *hg_class);

/**
 * Tell whether a class was initialized to accept RPCs.
 * \param[in] hg_class class
 * \return HG_TRUE if the class accepts RPCs
 */
HG_PUBLIC hg_bool_t HG_Class_is_listening(const hg_class_t *hg_class);

/**
 * Largest RPC input that travels inside the request message.
 * \param[in] hg_class class
 * \return largest input that travels inside the request message; larger
 *         input is moved with an internal bulk transfer. 0 if no class.
 */
HG_PUBLIC hg_size_t HG_Class_get_input_eager_size(const hg_class_t *hg_class);

/**
 * Largest RPC output that travels inside the response message.
 * \param[in] hg_class class
 * \return largest output that travels inside the response message, 0 if no class
 */
HG_PUBLIC hg_size_t HG_Class_get_output_eager_size(const hg_class_t *hg_class);

/**
 * Reserve offset bytes at the start of every input payload for a header of
 * the caller's own (written and read through HG_Get_input_buf()); HG_Forward()
 * encodes and HG_Get_input() decodes after them. Both peers must set the same
 * offset. A payload too large for a message travels without them in the
 * extra buffer; the reserved bytes still travel in the message.
 * \param[in] hg_class class
 * \param[in] offset bytes (0 by default)
 * \return HG_SUCCESS, HG_INVALID_ARG (offset above the input eager size)
 */
HG_PUBLIC hg_return_t HG_Class_set_input_offset(hg_class_t *hg_class, hg_size_t offset);

/**
 * HG_Class_set_input_offset() for output payloads (HG_Respond() /
 * HG_Get_output()).
 * \param[in] hg_class HG class
 * \param[in] offset bytes (0 by default)
 * \return HG_SUCCESS, HG_INVALID_ARG (offset above the output eager size)
 */
HG_PUBLIC hg_return_t HG_Class_set_output_offset(hg_class_t *hg_class, hg_size_t offset);

/**
 * Fill the diagnostic counters of a class: requests and responses sent and
 * received, those that needed an extra (bulk) buffer, requests being handled
 * and bulk transfers started. hgx always counts (Mercury needs a debug build);
 * rpc_multi_recv_copy_count stays 0 (no multi-recv in hgx).
 * \param[in] hg_class class
 * \param[out] diag_counters counters
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Class_get_counters(const hg_class_t *hg_class,
                                            struct hg_diag_counters *diag_counters);

/**
 * Call callback(handle, arg) on every handle created: by HG_Create() and for
 * every received request, before the handler runs, so that upper layers can
 * attach data with HG_Set_data(). A callback error fails the creation
 * (HG_Create() returns HG_NOMEM, a request is dropped).
 * \param[in] hg_class class
 * \param[in] callback function, NULL to remove
 * \param[in] arg its argument
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Class_set_handle_create_callback(
    hg_class_t *hg_class, hg_return_t (*callback)(hg_handle_t, void *), void *arg);

/**
 * Attach user data to a class; free_callback(data) runs at HG_Finalize().
 * \param[in] hg_class class
 * \param[in] data data
 * \param[in] free_callback or NULL
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Class_set_data(hg_class_t *hg_class, void *data,
                                        void (*free_callback)(void *));

/**
 * Get the user data of a class.
 * \param[in] hg_class class
 * \return data set with HG_Class_set_data(), or NULL
 */
HG_PUBLIC void *HG_Class_get_data(const hg_class_t *hg_class);

/**
 * Create a context (id 0). A listening class posts its receives on it.
 * \param[in] hg_class class
 * \return the context, or NULL
 */
HG_PUBLIC hg_context_t *HG_Context_create(hg_class_t *hg_class);

/**
 * Create a context with an id; RPCs sent with HG_Set_target_id(id) reach it.
 * \param[in] hg_class class
 * \param[in] id context id
 * \return the context, or NULL
 */
HG_PUBLIC hg_context_t *HG_Context_create_id(hg_class_t *hg_class, hg_uint8_t id);

/**
 * Destroy a context. Posted receives are cancelled. Operations still in
 * progress get up to one second of progress and trigger (their callbacks
 * run) to end, as in Mercury; handles the program forgot are released.
 * Refused if handles or operations are still alive, or callbacks still wait
 * to be triggered, after that.
 * \param[in] context context
 * \return HG_SUCCESS; HG_BUSY; HG_INVALID_ARG; or the NA error of destroying
 *         its NA context
 */
HG_PUBLIC hg_return_t HG_Context_destroy(hg_context_t *context);

/**
 * Stop taking requests on a listening context: its posted receives are
 * cancelled (HG_Context_destroy() does it otherwise). No-op on a context that
 * posts none.
 * \param[in] context context
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Context_unpost(hg_context_t *context);

/**
 * Get the class a context belongs to.
 * \param[in] context context
 * \return its class, or NULL
 */
HG_PUBLIC hg_class_t *HG_Context_get_class(const hg_context_t *context);

/**
 * Get the id of a context.
 * \param[in] context context
 * \return its id (0 by default)
 */
HG_PUBLIC hg_uint8_t HG_Context_get_id(const hg_context_t *context);

/**
 * Attach user data to a context; free_callback(data) runs at HG_Context_destroy().
 * \param[in] context HG context
 * \param[in] data user data, or NULL
 * \param[in] free_callback called on data at HG_Context_destroy() or when replaced, or
 *        NULL
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Context_set_data(hg_context_t *context, void *data,
                                          void (*free_callback)(void *));

/**
 * Get the user data of a context.
 * \param[in] context HG context
 * \return data set with HG_Context_set_data(), or NULL
 */
HG_PUBLIC void *HG_Context_get_data(const hg_context_t *context);

/**
 * Register an RPC by name. Its id is a 64-bit hash of the name, so origin and
 * target agree without talking. Registering a name again replaces its procs.
 * \param[in] hg_class class
 * \param[in] func_name unique name
 * \param[in] in_proc_cb proc of the input struct (NULL: no input)
 * \param[in] out_proc_cb proc of the output struct (NULL: no output)
 * \param[in] rpc_cb handler run at the target (NULL on a pure origin)
 * \return the id, or 0 on failure
 */
HG_PUBLIC hg_id_t HG_Register_name(hg_class_t *hg_class, const char *func_name,
                                   hg_proc_cb_t in_proc_cb, hg_proc_cb_t out_proc_cb,
                                   hg_rpc_cb_t rpc_cb);

/**
 * Tell whether func_name is registered.
 * \param[in] hg_class class
 * \param[in] func_name name
 * \param[out] id_p its id (optional)
 * \param[out] flag_p HG_TRUE if registered
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Registered_name(hg_class_t *hg_class, const char *func_name,
                                         hg_id_t *id_p, hg_bool_t *flag_p);

/**
 * Register an RPC under an explicit id.
 * \param[in] hg_class class
 * \param[in] id id (not 0)
 * \param[in] in_proc_cb input proc
 * \param[in] out_proc_cb output proc
 * \param[in] rpc_cb handler
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_NOMEM
 */
HG_PUBLIC hg_return_t HG_Register(hg_class_t *hg_class, hg_id_t id,
                                  hg_proc_cb_t in_proc_cb, hg_proc_cb_t out_proc_cb,
                                  hg_rpc_cb_t rpc_cb);

/**
 * Remove an RPC. Later requests for it are answered with HG_NOENTRY.
 * \param[in] hg_class HG class
 * \param[in] id RPC id
 * \return HG_SUCCESS, HG_NOENTRY, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Deregister(hg_class_t *hg_class, hg_id_t id);

/**
 * Tell whether id is registered.
 * \param[in] hg_class HG class
 * \param[in] id RPC id
 * \param[out] flag_p HG_TRUE if registered
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Registered(hg_class_t *hg_class, hg_id_t id, hg_bool_t *flag_p);

/**
 * Tell whether id is registered and return its procs.
 * \param[in] hg_class HG class
 * \param[in] id RPC id
 * \param[out] flag_p HG_TRUE if registered
 * \param[out] in_proc_cb_p input proc (optional)
 * \param[out] out_proc_cb_p output proc (optional)
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Registered_proc_cb(hg_class_t *hg_class, hg_id_t id,
                                            hg_bool_t *flag_p, hg_proc_cb_t *in_proc_cb_p,
                                            hg_proc_cb_t *out_proc_cb_p);

/**
 * Attach data to a registered RPC; free_callback(data) runs when it is
 * replaced, deregistered, or at HG_Finalize().
 * \param[in] hg_class HG class
 * \param[in] id RPC id
 * \param[in] data user data, or NULL
 * \param[in] free_callback called on data when it is released, or NULL
 * \return HG_SUCCESS, HG_NOENTRY, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Register_data(hg_class_t *hg_class, hg_id_t id, void *data,
                                       void (*free_callback)(void *));

/**
 * Get the data attached to a registered RPC.
 * \param[in] hg_class HG class
 * \param[in] id RPC id
 * \return data attached with HG_Register_data(), or NULL
 */
HG_PUBLIC void *HG_Registered_data(hg_class_t *hg_class, hg_id_t id);

/**
 * Disable (or re-enable) the response of an RPC: the origin's forward then
 * completes once the request is sent, and HG_Respond() at the target is a
 * no-op that still runs its callback. Both sides must agree.
 * \param[in] hg_class HG class
 * \param[in] id RPC id
 * \param[in] disable HG_TRUE to disable
 * \return HG_SUCCESS, HG_NOENTRY, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Registered_disable_response(hg_class_t *hg_class, hg_id_t id,
                                                     hg_bool_t disable);

/**
 * Tell whether the response of an RPC is disabled.
 * \param[in] hg_class HG class
 * \param[in] id RPC id
 * \param[out] disabled_p HG_TRUE if the response is disabled
 * \return HG_SUCCESS, HG_NOENTRY, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Registered_disabled_response(hg_class_t *hg_class, hg_id_t id,
                                                      hg_bool_t *disabled_p);

/**
 * Look up a peer address; the callback (run by HG_Trigger()) receives it in
 * info.lookup.addr and must free it with HG_Addr_free().
 * \param[in] context context
 * \param[in] callback completion callback
 * \param[in] arg its argument
 * \param[in] name address string
 * \param[out] op_id_p unused (may be NULL or HG_OP_ID_IGNORE)
 * \return HG_SUCCESS (callback queued, possibly with an error), HG_INVALID_ARG, HG_NOMEM
 */
HG_PUBLIC hg_return_t HG_Addr_lookup1(hg_context_t *context, hg_cb_t callback, void *arg,
                                      const char *name, hg_op_id_t *op_id_p);

#ifndef HG_Addr_lookup
/** Mercury's name of HG_Addr_lookup1() (the callback form of address lookup). */
#define HG_Addr_lookup HG_Addr_lookup1
#endif

/**
 * Look up a peer address immediately.
 * \param[in] hg_class HG class
 * \param[in] name address string, as printed by HG_Addr_to_string()
 * \param[out] addr_p address, freed with HG_Addr_free()
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_PROTONOSUPPORT, HG_ADDRNOTAVAIL, HG_NOMEM
 */
HG_PUBLIC hg_return_t HG_Addr_lookup2(hg_class_t *hg_class, const char *name,
                                      hg_addr_t *addr_p);

/**
 * Release an address (reference counted; HG_ADDR_NULL is ignored).
 * \param[in] hg_class HG class
 * \param[in] addr address
 * \return HG_SUCCESS (always)
 */
HG_PUBLIC hg_return_t HG_Addr_free(hg_class_t *hg_class, hg_addr_t addr);

/**
 * Hint that the peer is gone so its connection state can be dropped.
 * \param[in] hg_class HG class
 * \param[in] addr address
 * \return HG_SUCCESS; HG_INVALID_ARG; or the NA error
 */
HG_PUBLIC hg_return_t HG_Addr_set_remove(hg_class_t *hg_class, hg_addr_t addr);

/**
 * Get this class's own address. RPCs forwarded to it run locally.
 * \param[in] hg_class HG class
 * \param[out] addr_p address, freed with HG_Addr_free()
 * \return HG_SUCCESS; HG_INVALID_ARG; HG_NOMEM; or the NA error
 */
HG_PUBLIC hg_return_t HG_Addr_self(hg_class_t *hg_class, hg_addr_t *addr_p);

/**
 * Take another reference to an address.
 * \param[in] hg_class HG class
 * \param[in] addr address
 * \param[out] new_addr_p address, freed with HG_Addr_free()
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Addr_dup(hg_class_t *hg_class, hg_addr_t addr,
                                  hg_addr_t *new_addr_p);

/**
 * Compare two addresses.
 * \param[in] hg_class HG class
 * \param[in] addr1 first address
 * \param[in] addr2 second address
 * \return HG_TRUE if both addresses name the same peer
 */
HG_PUBLIC hg_bool_t HG_Addr_cmp(hg_class_t *hg_class, hg_addr_t addr1, hg_addr_t addr2);

/**
 * Print an address (terminating NUL included). With buf NULL only the size is
 * returned; a too small buffer gives HG_OVERFLOW and the size needed.
 * \param[in] hg_class HG class
 * \param[out] buf destination
 * \param[in,out] buf_size_p its size / size needed
 * \param[in] addr address
 * \return HG_SUCCESS; HG_OVERFLOW (*buf_size_p is then the size needed);
 *         HG_INVALID_ARG; or the NA error
 */
HG_PUBLIC hg_return_t HG_Addr_to_string(hg_class_t *hg_class, char *buf,
                                        hg_size_t *buf_size_p, hg_addr_t addr);

/**
 * Create a handle for calling RPC id at addr (reference count 1).
 * As in Mercury, addr may be HG_ADDR_NULL and id 0 (a pool of handles): both
 * are set later with HG_Reset(); HG_Forward() refuses a handle without them.
 * \param[in] context context
 * \param[in] addr target or HG_ADDR_NULL
 * \param[in] id registered RPC id, or 0
 * \param[out] handle_p handle
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_NOENTRY (id not registered), HG_NOMEM
 */
HG_PUBLIC hg_return_t HG_Create(hg_context_t *context, hg_addr_t addr, hg_id_t id,
                                hg_handle_t *handle_p);

/**
 * Drop a reference; the handle is freed at 0. Safe at any time: a pending
 * operation keeps the handle alive until its callback has run.
 * \param[in] handle RPC handle
 * \return HG_SUCCESS (always; HG_HANDLE_NULL is ignored)
 */
HG_PUBLIC hg_return_t HG_Destroy(hg_handle_t handle);

/**
 * Retarget an idle handle (Mercury 2.4.1 semantics): the decoded input/output
 * and the extra buffer are dropped; the data set by HG_Set_data() stays.
 * \param[in] handle RPC handle, idle
 * \param[in] addr new target (HG_ADDR_NULL keeps the current one)
 * \param[in] id new RPC id (0 keeps the current one)
 * \return HG_SUCCESS, HG_BUSY (operation pending), HG_INVALID_ARG, HG_NOENTRY
 */
HG_PUBLIC hg_return_t HG_Reset(hg_handle_t handle, hg_addr_t addr, hg_id_t id);

/**
 * Take another reference to a handle.
 * \param[in] handle RPC handle
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Ref_incr(hg_handle_t handle);

/**
 * Get the reference count of a handle. In an RPC handler it is 2 while a
 * response is owed (the handler's and the response's, which HG_Respond()
 * gives up), as in Mercury.
 * \param[in] handle RPC handle
 * \return the reference count, or -1 for HG_HANDLE_NULL
 */
HG_PUBLIC hg_int32_t HG_Ref_get(hg_handle_t handle);

/**
 * Get what is known about a handle: class, context, peer, RPC id.
 * \param[in] handle RPC handle
 * \return class, context, peer address, RPC id and context id of the handle,
 *         or NULL. Duplicate the address with HG_Addr_dup() to keep it.
 */
HG_PUBLIC const struct hg_info *HG_Get_info(hg_handle_t handle);

/**
 * Attach user data; free_callback(data) runs when the handle is freed.
 * \param[in] handle RPC handle
 * \param[in] data user data, or NULL
 * \param[in] free_callback called on data when it is released, or NULL
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Set_data(hg_handle_t handle, void *data,
                                  void (*free_callback)(void *));

/**
 * Get the user data of a handle.
 * \param[in] handle RPC handle
 * \return data set with HG_Set_data(), or NULL
 */
HG_PUBLIC void *HG_Get_data(hg_handle_t handle);

/**
 * Route the RPC to the target context with this id.
 * \param[in] handle RPC handle
 * \param[in] id context id at the target (HG_Context_create_id())
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Set_target_id(hg_handle_t handle, hg_uint8_t id);

/**
 * At the target: decode the request input with the registered input proc.
 * Release it with HG_Free_input().
 * \param[in] handle RPC handle
 * \param[out] in_struct input struct
 * \return HG_SUCCESS; HG_INVALID_ARG; HG_NOENTRY (no input to decode: released,
 *         or not a received request); HG_OVERFLOW / HG_PROTOCOL_ERROR (malformed
 *         input); HG_NOMEM; or another error of the input proc
 */
HG_PUBLIC hg_return_t HG_Get_input(hg_handle_t handle, void *in_struct);

/**
 * Release what HG_Get_input() allocated in in_struct.
 * \param[in] handle RPC handle
 * \param[in,out] in_struct input struct filled by HG_Get_input()
 * \return HG_SUCCESS; HG_INVALID_ARG; or the error of the input proc
 */
HG_PUBLIC hg_return_t HG_Free_input(hg_handle_t handle, void *in_struct);

/**
 * At the origin, after the forward completed: decode the response output with
 * the registered output proc. Release it with HG_Free_output().
 * \param[in] handle RPC handle
 * \param[out] out_struct output struct
 * \return HG_SUCCESS; HG_INVALID_ARG; HG_NOENTRY (no output received);
 *         HG_OVERFLOW / HG_PROTOCOL_ERROR (malformed output); HG_NOMEM; or another
 *         error of the output proc
 */
HG_PUBLIC hg_return_t HG_Get_output(hg_handle_t handle, void *out_struct);

/**
 * Release what HG_Get_output() allocated in out_struct.
 * \param[in] handle RPC handle
 * \param[in,out] out_struct output struct filled by HG_Get_output()
 * \return HG_SUCCESS; HG_INVALID_ARG; or the error of the output proc
 */
HG_PUBLIC hg_return_t HG_Free_output(hg_handle_t handle, void *out_struct);

/**
 * Bytes of the last input payload of the handle: at the origin the one
 * HG_Forward() sent, at the target the one received. For a payload that
 * travelled in the extra buffer, its size; else the reserved bytes
 * (HG_Class_set_input_offset()) plus the encoding.
 * \param[in] handle RPC handle
 * \return the size, 0 if none or for HG_HANDLE_NULL
 */
HG_PUBLIC hg_size_t HG_Get_input_payload_size(hg_handle_t handle);

/**
 * HG_Get_input_payload_size() for the output (HG_Respond() / the response).
 * \param[in] handle RPC handle
 * \return the size, 0 if none or for HG_HANDLE_NULL
 */
HG_PUBLIC hg_size_t HG_Get_output_payload_size(hg_handle_t handle);

/**
 * Raw input buffer, for manual encoding: at the origin the payload area of
 * the request message (its first HG_Class_set_input_offset() bytes are the
 * caller's), at the target the input received in the message.
 * \param[in] handle RPC handle
 * \param[out] in_buf_p buffer
 * \param[out] in_buf_size_p its size (optional)
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_NOMEM, HG_NOENTRY (target: the input
 *         came in the extra buffer, or was released, or the RPC was to self)
 */
HG_PUBLIC hg_return_t HG_Get_input_buf(hg_handle_t handle, void **in_buf_p,
                                       hg_size_t *in_buf_size_p);

/**
 * Release the input received by a target handle early (HG_Destroy() does it
 * otherwise); HG_Get_input() fails with HG_NOENTRY afterwards.
 * \param[in] handle RPC handle
 * \return HG_SUCCESS, HG_INVALID_ARG (not a received request)
 */
HG_PUBLIC hg_return_t HG_Release_input_buf(hg_handle_t handle);

/**
 * Raw output buffer: at the target the payload area of the response message
 * (its first HG_Class_set_output_offset() bytes are the caller's), at the
 * origin the output received in the message.
 * \param[in] handle RPC handle
 * \param[out] out_buf_p buffer
 * \param[out] out_buf_size_p its size (optional)
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_NOMEM, HG_NOENTRY (origin: no output
 *         received in a message)
 */
HG_PUBLIC hg_return_t HG_Get_output_buf(hg_handle_t handle, void **out_buf_p,
                                        hg_size_t *out_buf_size_p);

/**
 * Extra input buffer, used when the input is too large for a message: at the
 * origin the encoding HG_Forward() exposed, at the target the one it pulled
 * (for an RPC to self: the encoding, when larger than the eager size).
 * \param[in] handle RPC handle
 * \param[out] in_buf_p buffer, NULL if there is none
 * \param[out] in_buf_size_p its size, 0 if none (optional)
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Get_input_extra_buf(hg_handle_t handle, void **in_buf_p,
                                             hg_size_t *in_buf_size_p);

/**
 * HG_Get_input_extra_buf() for the output: at the target the encoding
 * HG_Respond() exposed, at the origin the one it pulled.
 * \param[in] handle RPC handle
 * \param[out] out_buf_p buffer, NULL if there is none
 * \param[out] out_buf_size_p its size, 0 if none (optional)
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Get_output_extra_buf(hg_handle_t handle, void **out_buf_p,
                                              hg_size_t *out_buf_size_p);

/**
 * Send the RPC. The input is encoded with the registered input proc; input
 * larger than the eager size is moved transparently with a bulk transfer.
 * callback runs once from HG_Trigger(), with HG_SUCCESS, HG_CANCELED or an
 * error (HG_CHECKSUM_ERROR, HG_NOENTRY from the target, ...). The handle can
 * be forwarded again once the callback ran.
 * \param[in] handle RPC handle
 * \param[in] callback completion callback (may be NULL)
 * \param[in] arg its argument
 * \param[in] in_struct input struct
 * \return HG_SUCCESS, HG_BUSY (an operation is pending), HG_INVALID_ARG,
 *         HG_NOMEM, or the encode / NA error
 */
HG_PUBLIC hg_return_t HG_Forward(hg_handle_t handle, hg_cb_t callback, void *arg,
                                 void *in_struct);

/**
 * At the target: send the response, encoded with the registered output proc.
 * For an RPC whose response is disabled nothing is sent and callback still runs.
 * The handle's second reference, held while a response is owed, goes with the
 * first call (successful or not); a handler that never responds drops it with
 * a second HG_Destroy(), as Mercury's handlers do to leave a request
 * unanswered.
 * \param[in] handle RPC handle
 * \param[in] callback completion callback (may be NULL)
 * \param[in] arg its argument
 * \param[in] out_struct output struct
 * \return HG_SUCCESS, HG_BUSY, HG_INVALID_ARG, HG_NOMEM, or the encode / NA error
 */
HG_PUBLIC hg_return_t HG_Respond(hg_handle_t handle, hg_cb_t callback, void *arg,
                                 void *out_struct);

/**
 * Make network progress for at most timeout ms, until a callback is ready.
 * \param[in] context HG context
 * \param[in] timeout longest wait in milliseconds (0: do not block)
 * \return HG_SUCCESS if callbacks are ready to trigger; HG_TIMEOUT otherwise;
 *         HG_INVALID_ARG; or the NA error when progress fails
 */
HG_PUBLIC hg_return_t HG_Progress(hg_context_t *context, unsigned int timeout);

/**
 * Run at most max_count queued callbacks, waiting up to timeout ms for one.
 * The callbacks run on the calling thread; another thread may make progress
 * on the context meanwhile (HG_Progress()) and wake this one.
 * \param[in] context HG context
 * \param[in] timeout longest wait for a callback in milliseconds (0: do not block)
 * \param[in] max_count most callbacks to run
 * \param[out] actual_count_p callbacks run (optional)
 * \return HG_SUCCESS if at least one ran, HG_TIMEOUT otherwise, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Trigger(hg_context_t *context, unsigned int timeout,
                                 unsigned int max_count, unsigned int *actual_count_p);

/**
 * Events API (Mercury 2.4.1): drive a context from the program's own event
 * loop. Loop: if HG_Event_ready() is false, poll(2) the fd of
 * HG_Event_get_wait_fd() for reading; then HG_Event_progress() and
 * HG_Event_trigger(). None of them blocks. The fd (the context's own, made
 * on the first call) becomes readable for every completion of the context:
 * its traffic, an RPC to self, work another thread queued on it or another
 * thread's progress completed for it. Drive a context either with this API
 * or with HG_Progress(), not with both at once from different threads: both
 * drain the same wake-up fds, so one may take the wake-up meant for the other
 * and leave it asleep (Mercury does not support this either). Where the
 * transport has no fd (ofi+shm, mpi+), the plugin's part of it is a timer
 * set to the steps of its idle policy: the fd also fires when HG_Progress()
 * would poll again, so a message waits at most one step (4 ms after a long
 * idle period).
 * \param[in] context context
 * \return a file descriptor to poll for reading, or -1 for a class in
 *         NA_NO_BLOCK mode: use HG_Event_progress() in the loop or
 *         HG_Progress() then
 */
HG_PUBLIC int HG_Event_get_wait_fd(const hg_context_t *context);

/**
 * Must be called before blocking on the wait fd: it arms the fd, and says
 * whether there is work already (callbacks queued, completions not yet
 * read), in which case the program must not block.
 * \param[in] context context
 * \return HG_TRUE if there is work to progress or trigger now
 */
HG_PUBLIC hg_bool_t HG_Event_ready(hg_context_t *context);

/**
 * Move completed network operations to the context's queue (never blocks).
 * \param[in] context context
 * \param[out] count_p callbacks now queued (optional)
 * \return HG_SUCCESS, HG_INVALID_ARG, or the NA error
 */
HG_PUBLIC hg_return_t HG_Event_progress(hg_context_t *context, unsigned int *count_p);

/**
 * Run at most max_count queued callbacks without waiting.
 * \param[in] context HG context
 * \param[in] max_count most callbacks to run
 * \param[out] actual_count_p callbacks run (optional)
 * \return HG_SUCCESS (also when none ran), HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Event_trigger(hg_context_t *context, unsigned int max_count,
                                       unsigned int *actual_count_p);

/**
 * Cancel the pending forward or respond of a handle. Local: it never waits
 * for the peer. The operation's callback then runs once with HG_CANCELED (or
 * its real result if it completed first). No-op on an idle handle.
 * \param[in] handle RPC handle
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t HG_Cancel(hg_handle_t handle);

#ifdef __cplusplus
}
#endif

#endif /* MERCURY_H */
