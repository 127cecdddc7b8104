/**
 * \file hgx.h
 * MPI-style request objects over HG operations.
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
 *
 * Threads: different threads may issue, wait on and test different requests
 * concurrently, also on one context. One thread at a time
 * drives progress on a context (a per-context lock), so callbacks of a
 * context never run concurrently. A request may be in one wait or test call
 * at a time; the same request in two concurrent calls (or twice in one array)
 * is refused with HG_INVALID_ARG.
 *
 * Each call names its MPI analogue in its description.
 */
#ifndef HGX_H
#define HGX_H

#include "mercury.h"
#include "mercury_bulk.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Handle of one hgx operation, the counterpart of MPI_Request. Opaque; a
 * completed non-persistent request is freed and set to HGX_REQUEST_NULL by the
 * wait/test call that completes it.
 */
typedef struct hgx_request *hgx_request_t;
/** The null request (MPI_REQUEST_NULL): wait/test calls complete it at once. */
#define HGX_REQUEST_NULL ((hgx_request_t)0)
/** "No request was active" in index and count results (MPI_UNDEFINED). */
#define HGX_UNDEFINED (-32766)

/** Outcome of a completed request (MPI_Status). */
typedef struct hgx_status {
    hg_return_t error;  /**< outcome; HG_TIMEOUT when a deadline cancelled it */
    hg_size_t count;    /**< bytes moved by a bulk transfer; 0 for RPCs */
    int source;         /**< MPI rank of the peer for mpi+, else -1 */
    int tag;            /**< RPC id low bits or bulk op; informational */
    int hgx_cancelled_; /**< read only through hgx_test_cancelled */
} hgx_status_t;

/** Pass instead of a status to discard it (MPI_STATUS_IGNORE). */
#define HGX_STATUS_IGNORE ((hgx_status_t *)0)
/** Pass instead of a status array to discard them (MPI_STATUSES_IGNORE). */
#define HGX_STATUSES_IGNORE ((hgx_status_t *)0)

/**
 * Forward an RPC as a request (MPI_Isend): HG_Forward() with an internal
 * completion callback. The handle gains a reference for the life of the
 * request. After completion, HG_Get_output() on the handle reads the response.
 * \param[in] h         handle from HG_Create(), idle
 * \param[in] in_struct input, encoded before the call returns
 * \param[out] req      the active request; not valid on error
 * \return HG_SUCCESS; HG_INVALID_ARG (NULL h or req, invalid handle); HG_NOMEM;
 *         or the error of HG_Forward() (HG_BUSY when the handle has an
 *         operation pending, encode and NA errors)
 */
HG_PUBLIC hg_return_t hgx_iforward(hg_handle_t h, void *in_struct, hgx_request_t *req);

/**
 * Respond to an RPC as a request, at the target: HG_Respond() with an internal
 * completion callback.
 * \param[in] h          handle the RPC handler received
 * \param[in] out_struct output, encoded before the call returns
 * \param[out] req       the active request; not valid on error
 * \return HG_SUCCESS; HG_INVALID_ARG (NULL h or req, invalid handle); HG_NOMEM;
 *         or the error of HG_Respond()
 */
HG_PUBLIC hg_return_t hgx_irespond(hg_handle_t h, void *out_struct, hgx_request_t *req);

/**
 * Start a bulk transfer as a request (MPI_Rget / MPI_Rput): HG_Bulk_transfer()
 * with an internal completion callback. status.count is the number of bytes
 * moved. The parameters are those of HG_Bulk_transfer().
 * \param[in] ctx           context whose progress completes the transfer
 * \param[in] op            HG_BULK_PULL (read the origin) or HG_BULK_PUSH
 * \param[in] origin_addr   address of the process owning @p origin
 * \param[in] origin        remote bulk handle (deserialized from the RPC)
 * \param[in] origin_offset offset in @p origin
 * \param[in] local         local bulk handle
 * \param[in] local_offset  offset in @p local
 * \param[in] size          bytes to move
 * \param[out] req          the active request; not valid on error
 * \return HG_SUCCESS; HG_INVALID_ARG (NULL ctx or req); HG_NOMEM; or the error
 *         of HG_Bulk_transfer() (HG_INVALID_ARG out of bounds, HG_PERMISSION,
 *         NA errors)
 */
