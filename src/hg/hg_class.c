/*
 * hg_class.c -- HG class life cycle, version, error strings, logging and
 * class accessors.
 */
#include "hg_internal.h"
#include "hg_header.h"
#include "hg_rpc_map.h"
#include "mercury_log.h"

#include <stdlib.h>

hg_return_t HG_Version_get(unsigned int *major_p, unsigned int *minor_p,
                           unsigned int *patch_p)
{
    if (major_p)
        *major_p = HG_VERSION_MAJOR;
    if (minor_p)
        *minor_p = HG_VERSION_MINOR;
    if (patch_p)
        *patch_p = HG_VERSION_PATCH;
    return HG_SUCCESS;
}

const char *HG_Error_to_string(hg_return_t errnum)
{
#define X(a) [a] = #a,
    static const char *const names[] = {HG_RETURN_VALUES};
#undef X
    if ((int)errnum < 0 || errnum >= HG_RETURN_MAX)
        return "HG_UNKNOWN_ERROR";
    return names[errnum];
}

hg_return_t hg_ret_from_na(na_return_t ret)
{
    /* The NA and HG codes share their names. */
    // clang-format off
    switch (ret) {
#define X(a) case NA_##a: return HG_##a;
    X(SUCCESS) X(PERMISSION) X(NOENTRY) X(INTERRUPT) X(AGAIN) X(NOMEM) X(ACCESS)
    X(FAULT) X(BUSY) X(EXIST) X(NODEV) X(INVALID_ARG) X(PROTOCOL_ERROR) X(OVERFLOW)
    X(MSGSIZE) X(PROTONOSUPPORT) X(OPNOTSUPPORTED) X(ADDRINUSE) X(ADDRNOTAVAIL)
    X(HOSTUNREACH) X(TIMEOUT) X(CANCELED) X(IO_ERROR)
#undef X
    default: return HG_NA_ERROR;
    }
    // clang-format on
}

void HG_Set_log_level(const char *level)
{
    if (level)
        hgx_log_set_level("", level);
}

/* One list for hgx's subsystems and the program's log outlets (mercury_log.h),
 * which share a registry in Mercury. */
void HG_Set_log_subsys(const char *subsys)
{
    if (subsys) {
        hgx_log_set_subsys(subsys);
        hg_log_set_subsys(subsys);
    }
}

void HG_Set_log_func(int (*log_func)(FILE *stream, const char *format, ...))
{
    hgx_log_set_func(log_func);
}

void HG_Set_log_stream(const char *level, FILE *stream)
{
    if (level)
        hgx_log_set_stream(level, stream);
}

hg_return_t HG_Get_na_protocol_info(const char *info_string,
                                    struct na_protocol_info **na_protocol_info_p)
{
    return hg_ret_from_na(NA_Get_protocol_info(info_string, na_protocol_info_p));
}

void HG_Free_na_protocol_info(struct na_protocol_info *na_protocol_info)
{
    NA_Free_protocol_info(na_protocol_info);
}

hg_class_t *HG_Init(const char *na_info_string, hg_bool_t na_listen)
{
    return HG_Init_opt2(na_info_string, na_listen, HG_VERSION(2, 4), NULL);
}

hg_class_t *HG_Init_opt(const char *na_info_string, hg_bool_t na_listen,
                        const struct hg_init_info *hg_init_info)
{
    return HG_Init_opt2(na_info_string, na_listen, HG_VERSION(2, 2), hg_init_info);
}

/*
 * The caller's init info as of its version (Mercury 2.4.1's rules): 2.2 ends
 * before no_multi_recv, 2.3 before traffic_class; the members a version lacks
 * keep their defaults. Version 0 with an info, or a major other than 2, is
 * refused. The NA traffic class is hg_init_info's (Mercury's embedded NA info
 * has none), unless only na_init_info's is set.
 */
static bool hg_init_info_from_version(unsigned int version, const struct hg_init_info *in,
                                      struct hg_init_info *out)
{
    const struct hg_init_info defaults = HG_INIT_INFO_INITIALIZER;

