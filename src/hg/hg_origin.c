/*
 * hg_origin.c -- the origin side of an RPC: HG_Forward() sends the request as
 * an NA unexpected message, then posts an expected receive for the response
 * (tag = a cookie unique to this forward, so a late response to a cancelled
 * forward can never match a newer one), then decodes the response header,
 * pulls a large output and acknowledges it.
 */
#include "hg_handle.h"
#include "hg_header.h"

#include <string.h>

static void send_cb(const struct na_cb_info *info)
{
    hg_handle_t handle = info->arg;

    if (info->ret != NA_SUCCESS) {
        hg_handle_op_error(handle, hg_ret_from_na(info->ret));
        /* No response can come: stop waiting for it (forward_post_recv
         * does, if the receive is not posted yet). */
        atomic_store(&handle->send_failed, true);
        if (!handle->rpc.no_response && handle->recv_op)
            NA_Cancel(handle->info.hg_class->na_class, handle->info.context->na_context,
                      handle->recv_op);
    }
    hg_handle_op_done(handle);
}

static void ack_cb(const struct na_cb_info *info)
{
    hg_handle_t handle = info->arg;

    if (info->ret != NA_SUCCESS)
        hg_handle_op_error(handle, hg_ret_from_na(info->ret));
    hg_handle_op_done(handle);
}

/* Tell the target its exposed output may be released. */
static void send_ack(hg_handle_t handle)
{
    hg_class_t *hg_class = handle->info.hg_class;
    size_t len = hg_class->expected_header + HG_HEADER_SIZE;
    struct hg_header hdr = {.kind = HG_HEADER_ACK,
                            .cookie = handle->cookie,
                            .rpc_id = handle->rpc.id,
                            .flags =
                                hg_class_checksum_flags(hg_class) & HG_HEADER_CHECKSUM};

    if (!handle->ack_buf)
        handle->ack_buf =
            NA_Msg_buf_alloc(hg_class->na_class, len, NA_SEND, &handle->ack_plugin);
    if (!handle->ack_buf || hg_handle_ensure_op(handle, &handle->ack_op) != HG_SUCCESS) {
        hg_handle_op_error(handle, HG_NOMEM);
        return;
    }
    NA_Msg_init_expected(hg_class->na_class, handle->ack_buf, len);
    hg_header_encode((char *)handle->ack_buf + hg_class->expected_header, &hdr, NULL, 0);
    atomic_fetch_add(&handle->pending, 1);
    na_return_t na_ret = NA_Msg_send_expected(
        hg_class->na_class, handle->info.context->na_context, ack_cb, handle,
        handle->ack_buf, len, handle->ack_plugin, handle->info.addr->na_addr,
        handle->info.context_id, handle->cookie, handle->ack_op);
    if (na_ret != NA_SUCCESS) {
        atomic_fetch_sub(&handle->pending, 1);
        hg_handle_op_error(handle, hg_ret_from_na(na_ret));
    }
}

static void output_pulled(hg_handle_t handle, hg_return_t ret)
{
    hg_handle_op_error(handle, ret);
    /* Ack even on failure so the target releases its buffer. */
    if (!atomic_load(&handle->canceled))
        send_ack(handle);
    hg_handle_op_done(handle);
}

