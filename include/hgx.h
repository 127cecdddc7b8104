/*
 * hgx.h -- MPI-style request objects over HG operations.
 *
 * Every HG operation (forward, respond, bulk transfer) can be issued as a
 * request and completed with the wait/test families, as MPI_Isend requests
 * are. Semantics follow MPI-4.1 section 4.8.4 (MPI_CANCEL):
 *  - completion calls free a non-persistent request and set it to
 *    HGX_REQUEST_NULL; a persistent one becomes inactive and can be started
 *    again, also after a cancel;
 *  - null and inactive requests complete at once with an empty status;
 *  - hgx_cancel() is local and returns at once; either the cancel succeeds
 *    (hgx_test_cancelled() says so and the operation had no visible effect)
 *    or the operation completes in full, never both.
 *
 * Progress: the wait/test calls drive HG_Progress()/HG_Trigger() on the
 * request's context, so a program that waits on requests needs no other
 * progress loop. Callbacks of other HG operations on that context run too.
 */
#ifndef HGX_H
#define HGX_H

#include "mercury.h"
#include "mercury_bulk.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hgx_request *hgx_request_t; /**< opaque, like MPI_Request */
#define HGX_REQUEST_NULL ((hgx_request_t)0)
#define HGX_UNDEFINED (-32766)

/** Outcome of a completed request. */
typedef struct hgx_status {
    hg_return_t error;  /**< outcome; HG_TIMEOUT when a deadline cancelled it */
    hg_size_t count;    /**< bytes moved (bulk) or payload bytes (RPC) */
    int source;         /**< MPI rank of the peer for mpi+, else -1 */
    int tag;            /**< RPC id low bits or bulk op; informational */
    int hgx_cancelled_; /**< read only through hgx_test_cancelled */
} hgx_status_t;

#define HGX_STATUS_IGNORE ((hgx_status_t *)0)
#define HGX_STATUSES_IGNORE ((hgx_status_t *)0)

/**
 * Forward an RPC as a request (HG_Forward with an internal callback).
 * The handle gains a reference for the life of the request.
 * \param h [IN] handle from HG_Create()
 * \param in_struct [IN] input, encoded before the call returns
 * \param req [OUT] the active request
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_NOMEM, or HG_Forward's error
 */
HG_PUBLIC hg_return_t hgx_iforward(hg_handle_t h, void *in_struct, hgx_request_t *req);

/**
 * Respond to an RPC as a request (HG_Respond with an internal callback).
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_NOMEM, or HG_Respond's error
 */
HG_PUBLIC hg_return_t hgx_irespond(hg_handle_t h, void *out_struct, hgx_request_t *req);

/**
 * Start a bulk transfer as a request (HG_Bulk_transfer). status.count is the
 * number of bytes moved.
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_NOMEM, or HG_Bulk_transfer's error
 */
HG_PUBLIC hg_return_t hgx_ibulk_transfer(hg_context_t *ctx, hg_bulk_op_t op,
                                         hg_addr_t origin_addr, hg_bulk_t origin,
                                         hg_size_t origin_offset, hg_bulk_t local,
                                         hg_size_t local_offset, hg_size_t size,
                                         hgx_request_t *req);

/**
 * Create an inactive persistent forward request; hgx_start() issues it.
 * in_struct must stay valid while the request exists (it is encoded at each start).
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_NOMEM
 */
HG_PUBLIC hg_return_t hgx_forward_init(hg_handle_t h, void *in_struct,
                                       hgx_request_t *req);

/**
 * Start an inactive persistent request.
 * \return HG_SUCCESS, HG_INVALID_ARG (null, not persistent), HG_BUSY (already active)
 */
HG_PUBLIC hg_return_t hgx_start(hgx_request_t *req);

/** hgx_start() on each of count requests; stops at the first error. */
HG_PUBLIC hg_return_t hgx_startall(int count, hgx_request_t reqs[]);

/**
 * Give an active request a deadline: when timeout_ms elapses before it
 * completes, it is cancelled and completes with status error HG_TIMEOUT and
 * the cancelled flag set. Deadlines are kept per context: O(1) when set in
 * expiry order, O(log n) otherwise.
 * timeout_ms 0 removes the deadline.
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_NOMEM
 */
HG_PUBLIC hg_return_t hgx_request_set_timeout(hgx_request_t req, unsigned int timeout_ms);

/**
 * Wait for a request to complete, then free it (or make it inactive).
 * \param status [OUT] outcome, or HGX_STATUS_IGNORE
 * \return HG_SUCCESS (the outcome itself is in status->error), HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t hgx_wait(hgx_request_t *req, hgx_status_t *status);

/**
 * hgx_wait() bounded by timeout_ms.
 * \return HG_SUCCESS when completed, HG_TIMEOUT when not (the request stays active)
 */
HG_PUBLIC hg_return_t hgx_wait_timeout(hgx_request_t *req, unsigned int timeout_ms,
                                       hgx_status_t *status);

/**
 * Make progress once and check: *flag is 1 when the request completed (it is
 * then freed or inactive, as with hgx_wait()), 0 otherwise.
 */
HG_PUBLIC hg_return_t hgx_test(hgx_request_t *req, int *flag, hgx_status_t *status);

/** Wait for all; statuses may be HGX_STATUSES_IGNORE. */
HG_PUBLIC hg_return_t hgx_waitall(int count, hgx_request_t reqs[],
                                  hgx_status_t statuses[]);

/**
 * Wait for any one; *index is its position, or HGX_UNDEFINED when no request
 * is active (the status is then empty).
 */
HG_PUBLIC hg_return_t hgx_waitany(int count, hgx_request_t reqs[], int *index,
                                  hgx_status_t *status);

/**
 * Wait until at least one completes; all completed ones are returned in
 * indices[0..*outcount). *outcount is HGX_UNDEFINED when no request is active.
 */
HG_PUBLIC hg_return_t hgx_waitsome(int incount, hgx_request_t reqs[], int *outcount,
                                   int indices[], hgx_status_t statuses[]);

/** *flag is 1 (and all are completed and released) only if all completed. */
HG_PUBLIC hg_return_t hgx_testall(int count, hgx_request_t reqs[], int *flag,
                                  hgx_status_t statuses[]);

/**
 * Test for any one: *flag 1 and *index set when one completed; *flag 1 and
 * *index HGX_UNDEFINED when no request is active.
 */
HG_PUBLIC hg_return_t hgx_testany(int count, hgx_request_t reqs[], int *index, int *flag,
                                  hgx_status_t *status);

/**
 * Ask for a request to be cancelled; local and immediate. Complete it with a
 * wait or test call afterwards; hgx_test_cancelled() tells the outcome.
 * Cancelling a null, inactive or completed request does nothing.
 */
HG_PUBLIC hg_return_t hgx_cancel(hgx_request_t *req);

/** *flag = 1 if the request whose status this is was cancelled. */
HG_PUBLIC hg_return_t hgx_test_cancelled(const hgx_status_t *status, int *flag);

/** *count = bytes the operation moved (status->count). */
HG_PUBLIC hg_return_t hgx_get_count(const hgx_status_t *status, hg_size_t *count);

/**
 * Free a request and set it to HGX_REQUEST_NULL. An active request is not
 * cancelled: it completes in the background and is released then.
 */
HG_PUBLIC hg_return_t hgx_request_free(hgx_request_t *req);

#ifdef __cplusplus
}
#endif

#endif /* HGX_H */
