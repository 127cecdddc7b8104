/*
 * hg_handle.c -- RPC handle life cycle (reference counts, buffers), user data,
 * input / output decoding, and the bookkeeping of a handle's operation.
 */
#include "hg_handle.h"
#include "hg_header.h"

#include "hg_proc_private.h"
#include "hgx_assert.h"
#include "mercury_proc.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Target handles are recycled per context with their NA message buffers and
 * op ids, so a server allocates nothing per RPC on the steady path. The
 * cache keeps as many handles as the context had live at once (handles and
 * transfers, counted when a target handle is taken; at least MIN, at most
 * MAX): a server that had n requests in flight allocates nothing when it has
 * n again, and holds no more memory than that peak needed. */
#define HG_HANDLE_CACHE_MIN 64
#define HG_HANDLE_CACHE_MAX 4096

static hg_handle_t hg_handle_cache_take(hg_context_t *context)
{
    hgx_lock(&context->cq_lock);
    long live = atomic_load_explicit(&context->n_handles, memory_order_relaxed) + 1;
    if (live > (long)context->handle_cache_cap)
        context->handle_cache_cap = live < HG_HANDLE_CACHE_MIN   ? HG_HANDLE_CACHE_MIN
                                    : live < HG_HANDLE_CACHE_MAX ? (unsigned int)live
                                                                 : HG_HANDLE_CACHE_MAX;
    hg_handle_t handle = context->handle_cache;
    if (handle) {
        context->handle_cache = handle->cache_next;
        context->handle_cache_n--;
        handle->cache_next = NULL;
    }
    hgx_unlock(&context->cq_lock);
    return handle;
}

/* Free what a handle kept for reuse, and the handle. */
static void hg_handle_free_na(na_class_t *na_class, hg_handle_t handle)
{
    NA_Msg_buf_free(na_class, handle->send_buf, handle->send_plugin);
    NA_Msg_buf_free(na_class, handle->recv_buf, handle->recv_plugin);
    NA_Msg_buf_free(na_class, handle->ack_buf, handle->ack_plugin);
    free(handle->in_copy);
    if (handle->send_op)
        NA_Op_destroy(na_class, handle->send_op);
    if (handle->recv_op)
        NA_Op_destroy(na_class, handle->recv_op);
    if (handle->ack_op)
        NA_Op_destroy(na_class, handle->ack_op);
    free(handle);
}

/* Clear what a handle holds for one use (every field above send_buf).
 * Field by field, not a memset: GCC clears that many bytes with "rep stos",
 * which held 45% of this path's time samples under perf. */
static void hg_handle_reset(hg_handle_t handle)
{
    handle->info = (struct hg_info){0};
    atomic_init(&handle->refcount, 0);
    handle->data = NULL;
    handle->data_free = NULL;
    handle->rpc = (struct hg_rpc_info){0};
    handle->rpc_gen = 0;
    handle->target = false;
    handle->recv_len = 0;
    handle->decode_buf = NULL;
    handle->decode_size = 0;
    handle->decode_owned = NULL;
    handle->has_decode = false;
    handle->in_size = 0;
    handle->out_size = 0;
    handle->extra_buf = NULL;
    handle->extra_bulk = HG_BULK_NULL;
    handle->op = HG_HANDLE_IDLE;
    handle->callback = NULL;
    handle->arg = NULL;
    atomic_init(&handle->pending, 0);
    handle->op_ret = HG_SUCCESS;
    atomic_init(&handle->canceled, false);
    atomic_init(&handle->send_failed, false);
    handle->cookie = 0;
    handle->req_flags = 0;
    handle->origin_id = 0;
    atomic_store_explicit(&handle->resp_ref, false, memory_order_relaxed);
    handle->pull_op = HG_OP_ID_NULL;
    handle->completion = (struct hg_completion){0};
    atomic_init(&handle->self_state, HG_SELF_NONE);
    atomic_init(&handle->self_fwd_open, false);
    handle->self_in = NULL;
    handle->self_resp_cb = NULL;
    handle->self_resp_arg = NULL;
    handle->self_completion = (struct hg_completion){0};
    handle->cache_next = NULL;
}

/* Keep a released target handle for the next request; false when full. */
static bool hg_handle_cache_put(hg_context_t *context, hg_handle_t handle)
{
    hg_handle_reset(handle);
    hgx_lock(&context->cq_lock);
    bool kept = context->handle_cache_n < context->handle_cache_cap;
    if (kept) {
        handle->cache_next = context->handle_cache;
        context->handle_cache = handle;
        context->handle_cache_n++;
    }
    hgx_unlock(&context->cq_lock);
    return kept;
}

