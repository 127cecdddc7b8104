/*
 * hg_target.c -- the target side of an RPC: validate an arriving request,
 * pull a large input, queue the handler for HG_Trigger(), and send the
 * response (an expected message tagged with the request's cookie).
 */
#include "hg_handle.h"
#include "hg_header.h"

#include <stdlib.h>
#include <string.h>

/* Smallest input copy a target handle keeps (most inputs fit). */
#define HG_IN_COPY_MIN 256

bool hg_target_rpc_current(hg_handle_t handle)
{
    hg_class_t *hg_class = handle->info.hg_class;

    if (atomic_load_explicit(&hg_class->rpc_gen, memory_order_acquire) !=
        handle->rpc_gen) {
        bool no_response = handle->rpc.no_response;
        pthread_mutex_lock(&hg_class->lock);
        struct hg_rpc_entry *e = hg_rpc_map_find(hg_class->rpc_map, handle->rpc.id);
        if (e)
            handle->rpc = e->info;
        else
            handle->rpc.rpc_cb = NULL;
        handle->rpc.no_response = no_response;
        handle->rpc_gen = atomic_load_explicit(&hg_class->rpc_gen, memory_order_relaxed);
        pthread_mutex_unlock(&hg_class->lock);
    }
    return handle->rpc.rpc_cb != NULL;
}

void hg_target_run_handler(hg_handle_t handle)
{
    /* The handler owns the handle's reference and releases it with HG_Destroy().
     * As in Mercury, a second one is held while a response is owed and
     * HG_Respond() gives it up: a handler may destroy the handle before its
     * response completes, and one that destroys it twice drops the request
     * unanswered (the origin then cancels). */
    if (!handle->rpc.no_response) {
        atomic_fetch_add(&handle->refcount, 1);
        atomic_store(&handle->resp_ref, true);
    }
    hg_return_t ret = handle->rpc.rpc_cb(handle);
    if (ret != HG_SUCCESS)
        HGX_LOG_DEBUG(HG, "RPC %#llx handler returned %s",
                      (unsigned long long)handle->rpc.id, HG_Error_to_string(ret));
}

/* Send an error status instead of running a handler, then drop the handle. */
static void respond_error(hg_handle_t handle, hg_return_t status)
{
    if (!(handle->req_flags & HG_HEADER_NO_RESPONSE)) {
        handle->rpc.out_proc = NULL;
        handle->rpc.no_response = false;
        (void)hg_target_respond(handle, NULL, NULL, NULL, status);
    }
    hg_handle_release(handle);
}

/* Log an RPC id this process has no handler for. A warning, as Mercury's:
 * the origin is told (HG_NOENTRY) and this side is not at fault. */
static void log_unknown(hg_id_t id)
{
    HGX_LOG_WARNING(HG, "no handler registered for RPC %#llx: answered with HG_NOENTRY",
                    (unsigned long long)id);
}

/* HG_Trigger runs the handler; the RPC is looked up again if the registry
 * changed since the request arrived (Mercury looks it up at this point). */
static void rpc_run(struct hg_completion *completion)
{
    hg_handle_t handle =
        (hg_handle_t)((char *)completion - offsetof(struct hg_handle, completion));

    handle->op = HG_HANDLE_IDLE;
    if (!hg_target_rpc_current(handle)) {
        log_unknown(handle->rpc.id);
        respond_error(handle, HG_NOENTRY);
        return;
    }
    hg_target_run_handler(handle);
}

static void input_ready(hg_handle_t handle, hg_return_t ret)
{
    if (ret != HG_SUCCESS) {
        HGX_LOG_ERROR(HG, "could not pull input of RPC %#llx: %s",
                      (unsigned long long)handle->rpc.id, HG_Error_to_string(ret));
        respond_error(handle, ret);
        return;
    }
    handle->completion.run = rpc_run;
    hg_completion_push(handle->info.context, &handle->completion);
}

void hg_target_dispatch(hg_handle_t handle)
{
    input_ready(handle, HG_SUCCESS);
}

/* The registration of an RPC id; false if none. The context keeps the last
 * one it found, valid while the registry's generation is unchanged, so a
 * stream of the same RPC skips the class mutex and the map. */
