/*
 * hg_self.c -- forward to self: the handler runs locally with no network.
 * The input is encoded into memory and decoded by the handler as usual; the
 * response is encoded the same way and handed to the origin handle.
 * The origin handle is held by the target handle (self_peer) until responded
 * or cancelled.
 */
#include "hg_handle.h"

#include "mercury_proc.h"

#include <stdlib.h>

/* Encode struct_ptr into a malloc'd buffer. */
static hg_return_t encode_to_memory(hg_handle_t handle, hg_proc_cb_t proc_cb,
                                    void *struct_ptr, void **buf_p, size_t *size_p)
{
    size_t room = (size_t)HG_Class_get_input_eager_size(handle->info.hg_class);
    hg_proc_t proc = HG_PROC_NULL;
    void *buf = malloc(room);
    hg_return_t ret;

    *buf_p = NULL;
    *size_p = 0;
    if (!buf)
        return HG_NOMEM;
    if (!proc_cb) {
        *buf_p = buf;
        return HG_SUCCESS;
    }
    ret = hg_proc_create(handle->info.hg_class, HG_NOHASH, &proc);
    if (ret == HG_SUCCESS) {
        hg_proc_set_handle(proc, handle);
        ret = hg_proc_reset(proc, buf, room, HG_ENCODE);
    }
    if (ret == HG_SUCCESS)
        ret = proc_cb(proc, struct_ptr);
    if (ret == HG_SUCCESS)
        ret = hg_proc_flush(proc);
    if (ret == HG_SUCCESS) {
        *size_p = hg_proc_get_size_used(proc);
        void *extra = hg_proc_get_extra_buf(proc);
        if (extra) {
            hg_proc_set_extra_buf_is_mine(proc, 1);
            free(buf);
            buf = extra;
        }
        *buf_p = buf;
    } else
        free(buf);
    hg_proc_free(proc);
    return ret;
}

static void set_decode(hg_handle_t handle, void *buf, size_t size)
{
    hg_handle_clear_decode(handle);
    handle->decode_owned = buf;
    handle->decode_buf = buf;
    handle->decode_size = size;
    handle->has_decode = true;
}

hg_return_t hg_self_forward(hg_handle_t handle, hg_cb_t callback, void *arg,
                            void *in_struct)
{
    void *buf;
    size_t size;
    hg_return_t ret =
        encode_to_memory(handle, handle->rpc.in_proc, in_struct, &buf, &size);

    if (ret != HG_SUCCESS)
        return ret;
    hg_handle_t target =
        hg_handle_alloc(handle->info.context, handle->info.addr, &handle->rpc, true);
    if (!target) {
        free(buf);
        return HG_NOMEM;
    }
    target->self_target = true;
    target->origin_id = handle->info.context->id;
    target->info.context_id = target->origin_id;
    set_decode(target, buf, size);
    handle->in_size = target->in_size = size;

    /* One sub-operation with a response: the local response. */
    bool respond = handle->rpc.rpc_cb && !handle->rpc.no_response;
    hg_handle_op_begin(handle, HG_HANDLE_FORWARD, callback, arg, respond ? 1 : 0);
    if (!handle->rpc.rpc_cb) {
        hg_handle_op_error(handle, HG_NOENTRY);
        hg_handle_release(target);
    } else {
        if (respond) {
            atomic_fetch_add(&handle->refcount, 1);
            target->self_peer = handle;
            handle->self_peer = target;
        }
        hg_target_dispatch(target);
    }
    hg_handle_op_done(handle);
    return HG_SUCCESS;
}

/* Detach the pair and finish the origin's wait with ret. */
static void finish_origin(hg_handle_t origin, hg_return_t ret)
{
    hg_handle_t target = origin->self_peer;

    if (target)
        target->self_peer = NULL;
    origin->self_peer = NULL;
    hg_handle_op_error(origin, ret);
    hg_handle_op_done(origin);
    hg_handle_release(origin);
}

hg_return_t hg_self_respond(hg_handle_t handle, hg_cb_t callback, void *arg,
                            void *out_struct)
{
    hg_handle_t origin = handle->self_peer;
    void *buf;
    size_t size;

    if (!origin) { /* the origin cancelled or needs no response */
        hg_target_respond_local(handle, callback, arg);
        return HG_SUCCESS;
    }
    hg_return_t ret =
        encode_to_memory(origin, origin->rpc.out_proc, out_struct, &buf, &size);
    if (ret != HG_SUCCESS)
        return ret;
    set_decode(origin, buf, size);
    origin->out_size = handle->out_size = size;
    /* As Mercury: the respond callback runs before the forward completes. */
    hg_target_respond_local(handle, callback, arg);
    finish_origin(origin, HG_SUCCESS);
    return HG_SUCCESS;
}

void hg_self_cancel(hg_handle_t handle)
{
    finish_origin(handle, HG_CANCELED);
}