long hg_handle_release_forgotten(hg_context_t *context)
{
    long n = 0;
    for (;;) {
        hgx_lock(&context->cq_lock);
        hg_handle_t handle = NULL;
        struct hgx_list *it;
        hgx_list_for_each(it, &context->live)
        {
            hg_handle_t h = hgx_list_entry(it, struct hg_handle, live_link);
            if (atomic_load(&h->pending) == 0) {
                handle = h;
                break;
            }
        }
        hgx_unlock(&context->cq_lock);
        if (!handle)
            return n;
        /* Every reference is forgotten: drop them all at once. */
        atomic_store(&handle->refcount, 1);
        hg_handle_release(handle);
        n++;
    }
}

void hg_handle_cache_drain(hg_context_t *context)
{
    hg_handle_t handle;
    while ((handle = hg_handle_cache_take(context)) != NULL)
        hg_handle_free_na(context->hg_class->na_class, handle);
}

hg_handle_t hg_handle_alloc(hg_context_t *context, hg_addr_t addr,
                            const struct hg_rpc_info *rpc, bool target)
{
    hg_handle_t handle = target ? hg_handle_cache_take(context) : NULL;
    if (!handle)
        handle = calloc(1, sizeof(*handle));

    if (!handle)
        return HG_HANDLE_NULL;
    handle->info.hg_class = context->hg_class;
    handle->info.context = context;
    if (addr)
        HG_Addr_dup(context->hg_class, addr, &handle->info.addr);
    handle->info.id = rpc->id;
    handle->rpc = *rpc;
    handle->target = target;
    /* The other counts and flags are zero: calloc or hg_handle_reset. */
    HGX_ASSERT(atomic_load(&handle->pending) == 0);
    atomic_init(&handle->refcount, 1);
    hgx_long_add(&context->n_handles, 1, context->hg_class->single);
    hgx_lock(&context->cq_lock);
    hgx_list_push_front(&context->live, &handle->live_link);
    hgx_unlock(&context->cq_lock);
    hg_class_t *hg_class = context->hg_class;
    if (hg_class->handle_create) {
        hg_return_t ret = hg_class->handle_create(handle, hg_class->handle_create_arg);
        if (ret != HG_SUCCESS) {
            HGX_LOG_ERROR(HG, "handle create callback failed: %s",
                          HG_Error_to_string(ret));
            hg_handle_release(handle);
            return HG_HANDLE_NULL;
        }
    }
    return handle;
}

void hg_handle_clear_decode(hg_handle_t handle)
{
    free(handle->decode_owned);
    handle->decode_owned = NULL;
    handle->decode_buf = NULL;
    handle->decode_size = 0;
    handle->has_decode = false;
}

void hg_handle_free_extra(hg_handle_t handle)
{
    if (handle->extra_bulk)
        HG_Bulk_free(handle->extra_bulk);
    handle->extra_bulk = HG_BULK_NULL;
    free(handle->extra_buf);
    handle->extra_buf = NULL;
}

void hg_handle_release(hg_handle_t handle)
{
    hg_context_t *context = handle->info.context;
    bool single = context->hg_class->single;
    if (hgx_int_add(&handle->refcount, -1, single) != 1)
        return;
    na_class_t *na_class = context->hg_class->na_class;
    hgx_lock(&context->cq_lock);
    hgx_list_remove(&handle->live_link);
    hgx_unlock(&context->cq_lock);

    if (handle->data_free)
        handle->data_free(handle->data);
    hg_handle_clear_decode(handle);
    hg_handle_free_extra(handle);
    free(handle->self_in);
    handle->self_in = NULL;
    HG_Addr_free(context->hg_class, handle->info.addr);
    bool reuse = handle->target;
    if (reuse)
        hg_count(context->hg_class, HG_COUNT_REQ_ACTIVE, -1);
    hgx_long_add(&context->n_handles, -1, single);
    if (!reuse || !hg_handle_cache_put(context, handle))
        hg_handle_free_na(na_class, handle);
}

hg_return_t hg_handle_new_send(hg_handle_t handle, bool unexpected)
{
    hg_class_t *hg_class = handle->info.hg_class;

    handle->send_size = unexpected ? hg_class->unexpected_size : hg_class->expected_size;
    handle->send_buf = NA_Msg_buf_alloc(hg_class->na_class, handle->send_size, NA_SEND,
                                        &handle->send_plugin);
    return handle->send_buf ? HG_SUCCESS : HG_NOMEM;
}