static bool target_rpc_find(hg_context_t *context, hg_id_t id, struct hg_rpc_info *rpc,
                            unsigned int *gen_p)
{
    hg_class_t *hg_class = context->hg_class;
    unsigned int gen = atomic_load_explicit(&hg_class->rpc_gen, memory_order_acquire);

    *gen_p = gen;
    hgx_lock(&context->cq_lock);
    bool hit = context->rpc_last_ok && context->rpc_last_gen == gen &&
               context->rpc_last.id == id;
    if (hit)
        *rpc = context->rpc_last;
    hgx_unlock(&context->cq_lock);
    if (hit)
        return true;

    pthread_mutex_lock(&hg_class->lock);
    struct hg_rpc_entry *e = hg_rpc_map_find(hg_class->rpc_map, id);
    *rpc = e ? e->info : (struct hg_rpc_info){.id = id};
    gen = atomic_load_explicit(&hg_class->rpc_gen, memory_order_relaxed);
    *gen_p = gen;
    pthread_mutex_unlock(&hg_class->lock);
    if (e) {
        hgx_lock(&context->cq_lock);
        context->rpc_last = *rpc;
        context->rpc_last_gen = gen;
        context->rpc_last_ok = true;
        hgx_unlock(&context->cq_lock);
    }
    return e != NULL;
}

void hg_target_receive(hg_context_t *context, const void *buf, size_t len,
                       na_addr_t *source)
{
    hg_class_t *hg_class = context->hg_class;
    size_t skip = hg_class->unexpected_header + HG_HEADER_SIZE;
    struct hg_header hdr;

    if (len < skip || len > hg_class->unexpected_size) {
        HGX_LOG_ERROR(HG, "dropped request of %zu bytes: malformed", len);
        goto drop;
    }
    const char *payload = (const char *)buf + skip;
    size_t payload_len = len - skip;
    int rc = hg_header_decode((const char *)buf + hg_class->unexpected_header,
                              HG_HEADER_SIZE, &hdr, payload, payload_len);
    if (rc == 0 && hg_class->checksum_level != HG_CHECKSUM_NONE &&
        !(hdr.flags & HG_HEADER_CHECKSUM))
        rc = -2;
    if (rc != 0 || hdr.kind != HG_HEADER_REQUEST) {
        HGX_LOG_ERROR(HG, "dropped request: %s",
                      rc == -2 ? "checksum mismatch" : "bad header");
        goto drop;
    }
    if (!(hdr.flags & HG_HEADER_BULK_PAYLOAD) && hdr.payload_size > payload_len) {
        HGX_LOG_ERROR(HG, "dropped request: payload size %llu exceeds %zu bytes received",
                      (unsigned long long)hdr.payload_size, payload_len);
        goto drop;
    }

    struct hg_rpc_info rpc;
    unsigned int gen;
    bool known = target_rpc_find(context, hdr.rpc_id, &rpc, &gen);

    hg_addr_t addr = hg_addr_of_source(context, source);
    source = NULL;
    if (!addr)
        goto drop;
    hg_handle_t handle = hg_handle_alloc(context, HG_ADDR_NULL, &rpc, true);
    if (!handle) {
        HG_Addr_free(hg_class, addr);
        goto drop;
    }
    handle->info.addr = addr; /* the reference hg_addr_of_source gave us */
    handle->rpc_gen = gen;
    handle->cookie = hdr.cookie;
    handle->origin_id = hdr.origin_id;
    handle->info.context_id = hdr.origin_id; /* as Mercury: the origin's context */
    handle->req_flags = hdr.flags;
    handle->rpc.no_response = (hdr.flags & HG_HEADER_NO_RESPONSE) != 0;
    handle->in_size = hdr.payload_size;
    hg_count(hg_class, HG_COUNT_REQ_RECV, 1);
    hg_count(hg_class, HG_COUNT_REQ_ACTIVE, 1);
    if (!known || !rpc.rpc_cb) {
        log_unknown(hdr.rpc_id);
        respond_error(handle, HG_NOENTRY);
        return;
    }
    handle->op = HG_HANDLE_RECEIVE;
    if (hdr.flags & HG_HEADER_BULK_PAYLOAD) {
        size_t offset = hg_class->in_offset;
        hg_return_t ret =
            offset > payload_len
                ? HG_PROTOCOL_ERROR
                : hg_handle_pull_extra(handle, payload + offset, payload_len - offset,
                                       hdr.payload_size, input_ready);
        if (ret != HG_SUCCESS)
            input_ready(handle, ret);
        return;
    }
    /* The input leaves the receive buffer (reposted at once) for a copy the
     * handle keeps across reuse: no allocation per request on the steady path. */
    if (handle->in_copy_cap < hdr.payload_size || !handle->in_copy) {
        size_t cap =
            hdr.payload_size > HG_IN_COPY_MIN ? hdr.payload_size : HG_IN_COPY_MIN;
        void *copy = realloc(handle->in_copy, cap);
        if (!copy) {
            respond_error(handle, HG_NOMEM);
            return;
        }
        handle->in_copy = copy;
        handle->in_copy_cap = cap;
    }
    memcpy(handle->in_copy, payload, hdr.payload_size);
    handle->decode_buf = handle->in_copy;
    handle->decode_size = hdr.payload_size;
    handle->has_decode = true;
    input_ready(handle, HG_SUCCESS);
    return;

drop:
    atomic_fetch_add(&hg_class->n_dropped, 1);
    if (source)
        NA_Addr_free(hg_class->na_class, source);
}

