/*
 * hg_self.c -- forward to self: the handler runs locally with no network, on
 * the forwarded handle itself, as in Mercury (the handler's HG_Get_info,
 * HG_Get_data and reference count are the handle's). The input is encoded
 * into memory (self_in) and decoded by the handler's HG_Get_input; the
 * response is encoded the same way and decoded by HG_Get_output.
 *
 * One completion entry (self_completion) runs the handler, then the respond
 * callback, which completes the forward through the handle's own entry. The
 * handler holds a reference (dropped by its HG_Destroy), the respond step
 * another until its callback ran, the forward one until its callback ran.
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

/* The forward waits no more: complete it with ret (once). */
static void close_forward(hg_handle_t handle, hg_return_t ret)
{
    if (!atomic_exchange(&handle->self_fwd_open, false))
        return;
    hg_handle_op_error(handle, ret);
    hg_handle_op_done(handle);
}

static hg_handle_t self_handle_of(struct hg_completion *completion)
{
    return (hg_handle_t)((char *)completion -
                         offsetof(struct hg_handle, self_completion));
}

/* HG_Trigger runs the handler, on the handle itself. The RPC is looked up
 * now, as a target does. */
static void self_process_run(struct hg_completion *completion)
{
    hg_handle_t handle = self_handle_of(completion);

    if (!hg_target_rpc_current(handle)) {
        HGX_LOG_WARNING(HG,
                        "RPC %#llx has no handler now: the forward to self ends "
                        "with HG_NOENTRY",
                        (unsigned long long)handle->rpc.id);
        atomic_store(&handle->self_state, HG_SELF_RESPONDED);
        close_forward(handle, HG_NOENTRY);
        hg_handle_release(handle);
        return;
    }
    atomic_store(&handle->self_state, HG_SELF_RUNNING);
    hg_target_run_handler(handle);
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
    free(handle->self_in);
    handle->self_in = buf;
    handle->in_size = size;
    /* As a target sees it: the origin's context (HG_Get_info's context_id). */
    handle->origin_id = handle->info.context->id;
    handle->info.context_id = handle->origin_id;
    atomic_store(&handle->self_state, HG_SELF_QUEUED);

    /* One sub-operation with a response: the local response. */
    bool respond = !handle->rpc.no_response;
    hg_handle_op_begin(handle, HG_HANDLE_FORWARD, callback, arg, respond ? 1 : 0);
    atomic_store(&handle->self_fwd_open, respond);
    /* The handler's reference, which its HG_Destroy drops. */
    hgx_int_add(&handle->refcount, 1, handle->info.hg_class->single);
    handle->self_completion.run = self_process_run;
    hg_completion_push(handle->info.context, &handle->self_completion);
    hg_handle_op_done(handle);
    return HG_SUCCESS;
}

/* HG_Trigger runs the respond callback, then completes the forward. */
static void self_respond_run(struct hg_completion *completion)
{
    hg_handle_t handle = self_handle_of(completion);
    struct hg_cb_info info = {
        .arg = handle->self_resp_arg, .type = HG_CB_RESPOND, .ret = HG_SUCCESS};

    info.info.respond.handle = handle;
    if (handle->self_resp_cb)
        handle->self_resp_cb(&info);
    close_forward(handle, HG_SUCCESS);
    hg_handle_release(handle);
}

hg_return_t hg_self_respond(hg_handle_t handle, hg_cb_t callback, void *arg,
                            void *out_struct)
{
    /* One response: the first HG_Respond takes the state to RESPONDED. */
    int state = HG_SELF_RUNNING;
    if (!atomic_compare_exchange_strong(&handle->self_state, &state, HG_SELF_RESPONDED)) {
        HGX_LOG_ERROR(HG, "HG_Respond on a forward to self %s",
                      state == HG_SELF_RESPONDED ? "already answered"
                                                 : "whose handler has not run");
        return HG_INVALID_ARG;
    }
    if (atomic_load(&handle->self_fwd_open)) {
        void *buf;
        size_t size;
        hg_return_t ret =
            encode_to_memory(handle, handle->rpc.out_proc, out_struct, &buf, &size);
        if (ret != HG_SUCCESS) {
            atomic_store(&handle->self_state, HG_SELF_RUNNING); /* may respond again */
            return ret;
        }
        set_decode(handle, buf, size);
        handle->out_size = size;
    }
    handle->self_resp_cb = callback;
    handle->self_resp_arg = arg;
    hgx_int_add(&handle->refcount, 1, handle->info.hg_class->single);
    handle->self_completion.run = self_respond_run;
    hg_completion_push(handle->info.context, &handle->self_completion);
    return HG_SUCCESS;
}

void hg_self_cancel(hg_handle_t handle)
{
    close_forward(handle, HG_CANCELED);
}
