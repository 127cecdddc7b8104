/*
 * hg_proc_bulk.c -- proc routine for hg_bulk_t: a length-prefixed descriptor.
 * When the processor allows it (HG_PROC_BULK_EAGER: the class does not set
 * no_bulk_eager and the peer is not this process), the data of a readable
 * handle (read-only or read-write) goes inside the descriptor if all of it
 * fits in what is left of the buffer, so that the peer's pull needs no RMA.
 * This is Mercury's rule, kept with its consequence: a peer's pull from an
 * embedded read-write handle reads the bytes taken at encoding, even after a
 * push into the handle (the push itself goes to the owner's memory).
 */
#include "mercury_proc_bulk.h"

#include "bulk_internal.h"

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
        unsigned long flags = 0;
        if (*bulk_p && (hg_proc_get_flags(proc) & HG_PROC_BULK_EAGER)) {
            len = HG_Bulk_get_serialize_size(*bulk_p, HG_BULK_EAGER);
            if (hg_proc_get_size_left(proc) >= len + sizeof(len))
                flags = HG_BULK_EAGER;
        }
        if (!flags)
            len = *bulk_p ? HG_Bulk_get_serialize_size(*bulk_p, 0) : 0;
        ret = hg_proc_uint64_t(proc, &len);
        if (ret != HG_SUCCESS || len == 0)
            return ret;
        void *buf = hg_proc_save_ptr(proc, len);
        if (!buf)
            return HG_NOMEM;
        ret = HG_Bulk_serialize(buf, len, flags, *bulk_p);
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
