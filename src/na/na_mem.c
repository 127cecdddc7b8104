/*
 * na_mem.c -- NA core: memory handles (create, register, serialize) and
 * put/get, with the bounds and permission checks every plugin relies on.
 */
#include "na_core.h"
#include "na_rma.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/*---------------------------------------------------------------- memory */

static bool na_mem_flags_valid(unsigned long flags)
{
    return flags == NA_MEM_READ_ONLY || flags == NA_MEM_WRITE_ONLY ||
           flags == NA_MEM_READWRITE;
}

static void na_mem_created(na_class_t *na_class, na_return_t ret)
{
    if (ret == NA_SUCCESS)
        atomic_fetch_add(&na_class->n_mem, 1);
}

na_return_t NA_Mem_handle_create(na_class_t *na_class, void *buf, size_t buf_size,
                                 unsigned long flags, na_mem_handle_t **mem_handle_p)
{
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!buf || buf_size == 0 || !mem_handle_p || !na_mem_flags_valid(flags)) {
        HGX_LOG_ERROR(NA,
                      "invalid memory handle arguments (buf %p, size %zu, flags 0x%lx)",
                      buf, buf_size, flags);
        return NA_INVALID_ARG;
    }
    na_return_t ret =
        na_class->ops->mem_handle_create(na_class, buf, buf_size, flags, mem_handle_p);
    na_mem_created(na_class, ret);
    return ret;
}

na_return_t NA_Mem_handle_create_segments(na_class_t *na_class,
                                          struct na_segment *segments,
                                          size_t segment_count, unsigned long flags,
                                          na_mem_handle_t **mem_handle_p)
{
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!segments || segment_count == 0 || !mem_handle_p || !na_mem_flags_valid(flags)) {
        HGX_LOG_ERROR(NA, "invalid segment arguments (count %zu, flags 0x%lx)",
                      segment_count, flags);
        return NA_INVALID_ARG;
    }
    size_t max = na_class->ops->mem_handle_get_max_segments(na_class);
    if (segment_count > max) {
        HGX_LOG_ERROR(NA, "%zu segments requested, plugin supports %zu", segment_count,
                      max);
        return NA_INVALID_ARG;
    }
    size_t total = 0;
    for (size_t i = 0; i < segment_count; i++) {
        if (!segments[i].base || segments[i].len == 0 ||
            total + segments[i].len < total) {
            HGX_LOG_ERROR(NA, "segment %zu is empty, NULL or overflows", i);
            return NA_INVALID_ARG;
        }
        total += segments[i].len;
    }
    na_return_t ret = na_class->ops->mem_handle_create_segments(
        na_class, segments, segment_count, flags, mem_handle_p);
    na_mem_created(na_class, ret);
    return ret;
}

void NA_Mem_handle_free(na_class_t *na_class, na_mem_handle_t *mem_handle)
{
    if (!na_class || !mem_handle)
        return;
    if (mem_handle->registered)
        HGX_LOG_WARNING(NA, "freeing a registered memory handle; deregistering it first");
    if (mem_handle->registered)
        NA_Mem_deregister(na_class, mem_handle);
    atomic_fetch_sub(&na_class->n_mem, 1);
    na_class->ops->mem_handle_free(na_class, mem_handle);
}

size_t NA_Mem_handle_get_max_segments(const na_class_t *na_class)
{
    return na_class ? na_class->ops->mem_handle_get_max_segments(na_class) : 0;
}

na_return_t NA_Mem_register(na_class_t *na_class, na_mem_handle_t *mem_handle,
                            enum na_mem_type mem_type, uint64_t device)
{
    (void)device;
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!mem_handle || mem_handle->remote) {
        HGX_LOG_ERROR(NA, "cannot register a NULL or remote memory handle");
        return NA_INVALID_ARG;
    }
    if (mem_type != NA_MEM_TYPE_HOST) {
        HGX_LOG_ERROR(NA, "memory type %d is not supported (host memory only)",
                      (int)mem_type);
        return NA_OPNOTSUPPORTED;
    }
    if (mem_handle->registered)
        return NA_SUCCESS;
    na_return_t ret = na_class->ops->mem_register(na_class, mem_handle);
    if (ret == NA_SUCCESS)
        mem_handle->registered = true;
    return ret;
}

na_return_t NA_Mem_deregister(na_class_t *na_class, na_mem_handle_t *mem_handle)
{
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!mem_handle || mem_handle->remote)
        return NA_INVALID_ARG;
    if (!mem_handle->registered)
        return NA_SUCCESS;
    na_return_t ret = na_class->ops->mem_deregister(na_class, mem_handle);
    if (ret == NA_SUCCESS)
        mem_handle->registered = false;
    return ret;
}

size_t NA_Mem_handle_get_serialize_size(na_class_t *na_class, na_mem_handle_t *mem_handle)
{
    if (!na_class || !mem_handle)
        return 0;
    return na_class->ops->mem_handle_get_serialize_size(na_class, mem_handle);
}

na_return_t NA_Mem_handle_serialize(na_class_t *na_class, void *buf, size_t buf_size,
                                    na_mem_handle_t *mem_handle)
{
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!buf || !mem_handle)
        return NA_INVALID_ARG;
    if (!mem_handle->registered && !mem_handle->remote) {
        HGX_LOG_ERROR(NA, "memory handle must be registered before it is serialized");
        return NA_INVALID_ARG;
    }
    if (buf_size < na_class->ops->mem_handle_get_serialize_size(na_class, mem_handle)) {
        HGX_LOG_ERROR(NA, "buffer too small to serialize memory handle");
        return NA_OVERFLOW;
    }
    return na_class->ops->mem_handle_serialize(na_class, buf, buf_size, mem_handle);
}

