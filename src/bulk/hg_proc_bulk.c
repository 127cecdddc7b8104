/*
 * hg_proc_bulk.c -- proc routine for hg_bulk_t: a length-prefixed descriptor.
 */
#include "mercury_proc_bulk.h"

#include "hgx_log.h"

#include <stdlib.h>

hg_return_t hg_proc_hg_bulk_t(hg_proc_t proc, void *data)
{
    hg_bulk_t *bulk_p = data;
    uint64_t len = 0;
    hg_return_t ret;

    if (!proc || !bulk_p)
        return HG_INVALID_ARG;
    switch (hg_proc_get_op(proc)) {
    case HG_ENCODE: {
        len = *bulk_p ? HG_Bulk_get_serialize_size(*bulk_p, 0) : 0;
        ret = hg_proc_uint64_t(proc, &len);
        if (ret != HG_SUCCESS || len == 0)
            return ret;
        void *buf = hg_proc_save_ptr(proc, len);
        if (!buf)
            return HG_NOMEM;
        ret = HG_Bulk_serialize(buf, len, 0, *bulk_p);
        hg_return_t ret2 = hg_proc_restore_ptr(proc, buf, len);
        return ret != HG_SUCCESS ? ret : ret2;
    }
    case HG_DECODE: {
        *bulk_p = HG_BULK_NULL;
        ret = hg_proc_uint64_t(proc, &len);
        if (ret != HG_SUCCESS || len == 0)
            return ret;
        if (len > hg_proc_get_size_left(proc)) {
            HGX_LOG_ERROR(PROC, "bulk descriptor of %llu bytes overruns the buffer",
                          (unsigned long long)len);
            return HG_OVERFLOW;
        }
        void *buf = hg_proc_save_ptr(proc, len);
        if (!buf)
            return HG_OVERFLOW;
        ret = HG_Bulk_deserialize(hg_proc_get_class(proc), bulk_p, buf, len);
        hg_return_t ret2 = hg_proc_restore_ptr(proc, buf, len);
        return ret != HG_SUCCESS ? ret : ret2;
    }
    case HG_FREE:
        ret = HG_Bulk_free(*bulk_p);
        *bulk_p = HG_BULK_NULL;
        return ret;
    default:
        return HG_INVALID_ARG;
    }
}
