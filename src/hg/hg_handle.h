/*
 * hg_handle.h -- the RPC handle and the calls shared by the origin side
 * (hg_origin.c), the target side (hg_target.c) and self forwarding (hg_self.c).
 */
#ifndef HG_HANDLE_H
#define HG_HANDLE_H

#include "hg_header.h"
#include "hg_internal.h"
#include "hg_rpc_map.h"

/* Operation a handle is busy with. */
enum hg_handle_op {
    HG_HANDLE_IDLE,
    HG_HANDLE_FORWARD,
    HG_HANDLE_RESPOND,
    HG_HANDLE_RECEIVE
};

/* Where a forward to self stands (hg_self.c). */
enum hg_self_state {
    HG_SELF_NONE,      /* not forwarded to self */
    HG_SELF_QUEUED,    /* the handler is queued */
    HG_SELF_RUNNING,   /* the handler has the handle, no response yet */
    HG_SELF_RESPONDED, /* HG_Respond was called */
};

/* Largest payload moved through an internal bulk transfer (untrusted size cap). */
#define HG_EXTRA_MAX ((uint64_t)1 << 31)

struct hg_handle {
    struct hg_info info; /* info.addr holds a reference */
    atomic_int refcount;
    void *data;
    void (*data_free)(void *);
    struct hg_rpc_info rpc; /* snapshot of the registration */
    unsigned int rpc_gen;   /* hg_class->rpc_gen when it was taken */
    bool target;            /* created for a received request */

    size_t recv_len; /* bytes received in recv_buf */

    /* Payload to decode (input at the target, output at the origin). */
    const void *decode_buf;
    size_t decode_size;
    void *decode_owned; /* malloc'd buffer behind decode_buf, or NULL */
    bool has_decode;
    /* Payload bytes of the last input / output (HG_Get_*_payload_size). */
    hg_size_t in_size, out_size;

    /* Encoded payload too large for a message, exposed to the peer. */
    void *extra_buf;
    hg_bulk_t extra_bulk;

    /* Current operation. */
    enum hg_handle_op op;
    hg_cb_t callback;
    void *arg;
    atomic_int pending; /* NA / bulk sub-operations outstanding */
    hg_return_t op_ret; /* first error of the operation */
    atomic_bool canceled;
    atomic_bool send_failed; /* forward: the request's send failed */
    uint32_t cookie;         /* tag of the response and ack */
    uint8_t req_flags;       /* header flags of the received request */
    uint8_t origin_id;       /* context id of the origin (target side) */
    atomic_bool resp_ref;    /* holds the reference a response is owed (target) */
    hg_op_id_t pull_op;      /* internal bulk pull in flight */
    struct hg_completion completion;
    /* Forward to self: the handle is its own target, as in Mercury (hg_self.c). */
    atomic_int self_state;     /* enum hg_self_state: read by HG_Cancel too */
    atomic_bool self_fwd_open; /* the forward waits for the local response */
    void *self_in;             /* the encoded input */
    hg_cb_t self_resp_cb;
    void *self_resp_arg;
    struct hg_completion self_completion; /* the handler, then the respond callback */
    struct hg_handle *cache_next;         /* in the context's cache of released handles */
    struct hgx_list live_link;            /* in context->live until released */

    /* Kept when a target handle is cached for reuse: from send_buf to the end
     * (hg_handle_reset clears every field before: keep it in step). NA message
     * buffers, allocated on first use. Origin: send = request (unexpected
     * size), recv = response (expected size). Target: recv = ack of a large
     * output, send = response. */
    void *send_buf, *send_plugin;
    size_t send_size;
    void *recv_buf, *recv_plugin;
    size_t recv_size;
    void *ack_buf, *ack_plugin; /* large-output acknowledgement */
    na_op_id_t *send_op, *recv_op, *ack_op;
    void *in_copy; /* target: copy of a request's input */
    size_t in_copy_cap;
};

/* Allocate a handle with refcount 1 on context (addr gets a new reference). */
hg_handle_t hg_handle_alloc(hg_context_t *context, hg_addr_t addr,
                            const struct hg_rpc_info *rpc, bool target);
/* Drop one reference; at 0 a target handle is kept for reuse, others freed. */
void hg_handle_release(hg_handle_t handle);
/* Release the handles of context the program forgot (none in progress);
 * returns how many. */
long hg_handle_release_forgotten(hg_context_t *context);
/* Free the released handles a context keeps for reuse. */
void hg_handle_cache_drain(hg_context_t *context);

/* Start an operation of n_ops NA sub-operations: takes a reference, sets
 * callback/op, clears state. The caller holds one more pending count, dropped
 * with hg_handle_op_done() once it posted them all; a sub-operation that
 * could not be posted is taken back with hg_handle_op_unpost(). */
void hg_handle_op_begin(hg_handle_t handle, enum hg_handle_op op, hg_cb_t callback,
                        void *arg, unsigned int n_ops);
/* Take back n sub-operations counted by op_begin that were not posted. */
void hg_handle_op_unpost(hg_handle_t handle, unsigned int n);
/* Record the outcome of one sub-operation; the first error wins. */
void hg_handle_op_error(hg_handle_t handle, hg_return_t ret);
/* One sub-operation finished: at zero pending the user callback is queued. */
void hg_handle_op_done(hg_handle_t handle);