    if (!in)
        return true;
    if (HG_MAJOR(version) != HG_VERSION_MAJOR) {
        HGX_LOG_ERROR(HG, "init info version %u.%u is not supported (2.x expected)",
                      HG_MAJOR(version), HG_MINOR(version));
        return false;
    }
    *out = *in;
    if (HG_VERSION_LT(version, HG_VERSION(2, 3))) {
        out->no_multi_recv = defaults.no_multi_recv;
        out->release_input_early = defaults.release_input_early;
    }
    if (HG_VERSION_LT(version, HG_VERSION(2, 4))) {
        out->traffic_class = defaults.traffic_class;
        out->no_overflow = defaults.no_overflow;
        out->multi_recv_op_max = defaults.multi_recv_op_max;
        out->multi_recv_copy_threshold = defaults.multi_recv_copy_threshold;
    }
    if (out->traffic_class != NA_TC_UNSPEC)
        out->na_init_info.traffic_class = out->traffic_class;
    return true;
}

hg_class_t *HG_Init_opt2(const char *na_info_string, hg_bool_t na_listen,
                         unsigned int version, const struct hg_init_info *hg_init_info)
{
    struct hg_init_info info = HG_INIT_INFO_INITIALIZER;
    hg_class_t *hg_class;

    if (!hg_init_info_from_version(version, hg_init_info, &info))
        return NULL;
    if (info.auto_sm)
        HGX_LOG_WARNING(HG,
                        "auto_sm not supported: node-local peers are reached "
                        "through \"%s\" itself (ucx+all picks shared memory for "
                        "them; docs/mercury-compat.md)",
                        na_info_string ? na_info_string : "the given NA class");
    if (!info.na_class && !na_info_string) {
        HGX_LOG_ERROR(HG, "NULL info string and no NA class given");
        return NULL;
    }
    hg_class = calloc(1, sizeof(*hg_class));
    if (!hg_class) {
        HGX_LOG_ERROR(HG, "out of memory");
        return NULL;
    }
    if (info.na_class) {
        hg_class->na_class = info.na_class;
    } else {
        hg_class->na_class = NA_Initialize_opt2(
            na_info_string, na_listen, NA_VERSION(NA_VERSION_MAJOR, NA_VERSION_MINOR),
            &info.na_init_info);
        hg_class->own_na_class = true;
        if (!hg_class->na_class) {
            HGX_LOG_ERROR(HG, "could not initialize NA with \"%s\"", na_info_string);
            goto error;
        }
    }
    hg_class->listening = NA_Is_listening(hg_class->na_class);
    hg_class->single =
        (info.na_init_info.thread_mode & NA_THREAD_MODE_SINGLE) == NA_THREAD_MODE_SINGLE;
    hg_class->checksum_level = info.checksum_level;
    hg_class->no_loopback = info.no_loopback;
    hg_class->bulk_eager = !info.no_bulk_eager;
    hg_class->stats = info.stats;
    hg_class->post_count =
        info.request_post_init ? info.request_post_init : HG_POST_POOL_DEFAULT;
    /* Mercury 2.4.1's reading: negative turns growth off, 0 is the default. */
    hg_class->post_incr = info.request_post_incr < 0 ? 0
                          : info.request_post_incr == 0
                              ? HG_POST_POOL_DEFAULT
                              : (unsigned int)info.request_post_incr;
    hg_class->unexpected_size = NA_Msg_get_max_unexpected_size(hg_class->na_class);
    hg_class->expected_size = NA_Msg_get_max_expected_size(hg_class->na_class);
    hg_class->unexpected_header = NA_Msg_get_unexpected_header_size(hg_class->na_class);
    hg_class->expected_header = NA_Msg_get_expected_header_size(hg_class->na_class);
    /* Cookies wrap with a mask, not a division on every forward. */
    uint64_t tags = (uint64_t)NA_Msg_get_max_tag(hg_class->na_class) + 1;
    while (tags & (tags - 1))
        tags &= tags - 1; /* keep the highest bit */
    hg_class->cookie_mask = (uint32_t)(tags - 1);
    if (hg_class->unexpected_size < hg_class->unexpected_header + HG_HEADER_SIZE + 256 ||
        hg_class->expected_size < hg_class->expected_header + HG_HEADER_SIZE + 256) {
        HGX_LOG_ERROR(HG, "NA message sizes too small (%zu / %zu)",
                      hg_class->unexpected_size, hg_class->expected_size);
        goto error;
    }
    hg_class->rpc_map = hg_rpc_map_create();
    if (!hg_class->rpc_map) {
        HGX_LOG_ERROR(HG, "out of memory");
        goto error;
    }
    pthread_mutex_init(&hg_class->lock, NULL);
    hgx_lock_init_mode(&hg_class->addr_lock, hg_class->single);
    hgx_list_init(&hg_class->addrs);
    atomic_init(&hg_class->cookie_next, 1);
    atomic_init(&hg_class->bulk_id_next, 1);
    hg_diag_register(hg_class);
    return hg_class;

error:
    if (hg_class->own_na_class && hg_class->na_class)
        (void)NA_Finalize(hg_class->na_class);
    free(hg_class);
    return NULL;
}