hg_return_t hg_handle_new_recv(hg_handle_t handle, bool unexpected)
{
    hg_class_t *hg_class = handle->info.hg_class;

    handle->recv_size = unexpected ? hg_class->unexpected_size : hg_class->expected_size;
    handle->recv_buf = NA_Msg_buf_alloc(hg_class->na_class, handle->recv_size, NA_RECV,
                                        &handle->recv_plugin);
    return handle->recv_buf ? HG_SUCCESS : HG_NOMEM;
}

hg_return_t hg_handle_new_op(hg_handle_t handle, na_op_id_t **op)
{
    *op = NA_Op_create(handle->info.hg_class->na_class, NA_OP_SINGLE);
    return *op ? HG_SUCCESS : HG_NOMEM;
}

void hgx_test_corrupt_next_header(hg_class_t *hg_class)
{
    if (hg_class)
        atomic_store(&hg_class->corrupt_next, 1);
}

hg_return_t hg_handle_encode(hg_handle_t handle, hg_proc_cb_t proc_cb, void *struct_ptr,
                             void *payload, size_t room, size_t *size_p)
{
    struct hg_proc proc_area;
    hg_proc_t proc = &proc_area;
    hg_return_t ret;

    size_t offset = hg_handle_encode_offset(handle);

    *size_p = offset;
    if (handle->extra_bulk || handle->extra_buf)
        hg_handle_free_extra(handle);
    if (!proc_cb)
        return HG_SUCCESS;
    if (offset > room)
        return HG_OVERFLOW;
    hg_proc_setup(proc, handle->info.hg_class, handle, (char *)payload + offset,
                  room - offset, HG_ENCODE);
    /* As Mercury: bulk data inside the RPC only towards another process. */
    if (handle->info.hg_class->bulk_eager && handle->info.addr &&
        !handle->info.addr->is_self)
        hg_proc_set_flags(proc, HG_PROC_BULK_EAGER);
    ret = proc_cb(proc, struct_ptr); /* no checksum: nothing to flush */
    if (ret == HG_SUCCESS) {
        hg_size_t used = hg_proc_get_size_used(proc);
        void *extra = hg_proc_get_extra_buf(proc);
        *size_p = extra ? used : offset + used;
        if (extra) {
            /* Everything encoded lives in the extra buffer: expose it. */
            hg_size_t extra_size = used;
            hg_proc_set_extra_buf_is_mine(proc, 1);
            handle->extra_buf = extra;
            ret = HG_Bulk_create(handle->info.hg_class, 1, &handle->extra_buf,
                                 &extra_size, HG_BULK_READ_ONLY, &handle->extra_bulk);
            if (ret != HG_SUCCESS)
                hg_handle_free_extra(handle);
        }
    }
    if (ret != HG_SUCCESS)
        HGX_LOG_ERROR(HG, "could not encode RPC %#llx: %s",
                      (unsigned long long)handle->rpc.id, HG_Error_to_string(ret));
    hg_proc_fini(proc);
    return ret;
}

hg_return_t hg_handle_put_extra_desc(hg_handle_t handle, void *payload, size_t room,
                                     size_t *len_p)
{
    hg_size_t len = HG_Bulk_get_serialize_size(handle->extra_bulk, 0);
    size_t offset = hg_handle_encode_offset(handle);

    if (offset > room || len > room - offset)
        return HG_OVERFLOW;
    *len_p = offset + len;
    return HG_Bulk_serialize((char *)payload + offset, room - offset, 0,
                             handle->extra_bulk);
}

struct hg_pull_ctx {
    hg_handle_t handle;
    hg_bulk_t remote;
    hg_bulk_t local;
    void *buf;
    uint64_t size;
    void (*done)(hg_handle_t handle, hg_return_t ret);
};

static void pull_done(void *arg, hg_return_t ret)
{
    struct hg_pull_ctx *pc = arg;
    hg_handle_t handle = pc->handle;

    handle->pull_op = HG_OP_ID_NULL;
    HG_Bulk_free(pc->remote);
    HG_Bulk_free(pc->local);
    if (ret == HG_SUCCESS) {
        hg_handle_clear_decode(handle);
        handle->decode_owned = pc->buf;
        handle->decode_buf = pc->buf;
        handle->decode_size = pc->size;
        handle->has_decode = true;
    } else
        free(pc->buf);
    void (*done)(hg_handle_t, hg_return_t) = pc->done;
    free(pc);
    done(handle, ret);
}

