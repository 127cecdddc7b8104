/*
 * na_op.h -- op id posting helpers shared by the NA core files (private).
 */
#ifndef NA_OP_H
#define NA_OP_H

#include "na_plugin.h"

#include <string.h>

/* A post or completion happened since NA_Poll_wait last read the clock: it
 * dates the activity that keeps a waiting process spinning (na_op.c). */
extern atomic_bool na_active;

static inline void na_activity_note(void)
{
    if (!atomic_load_explicit(&na_active, memory_order_relaxed))
        atomic_store_explicit(&na_active, true, memory_order_relaxed);
}

/* Log why op could not be claimed and return the error. */
__attribute__((cold)) na_return_t
na_op_post_refuse(na_class_t *na_class, na_context_t *context, na_op_id_t *op);

/* Claim an IDLE op id for a new operation of the given type. Every post
 * passes here: inline, its checks one predicted branch, the refusal out of
 * line. The state check is a plain load, not a compare-and-swap: posting one
 * op id from two threads at once is a caller bug that no NA implementation
 * guards. */
static inline na_return_t na_op_post_begin(na_class_t *na_class, na_context_t *context,
                                           na_op_id_t *op, na_cb_type_t type,
                                           na_cb_t callback, void *arg)
{
    if (__builtin_expect(!op || op == (na_op_id_t *)1 || op->na_class != na_class ||
                             context->na_class != na_class ||
                             atomic_load_explicit(&op->state, memory_order_acquire) !=
                                 NA_OP_IDLE,
                         0))
        return na_op_post_refuse(na_class, context, op);
    atomic_store_explicit(&op->state, NA_OP_POSTED, memory_order_relaxed);
    op->context = context;
    op->callback = callback;
    memset(&op->info, 0, sizeof(op->info));
    op->info.arg = arg;
    op->info.type = type;
    hgx_ulong_add(&context->n_posted, 1, na_class->single);
    na_activity_note();
    return NA_SUCCESS;
}

/* Give back an op id the plugin refused to post. */
void na_op_post_abort(na_op_id_t *op);

#endif /* NA_OP_H */