HG_PUBLIC hg_return_t hgx_ibulk_transfer(hg_context_t *ctx, hg_bulk_op_t op,
                                         hg_addr_t origin_addr, hg_bulk_t origin,
                                         hg_size_t origin_offset, hg_bulk_t local,
                                         hg_size_t local_offset, hg_size_t size,
                                         hgx_request_t *req);

/**
 * Create an inactive persistent forward request (MPI_Send_init); hgx_start()
 * issues it, and each completion makes it inactive again instead of freeing
 * it. Release it with hgx_request_free().
 * \param[in] h         handle from HG_Create(); gains a reference until the
 *                      request is freed
 * \param[in] in_struct input; must stay valid while the request exists, as it
 *                      is encoded again at each start
 * \param[out] req      the inactive request
 * \return HG_SUCCESS; HG_INVALID_ARG (NULL h or req, invalid handle); HG_NOMEM
 */
HG_PUBLIC hg_return_t hgx_forward_init(hg_handle_t h, void *in_struct,
                                       hgx_request_t *req);

/**
 * Start an inactive persistent request (MPI_Start).
 * \param[in,out] req request from hgx_forward_init()
 * \return HG_SUCCESS; HG_INVALID_ARG (NULL, not persistent); HG_BUSY (already
 *         active); or the error of HG_Forward() (the request stays inactive)
 */
HG_PUBLIC hg_return_t hgx_start(hgx_request_t *req);

/**
 * hgx_start() on each of count requests, in order (MPI_Startall); stops at the
 * first error, leaving the later requests inactive.
 * \param[in] count     number of requests (>= 0)
 * \param[in,out] reqs  persistent requests
 * \return HG_SUCCESS; HG_INVALID_ARG (negative count, NULL array); or the
 *         first error of hgx_start()
 */
HG_PUBLIC hg_return_t hgx_startall(int count, hgx_request_t reqs[]);

/**
 * Give an active request a deadline (no MPI analogue): when timeout_ms elapses
 * before it completes, it is cancelled and completes with status error
 * HG_TIMEOUT and the cancelled flag set. Deadlines are kept per context: O(1)
 * when set in expiry order, O(log n) otherwise. Setting a deadline again
 * replaces the previous one.
 * \param[in] req        active request
 * \param[in] timeout_ms milliseconds from now; 0 removes the deadline
 * \return HG_SUCCESS; HG_INVALID_ARG (null or inactive request); HG_NOMEM
 */
HG_PUBLIC hg_return_t hgx_request_set_timeout(hgx_request_t req, unsigned int timeout_ms);

/**
 * Wait for a request to complete (MPI_Wait), driving progress on its context,
 * then free it and set it to HGX_REQUEST_NULL (a persistent one becomes
 * inactive). A null or inactive request completes at once with an empty status.
 * \param[in,out] req request
 * \param[out] status outcome, or HGX_STATUS_IGNORE
 * \return HG_SUCCESS (the operation's own outcome is in status->error);
 *         HG_INVALID_ARG (NULL req)
 */
HG_PUBLIC hg_return_t hgx_wait(hgx_request_t *req, hgx_status_t *status);

/**
 * hgx_wait() bounded by timeout_ms (no MPI analogue; between MPI_Wait and
 * MPI_Test).
 * \param[in,out] req     request
 * \param[in] timeout_ms  longest wait in milliseconds; UINT_MAX waits forever
 * \param[out] status     outcome, or HGX_STATUS_IGNORE; untouched on HG_TIMEOUT
 * \return HG_SUCCESS when completed; HG_TIMEOUT when not (the request stays
 *         active and untouched); HG_INVALID_ARG (NULL req)
 */
