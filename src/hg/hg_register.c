/*
 * hg_register.c -- the public RPC registration calls over hg_rpc_map.
 */
#include "hg_internal.h"
#include "hg_rpc_map.h"

#include "mercury_hash_string.h"

hg_id_t HG_Register_name(hg_class_t *hg_class, const char *func_name,
                         hg_proc_cb_t in_proc_cb, hg_proc_cb_t out_proc_cb,
                         hg_rpc_cb_t rpc_cb)
{
    if (!hg_class || !func_name) {
        HGX_LOG_ERROR(HG, "NULL class or function name");
        return 0;
    }
    /* Mercury's id of a name (a name whose hash is 0 gets id 0, which
     * HG_Register refuses). */
    hg_id_t id = hg_hash_string(func_name);
    return HG_Register(hg_class, id, in_proc_cb, out_proc_cb, rpc_cb) == HG_SUCCESS ? id
                                                                                    : 0;
}

hg_return_t HG_Registered_name(hg_class_t *hg_class, const char *func_name, hg_id_t *id_p,
                               hg_bool_t *flag_p)
{
    if (!hg_class || !func_name || !flag_p)
        return HG_INVALID_ARG;
    hg_id_t id = hg_hash_string(func_name);
    if (id_p)
        *id_p = id;
    return HG_Registered(hg_class, id, flag_p);
}

hg_return_t HG_Register(hg_class_t *hg_class, hg_id_t id, hg_proc_cb_t in_proc_cb,
                        hg_proc_cb_t out_proc_cb, hg_rpc_cb_t rpc_cb)
{
    if (!hg_class || id == 0)
        return HG_INVALID_ARG;
    pthread_mutex_lock(&hg_class->lock);
    struct hg_rpc_entry *e =
        hg_rpc_map_set(hg_class->rpc_map, id, in_proc_cb, out_proc_cb, rpc_cb);
    atomic_fetch_add(&hg_class->rpc_gen, 1);
    pthread_mutex_unlock(&hg_class->lock);
    if (!e) {
        HGX_LOG_ERROR(HG, "out of memory registering RPC %#llx", (unsigned long long)id);
        return HG_NOMEM;
    }
    return HG_SUCCESS;
}

hg_return_t HG_Deregister(hg_class_t *hg_class, hg_id_t id)
{
    if (!hg_class)
        return HG_INVALID_ARG;
    pthread_mutex_lock(&hg_class->lock);
    bool found = hg_rpc_map_remove(hg_class->rpc_map, id);
    atomic_fetch_add(&hg_class->rpc_gen, 1);
    pthread_mutex_unlock(&hg_class->lock);
    return found ? HG_SUCCESS : HG_NOENTRY;
}

hg_return_t HG_Registered(hg_class_t *hg_class, hg_id_t id, hg_bool_t *flag_p)
{
    return HG_Registered_proc_cb(hg_class, id, flag_p, NULL, NULL);
}

hg_return_t HG_Registered_proc_cb(hg_class_t *hg_class, hg_id_t id, hg_bool_t *flag_p,
                                  hg_proc_cb_t *in_proc_cb_p, hg_proc_cb_t *out_proc_cb_p)
{
    if (!hg_class || !flag_p)
        return HG_INVALID_ARG;
    pthread_mutex_lock(&hg_class->lock);
    struct hg_rpc_entry *e = hg_rpc_map_find(hg_class->rpc_map, id);
    *flag_p = e != NULL;
    if (e && in_proc_cb_p)
        *in_proc_cb_p = e->info.in_proc;
    if (e && out_proc_cb_p)
        *out_proc_cb_p = e->info.out_proc;
    pthread_mutex_unlock(&hg_class->lock);
    return HG_SUCCESS;
}

hg_return_t HG_Register_data(hg_class_t *hg_class, hg_id_t id, void *data,
                             void (*free_callback)(void *))
{
    if (!hg_class)
        return HG_INVALID_ARG;
    pthread_mutex_lock(&hg_class->lock);
    struct hg_rpc_entry *e = hg_rpc_map_find(hg_class->rpc_map, id);
    void *old = NULL;
    void (*old_free)(void *) = NULL;
    if (e) {
        old = e->data;
        old_free = e->data_free;
        e->data = data;
        e->data_free = free_callback;
    }
    pthread_mutex_unlock(&hg_class->lock);
    if (!e)
        return HG_NOENTRY;
    if (old_free && old != data)
        old_free(old);
    return HG_SUCCESS;
}

void *HG_Registered_data(hg_class_t *hg_class, hg_id_t id)
{
    if (!hg_class)
        return NULL;
    pthread_mutex_lock(&hg_class->lock);
    struct hg_rpc_entry *e = hg_rpc_map_find(hg_class->rpc_map, id);
    void *data = e ? e->data : NULL;
    pthread_mutex_unlock(&hg_class->lock);
    return data;
}

hg_return_t HG_Registered_disable_response(hg_class_t *hg_class, hg_id_t id,
                                           hg_bool_t disable)
{
    if (!hg_class)
        return HG_INVALID_ARG;
    pthread_mutex_lock(&hg_class->lock);
    struct hg_rpc_entry *e = hg_rpc_map_find(hg_class->rpc_map, id);
    if (e)
        e->info.no_response = disable;
    atomic_fetch_add(&hg_class->rpc_gen, 1);
    pthread_mutex_unlock(&hg_class->lock);
    return e ? HG_SUCCESS : HG_NOENTRY;
}

hg_return_t HG_Registered_disabled_response(hg_class_t *hg_class, hg_id_t id,
                                            hg_bool_t *disabled_p)
{
    if (!hg_class || !disabled_p)
        return HG_INVALID_ARG;
    pthread_mutex_lock(&hg_class->lock);
    struct hg_rpc_entry *e = hg_rpc_map_find(hg_class->rpc_map, id);
    if (e)
        *disabled_p = e->info.no_response;
    pthread_mutex_unlock(&hg_class->lock);
    return e ? HG_SUCCESS : HG_NOENTRY;
}
