/*
 * na_core.h -- what the NA core's files (na.c, na_mem.c, ...) share: the class
 * check, the post wrapper, the address check and unreachable addresses.
 * Private to the core.
 */
#ifndef NA_CORE_H
#define NA_CORE_H

#include "na_op.h"

#define NA_CHECK_CLASS(cls, retval)                                                      \
    do {                                                                                 \
        if (!(cls)) {                                                                    \
            HGX_LOG_ERROR(NA, "NULL NA class");                                          \
            return retval;                                                               \
        }                                                                                \
    } while (0)

/* Names of the callback types, for log lines. */
extern const char *const na_cb_type_names[];

/* True if addr belongs to na_class; logs and returns false otherwise. */
bool na_addr_valid(na_class_t *na_class, na_addr_t *addr);

/* A new address (refcount 1) for name, a peer known to be absent: the core
 * answers for it (string, comparison) and frees it; no plugin sees it. */
na_return_t na_unreachable_new(na_class_t *na_class, const char *name,
                               na_addr_t **addr_p);

/* Post an op to an unreachable address: it completes with NA_HOSTUNREACH
 * through the context's queue, as a plugin's post to a peer found gone. */
na_return_t na_unreachable_post(na_class_t *na_class, na_context_t *context,
                                na_op_id_t *op, na_cb_type_t type, na_cb_t callback,
                                void *arg);

/* Begin an op, run the plugin's post call, and undo the begin if it fails. */
#define NA_POST(na_class, context, op, type, callback, arg, call)                        \
    do {                                                                                 \
        na_return_t ret_ = na_op_post_begin(na_class, context, op, type, callback, arg); \
        if (ret_ != NA_SUCCESS)                                                          \
            return ret_;                                                                 \
        ret_ = (call);                                                                   \
        if (ret_ != NA_SUCCESS) {                                                        \
            HGX_LOG_ERROR(NA, "could not post %s: %s", na_cb_type_names[type],           \
                          NA_Error_to_string(ret_));                                     \
            na_op_post_abort(op);                                                        \
        }                                                                                \
        return ret_;                                                                     \
    } while (0)

#endif