hg_return_t hg_handle_pull_extra(hg_handle_t handle, const void *desc, size_t desc_len,
                                 uint64_t size,
                                 void (*done)(hg_handle_t handle, hg_return_t ret))
{
    hg_class_t *hg_class = handle->info.hg_class;
    struct hg_pull_ctx *pc = calloc(1, sizeof(*pc));
    hg_return_t ret;

    if (!pc)
        return HG_NOMEM;
    pc->handle = handle;
    pc->size = size;
    pc->done = done;
    ret = HG_Bulk_deserialize(hg_class, &pc->remote, desc, desc_len);
    if (ret != HG_SUCCESS)
        goto error;
    if (size == 0 || size > HG_EXTRA_MAX || HG_Bulk_get_size(pc->remote) < size) {
        HGX_LOG_ERROR(HG, "bad extra payload size %llu", (unsigned long long)size);
        ret = HG_PROTOCOL_ERROR;
        goto error;
    }
    pc->buf = malloc(size);
    if (!pc->buf) {
        ret = HG_NOMEM;
        goto error;
    }
    hg_size_t local_size = size;
    ret = HG_Bulk_create(hg_class, 1, &pc->buf, &local_size, HG_BULK_WRITE_ONLY,
                         &pc->local);
    if (ret != HG_SUCCESS)
        goto error;
    ret = hg_bulk_transfer_internal(handle->info.context, pull_done, pc, HG_BULK_PULL,
                                    handle->info.addr, handle->info.context_id,
                                    pc->remote, 0, pc->local, 0, size, &handle->pull_op);
    if (ret != HG_SUCCESS)
        goto error;
    return HG_SUCCESS;

error:
    HG_Bulk_free(pc->remote);
    HG_Bulk_free(pc->local);
    free(pc->buf);
    free(pc);
    return ret;
}

static void op_complete_run(struct hg_completion *completion)
{
    hg_handle_t handle =
        (hg_handle_t)((char *)completion - offsetof(struct hg_handle, completion));
    hg_cb_t callback = handle->callback;
    struct hg_cb_info info = {.arg = handle->arg, .ret = handle->op_ret};

    if (handle->op == HG_HANDLE_FORWARD) {
        info.type = HG_CB_FORWARD;
        info.info.forward.handle = handle;
    } else {
        info.type = HG_CB_RESPOND;
        info.info.respond.handle = handle;
    }
    /* Idle before the callback so that it may forward again. */
    handle->op = HG_HANDLE_IDLE;
    if (callback)
        callback(&info);
    hg_handle_release(handle);
}

void hg_handle_op_begin(hg_handle_t handle, enum hg_handle_op op, hg_cb_t callback,
                        void *arg, unsigned int n_ops)
{
    hgx_int_add(&handle->refcount, 1, handle->info.hg_class->single);
    handle->op = op;
    handle->callback = callback;
    handle->arg = arg;
    handle->op_ret = HG_SUCCESS;
    /* Nothing is posted yet: plain stores; the NA posts that follow publish them. */
    atomic_store_explicit(&handle->canceled, false, memory_order_relaxed);
    atomic_store_explicit(&handle->send_failed, false, memory_order_relaxed);
    atomic_store_explicit(&handle->pending, (int)n_ops + 1, memory_order_relaxed);
}

void hg_handle_op_unpost(hg_handle_t handle, unsigned int n)
{
    hgx_int_add(&handle->pending, -(int)n, handle->info.hg_class->single);
}

void hg_handle_op_error(hg_handle_t handle, hg_return_t ret)
{
    if (ret != HG_SUCCESS && handle->op_ret == HG_SUCCESS)
        handle->op_ret = ret;
}

void hg_handle_op_done(hg_handle_t handle)
{
    int before = hgx_int_add(&handle->pending, -1, handle->info.hg_class->single);
    /* Each sub-operation ends once: more ends than starts is a double completion. */
    HGX_ASSERT(before > 0);
    if (before != 1)
        return;
    if (!handle->callback) {
        /* Nothing for HG_Trigger to run (a response sent without a
         * callback, most often): finish here, not through the queue. */
        handle->op = HG_HANDLE_IDLE;
        hg_handle_release(handle);
        return;
    }
    handle->completion.run = op_complete_run;
    hg_completion_push(handle->info.context, &handle->completion);
}