static void recv_cb(const struct na_cb_info *info)
{
    hg_handle_t handle = info->arg;
    hg_class_t *hg_class = handle->info.hg_class;
    struct hg_header hdr;

    if (info->ret != NA_SUCCESS) {
        hg_handle_op_error(handle, hg_ret_from_na(info->ret));
        goto done;
    }
    size_t len = info->info.recv_expected.actual_buf_size;
    size_t skip = hg_class->expected_header + HG_HEADER_SIZE;
    if (len < skip || len > handle->recv_size) {
        HGX_LOG_ERROR(HG, "response of %zu bytes is malformed", len);
        hg_handle_op_error(handle, HG_PROTOCOL_ERROR);
        goto done;
    }
    const char *payload = (const char *)handle->recv_buf + skip;
    size_t payload_len = len - skip;
    int rc = hg_header_decode((const char *)handle->recv_buf + hg_class->expected_header,
                              HG_HEADER_SIZE, &hdr, payload, payload_len);
    if (rc == 0 && hg_class->checksum_level != HG_CHECKSUM_NONE &&
        !(hdr.flags & HG_HEADER_CHECKSUM))
        rc = -2;
    if (rc == -2) {
        HGX_LOG_ERROR(HG, "checksum mismatch in response to RPC %#llx",
                      (unsigned long long)handle->rpc.id);
        hg_handle_op_error(handle, HG_CHECKSUM_ERROR);
        goto done;
    }
    if (rc != 0 || hdr.kind != HG_HEADER_RESPONSE || hdr.cookie != handle->cookie ||
        hdr.rpc_id != handle->rpc.id) {
        HGX_LOG_ERROR(HG, "malformed response to RPC %#llx",
                      (unsigned long long)handle->rpc.id);
        hg_handle_op_error(handle, HG_PROTOCOL_ERROR);
        goto done;
    }
    if (hdr.status != HG_SUCCESS) {
        hg_handle_op_error(handle, hdr.status < HG_RETURN_MAX ? (hg_return_t)hdr.status
                                                              : HG_PROTOCOL_ERROR);
        goto done;
    }
    hg_count(hg_class, HG_COUNT_RESP_RECV, 1);
    handle->out_size = hdr.payload_size;
    if (hdr.flags & HG_HEADER_BULK_PAYLOAD) {
        size_t offset = hg_handle_decode_offset(handle);
        if (atomic_load(&handle->canceled)) {
            hg_handle_op_error(handle, HG_CANCELED);
            goto done;
        }
        atomic_fetch_add(&handle->pending, 1);
        hg_return_t ret =
            offset > payload_len
                ? HG_PROTOCOL_ERROR
                : hg_handle_pull_extra(handle, payload + offset, payload_len - offset,
                                       hdr.payload_size, output_pulled);
        if (ret != HG_SUCCESS) {
            hg_handle_op_error(handle, ret);
            send_ack(handle);
            atomic_fetch_sub(&handle->pending, 1);
        }
        goto done;
    }
    if (hdr.payload_size > payload_len) {
        HGX_LOG_ERROR(HG, "response payload size %llu exceeds the %zu bytes received",
                      (unsigned long long)hdr.payload_size, payload_len);
        hg_handle_op_error(handle, HG_PROTOCOL_ERROR);
        goto done;
    }
    hg_handle_clear_decode(handle);
    handle->decode_buf = payload;
    handle->decode_size = (size_t)hdr.payload_size;
    handle->has_decode = true;
done:
    hg_handle_op_done(handle);
}

/* Post the response receive of a forward whose request is already posted.
 * A failure completes the forward with the error (its callback reports it).
 * A cancel or a failed send that came in between found no receive to stop:
 * stop it now. */
static void forward_post_recv(hg_handle_t handle)
{
    hg_class_t *hg_class = handle->info.hg_class;
    na_context_t *na_context = handle->info.context->na_context;
    na_return_t na_ret = NA_Msg_recv_expected(
        hg_class->na_class, na_context, recv_cb, handle, handle->recv_buf,
        handle->recv_size, handle->recv_plugin, handle->info.addr->na_addr,
        handle->info.context_id, handle->cookie, handle->recv_op);
    if (na_ret != NA_SUCCESS) {
        HGX_LOG_ERROR(HG, "could not post the response receive of RPC %#llx: %s",
                      (unsigned long long)handle->rpc.id, NA_Error_to_string(na_ret));
        hg_handle_op_error(handle, hg_ret_from_na(na_ret));
        hg_handle_op_unpost(handle, 1);
        return;
    }
    if (atomic_load(&handle->canceled) || atomic_load(&handle->send_failed))
        NA_Cancel(hg_class->na_class, na_context, handle->recv_op);
}