na_return_t NA_Mem_handle_deserialize(na_class_t *na_class,
                                      na_mem_handle_t **mem_handle_p, const void *buf,
                                      size_t buf_size)
{
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!mem_handle_p || !buf || buf_size == 0)
        return NA_INVALID_ARG;
    na_return_t ret =
        na_class->ops->mem_handle_deserialize(na_class, mem_handle_p, buf, buf_size);
    if (ret == NA_INVALID_ARG) /* arguments checked above: the bytes are bad */
        ret = NA_PROTOCOL_ERROR;
    if (ret == NA_SUCCESS) {
        (*mem_handle_p)->remote = true;
        (*mem_handle_p)->registered = false;
    } else {
        HGX_LOG_ERROR(NA, "rejected a malformed memory handle descriptor (%zu bytes): %s",
                      buf_size, NA_Error_to_string(ret));
    }
    na_mem_created(na_class, ret);
    return ret;
}

/*---------------------------------------------------------------- put / get */

static bool na_range_ok(const na_mem_handle_t *h, na_offset_t offset, size_t size)
{
    return offset <= h->len && size <= h->len - offset;
}

static na_return_t na_rma_check(na_class_t *na_class, na_context_t *context,
                                na_mem_handle_t *local, na_offset_t local_offset,
                                na_mem_handle_t *remote, na_offset_t remote_offset,
                                size_t size, na_addr_t *remote_addr, uint8_t remote_id,
                                unsigned long remote_access)
{
    NA_CHECK_CLASS(na_class, NA_INVALID_ARG);
    if (!context || !local || !remote || !na_addr_valid(na_class, remote_addr)) {
        HGX_LOG_ERROR(NA, "NULL context, memory handle or address");
        return NA_INVALID_ARG;
    }
    if (!local->registered || local->remote) {
        HGX_LOG_ERROR(NA, "local memory handle must be a registered local handle");
        return NA_INVALID_ARG;
    }
    if (!na_range_ok(local, local_offset, size) ||
        !na_range_ok(remote, remote_offset, size)) {
        HGX_LOG_ERROR(NA,
                      "transfer out of bounds (size %zu, local off %" PRIu64
                      "/%zu, remote off %" PRIu64 "/%zu)",
                      size, local_offset, local->len, remote_offset, remote->len);
        return NA_INVALID_ARG;
    }
    if ((remote->flags & remote_access) != remote_access) {
        HGX_LOG_ERROR(NA, "remote region does not grant %s access",
                      remote_access == NA_MEM_WRITE_ONLY ? "write" : "read");
        return NA_PERMISSION;
    }
    if (remote_id >= na_class->max_contexts) {
        HGX_LOG_ERROR(NA, "remote context id %u out of range", remote_id);
        return NA_INVALID_ARG;
    }
    return NA_SUCCESS;
}

/* NA_Put and NA_Get differ only in direction: the access the local memory
 * must allow, the completion type and the plugin op. */
static na_return_t na_rma_post(na_class_t *na_class, na_context_t *context, bool put,
                               na_cb_t callback, void *arg, na_mem_handle_t *local,
                               na_offset_t local_offset, na_mem_handle_t *remote,
                               na_offset_t remote_offset, size_t data_size,
                               na_addr_t *remote_addr, uint8_t remote_id,
                               na_op_id_t *op_id)
{
    na_return_t ret = na_rma_check(na_class, context, local, local_offset, remote,
                                   remote_offset, data_size, remote_addr, remote_id,
                                   put ? NA_MEM_WRITE_ONLY : NA_MEM_READ_ONLY);
    if (ret != NA_SUCCESS)
        return ret;
    if (remote_addr->unreachable)
        return na_unreachable_post(na_class, context, op_id, put ? NA_CB_PUT : NA_CB_GET,
                                   callback, arg);
    if (data_size == 0) { /* nothing to move: complete without the plugin */
        ret = na_op_post_begin(na_class, context, op_id, put ? NA_CB_PUT : NA_CB_GET,
                               callback, arg);
        if (ret == NA_SUCCESS)
            na_op_complete(op_id, NA_SUCCESS);
        return ret;
    }
    NA_POST(na_class, context, op_id, put ? NA_CB_PUT : NA_CB_GET, callback, arg,
            na_class->ops->rma(na_class, op_id, put, local, local_offset, remote,
                               remote_offset, data_size, remote_addr));
}

na_return_t NA_Put(na_class_t *na_class, na_context_t *context, na_cb_t callback,
                   void *arg, na_mem_handle_t *local_mem_handle, na_offset_t local_offset,
                   na_mem_handle_t *remote_mem_handle, na_offset_t remote_offset,
                   size_t data_size, na_addr_t *remote_addr, uint8_t remote_id,
                   na_op_id_t *op_id)
{
    return na_rma_post(na_class, context, true, callback, arg, local_mem_handle,
                       local_offset, remote_mem_handle, remote_offset, data_size,
                       remote_addr, remote_id, op_id);
}

na_return_t NA_Get(na_class_t *na_class, na_context_t *context, na_cb_t callback,
                   void *arg, na_mem_handle_t *local_mem_handle, na_offset_t local_offset,
                   na_mem_handle_t *remote_mem_handle, na_offset_t remote_offset,
                   size_t data_size, na_addr_t *remote_addr, uint8_t remote_id,
                   na_op_id_t *op_id)
{
    return na_rma_post(na_class, context, false, callback, arg, local_mem_handle,
                       local_offset, remote_mem_handle, remote_offset, data_size,
                       remote_addr, remote_id, op_id);
}
