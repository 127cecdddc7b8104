/*
 * hgx_request_private.h -- the request object and its state machine (private).
 *
 *   INACTIVE --start--> ACTIVE --HG callback--> COMPLETE --wait/test--> freed
 *                                                         (persistent: INACTIVE)
 * A cancel (user or deadline) only asks HG to cancel; the outcome still comes
 * through the HG callback, which alone moves ACTIVE to COMPLETE.
 */
#ifndef HGX_REQUEST_PRIVATE_H
#define HGX_REQUEST_PRIVATE_H

#include "hgx.h"
#include "hgx_log.h"
#include "hgx_timer.h"

enum hgx_req_kind { HGX_REQ_FORWARD, HGX_REQ_RESPOND, HGX_REQ_BULK };
enum hgx_req_state { HGX_REQ_INACTIVE, HGX_REQ_ACTIVE, HGX_REQ_COMPLETE };

struct hgx_request {
    enum hgx_req_kind kind;
    enum hgx_req_state state;
    bool persistent;
    bool cancel_requested;
    bool timed_out;
    bool free_on_complete; /* hgx_request_free() while active */
    hg_context_t *ctx;
    hg_handle_t handle; /* forward/respond: one reference held */
    void *in_struct;    /* persistent forward input */
    hg_op_id_t bulk_op;
    hg_size_t bulk_size;
    hg_bulk_op_t bulk_dir;
    hgx_status_t status;
    int peer_rank; /* status.source: MPI rank of an mpi+ peer, else -1 */
    struct hgx_timer timer;
    /* Set by the MPI interop layer: told once when the request completes. */
    void (*on_complete)(struct hgx_request *req);
    void *on_complete_arg;
};

/* Drive HG on ctx for at most timeout_ms, firing expired deadlines; holds
 * the context's progress lock meanwhile. */
void hgx_progress(hg_context_t *ctx, unsigned int timeout_ms);
/* The per-context progress lock (recursive; HG callbacks of ctx run with
 * it held when they run from hgx_progress). */
void hgx_ctx_lock(hg_context_t *ctx);
void hgx_ctx_unlock(hg_context_t *ctx);
/* Release a completed request: free it, or make a persistent one inactive. */
void hgx_request_retire(hgx_request_t *req, hgx_status_t *status);
/* Fill status as for a null or inactive request. */
void hgx_status_empty(hgx_status_t *status);
/* True if *req is null or an inactive persistent request. */
bool hgx_request_is_idle(hgx_request_t req);

#endif /* HGX_REQUEST_PRIVATE_H */