hg_return_t HG_Finalize(hg_class_t *hg_class)
{
    if (!hg_class)
        return HG_INVALID_ARG;
    /* Handles live in contexts, which refuse to go while one is in progress. */
    long contexts = atomic_load(&hg_class->n_contexts),
         bulks = atomic_load(&hg_class->n_bulks);
    if (contexts || bulks) {
        HGX_LOG_ERROR(HG,
                      "cannot finalize: %ld context(s), %ld bulk handle(s) still alive",
                      contexts, bulks);
        return HG_BUSY;
    }
    /* Unlike Mercury 2.4.1 (HG_BUSY), forgotten addresses and handles do not
     * stop the program from finishing (docs/mercury-compat.md). */
    long addrs = hg_addr_free_all(hg_class),
         handles = atomic_load(&hg_class->n_forgotten_handles);
    if (addrs || handles)
        HGX_LOG_WARNING(HG,
                        "released %ld address(es) and %ld handle(s) the program did not "
                        "free",
                        addrs, handles);
    if (hg_class->stats)
        hg_diag_print(hg_class);
    if (hg_class->own_na_class) {
        na_return_t na_ret = NA_Finalize(hg_class->na_class);
        if (na_ret != NA_SUCCESS) {
            HGX_LOG_ERROR(HG, "could not finalize NA: %s", NA_Error_to_string(na_ret));
            return hg_ret_from_na(na_ret);
        }
    }
    hg_diag_deregister(hg_class);
    hg_rpc_map_destroy(hg_class->rpc_map);
    if (hg_class->data_free)
        hg_class->data_free(hg_class->data);
    pthread_mutex_destroy(&hg_class->lock);
    free(hg_class);
    return HG_SUCCESS;
}

void HG_Cleanup(void)
{
    NA_Cleanup();
}

const char *HG_Class_get_name(const hg_class_t *hg_class)
{
    return hg_class ? NA_Get_class_name(hg_class->na_class) : NULL;
}

const char *HG_Class_get_protocol(const hg_class_t *hg_class)
{
    return hg_class ? NA_Get_class_protocol(hg_class->na_class) : NULL;
}

hg_bool_t HG_Class_is_listening(const hg_class_t *hg_class)
{
    return hg_class && hg_class->listening;
}

hg_size_t HG_Class_get_input_eager_size(const hg_class_t *hg_class)
{
    if (!hg_class)
        return 0;
    return hg_class->unexpected_size - hg_class->unexpected_header - HG_HEADER_SIZE;
}

hg_size_t HG_Class_get_output_eager_size(const hg_class_t *hg_class)
{
    if (!hg_class)
        return 0;
    return hg_class->expected_size - hg_class->expected_header - HG_HEADER_SIZE;
}

hg_return_t HG_Class_set_data(hg_class_t *hg_class, void *data,
                              void (*free_callback)(void *))
{
    if (!hg_class)
        return HG_INVALID_ARG;
    hg_class->data = data;
    hg_class->data_free = free_callback;
    return HG_SUCCESS;
}

void *HG_Class_get_data(const hg_class_t *hg_class)
{
    return hg_class ? hg_class->data : NULL;
}

hg_return_t HG_Class_set_input_offset(hg_class_t *hg_class, hg_size_t offset)
{
    if (!hg_class || offset > HG_Class_get_input_eager_size(hg_class))
        return HG_INVALID_ARG;
    hg_class->in_offset = (size_t)offset;
    return HG_SUCCESS;
}

hg_return_t HG_Class_set_output_offset(hg_class_t *hg_class, hg_size_t offset)
{
    if (!hg_class || offset > HG_Class_get_output_eager_size(hg_class))
        return HG_INVALID_ARG;
    hg_class->out_offset = (size_t)offset;
    return HG_SUCCESS;
}

hg_return_t HG_Class_set_handle_create_callback(
    hg_class_t *hg_class, hg_return_t (*callback)(hg_handle_t, void *), void *arg)
{
    if (!hg_class)
        return HG_INVALID_ARG;
    hg_class->handle_create = callback;
    hg_class->handle_create_arg = arg;
    return HG_SUCCESS;
}