HG_PUBLIC hg_return_t hgx_wait_timeout(hgx_request_t *req, unsigned int timeout_ms,
                                       hgx_status_t *status);

/**
 * Make progress once without blocking and check the request (MPI_Test). When
 * it completed it is freed or made inactive, as with hgx_wait().
 * \param[in,out] req request
 * \param[out] flag   1 when the request completed (also for a null or
 *                    inactive one), 0 otherwise
 * \param[out] status outcome when *flag is 1, or HGX_STATUS_IGNORE
 * \return HG_SUCCESS; HG_INVALID_ARG (NULL req or flag)
 */
HG_PUBLIC hg_return_t hgx_test(hgx_request_t *req, int *flag, hgx_status_t *status);

/**
 * Wait for every request of the array (MPI_Waitall); null and inactive entries
 * count as completed.
 * \param[in] count        number of requests (>= 0)
 * \param[in,out] reqs     requests; each completed one is freed or made inactive
 * \param[out] statuses    count statuses, or HGX_STATUSES_IGNORE
 * \return HG_SUCCESS; HG_INVALID_ARG (negative count, NULL array, a request
 *         twice in the array or in a concurrent wait/test call: nothing is
 *         changed then)
 */
HG_PUBLIC hg_return_t hgx_waitall(int count, hgx_request_t reqs[],
                                  hgx_status_t statuses[]);

/**
 * Wait for any one request of the array to complete (MPI_Waitany).
 * \param[in] count     number of requests (>= 0)
 * \param[in,out] reqs  requests; the completed one is freed or made inactive
 * \param[out] index    its position, or HGX_UNDEFINED when no request is
 *                      active (the status is then empty)
 * \param[out] status   its outcome, or HGX_STATUS_IGNORE
 * \return HG_SUCCESS; HG_INVALID_ARG (negative count, NULL array or index, a
 *         request twice in the array or in a concurrent wait/test call)
 */
HG_PUBLIC hg_return_t hgx_waitany(int count, hgx_request_t reqs[], int *index,
                                  hgx_status_t *status);

/**
 * Wait until at least one request completes and return all that completed
 * (MPI_Waitsome).
 * \param[in] incount     number of requests (>= 0)
 * \param[in,out] reqs    requests; the completed ones are freed or made inactive
 * \param[out] outcount   number of completed requests, or HGX_UNDEFINED when
 *                        no request is active
 * \param[out] indices    positions of the completed requests, in increasing
 *                        order (room for incount)
 * \param[out] statuses   their outcomes in the same order, or
 *                        HGX_STATUSES_IGNORE
 * \return HG_SUCCESS; HG_INVALID_ARG (negative count, NULL array, outcount or
 *         indices, a request twice in the array or in a concurrent call)
 */
HG_PUBLIC hg_return_t hgx_waitsome(int incount, hgx_request_t reqs[], int *outcount,
                                   int indices[], hgx_status_t statuses[]);

/**
 * Make progress once and check whether every request completed (MPI_Testall).
 * Only when all did are they released and their statuses filled; otherwise
 * none is touched.
 * \param[in] count      number of requests (>= 0)
 * \param[in,out] reqs   requests
 * \param[out] flag      1 if all completed, 0 otherwise
 * \param[out] statuses  count statuses when *flag is 1, or HGX_STATUSES_IGNORE
 * \return HG_SUCCESS; HG_INVALID_ARG (negative count, NULL array or flag, a
 *         request twice in the array or in a concurrent call)
 */
HG_PUBLIC hg_return_t hgx_testall(int count, hgx_request_t reqs[], int *flag,
                                  hgx_status_t statuses[]);

/**
 * Make progress once and check for any completed request (MPI_Testany).
 * \param[in] count     number of requests (>= 0)
 * \param[in,out] reqs  requests; a completed one is freed or made inactive
 * \param[out] index    position of the completed request; HGX_UNDEFINED when
 *                      none completed or none is active
 * \param[out] flag     1 when one completed or no request is active, else 0
 * \param[out] status   outcome of the completed request (empty if none), or
 *                      HGX_STATUS_IGNORE
 * \return HG_SUCCESS; HG_INVALID_ARG (negative count, NULL array, index or
 *         flag, a request twice in the array or in a concurrent call)
 */
