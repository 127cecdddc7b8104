/*
 * na_unreachable.c -- addresses of peers known to be absent: a Mercury SM
 * name ("na+sm://PID-ID") with no live class behind it. Mercury's lookup of
 * such a name succeeds and the first operation fails (Margo's comm_unreachable
 * counts on it), so the core makes an address of its own that no plugin
 * sees, and fails every post to it through the completion queue, as a
 * plugin fails its posts to a peer found gone.
 */
#include "na_core.h"

#include <stdlib.h>
#include <string.h>

na_return_t na_unreachable_new(na_class_t *na_class, const char *name, na_addr_t **addr_p)
{
    size_t len = strlen(name) + 1;
    na_addr_t *addr = malloc(sizeof(*addr) + len);

    if (!addr)
        return NA_NOMEM;
    na_addr_init(na_class, addr);
    addr->unreachable = memcpy(addr + 1, name, len);
    *addr_p = addr;
    return NA_SUCCESS;
}

na_return_t na_unreachable_post(na_class_t *na_class, na_context_t *context,
                                na_op_id_t *op, na_cb_type_t type, na_cb_t callback,
                                void *arg)
{
    na_return_t ret = na_op_post_begin(na_class, context, op, type, callback, arg);
    if (ret == NA_SUCCESS)
        na_op_complete(op, NA_HOSTUNREACH);
    return ret;
}
