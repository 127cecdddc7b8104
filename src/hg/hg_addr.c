/*
 * hg_addr.c -- HG addresses: reference-counted wrappers of NA addresses.
 */
#include "hg_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A lookup result waiting in the completion queue. */
struct hg_lookup_op {
    struct hg_completion completion;
    hg_cb_t callback;
    void *arg;
    hg_addr_t addr;
    hg_return_t ret;
};

hg_addr_t hg_addr_wrap(hg_class_t *hg_class, na_addr_t *na_addr)
{
    hg_addr_t addr = calloc(1, sizeof(*addr));

    if (!addr) {
        NA_Addr_free(hg_class->na_class, na_addr);
        return HG_ADDR_NULL;
    }
    addr->hg_class = hg_class;
    addr->na_addr = na_addr;
    addr->is_self = NA_Addr_is_self(hg_class->na_class, na_addr);
    atomic_init(&addr->refcount, 1);
    hgx_long_add(&hg_class->n_addrs, 1, hg_class->single);
    hgx_lock(&hg_class->addr_lock);
    hgx_list_push_front(&hg_class->addrs, &addr->link);
    hgx_unlock(&hg_class->addr_lock);
    return addr;
}

static void addr_destroy(hg_addr_t addr, bool single)
{
    hg_class_t *hg_class = addr->hg_class;
    hgx_lock(&hg_class->addr_lock);
    hgx_list_remove(&addr->link);
    hgx_unlock(&hg_class->addr_lock);
    NA_Addr_free(hg_class->na_class, addr->na_addr);
    hgx_long_add(&hg_class->n_addrs, -1, single);
    free(addr);
}

long hg_addr_free_all(hg_class_t *hg_class)
{
    long n = 0;
    for (; !hgx_list_empty(&hg_class->addrs); n++)
        addr_destroy(hgx_list_entry(hg_class->addrs.next, struct hg_addr, link),
                     hg_class->single);
    return n;
}

/*
 * Requests from one peer come with the same NA address object when the
 * plugin keeps one per peer (na_addr_init_owned): the context keeps recent
 * sources wrapped, in slots chosen by the NA address, and a request from a
 * peer seen before reuses its wrapper instead of allocating and freeing one
 * (with several clients a single slot would miss at every change of peer).
 * A cached wrapper holds its NA address, so no other address can reuse that
 * pointer while it is compared. Taken out and put back with atomic
 * exchanges: triggers on other threads stay safe.
 */
static _Atomic(hg_addr_t) *source_slot(hg_context_t *context, const na_addr_t *source)
{
    return &context->sources[((uintptr_t)source >> 6) % HG_SOURCE_CACHE];
}

/* Put an address in a slot, take what it held. */
HGX_ATOMIC_SWAP_FN(source_swap, _Atomic(hg_addr_t), hg_addr_t)

hg_addr_t hg_addr_of_source(hg_context_t *context, na_addr_t *source)
{
    hg_class_t *hg_class = context->hg_class;
    _Atomic(hg_addr_t) *slot = source_slot(context, source);
    hg_addr_t last = source_swap(slot, HG_ADDR_NULL, hg_class->single);
    hg_addr_t addr;

    if (last && last->na_addr == source) {
        NA_Addr_free(hg_class->na_class, source); /* the cached wrapper holds one */
        addr = last;
    } else {
        HG_Addr_free(hg_class, last);
        addr = hg_addr_wrap(hg_class, source);
        if (!addr)
            return HG_ADDR_NULL;
    }
    /* One reference for the caller; the cache keeps the other. */
    hgx_int_add(&addr->refcount, 1, hg_class->single);
    HG_Addr_free(hg_class, source_swap(slot, addr, hg_class->single));
    return addr;
}

void hg_addr_source_forget(hg_context_t *context)
{
    for (unsigned int i = 0; i < HG_SOURCE_CACHE; i++)
        HG_Addr_free(context->hg_class,
                     atomic_exchange(&context->sources[i], HG_ADDR_NULL));
}

static void lookup_run(struct hg_completion *completion)
{
    struct hg_lookup_op *op = (struct hg_lookup_op *)completion;
    struct hg_cb_info info = {.arg = op->arg, .type = HG_CB_LOOKUP, .ret = op->ret};

    info.info.lookup.addr = op->addr;
    if (op->callback)
        op->callback(&info);
    else
        HG_Addr_free(op->addr ? op->addr->hg_class : NULL, op->addr);
    free(op);
}

