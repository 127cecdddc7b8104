/*
 * hg_buf.c -- raw access to a handle's payloads (Mercury 2.4.1's
 * HG_Get_input_buf family) and their sizes.
 *
 * The input buffer is where the input travels eagerly: at the origin the
 * request message being built, at the target the input received. The output
 * buffer is the same for the response. The extra buffer is the one of a
 * payload too large for a message (moved with a bulk transfer): at the side
 * that encoded it, the encoding; at the side that received it, what was
 * pulled. A payload handed over in memory (RPC to self) is reported as
 * received in the extra buffer when it is larger than the eager size.
 */
#include "hg_handle.h"

#include <stdlib.h>

/* Where the payload this handle encodes is built (NULL if out of memory). */
static void *encode_area(hg_handle_t handle, hg_size_t *size_p)
{
    hg_class_t *hg_class = handle->info.hg_class;
    bool request = !handle->target;

    if (hg_handle_alloc_send(handle, request) != HG_SUCCESS)
        return NULL;
    size_t skip = (request ? hg_class->unexpected_header : hg_class->expected_header) +
                  HG_HEADER_SIZE;
    *size_p = handle->send_size - skip;
    return (char *)handle->send_buf + skip;
}

/* The received payload that came in a message (eager), or NULL. */
static void *received_eager(hg_handle_t handle, hg_size_t *size_p)
{
    if (!handle->has_decode || handle->decode_owned)
        return NULL;
    *size_p = handle->decode_size;
    return (void *)(uintptr_t)handle->decode_buf;
}

/* The received payload that came through an extra buffer (pulled, or handed
 * over in memory and larger than eager bytes), or NULL. */
static void *received_extra(hg_handle_t handle, hg_size_t *size_p, hg_size_t eager)
{
    bool self = handle->info.addr && handle->info.addr->is_self;

    if (!handle->has_decode || !handle->decode_owned ||
        (self && handle->decode_size <= eager))
        return NULL;
    *size_p = handle->decode_size;
    return handle->decode_owned;
}

/* An extra buffer: the encoding this handle exposes (size bytes), or the one
 * it received. Always HG_SUCCESS; NULL and 0 when there is none. */
static hg_return_t report_extra(hg_handle_t handle, bool encoder, hg_size_t size,
                                hg_size_t eager, void **buf_p, hg_size_t *size_p)
{
    void *buf = encoder ? handle->extra_buf : received_extra(handle, &size, eager);

    *buf_p = buf;
    if (size_p)
        *size_p = buf ? size : 0;
    return HG_SUCCESS;
}

/* Report buf / size (size optional); HG_NOENTRY when there is none. */
static hg_return_t report(void *buf, hg_size_t size, void **buf_p, hg_size_t *size_p,
                          const char *what)
{
    *buf_p = buf;
    if (size_p)
        *size_p = buf ? size : 0;
    if (!buf)
        HGX_LOG_DEBUG(HG, "handle has no %s buffer", what);
    return buf ? HG_SUCCESS : HG_NOENTRY;
}

hg_return_t HG_Get_input_buf(hg_handle_t handle, void **in_buf_p,
                             hg_size_t *in_buf_size_p)
{
    hg_size_t size = 0;

    if (!handle || !in_buf_p)
        return HG_INVALID_ARG;
    void *buf =
        handle->target ? received_eager(handle, &size) : encode_area(handle, &size);
    if (!buf && !handle->target)
        return HG_NOMEM;
    return report(buf, size, in_buf_p, in_buf_size_p, "input");
}

hg_return_t HG_Get_output_buf(hg_handle_t handle, void **out_buf_p,
                              hg_size_t *out_buf_size_p)
{
    hg_size_t size = 0;

    if (!handle || !out_buf_p)
        return HG_INVALID_ARG;
    void *buf =
        handle->target ? encode_area(handle, &size) : received_eager(handle, &size);
    if (!buf && handle->target)
        return HG_NOMEM;
    return report(buf, size, out_buf_p, out_buf_size_p, "output");
}

hg_return_t HG_Get_input_extra_buf(hg_handle_t handle, void **in_buf_p,
                                   hg_size_t *in_buf_size_p)
{
    if (!handle || !in_buf_p)
        return HG_INVALID_ARG;
    return report_extra(handle, !handle->target, handle->in_size,
                        HG_Class_get_input_eager_size(handle->info.hg_class), in_buf_p,
                        in_buf_size_p);
}

hg_return_t HG_Get_output_extra_buf(hg_handle_t handle, void **out_buf_p,
                                    hg_size_t *out_buf_size_p)
{
    if (!handle || !out_buf_p)
        return HG_INVALID_ARG;
    return report_extra(handle, handle->target, handle->out_size,
                        HG_Class_get_output_eager_size(handle->info.hg_class), out_buf_p,
                        out_buf_size_p);
}

hg_return_t HG_Release_input_buf(hg_handle_t handle)
{
    if (handle && atomic_load(&handle->self_state) != HG_SELF_NONE && !handle->target) {
        free(handle->self_in); /* a forward to self: its handler is done with it */
        handle->self_in = NULL;
        return HG_SUCCESS;
    }
    if (!handle || !handle->target) {
        HGX_LOG_ERROR(HG, "only a received request has an input buffer to release");
        return HG_INVALID_ARG;
    }
    hg_handle_clear_decode(handle);
    return HG_SUCCESS;
}

hg_size_t HG_Get_input_payload_size(hg_handle_t handle)
{
    return handle ? handle->in_size : 0;
}

hg_size_t HG_Get_output_payload_size(hg_handle_t handle)
{
    return handle ? handle->out_size : 0;
}
