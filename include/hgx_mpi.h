/**
 * @file hgx_mpi.h
 * hgx for MPI applications: initialize HG on the application's own MPI, and
 * turn hgx requests into MPI generalized requests so that one MPI_Waitall can
 * complete hgx operations together with the application's MPI requests.
 *
 * Installed only when libhgx was built with MPI. Compile with the same MPI
 * (mpicc) that libhgx was configured with.
 *
 * Threads and progress (read before using hgx_request_to_mpi):
 * - MPI never calls back into hgx while an application sits in MPI_Wait*, so
 *   hgx_request_to_mpi() starts one progress thread per HG context. It runs
 *   HG_Progress/HG_Trigger (and fires hgx deadlines) on that context as long
 *   as generalized requests made from it are outstanding (not yet completed
 *   and freed by MPI), then exits by itself. This needs MPI_THREAD_MULTIPLE.
 * - Progress on a context is serialized by a per-context lock inside hgx: the
 *   application may still call hgx_wait/hgx_test on its other requests of the
 *   same context while the thread runs (each call waits for the thread's
 *   current progress slice, at most ~10 ms). HG callbacks of that context,
 *   including RPC handlers on a server, may then run on the progress thread;
 *   the application must not call HG_Progress/HG_Trigger on that context
 *   directly while the thread runs.
 * - Call hgx_mpi_progress_stop() before HG_Context_destroy()/HG_Finalize().
 */
#ifndef HGX_MPI_H
#define HGX_MPI_H

#include "hgx.h"

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Initialize an HG class over MPI that the application owns (HG_Init() for an
 * MPI program; no MPI analogue).
 *
 * MPI must already be initialized by the application (MPI_Init or
 * MPI_Init_thread) and not finalized; hgx then neither initializes nor
 * finalizes MPI. The thread level reported by MPI_Query_thread must be at
 * least MPI_THREAD_SERIALIZED (the application then calls hgx and MPI from
 * one thread at a time); hgx_request_to_mpi() additionally needs
 * MPI_THREAD_MULTIPLE. Otherwise a log line names the problem and NULL is
 * returned.
 *
 * The NA layer uses a duplicate of @p comm (made inside this call, so the
 * application's own traffic on @p comm never matches hgx messages);
 * addresses are ranks in @p comm, e.g. "mpi+static://0".
 *
 * @param[in] comm   communicator the HG class runs on (e.g. MPI_COMM_WORLD);
 *               not MPI_COMM_NULL. Collective over @p comm for mpi+static.
 * @param[in] info   "mpi+static" or "mpi+dynamic"; any other info string is
 *               refused (NULL and an error log line): use HG_Init for
 *               ofi+ and ucx+ plugins.
 * @param[in] listen HG_TRUE for a server (listener), HG_FALSE for a client.
 * @return the class, to be released with HG_Finalize() (which leaves MPI
 *         initialized), or NULL on error.
 */
HG_PUBLIC hg_class_t *hgx_init_mpi(MPI_Comm comm, const char *info, hg_bool_t listen);

/**
 * Turn an active hgx request into an MPI generalized request
 * (MPI_Grequest_start, with hgx supplying the query, free and cancel functions).
 *
 * The returned @p mpi_req completes (MPI_Grequest_complete, called from the
 * hgx request's completion) when the hgx operation completes, and can be
 * completed with MPI_Wait/MPI_Test/MPI_Waitall/... together with any other
 * MPI request. Its MPI_Status holds:
 * - count: MPI_Status_set_elements_x with the byte count (status.count of
 *   hgx: bytes moved for bulk, 0 for RPCs); read it with MPI_Get_count or
 *   MPI_Get_elements_x and datatype MPI_BYTE;
 * - cancelled: the hgx cancelled flag (MPI_Test_cancelled); a request whose
 *   deadline (hgx_request_set_timeout) passed is cancelled;
 * - MPI_SOURCE: the peer's rank for forward/respond requests, MPI_UNDEFINED
 *   when unknown (bulk transfers); MPI_TAG: status.tag of hgx;
 * - MPI_ERROR: MPI_SUCCESS, or MPI_ERR_OTHER when the operation failed
 *   without being cancelled (MPI fills this field only where the MPI
 *   standard says it does, e.g. MPI_ERR_IN_STATUS). The query function
 *   itself always returns MPI_SUCCESS, so an hgx failure never raises an
 *   MPI error handler.
 *
 * MPI_Cancel on @p mpi_req has hgx_cancel called on the hgx request: the
 * cancel function only queues it and the progress thread calls hgx_cancel
 * within one progress slice (~10 ms), because hgx_cancel itself calls into
 * MPI (NA cancels its posted receive) and MPI may not be re-entered from
 * inside MPI_Cancel. MPI_Cancel stays local and returns at once; the rules
 * of hgx_cancel hold (either the cancel or the operation wins).
 *
 * Ownership: on success the hgx request belongs to the MPI request; the
 * caller must not use @p req again (no hgx_wait/hgx_test/hgx_cancel/
 * hgx_request_free). It is freed by MPI's free function when the MPI request
 * is completed and freed. For a forward, the RPC output is read afterwards
 * with HG_Get_output on the caller's handle, as usual.
 *
 * Progress: starts, once per HG context, the progress thread described at
 * the top of this file; it stops and is joined when no generalized request
 * of that context is outstanding, or by hgx_mpi_progress_stop().
 *
 * @param[in] req     an active, non-persistent hgx request (hgx_iforward,
 *                hgx_irespond, hgx_ibulk_transfer); HGX_REQUEST_NULL gives
 *                MPI_REQUEST_NULL.
 * @param[out] mpi_req receives the generalized request.
 * @return HG_SUCCESS; HG_INVALID_ARG for a NULL @p mpi_req, a persistent or
 *         inactive request; HG_OPNOTSUPPORTED when MPI is not initialized or
 *         the thread level is below MPI_THREAD_MULTIPLE (with a log line);
 *         HG_NOMEM / HG_PROTOCOL_ERROR when the thread or the MPI request
 *         cannot be created. On error @p req is left untouched and still
 *         belongs to the caller.
 */
HG_PUBLIC hg_return_t hgx_request_to_mpi(hgx_request_t req, MPI_Request *mpi_req);

/**
 * Stop and join the progress thread(s) started by hgx_request_to_mpi() (no
 * MPI analogue).
 *
 * The finalize hook: call it before HG_Context_destroy() of that context
 * (and before HG_Finalize()). Call it after every generalized request of the
 * context was completed and freed in MPI; if some are still outstanding a
 * warning is logged and the thread is stopped anyway: those requests then
 * no longer progress and their hgx requests are leaked.
 *
 * @param[in] ctx the context, or NULL for every context.
 * @return HG_SUCCESS (also when no thread was running).
 */
HG_PUBLIC hg_return_t hgx_mpi_progress_stop(hg_context_t *ctx);

#ifdef __cplusplus
}
#endif

#endif /* HGX_MPI_H */