/* Snapshot the registration of id (none for id 0) and the registry generation. */
static hg_return_t hg_handle_lookup_rpc(hg_class_t *hg_class, hg_id_t id,
                                        struct hg_rpc_info *rpc, unsigned int *gen)
{
    pthread_mutex_lock(&hg_class->lock);
    struct hg_rpc_entry *e = id ? hg_rpc_map_find(hg_class->rpc_map, id) : NULL;
    if (e)
        *rpc = e->info;
    *gen = atomic_load(&hg_class->rpc_gen);
    pthread_mutex_unlock(&hg_class->lock);
    if (id && !e) {
        HGX_LOG_ERROR(HG, "RPC id %#llx is not registered", (unsigned long long)id);
        return HG_NOENTRY;
    }
    return HG_SUCCESS;
}

hg_return_t HG_Create(hg_context_t *context, hg_addr_t addr, hg_id_t id,
                      hg_handle_t *handle_p)
{
    if (!context || !handle_p)
        return HG_INVALID_ARG;
    /* As Mercury: id 0 makes a handle whose RPC HG_Reset() sets later (handle pools). */
    struct hg_rpc_info rpc = {0};
    unsigned int gen;
    hg_return_t ret = hg_handle_lookup_rpc(context->hg_class, id, &rpc, &gen);
    if (ret != HG_SUCCESS)
        return ret;
    *handle_p = hg_handle_alloc(context, addr, &rpc, false);
    if (*handle_p)
        (*handle_p)->rpc_gen = gen;
    return *handle_p ? HG_SUCCESS : HG_NOMEM;
}

hg_return_t HG_Destroy(hg_handle_t handle)
{
    if (!handle)
        return HG_SUCCESS;
    hg_handle_release(handle);
    return HG_SUCCESS;
}

hg_return_t HG_Reset(hg_handle_t handle, hg_addr_t addr, hg_id_t id)
{
    if (!handle)
        return HG_INVALID_ARG;
    if (handle->op != HG_HANDLE_IDLE) {
        HGX_LOG_ERROR(HG, "cannot reset a handle with an operation pending");
        return HG_BUSY;
    }
    hg_class_t *hg_class = handle->info.hg_class;
    /* As Mercury 2.4.1: id 0 and HG_ADDR_NULL keep the current RPC and address. */
    if (id != 0 && id != handle->info.id) {
        hg_return_t ret =
            hg_handle_lookup_rpc(hg_class, id, &handle->rpc, &handle->rpc_gen);
        if (ret != HG_SUCCESS)
            return ret;
        handle->info.id = id;
    }
    if (addr && addr != handle->info.addr) {
        HG_Addr_free(hg_class, handle->info.addr);
        handle->info.addr = HG_ADDR_NULL;
        HG_Addr_dup(hg_class, addr, &handle->info.addr);
    }
    hg_handle_clear_decode(handle);
    hg_handle_free_extra(handle);
    return HG_SUCCESS;
}

hg_return_t HG_Ref_incr(hg_handle_t handle)
{
    if (!handle)
        return HG_INVALID_ARG;
    atomic_fetch_add(&handle->refcount, 1);
    return HG_SUCCESS;
}

hg_int32_t HG_Ref_get(hg_handle_t handle)
{
    return handle ? atomic_load(&handle->refcount) : -1;
}

const struct hg_info *HG_Get_info(hg_handle_t handle)
{
    return handle ? &handle->info : NULL;
}

hg_return_t HG_Set_data(hg_handle_t handle, void *data, void (*free_callback)(void *))
{
    if (!handle)
        return HG_INVALID_ARG;
    handle->data = data;
    handle->data_free = free_callback;
    return HG_SUCCESS;
}

void *HG_Get_data(hg_handle_t handle)
{
    return handle ? handle->data : NULL;
}

hg_return_t HG_Set_target_id(hg_handle_t handle, hg_uint8_t id)
{
    if (!handle)
        return HG_INVALID_ARG;
    handle->info.context_id = id;
    return HG_SUCCESS;
}

/* A payload to decode: where it is and how many reserved bytes lead it. */
struct hg_payload {
    const char *buf;
    size_t size;
    size_t offset;
};

/* The payload the handle decodes (input at a target, output at an origin). A
 * payload that came in a message starts with the reserved bytes; one pulled
 * or handed over in memory (decode_owned) is the encoding alone. */
