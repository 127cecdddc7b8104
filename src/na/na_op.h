/*
 * na_op.h -- op id posting helpers shared by the NA core files (private).
 */
#ifndef NA_OP_H
#define NA_OP_H

#include "na_plugin.h"

/* Claim an IDLE op id for a new operation of the given type. */
na_return_t na_op_post_begin(na_class_t *na_class, na_context_t *context, na_op_id_t *op,
                             na_cb_type_t type, na_cb_t callback, void *arg);
/* Give back an op id the plugin refused to post. */
void na_op_post_abort(na_op_id_t *op);

#endif /* NA_OP_H */
