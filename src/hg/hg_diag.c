/*
 * hg_diag.c -- diagnostic counters of HG classes (Mercury 2.4.1's
 * HG_Class_get_counters and HG_Diag_dump_counters). hgx always counts (one
 * relaxed atomic add per event), where Mercury needs a debug build.
 */
#include "hg_internal.h"

#include <stdlib.h>

/* Classes alive, for HG_Diag_dump_counters (the dump walks them). */
static pthread_mutex_t hg_diag_lock = PTHREAD_MUTEX_INITIALIZER;
static hg_class_t **hg_diag_classes;
static size_t hg_diag_n, hg_diag_cap;

void hg_diag_register(hg_class_t *hg_class)
{
    pthread_mutex_lock(&hg_diag_lock);
    if (hg_diag_n == hg_diag_cap) {
        size_t cap = hg_diag_cap ? 2 * hg_diag_cap : 4;
        hg_class_t **v = realloc(hg_diag_classes, cap * sizeof(*v));
        if (v) {
            hg_diag_classes = v;
            hg_diag_cap = cap;
        }
    }
    if (hg_diag_n < hg_diag_cap)
        hg_diag_classes[hg_diag_n++] = hg_class;
    pthread_mutex_unlock(&hg_diag_lock);
}

void hg_diag_deregister(hg_class_t *hg_class)
{
    pthread_mutex_lock(&hg_diag_lock);
    for (size_t i = 0; i < hg_diag_n; i++)
        if (hg_diag_classes[i] == hg_class) {
            hg_diag_classes[i] = hg_diag_classes[--hg_diag_n];
            break;
        }
    if (hg_diag_n == 0) {
        free(hg_diag_classes);
        hg_diag_classes = NULL;
        hg_diag_cap = 0;
    }
    pthread_mutex_unlock(&hg_diag_lock);
}

hg_return_t HG_Class_get_counters(const hg_class_t *hg_class,
                                  struct hg_diag_counters *diag_counters)
{
    if (!hg_class || !diag_counters)
        return HG_INVALID_ARG;
#define HG_DIAG_GET(i)                                                                   \
    ((uint64_t)atomic_load_explicit(&hg_class->counters[i], memory_order_relaxed))
    *diag_counters = (struct hg_diag_counters){
        .rpc_req_sent_count = HG_DIAG_GET(HG_COUNT_REQ_SENT),
        .rpc_req_recv_count = HG_DIAG_GET(HG_COUNT_REQ_RECV),
        .rpc_resp_sent_count = HG_DIAG_GET(HG_COUNT_RESP_SENT),
        .rpc_resp_recv_count = HG_DIAG_GET(HG_COUNT_RESP_RECV),
        .rpc_req_extra_count = HG_DIAG_GET(HG_COUNT_REQ_EXTRA),
        .rpc_resp_extra_count = HG_DIAG_GET(HG_COUNT_RESP_EXTRA),
        .rpc_req_recv_active_count = HG_DIAG_GET(HG_COUNT_REQ_ACTIVE),
        .rpc_multi_recv_copy_count = 0, /* no multi-recv in hgx (na.h) */
        .bulk_count = HG_DIAG_GET(HG_COUNT_BULK),
    };
#undef HG_DIAG_GET
    return HG_SUCCESS;
}

void hg_diag_print(hg_class_t *hg_class)
{
    struct hg_diag_counters c;
    (void)HG_Class_get_counters(hg_class, &c);
    hgx_log_print(HGX_SUBSYS_HG,
                  "class %p (%s): requests sent %llu, received %llu, active %llu; "
                  "responses sent %llu, received %llu; extra requests %llu, "
                  "extra responses %llu; bulk transfers %llu",
                  (void *)hg_class, NA_Get_class_protocol(hg_class->na_class),
                  (unsigned long long)c.rpc_req_sent_count,
                  (unsigned long long)c.rpc_req_recv_count,
                  (unsigned long long)c.rpc_req_recv_active_count,
                  (unsigned long long)c.rpc_resp_sent_count,
                  (unsigned long long)c.rpc_resp_recv_count,
                  (unsigned long long)c.rpc_req_extra_count,
                  (unsigned long long)c.rpc_resp_extra_count,
                  (unsigned long long)c.bulk_count);
}

void HG_Diag_dump_counters(void)
{
    pthread_mutex_lock(&hg_diag_lock);
    for (size_t i = 0; i < hg_diag_n; i++)
        hg_diag_print(hg_diag_classes[i]);
    pthread_mutex_unlock(&hg_diag_lock);
}