static bool received_payload(hg_handle_t handle, struct hg_payload *p)
{
    if (!handle->has_decode)
        return false;
    p->buf = handle->decode_buf;
    p->size = handle->decode_size;
    p->offset = handle->decode_owned ? 0 : hg_handle_decode_offset(handle);
    return true;
}

/* The input of a forward to self, encoded in memory. */
static bool self_input(hg_handle_t handle, struct hg_payload *p)
{
    if (!handle->self_in)
        return false;
    p->buf = handle->self_in;
    p->size = handle->in_size;
    p->offset = 0;
    return true;
}

/* Run proc_cb over payload p (op HG_DECODE; NULL if there is none) or in
 * HG_FREE mode. */
static hg_return_t run_proc(hg_handle_t handle, hg_proc_cb_t proc_cb, void *struct_ptr,
                            hg_proc_op_t op, const struct hg_payload *p)
{
    struct hg_proc proc_area;
    hg_proc_t proc = &proc_area;
    hg_return_t ret;

    if (!proc_cb)
        return HG_SUCCESS;
    if (op == HG_DECODE && !p)
        return HG_NOENTRY;
    if (op == HG_DECODE && p->offset > p->size) {
        HGX_LOG_ERROR(HG, "payload of %zu bytes is shorter than the %zu reserved",
                      p->size, p->offset);
        return HG_OVERFLOW;
    }
    if (op == HG_DECODE)
        hg_proc_setup(proc, handle->info.hg_class, handle,
                      (char *)(uintptr_t)p->buf + p->offset, p->size - p->offset, op);
    else
        hg_proc_setup(proc, handle->info.hg_class, handle, NULL, 0, op);
    ret = proc_cb(proc, struct_ptr); /* no checksum: nothing to flush */
    hg_proc_fini(proc);
    if (ret != HG_SUCCESS)
        HGX_LOG_ERROR(HG, "could not %s payload of RPC %#llx: %s",
                      op == HG_DECODE ? "decode" : "free",
                      (unsigned long long)handle->rpc.id, HG_Error_to_string(ret));
    return ret;
}

hg_return_t HG_Get_input(hg_handle_t handle, void *in_struct)
{
    struct hg_payload p;
    bool have;

    if (!handle || !in_struct)
        return HG_INVALID_ARG;
    if (handle->target)
        have = received_payload(handle, &p);
    else if (atomic_load(&handle->self_state) != HG_SELF_NONE)
        have = self_input(handle, &p);
    else
        return HG_INVALID_ARG;
    return run_proc(handle, handle->rpc.in_proc, in_struct, HG_DECODE, have ? &p : NULL);
}

hg_return_t HG_Free_input(hg_handle_t handle, void *in_struct)
{
    if (!handle || !in_struct)
        return HG_INVALID_ARG;
    return run_proc(handle, handle->rpc.in_proc, in_struct, HG_FREE, NULL);
}

hg_return_t HG_Get_output(hg_handle_t handle, void *out_struct)
{
    struct hg_payload p;

    if (!handle || !out_struct || handle->target)
        return HG_INVALID_ARG;
    bool have = received_payload(handle, &p);
    return run_proc(handle, handle->rpc.out_proc, out_struct, HG_DECODE,
                    have ? &p : NULL);
}

hg_return_t HG_Free_output(hg_handle_t handle, void *out_struct)
{
    if (!handle || !out_struct)
        return HG_INVALID_ARG;
    return run_proc(handle, handle->rpc.out_proc, out_struct, HG_FREE, NULL);
}

hg_return_t HG_Cancel(hg_handle_t handle)
{
    if (!handle)
        return HG_INVALID_ARG;
    if (handle->op == HG_HANDLE_IDLE || atomic_load(&handle->pending) == 0)
        return HG_SUCCESS;
    atomic_store(&handle->canceled, true);
    if (atomic_load(&handle->self_state) != HG_SELF_NONE && !handle->target) {
        hg_self_cancel(handle);
        return HG_SUCCESS;
    }
    na_class_t *na_class = handle->info.hg_class->na_class;
    na_context_t *na_context = handle->info.context->na_context;
    if (handle->send_op)
        NA_Cancel(na_class, na_context, handle->send_op);
    if (handle->recv_op && !handle->target)
        NA_Cancel(na_class, na_context, handle->recv_op);
    if (handle->ack_op)
        NA_Cancel(na_class, na_context, handle->ack_op);
    if (handle->pull_op)
        HG_Bulk_cancel(handle->pull_op);
    return HG_SUCCESS;
}