hg_return_t HG_Addr_lookup1(hg_context_t *context, hg_cb_t callback, void *arg,
                            const char *name, hg_op_id_t *op_id_p)
{
    if (!context || !name)
        return HG_INVALID_ARG;
    struct hg_lookup_op *op = calloc(1, sizeof(*op));
    if (!op)
        return HG_NOMEM;
    op->completion.run = lookup_run;
    op->callback = callback;
    op->arg = arg;
    op->ret = HG_Addr_lookup2(context->hg_class, name, &op->addr);
    if (op_id_p && op_id_p != HG_OP_ID_IGNORE)
        *op_id_p = HG_OP_ID_NULL;
    hg_completion_push(context, &op->completion);
    return HG_SUCCESS;
}

hg_return_t HG_Addr_lookup2(hg_class_t *hg_class, const char *name, hg_addr_t *addr_p)
{
    na_addr_t *na_addr = NULL;

    if (!hg_class || !name || !addr_p)
        return HG_INVALID_ARG;
    *addr_p = HG_ADDR_NULL;
    na_return_t na_ret = NA_Addr_lookup(hg_class->na_class, name, &na_addr);
    if (na_ret != NA_SUCCESS) {
        HGX_LOG_ERROR(HG, "could not look up \"%s\": %s", name,
                      NA_Error_to_string(na_ret));
        return hg_ret_from_na(na_ret);
    }
    *addr_p = hg_addr_wrap(hg_class, na_addr);
    return *addr_p ? HG_SUCCESS : HG_NOMEM;
}

hg_return_t HG_Addr_free(hg_class_t *hg_class, hg_addr_t addr)
{
    (void)hg_class;
    if (!addr)
        return HG_SUCCESS;
    bool single = addr->hg_class->single;
    if (hgx_int_add(&addr->refcount, -1, single) == 1)
        addr_destroy(addr, single);
    return HG_SUCCESS;
}

hg_return_t HG_Addr_set_remove(hg_class_t *hg_class, hg_addr_t addr)
{
    if (!hg_class || !addr)
        return HG_INVALID_ARG;
    return hg_ret_from_na(NA_Addr_set_remove(hg_class->na_class, addr->na_addr));
}

hg_return_t HG_Addr_self(hg_class_t *hg_class, hg_addr_t *addr_p)
{
    na_addr_t *na_addr = NULL;

    if (!hg_class || !addr_p)
        return HG_INVALID_ARG;
    na_return_t na_ret = NA_Addr_self(hg_class->na_class, &na_addr);
    if (na_ret != NA_SUCCESS) {
        HGX_LOG_ERROR(HG, "could not get self address: %s", NA_Error_to_string(na_ret));
        return hg_ret_from_na(na_ret);
    }
    *addr_p = hg_addr_wrap(hg_class, na_addr);
    if (*addr_p)
        (*addr_p)->is_self = true;
    return *addr_p ? HG_SUCCESS : HG_NOMEM;
}

hg_return_t HG_Addr_dup(hg_class_t *hg_class, hg_addr_t addr, hg_addr_t *new_addr_p)
{
    if (!hg_class || !addr || !new_addr_p)
        return HG_INVALID_ARG;
    atomic_fetch_add(&addr->refcount, 1);
    *new_addr_p = addr;
    return HG_SUCCESS;
}

hg_bool_t HG_Addr_cmp(hg_class_t *hg_class, hg_addr_t addr1, hg_addr_t addr2)
{
    if (addr1 == addr2)
        return HG_TRUE;
    if (!hg_class || !addr1 || !addr2)
        return HG_FALSE;
    return NA_Addr_cmp(hg_class->na_class, addr1->na_addr, addr2->na_addr);
}

hg_return_t HG_Addr_to_string(hg_class_t *hg_class, char *buf, hg_size_t *buf_size_p,
                              hg_addr_t addr)
{
    if (!hg_class || !buf_size_p || !addr)
        return HG_INVALID_ARG;
    size_t size = (size_t)*buf_size_p;
    na_return_t na_ret = NA_Addr_to_string(hg_class->na_class, buf, &size, addr->na_addr);
    *buf_size_p = size;
    return hg_ret_from_na(na_ret);
}