static void respond_send_cb(const struct na_cb_info *info)
{
    hg_handle_t handle = info->arg;

    if (info->ret != NA_SUCCESS) {
        hg_handle_op_error(handle, hg_ret_from_na(info->ret));
        /* No ack will come for an output the origin never heard of. */
        if (handle->extra_bulk && handle->ack_op)
            NA_Cancel(handle->info.hg_class->na_class, handle->info.context->na_context,
                      handle->ack_op);
    }
    hg_handle_op_done(handle);
}

static void respond_ack_cb(const struct na_cb_info *info)
{
    hg_handle_t handle = info->arg;

    if (info->ret != NA_SUCCESS)
        hg_handle_op_error(handle, hg_ret_from_na(info->ret));
    hg_handle_op_done(handle);
}

static void respond_noop_run(struct hg_completion *completion)
{
    hg_handle_t handle =
        (hg_handle_t)((char *)completion - offsetof(struct hg_handle, completion));
    struct hg_cb_info info = {
        .arg = handle->arg, .type = HG_CB_RESPOND, .ret = HG_SUCCESS};

    info.info.respond.handle = handle;
    handle->op = HG_HANDLE_IDLE;
    if (handle->callback)
        handle->callback(&info);
    hg_handle_release(handle);
}

void hg_target_respond_local(hg_handle_t handle, hg_cb_t callback, void *arg)
{
    atomic_fetch_add(&handle->refcount, 1);
    handle->op = HG_HANDLE_RESPOND;
    handle->callback = callback;
    handle->arg = arg;
    handle->completion.run = respond_noop_run;
    hg_completion_push(handle->info.context, &handle->completion);
}