hg_return_t HG_Forward(hg_handle_t handle, hg_cb_t callback, void *arg, void *in_struct)
{
    if (!handle || handle->target)
        return HG_INVALID_ARG;
    if (!handle->info.addr) {
        HGX_LOG_ERROR(HG, "handle has no target address");
        return HG_INVALID_ARG;
    }
    if (handle->info.id == 0) {
        HGX_LOG_ERROR(HG, "handle has no RPC id: set it with HG_Reset()");
        return HG_INVALID_ARG;
    }
    if (handle->op != HG_HANDLE_IDLE)
        return HG_BUSY;
    hg_class_t *hg_class = handle->info.hg_class;
    hg_context_t *context = handle->info.context;

    /* Pick up a later HG_Registered_disable_response() or re-registration;
     * the generation says whether the registry changed since the snapshot. */
    if (atomic_load(&hg_class->rpc_gen) != handle->rpc_gen) {
        pthread_mutex_lock(&hg_class->lock);
        struct hg_rpc_entry *e = hg_rpc_map_find(hg_class->rpc_map, handle->rpc.id);
        if (e)
            handle->rpc = e->info;
        handle->rpc_gen = atomic_load(&hg_class->rpc_gen);
        pthread_mutex_unlock(&hg_class->lock);
    }
    hg_handle_clear_decode(handle);
    atomic_store_explicit(&handle->self_state, HG_SELF_NONE, memory_order_relaxed);

    if (handle->info.addr->is_self && !hg_class->no_loopback)
        return hg_self_forward(handle, callback, arg, in_struct);

    hg_return_t ret = hg_handle_alloc_send(handle, true);
    if (ret == HG_SUCCESS && !handle->rpc.no_response)
        ret = hg_handle_alloc_recv(handle, false);
    if (ret == HG_SUCCESS)
        ret = hg_handle_ensure_op(handle, &handle->send_op);
    if (ret == HG_SUCCESS && !handle->rpc.no_response)
        ret = hg_handle_ensure_op(handle, &handle->recv_op);
    if (ret != HG_SUCCESS)
        return ret;

    size_t skip = hg_class->unexpected_header + HG_HEADER_SIZE;
    char *payload = (char *)handle->send_buf + skip;
    size_t room = handle->send_size - skip, payload_len = 0;
    ret = hg_handle_encode(handle, handle->rpc.in_proc, in_struct, payload, room,
                           &payload_len);
    if (ret != HG_SUCCESS)
        return ret;

    struct hg_header hdr = {.kind = HG_HEADER_REQUEST,
                            .rpc_id = handle->rpc.id,
                            .context_id = handle->info.context_id,
                            .origin_id = context->id,
                            .payload_size = payload_len,
                            .flags = hg_class_checksum_flags(hg_class)};
    if (handle->rpc.no_response)
        hdr.flags |= HG_HEADER_NO_RESPONSE;
    handle->in_size = payload_len;
    if (handle->extra_bulk) {
        hg_count(hg_class, HG_COUNT_REQ_EXTRA, 1);
        hdr.flags |= HG_HEADER_BULK_PAYLOAD;
        ret = hg_handle_put_extra_desc(handle, payload, room, &payload_len);
        if (ret != HG_SUCCESS)
            return ret;
    }
    uint64_t n = hgx_uint_add(&hg_class->cookie_next, 1, hg_class->single);
    handle->cookie = (uint32_t)n & hg_class->cookie_mask;
    hdr.cookie = handle->cookie;
    NA_Msg_init_unexpected(hg_class->na_class, handle->send_buf, skip + payload_len);
    hg_header_encode((char *)handle->send_buf + hg_class->unexpected_header, &hdr,
                     payload, payload_len);
    if (hg_corrupt_next_take(hg_class))
        ((unsigned char *)handle->send_buf)[hg_class->unexpected_header + 17] ^= 0x5a;

    hg_handle_op_begin(handle, HG_HANDLE_FORWARD, callback, arg,
                       handle->rpc.no_response ? 1 : 2);
    /* The request leaves first and the response receive is posted while the
     * target works on it: NA holds an expected message that arrives before
     * its receive (na.h), and the post no longer delays the request. */
    na_return_t na_ret = NA_Msg_send_unexpected(
        hg_class->na_class, context->na_context, send_cb, handle, handle->send_buf,
        skip + payload_len, handle->send_plugin, handle->info.addr->na_addr,
        handle->info.context_id, handle->cookie, handle->send_op);
    if (na_ret != NA_SUCCESS) {
        hg_handle_op_unpost(handle, handle->rpc.no_response ? 1 : 2);
        goto post_error;
    }
    hg_count(hg_class, HG_COUNT_REQ_SENT, 1);
    if (!handle->rpc.no_response)
        forward_post_recv(handle);
    hg_handle_op_done(handle);
    return HG_SUCCESS;

post_error:
    HGX_LOG_ERROR(HG, "could not post RPC %#llx: %s", (unsigned long long)handle->rpc.id,
                  NA_Error_to_string(na_ret));
    /* The caller gets the error; nothing was posted, no callback runs. */
    handle->callback = NULL;
    hg_handle_op_error(handle, hg_ret_from_na(na_ret));
    hg_handle_op_done(handle);
    return hg_ret_from_na(na_ret);
}
