/**
 * \file mercury_request.h
 * Request emulation: wait on a callback-based operation
 * with a timeout, driven by user-supplied progress and trigger functions.
 * Names, signatures and semantics follow Mercury 2.4.1. As there, a request
 * cannot be waited on from inside a callback that HG_Trigger() runs.
 *
 * Threads: the completed flag is atomic, so a request may be completed on one
 * thread (a callback) while another waits on it; the progress and trigger
 * functions given to hg_request_init() must be safe to call from every
 * thread that waits.
 */
#ifndef MERCURY_REQUEST_H
#define MERCURY_REQUEST_H

#include "mercury_config.h"

#ifndef HG_UTIL_SUCCESS
#define HG_UTIL_SUCCESS 0 /**< success of the hg_request_* calls (mercury_util's) */
#define HG_UTIL_FAIL -1   /**< failure of the hg_request_* calls (mercury_util's) */
#endif

typedef struct hg_request_class hg_request_class_t; /**< opaque request class */
typedef struct hg_request hg_request_t;             /**< opaque request */

/**
 * Make progress for at most timeout ms.
 * \return HG_UTIL_SUCCESS if something progressed, HG_UTIL_FAIL otherwise
 */
typedef int (*hg_request_progress_func_t)(unsigned int timeout, void *arg);

/**
 * Run completion callbacks for at most timeout ms; set *flag if one ran.
 * \return HG_UTIL_SUCCESS if one ran, HG_UTIL_FAIL otherwise
 */
typedef int (*hg_request_trigger_func_t)(unsigned int timeout, unsigned int *flag,
                                         void *arg);

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Create a request class whose hg_request_wait() calls progress and trigger.
 * \param[in] progress progress function
 * \param[in] trigger trigger function
 * \param[in] arg passed to both
 * \return the class, or NULL (no memory, or a NULL function)
 */
HG_PUBLIC hg_request_class_t *hg_request_init(hg_request_progress_func_t progress,
                                              hg_request_trigger_func_t trigger,
                                              void *arg);

/**
 * Free a request class (NULL is ignored).
 * \param[in] request_class class
 * \param[out] arg optional: receives the arg given to hg_request_init()
 */
HG_PUBLIC void hg_request_finalize(hg_request_class_t *request_class, void **arg);

/**
 * Create a request (not completed).
 * \param[in] request_class request class
 * \return the request, or NULL
 */
HG_PUBLIC hg_request_t *hg_request_create(hg_request_class_t *request_class);

/**
 * Free a request.
 * \param[in] request request
 */
HG_PUBLIC void hg_request_destroy(hg_request_t *request);

/**
 * Mark a request completed (usually from an operation's callback).
 * \param[in] request request
 */
HG_PUBLIC void hg_request_complete(hg_request_t *request);

/**
 * Mark a request not completed so it can be reused.
 * \param[in] request request
 */
HG_PUBLIC void hg_request_reset(hg_request_t *request);

/**
 * Trigger, then progress and trigger, until the request completes or timeout
 * ms passed; a timeout of 0 still progresses once without blocking.
 * \param[in] request request
 * \param[in] timeout milliseconds
 * \param[out] flag 1 if completed, 0 if not (optional)
 * \return HG_UTIL_SUCCESS, HG_UTIL_FAIL (NULL request)
 */
HG_PUBLIC int hg_request_wait(hg_request_t *request, unsigned int timeout,
                              unsigned int *flag);

/**
 * hg_request_wait() on each of count requests, sharing one timeout.
 * \param[in] count number of requests
 * \param[in] request the requests
 * \param[in] timeout milliseconds, shared by all the waits
 * \param[out] flag 1 if all completed (optional)
 * \return HG_UTIL_SUCCESS, HG_UTIL_FAIL
 */
HG_PUBLIC int hg_request_waitall(int count, hg_request_t *request[], unsigned int timeout,
                                 unsigned int *flag);

/**
 * Attach user data to a request.
 * \param[in] request request
 * \param[in] data user data
 */
HG_PUBLIC void hg_request_set_data(hg_request_t *request, void *data);

/**
 * Get the user data of a request.
 * \param[in] request request
 * \return data attached with hg_request_set_data(), or NULL
 */
HG_PUBLIC void *hg_request_get_data(hg_request_t *request);

#ifdef __cplusplus
}
#endif

#endif /* MERCURY_REQUEST_H */