/* Allocate an NA message buffer or op id at its first use (kept across reuse
 * of the handle). */
hg_return_t hg_handle_new_send(hg_handle_t handle, bool unexpected);
hg_return_t hg_handle_new_recv(hg_handle_t handle, bool unexpected);
hg_return_t hg_handle_new_op(hg_handle_t handle, na_op_id_t **op);

/* Make sure the handle has the NA message buffers / op ids it needs: inline,
 * since every forward and response asks and the answer is nearly always yes. */
static inline hg_return_t hg_handle_alloc_send(hg_handle_t handle, bool unexpected)
{
    return handle->send_buf ? HG_SUCCESS : hg_handle_new_send(handle, unexpected);
}

static inline hg_return_t hg_handle_alloc_recv(hg_handle_t handle, bool unexpected)
{
    return handle->recv_buf ? HG_SUCCESS : hg_handle_new_recv(handle, unexpected);
}

static inline hg_return_t hg_handle_ensure_op(hg_handle_t handle, na_op_id_t **op)
{
    return *op ? HG_SUCCESS : hg_handle_new_op(handle, op);
}

/* Bytes the class reserves before the payload this handle encodes (output at
 * the target, input at the origin), and before the one it decodes. */
static inline size_t hg_handle_encode_offset(hg_handle_t handle)
{
    hg_class_t *hg_class = handle->info.hg_class;
    return handle->target ? hg_class->out_offset : hg_class->in_offset;
}

static inline size_t hg_handle_decode_offset(hg_handle_t handle)
{
    hg_class_t *hg_class = handle->info.hg_class;
    return handle->target ? hg_class->in_offset : hg_class->out_offset;
}

/*
 * Encode struct_ptr with proc_cb at payload (room bytes), after the bytes the
 * class reserves (hg_handle_encode_offset). If it does not fit the whole
 * encoding moves to handle->extra_buf / extra_bulk (without the reserved bytes).
 * \param size_p [OUT] payload size: reserved + encoded bytes, or the extra size
 */
hg_return_t hg_handle_encode(hg_handle_t handle, hg_proc_cb_t proc_cb, void *struct_ptr,
                             void *payload, size_t room, size_t *size_p);
/* Free the extra buffer and its bulk handle. */
void hg_handle_free_extra(hg_handle_t handle);
/* Forget the decoded payload. */
void hg_handle_clear_decode(hg_handle_t handle);

/*
 * Serialize extra_bulk at payload, after the reserved bytes.
 * \param len_p [OUT] reserved + descriptor bytes
 * \return HG_SUCCESS or HG_OVERFLOW
 */
hg_return_t hg_handle_put_extra_desc(hg_handle_t handle, void *payload, size_t room,
                                     size_t *len_p);

/*
 * Pull an extra payload of size bytes described at desc (untrusted) from the
 * peer; done(handle) runs with its outcome. Holds one pending sub-operation.
 */
hg_return_t hg_handle_pull_extra(hg_handle_t handle, const void *desc, size_t desc_len,
                                 uint64_t size,
                                 void (*done)(hg_handle_t handle, hg_return_t ret));

/* Target side: a request arrived on context (buf is NA's receive buffer). */
void hg_target_receive(hg_context_t *context, const void *buf, size_t len,
                       na_addr_t *source);

/* Send a response carrying status (out_struct may be NULL for errors). */
hg_return_t hg_target_respond(hg_handle_t handle, hg_cb_t callback, void *arg,
                              void *out_struct, hg_return_t status);
/* Queue the handler of a target handle whose input is ready. */
void hg_target_dispatch(hg_handle_t handle);
/* Complete a respond locally (no message): the callback is queued. */
void hg_target_respond_local(hg_handle_t handle, hg_cb_t callback, void *arg);

/* Refresh a handle's registration if the registry changed since it was
 * taken (keeping the request's no-response flag); false if the RPC has no
 * handler now. Mercury looks the RPC up when it runs the handler. */
bool hg_target_rpc_current(hg_handle_t handle);
/* Start the user's handler on a handle (its reference is the handler's). */
void hg_target_run_handler(hg_handle_t handle);

/* Self forwarding (hg_self.c): the handler runs on the forwarded handle. */
hg_return_t hg_self_forward(hg_handle_t handle, hg_cb_t callback, void *arg,
                            void *in_struct);
/* Respond to a forward to self: the respond callback is queued, then the
 * forward completes (Mercury's order). */
hg_return_t hg_self_respond(hg_handle_t handle, hg_cb_t callback, void *arg,
                            void *out_struct);
/* Cancel a forward to self: it completes with HG_CANCELED unless answered. */
void hg_self_cancel(hg_handle_t handle);

/* Header flags for checksums the class asks for. */
static inline uint8_t hg_class_checksum_flags(const hg_class_t *hg_class)
{
    switch (hg_class->checksum_level) {
    case HG_CHECKSUM_RPC_HEADERS:
        return HG_HEADER_CHECKSUM;
    case HG_CHECKSUM_RPC_PAYLOAD:
        return HG_HEADER_CHECKSUM | HG_HEADER_CHECKSUM_PAYLOAD;
    default:
        return 0;
    }
}

#endif /* HG_HANDLE_H */
