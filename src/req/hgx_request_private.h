/*
 * hgx_request_private.h -- the request object and its state machine (private).
 *
 *   INACTIVE --start--> ACTIVE --HG callback--> COMPLETE --wait/test--> freed
 *                                                         (persistent: INACTIVE)
 * A cancel (user or deadline) only asks HG to cancel; the outcome still comes
 * through the HG callback, which alone moves ACTIVE to COMPLETE.
 *
 * Completion is pushed, not polled: a wait/test call over a set registers the
 * set's requests in a waitset once, and each HG callback moves its request
 * from the waitset's pending list to its done list, so a wake-up costs O(1)
 * however many requests are outstanding.
 */
#ifndef HGX_REQUEST_PRIVATE_H
#define HGX_REQUEST_PRIVATE_H

#include "hgx.h"
#include "hgx_log.h"
#include "hgx_timer.h"

#include <pthread.h>

enum hgx_req_kind { HGX_REQ_FORWARD, HGX_REQ_RESPOND, HGX_REQ_BULK };
enum hgx_req_state { HGX_REQ_INACTIVE, HGX_REQ_ACTIVE, HGX_REQ_COMPLETE };

/* Per-context state; entries live until exit (a context re-created at the
 * same address reuses its entry). */
struct hgx_ctx_state {
    hg_context_t *ctx;
    pthread_mutex_t mu;       /* progress lock (recursive); HG callbacks run under it */
    pthread_mutex_t timer_mu; /* deadlines; taken after mu, never before */
    struct hgx_timer_heap deadlines;
    _Atomic bool any_deadline; /* some request of cs has a deadline armed */
    bool over_mpi;             /* the class is mpi+ (peers have ranks) */
    struct hgx_ctx_state *next;
};

/* Circular doubly linked list node; a list head is a node of its own. */
struct hgx_wlink {
    struct hgx_wlink *prev, *next;
};

/* The requests of one wait/test call (on the caller's stack). */
struct hgx_waitset {
    pthread_mutex_t mu; /* lists; taken after a context's mu */
    struct hgx_wlink pending, done;
};

struct hgx_request {
    enum hgx_req_kind kind;
    /* atomic: read by waiters without the context lock the callback holds */
    _Atomic(enum hgx_req_state) state;
    bool persistent;
    bool cancel_requested;
    bool timed_out;
    bool free_on_complete; /* hgx_request_free() while active */
    hg_context_t *ctx;
    struct hgx_ctx_state *cs;
    hg_handle_t handle; /* forward/respond: one reference held */
    void *in_struct;    /* persistent forward input */
    hg_op_id_t bulk_op;
    hg_size_t bulk_size;
    hg_bulk_op_t bulk_dir;
    hgx_status_t status;
    int peer_rank; /* status.source: MPI rank of an mpi+ peer, else -1 */
    struct hgx_timer timer;
    /* Waitset membership: changed with ws->mu held, and with cs->mu held too
     * while the request is active (its callback may run on another thread). */
    struct hgx_waitset *ws;
    struct hgx_wlink wlink;
    int ws_index;
    /* Set by the MPI interop layer: told once when the request completes. */
    void (*on_complete)(struct hgx_request *req);
    void *on_complete_arg;
};

/* Find or create the state of ctx; NULL (logged) when out of memory. */
struct hgx_ctx_state *hgx_ctx_state_get(hg_context_t *ctx);
/* Drive HG on a context for at most timeout_ms, firing its expired deadlines;
 * holds the context's progress lock meanwhile. */
void hgx_progress_cs(struct hgx_ctx_state *cs, unsigned int timeout_ms);
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
/* Called with r->cs->mu held when a registered request completes or is
 * destroyed: move it to its waitset's done list, or drop it from the set. */
void hgx_waitset_completed(hgx_request_t r);
void hgx_waitset_drop(hgx_request_t r);

#endif /* HGX_REQUEST_PRIVATE_H */