HG_PUBLIC hg_return_t hgx_testany(int count, hgx_request_t reqs[], int *index, int *flag,
                                  hgx_status_t *status);

/**
 * Ask for a request to be cancelled (MPI_Cancel); local and immediate: it
 * never waits for the peer. Complete the request with a wait or test call
 * afterwards; hgx_test_cancelled() on its status tells whether the cancel won
 * (the operation had no visible effect) or the operation completed in full.
 * Cancelling a null, inactive or completed request, or one already being
 * cancelled, does nothing.
 * \param[in] req request
 * \return HG_SUCCESS; HG_INVALID_ARG (NULL req)
 */
HG_PUBLIC hg_return_t hgx_cancel(hgx_request_t *req);

/**
 * Tell whether the request a status belongs to was cancelled
 * (MPI_Test_cancelled), by hgx_cancel() or by its deadline.
 * \param[in] status status filled by a wait or test call
 * \param[out] flag  1 if cancelled, 0 otherwise
 * \return HG_SUCCESS; HG_INVALID_ARG (NULL status or flag)
 */
HG_PUBLIC hg_return_t hgx_test_cancelled(const hgx_status_t *status, int *flag);

/**
 * Bytes the operation moved (MPI_Get_count with MPI_BYTE): status->count,
 * the size of a completed bulk transfer, 0 for RPCs and failed operations.
 * \param[in] status status filled by a wait or test call
 * \param[out] count the byte count
 * \return HG_SUCCESS; HG_INVALID_ARG (NULL status or count)
 */
HG_PUBLIC hg_return_t hgx_get_count(const hgx_status_t *status, hg_size_t *count);

/**
 * Free a request and set it to HGX_REQUEST_NULL (MPI_Request_free). An active
 * request is not cancelled: it completes in the background and is released
 * then; its outcome is lost.
 * \param[in,out] req request; HGX_REQUEST_NULL is accepted
 * \return HG_SUCCESS; HG_INVALID_ARG (NULL req)
 */
HG_PUBLIC hg_return_t hgx_request_free(hgx_request_t *req);

/**
 * One environment parameter the library reads (hgx_param_get_info()).
 * Strings point into the library and stay valid until the program exits,
 * except \c value, which is the environment's and changes with it.
 */
struct hgx_param_info {
    const char *name;  /**< the environment variable */
    const char *scope; /**< "core", or the NA plugin that reads it ("ofi", ...) */
    const char *type;  /**< "int", "bool", "size" (bytes, k/m/g suffix) or "string" */
    const char *help;  /**< one line: what it changes */
    const char *value; /**< the variable's current text; NULL when unset */
    long long def;     /**< default of an int, size or bool (0/1) parameter */
    long long min;     /**< lowest accepted value of an int or size parameter */
    long long max;     /**< highest accepted value of an int or size parameter */
    const char *def_string; /**< default of a string parameter (may be NULL) */
};

/**
 * Describe the index-th parameter the library reads from the environment:
 * the core's first, then each built NA plugin's. Parameters are read when a
 * class is initialized; a value out of range is logged and the default used.
 * Iterate from 0 until HG_NOENTRY. No MPI analogue (MPI_T_cvar_get_info is
 * the closest). Thread-safe; needs no initialized class.
 * \param[in] index  position in the list, from 0
 * \param[out] info  the description
 * \return HG_SUCCESS; HG_NOENTRY (index past the last parameter);
 *         HG_INVALID_ARG (NULL info)
 */
HG_PUBLIC hg_return_t hgx_param_get_info(unsigned int index, struct hgx_param_info *info);

#ifdef __cplusplus
}
#endif

#endif /* HGX_H */