hg_return_t hg_target_respond(hg_handle_t handle, hg_cb_t callback, void *arg,
                              void *out_struct, hg_return_t status)
{
    hg_class_t *hg_class = handle->info.hg_class;
    hg_context_t *context = handle->info.context;

    if (handle->rpc.no_response) {
        hg_target_respond_local(handle, callback, arg);
        return HG_SUCCESS;
    }
    hg_return_t ret = hg_handle_alloc_send(handle, false);
    if (ret == HG_SUCCESS)
        ret = hg_handle_ensure_op(handle, &handle->send_op);
    if (ret != HG_SUCCESS)
        return ret;
    size_t skip = hg_class->expected_header + HG_HEADER_SIZE;
    char *payload = (char *)handle->send_buf + skip;
    size_t room = handle->send_size - skip, payload_len = 0;
    ret = hg_handle_encode(handle, handle->rpc.out_proc, out_struct, payload, room,
                           &payload_len);
    if (ret != HG_SUCCESS)
        return ret;
    struct hg_header hdr = {.kind = HG_HEADER_RESPONSE,
                            .rpc_id = handle->rpc.id,
                            .cookie = handle->cookie,
                            .status = (uint8_t)status,
                            .payload_size = payload_len,
                            .flags = hg_class_checksum_flags(hg_class)};
    handle->out_size = payload_len;
    if (handle->extra_bulk) {
        hg_count(hg_class, HG_COUNT_RESP_EXTRA, 1);
        hdr.flags |= HG_HEADER_BULK_PAYLOAD;
        ret = hg_handle_put_extra_desc(handle, payload, room, &payload_len);
        if (ret == HG_SUCCESS)
            ret = hg_handle_alloc_recv(handle, false);
        if (ret == HG_SUCCESS)
            ret = hg_handle_ensure_op(handle, &handle->ack_op);
        if (ret != HG_SUCCESS)
            return ret;
    }
    NA_Msg_init_expected(hg_class->na_class, handle->send_buf, skip + payload_len);
    hg_header_encode((char *)handle->send_buf + hg_class->expected_header, &hdr, payload,
                     payload_len);
    if (hg_corrupt_next_take(hg_class))
        ((unsigned char *)handle->send_buf)[hg_class->expected_header + 17] ^= 0x5a;

    hg_handle_op_begin(handle, HG_HANDLE_RESPOND, callback, arg,
                       handle->extra_bulk ? 2 : 1);
    na_return_t na_ret;
    if (handle->extra_bulk) {
        /* The origin acknowledges once it pulled the output; keep it exposed until then.
         */
        na_ret =
            NA_Msg_recv_expected(hg_class->na_class, context->na_context, respond_ack_cb,
                                 handle, handle->recv_buf, handle->recv_size,
                                 handle->recv_plugin, handle->info.addr->na_addr,
                                 handle->origin_id, handle->cookie, handle->ack_op);
        if (na_ret != NA_SUCCESS) {
            hg_handle_op_unpost(handle, 2);
            goto post_error;
        }
    }
    na_ret = NA_Msg_send_expected(
        hg_class->na_class, context->na_context, respond_send_cb, handle,
        handle->send_buf, skip + payload_len, handle->send_plugin,
        handle->info.addr->na_addr, handle->origin_id, handle->cookie, handle->send_op);
    if (na_ret != NA_SUCCESS) {
        hg_handle_op_unpost(handle, 1);
        if (handle->extra_bulk)
            NA_Cancel(hg_class->na_class, context->na_context, handle->ack_op);
        goto post_error;
    }
    hg_count(hg_class, HG_COUNT_RESP_SENT, 1);
    hg_handle_op_done(handle);
    return HG_SUCCESS;

post_error:
    HGX_LOG_ERROR(HG, "could not send response: %s", NA_Error_to_string(na_ret));
    handle->callback = NULL;
    hg_handle_op_error(handle, hg_ret_from_na(na_ret));
    hg_handle_op_done(handle);
    return hg_ret_from_na(na_ret);
}

hg_return_t HG_Respond(hg_handle_t handle, hg_cb_t callback, void *arg, void *out_struct)
{
    hg_return_t ret;

    if (!handle)
        return HG_INVALID_ARG;
    if (handle->target && handle->op != HG_HANDLE_IDLE)
        return HG_BUSY;
    if (!handle->target && atomic_load(&handle->self_state) == HG_SELF_NONE)
        return HG_INVALID_ARG;
    /* The response (or its failure) settles what was owed; a response in
     * flight holds its own reference. Claimed before the response goes: once
     * it has, a forward to self may be answered and forwarded again, and its
     * next handler owes a response of its own. */
    bool owed;
    if (handle->info.hg_class->single) { /* one thread: no exchange needed */
        owed = atomic_load_explicit(&handle->resp_ref, memory_order_relaxed);
        atomic_store_explicit(&handle->resp_ref, false, memory_order_relaxed);
    } else {
        owed = atomic_exchange(&handle->resp_ref, false);
    }
    if (handle->target)
        ret = hg_target_respond(handle, callback, arg, out_struct, HG_SUCCESS);
    else
        ret = hg_self_respond(handle, callback, arg, out_struct);
    if (owed)
        hg_handle_release(handle);
    return ret;
}
