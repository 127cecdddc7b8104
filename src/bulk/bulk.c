/*
 * bulk.c -- bulk handles: creation over local segments, reference counts,
 * access, and the serialized descriptor a peer uses to reach the memory.
 *
 * Descriptor (little-endian): 0 magic u32 | 4 version u8 | 5 flags u8 |
 * 6 options u8 | 7 reserved u8 (0) | 8 segment_count u32 | 12 na_size u32 |
 * 16 len u64 | 24 local_id u64 | 32 NA memory handle (na_size bytes).
 * A handle bound with HG_Bulk_bind() sets bit 0 of the options field and
 * appends its owner: context_id u8 | addr_size u32 | NA address (serialized),
 * so that a holder can transfer with HG_Bulk_bind_transfer().
 * A readable handle serialized with HG_BULK_EAGER sets bit 1 and appends its
 * data after that: data_len u64 (= len) | the len bytes, segment after
 * segment. The holder keeps a copy and serves pulls from it without any RMA,
 * as Mercury does to spare small transfers a round trip; the memory handle
 * stays in the descriptor, so a push into a read-write handle still reaches
 * the owner.
 * local_id names the handle inside its own process, so that a transfer to
 * self finds the live handle (and its permissions) instead of trusting
 * pointers from the wire.
 * A deserialized (remote) handle serializes to the very descriptor it was made
 * from, as in Mercury, so it can be passed on to a third process; the owner's
 * registration still decides what any peer may access.
 */
#include "bulk_internal.h"
#include "hgx_wire.h"

#include <stdlib.h>
#include <string.h>

#define HG_BULK_MAGIC 0x4b424748u /* "HGBK" */
#define HG_BULK_VERSION 1
#define HG_BULK_DESC_HEADER 32
#define HG_BULK_MAX_SEGMENTS (1u << 20)
#define HG_BULK_DESC_BOUND 1   /* options: owner address appended */
#define HG_BULK_DESC_EAGER 2   /* options: the data appended */
#define HG_BULK_BOUND_HEADER 5 /* context_id u8, addr_size u32 */
#define HG_BULK_EAGER_HEADER 8 /* data_len u64 */

static bool flags_valid(uint8_t flags)
{
    return flags == HG_BULK_READ_ONLY || flags == HG_BULK_WRITE_ONLY ||
           flags == HG_BULK_READWRITE;
}

static unsigned long na_flags(uint8_t flags)
{
    switch (flags) {
    case HG_BULK_READ_ONLY:
        return NA_MEM_READ_ONLY;
    case HG_BULK_WRITE_ONLY:
        return NA_MEM_WRITE_ONLY;
    default:
        return NA_MEM_READWRITE;
    }
}

static struct hg_bulk *bulk_new(hg_class_t *hg_class, uint32_t count)
{
    struct hg_bulk *bulk = calloc(1, sizeof(*bulk));

    if (!bulk)
        return NULL;
    bulk->segments = calloc(count, sizeof(*bulk->segments));
    if (!bulk->segments) {
        free(bulk);
        return NULL;
    }
    bulk->hg_class = hg_class;
    bulk->segment_count = count;
    atomic_init(&bulk->refcount, 1);
    atomic_fetch_add(&hg_class->n_bulks, 1);
    return bulk;
}

static void local_list_remove(struct hg_bulk *bulk)
{
    hg_class_t *hg_class = bulk->hg_class;

    pthread_mutex_lock(&hg_class->lock);
    for (struct hg_bulk **pp = &hg_class->local_bulks; *pp; pp = &(*pp)->next_local)
        if (*pp == bulk) {
            *pp = bulk->next_local;
            break;
        }
    pthread_mutex_unlock(&hg_class->lock);
}

static void bulk_destroy(struct hg_bulk *bulk)
{
    na_class_t *na_class = bulk->hg_class->na_class;

    if (!bulk->remote)
        local_list_remove(bulk);
    if (bulk->mem) {
        if (!bulk->remote)
            NA_Mem_deregister(na_class, bulk->mem);
        NA_Mem_handle_free(na_class, bulk->mem);
    }
    if (bulk->owns_memory)
        for (uint32_t i = 0; i < bulk->segment_count; i++)
            if (bulk->owned[i])
                free(bulk->segments[i].base);
    if (bulk->addr)
        HG_Addr_free(bulk->hg_class, bulk->addr);
    free(bulk->owned);
    free(bulk->desc);
    free(bulk->eager);
    free(bulk->segments);
    atomic_fetch_sub(&bulk->hg_class->n_bulks, 1);
    free(bulk);
}

hg_return_t HG_Bulk_create(hg_class_t *hg_class, uint32_t count, void **buf_ptrs,
                           const hg_size_t *buf_sizes, uint8_t flags, hg_bulk_t *handle)
{
    struct hg_bulk_attr attrs = {.mem_type = HG_MEM_TYPE_HOST, .device = 0};

    return HG_Bulk_create_attr(hg_class, count, buf_ptrs, buf_sizes, flags, &attrs,
                               handle);
}

/* Give the segments that hold bytes to the plugin: empty ones (Mercury's
 * bulk test mixes {NULL, 0} with a buffer) add nothing to the byte offsets
 * transfers use, and plugins take only segments with bytes. */
static na_return_t bulk_register(na_class_t *na_class, struct hg_bulk *bulk,
                                 uint8_t flags)
{
    uint32_t n = 0, first = 0;
    for (uint32_t i = bulk->segment_count; i-- > 0;)
        if (bulk->segments[i].len > 0) {
            n++;
            first = i;
        }
    if (n == 1)
        return NA_Mem_handle_create(na_class, bulk->segments[first].base,
                                    bulk->segments[first].len, na_flags(flags),
                                    &bulk->mem);
    if (n == bulk->segment_count)
        return NA_Mem_handle_create_segments(na_class, bulk->segments, n, na_flags(flags),
                                             &bulk->mem);
    struct na_segment *full = malloc(n * sizeof(*full));
    if (!full)
        return NA_NOMEM;
    for (uint32_t i = 0, j = 0; i < bulk->segment_count; i++)
        if (bulk->segments[i].len > 0)
            full[j++] = bulk->segments[i];
    na_return_t ret =
        NA_Mem_handle_create_segments(na_class, full, n, na_flags(flags), &bulk->mem);
    free(full);
    return ret;
}

hg_return_t HG_Bulk_create_attr(hg_class_t *hg_class, uint32_t count, void **buf_ptrs,
                                const hg_size_t *buf_sizes, uint8_t flags,
                                const struct hg_bulk_attr *attrs, hg_bulk_t *handle)
{
    na_class_t *na_class;
    hg_return_t ret = HG_SUCCESS;

    if (!hg_class || !handle || count == 0 || !buf_sizes || !attrs ||
        !flags_valid(flags) || count > HG_BULK_MAX_SEGMENTS) {
        HGX_LOG_ERROR(BULK, "invalid argument (count %u, flags %u)", count, flags);
        return HG_INVALID_ARG;
    }
    if (attrs->mem_type != HG_MEM_TYPE_HOST) {
        HGX_LOG_ERROR(BULK, "only host memory is supported");
        return HG_OPNOTSUPPORTED;
    }
    na_class = hg_class->na_class;
    struct hg_bulk *bulk = bulk_new(hg_class, count);
    if (!bulk)
        return HG_NOMEM;
    bulk->flags = flags;
    bulk->owned = calloc(count, sizeof(*bulk->owned));
    if (!bulk->owned) {
        ret = HG_NOMEM;
        goto error;
    }
    for (uint32_t i = 0; i < count; i++) {
        void *base = buf_ptrs ? buf_ptrs[i] : NULL;
        if (!base && buf_sizes[i] > 0) {
            base = calloc(1, (size_t)buf_sizes[i]);
            if (!base) {
                ret = HG_NOMEM;
                goto error;
            }
            bulk->owned[i] = true;
            bulk->owns_memory = true;
        }
        bulk->segments[i].base = base;
        bulk->segments[i].len = (size_t)buf_sizes[i];
        if (bulk->len + buf_sizes[i] < bulk->len) {
            ret = HG_OVERFLOW;
            goto error;
        }
        bulk->len += buf_sizes[i];
    }
    if (bulk->len > 0) {
        na_return_t na_ret = bulk_register(na_class, bulk, flags);
        if (na_ret == NA_SUCCESS) {
            na_ret = NA_Mem_register(na_class, bulk->mem, NA_MEM_TYPE_HOST, 0);
            if (na_ret != NA_SUCCESS) {
                NA_Mem_handle_free(na_class, bulk->mem);
                bulk->mem = NULL;
            }
        }
        if (na_ret != NA_SUCCESS) {
            HGX_LOG_ERROR(BULK, "could not register %u segment(s): %s", count,
                          NA_Error_to_string(na_ret));
            ret = hg_ret_from_na(na_ret);
            goto error;
        }
    }
    bulk->local_id = atomic_fetch_add(&hg_class->bulk_id_next, 1);
    pthread_mutex_lock(&hg_class->lock);
    bulk->next_local = hg_class->local_bulks;
    hg_class->local_bulks = bulk;
    pthread_mutex_unlock(&hg_class->lock);
    *handle = bulk;
    return HG_SUCCESS;

error:
    bulk->remote = true; /* not yet on the local list */
    bulk_destroy(bulk);
    return ret;
}

hg_return_t HG_Bulk_free(hg_bulk_t handle)
{
    if (handle && atomic_fetch_sub(&handle->refcount, 1) == 1)
        bulk_destroy(handle);
    return HG_SUCCESS;
}

hg_return_t HG_Bulk_ref_incr(hg_bulk_t handle)
{
    if (!handle)
        return HG_INVALID_ARG;
    atomic_fetch_add(&handle->refcount, 1);
    return HG_SUCCESS;
}

hg_return_t HG_Bulk_access(hg_bulk_t handle, hg_size_t offset, hg_size_t size,
                           uint8_t flags, uint32_t max_count, void **buf_ptrs,
                           hg_size_t *buf_sizes, uint32_t *actual_count)
{
    uint32_t n = 0;

    /* As Mercury, the sizes and the count are optional (a caller that knows
     * its handle has one segment asks for the pointer alone), and the flags
     * are the caller's intent, not checked: the memory is the caller's own
     * (Mercury's perf server asks for read-write access to a write-only
     * handle). */
    (void)flags;
    if (!handle || handle->remote || offset > handle->len ||
        size > handle->len - offset || (max_count > 0 && !buf_ptrs))
        return HG_INVALID_ARG;
    for (uint32_t i = 0; i < handle->segment_count && size > 0 && n < max_count; i++) {
        struct na_segment *seg = &handle->segments[i];
        if (offset >= seg->len) {
            offset -= seg->len;
            continue;
        }
        size_t len = seg->len - (size_t)offset;
        if (len > size)
            len = (size_t)size;
        buf_ptrs[n] = (char *)seg->base + offset;
        if (buf_sizes)
            buf_sizes[n] = len;
        n++;
        size -= len;
        offset = 0;
    }
    if (actual_count)
        *actual_count = n;
    return HG_SUCCESS;
}

hg_size_t HG_Bulk_get_size(hg_bulk_t handle)
{
    return handle ? handle->len : 0;
}

uint32_t HG_Bulk_get_segment_count(hg_bulk_t handle)
{
    return handle ? handle->segment_count : 0;
}

uint8_t HG_Bulk_get_flags(hg_bulk_t handle)
{
    return handle ? handle->flags : 0;
}

static size_t mem_desc_size(hg_bulk_t handle)
{
    return handle->mem
               ? NA_Mem_handle_get_serialize_size(handle->hg_class->na_class, handle->mem)
               : 0;
}

/* Bytes of the owner appended to the descriptor of a bound local handle. */
static size_t bound_desc_size(hg_bulk_t handle)
{
    if (!handle->addr)
        return 0;
    return HG_BULK_BOUND_HEADER +
           NA_Addr_get_serialize_size(handle->hg_class->na_class, handle->addr->na_addr);
}

/* Does serializing with flags carry the data? Only the readable memory of
 * this process can (Mercury's rule: a read-only or read-write handle, host
 * memory; a deserialized handle re-emits its own descriptor). */
static bool eager_desc(hg_bulk_t handle, unsigned long flags)
{
    return (flags & HG_BULK_EAGER) && !handle->remote &&
           (handle->flags & HG_BULK_READ_ONLY);
}

hg_size_t HG_Bulk_get_serialize_size(hg_bulk_t handle, unsigned long flags)
{
    if (!handle)
        return 0;
    if (handle->remote)
        return handle->desc_size;
    return HG_BULK_DESC_HEADER + mem_desc_size(handle) + bound_desc_size(handle) +
           (eager_desc(handle, flags) ? HG_BULK_EAGER_HEADER + handle->len : 0);
}

/* Append the handle's bytes, segment after segment, at p. */
static void eager_serialize(hg_bulk_t handle, unsigned char *p)
{
    hgx_put_u64(p, handle->len);
    p += HG_BULK_EAGER_HEADER;
    for (uint32_t i = 0; i < handle->segment_count; i++) {
        if (handle->segments[i].len > 0)
            memcpy(p, handle->segments[i].base, handle->segments[i].len);
        p += handle->segments[i].len;
    }
}

hg_return_t HG_Bulk_serialize(void *buf, hg_size_t buf_size, unsigned long flags,
                              hg_bulk_t handle)
{
    if (!buf || !handle)
        return HG_INVALID_ARG;
    hg_size_t need = HG_Bulk_get_serialize_size(handle, flags);
    if (buf_size < need)
        return HG_OVERFLOW;
    if (handle->remote) {
        memcpy(buf, handle->desc, (size_t)need);
        return HG_SUCCESS;
    }
    unsigned char *p = buf;
    memset(p, 0, HG_BULK_DESC_HEADER);
    hgx_put_u32(p, HG_BULK_MAGIC);
    p[4] = HG_BULK_VERSION;
    p[5] = handle->flags;
    size_t na_size = mem_desc_size(handle);
    hgx_put_u32(p + 8, handle->segment_count);
    hgx_put_u32(p + 12, (uint32_t)na_size);
    hgx_put_u64(p + 16, handle->len);
    hgx_put_u64(p + 24, handle->local_id);
    na_class_t *na_class = handle->hg_class->na_class;
    na_return_t na_ret = NA_SUCCESS;
    if (handle->mem)
        na_ret = NA_Mem_handle_serialize(na_class, p + HG_BULK_DESC_HEADER, na_size,
                                         handle->mem);
    if (na_ret == NA_SUCCESS && handle->addr) {
        unsigned char *b = p + HG_BULK_DESC_HEADER + na_size;
        size_t addr_size = bound_desc_size(handle) - HG_BULK_BOUND_HEADER;
        p[6] |= HG_BULK_DESC_BOUND;
        b[0] = handle->context_id;
        hgx_put_u32(b + 1, (uint32_t)addr_size);
        na_ret = NA_Addr_serialize(na_class, b + HG_BULK_BOUND_HEADER, addr_size,
                                   handle->addr->na_addr);
    }
    if (na_ret != NA_SUCCESS) {
        HGX_LOG_ERROR(BULK, "could not serialize bulk handle: %s",
                      NA_Error_to_string(na_ret));
        return hg_ret_from_na(na_ret);
    }
    if (eager_desc(handle, flags)) {
        p[6] |= HG_BULK_DESC_EAGER;
        eager_serialize(handle, p + need - HG_BULK_EAGER_HEADER - handle->len);
    }
    return HG_SUCCESS;
}

/* The owner appended to a bound descriptor p (buf_size bytes, untrusted):
 * sets bulk->addr, context_id and the descriptor size. */
static hg_return_t bound_deserialize(struct hg_bulk *bulk, const unsigned char *p,
                                     hg_size_t buf_size)
{
    hg_size_t at = bulk->desc_size; /* end of the NA memory handle */
    if (buf_size - at < HG_BULK_BOUND_HEADER ||
        hgx_get_u32(p + at + 1) > buf_size - at - HG_BULK_BOUND_HEADER) {
        HGX_LOG_ERROR(BULK, "malformed owner address in bound bulk descriptor");
        return HG_PROTOCOL_ERROR;
    }
    uint32_t addr_size = hgx_get_u32(p + at + 1);
    na_addr_t *na_addr = NULL;
    na_return_t na_ret = NA_Addr_deserialize(bulk->hg_class->na_class, &na_addr,
                                             p + at + HG_BULK_BOUND_HEADER, addr_size);
    if (na_ret != NA_SUCCESS) {
        HGX_LOG_ERROR(BULK, "bad owner address in bound bulk descriptor: %s",
                      NA_Error_to_string(na_ret));
        return na_ret == NA_NOMEM ? HG_NOMEM : HG_PROTOCOL_ERROR;
    }
    bulk->addr = hg_addr_wrap(bulk->hg_class, na_addr);
    if (!bulk->addr)
        return HG_NOMEM;
    bulk->context_id = p[at];
    bulk->desc_size = at + HG_BULK_BOUND_HEADER + addr_size;
    return HG_SUCCESS;
}

/* The data appended to an eager descriptor p (buf_size bytes, untrusted),
 * after its desc_size bytes: copied into bulk->eager; sets the descriptor
 * size. Its length must be the handle's and fit in the buffer. */
static hg_return_t eager_deserialize(struct hg_bulk *bulk, const unsigned char *p,
                                     hg_size_t buf_size)
{
    hg_size_t at = bulk->desc_size;
    if (!(bulk->flags & HG_BULK_READ_ONLY) || buf_size - at < HG_BULK_EAGER_HEADER ||
        hgx_get_u64(p + at) != bulk->len ||
        bulk->len > buf_size - at - HG_BULK_EAGER_HEADER) {
        HGX_LOG_ERROR(BULK, "malformed data in eager bulk descriptor");
        return HG_PROTOCOL_ERROR;
    }
    bulk->eager = malloc(bulk->len ? (size_t)bulk->len : 1);
    if (!bulk->eager)
        return HG_NOMEM;
    memcpy(bulk->eager, p + at + HG_BULK_EAGER_HEADER, (size_t)bulk->len);
    bulk->desc_size = at + HG_BULK_EAGER_HEADER + bulk->len;
    return HG_SUCCESS;
}

hg_return_t HG_Bulk_deserialize(hg_class_t *hg_class, hg_bulk_t *handle, const void *buf,
                                hg_size_t buf_size)
{
    const unsigned char *p = buf;

    if (!hg_class || !handle || !buf)
        return HG_INVALID_ARG;
    *handle = HG_BULK_NULL;
    if (buf_size < HG_BULK_DESC_HEADER || hgx_get_u32(p) != HG_BULK_MAGIC ||
        p[4] != HG_BULK_VERSION || !flags_valid(p[5]) ||
        (p[6] & ~(HG_BULK_DESC_BOUND | HG_BULK_DESC_EAGER)) != 0 || p[7] != 0) {
        HGX_LOG_ERROR(BULK, "malformed bulk descriptor");
        return HG_PROTOCOL_ERROR;
    }
    uint32_t count = hgx_get_u32(p + 8), na_size = hgx_get_u32(p + 12);
    uint64_t len = hgx_get_u64(p + 16);
    if (count == 0 || count > HG_BULK_MAX_SEGMENTS ||
        na_size > buf_size - HG_BULK_DESC_HEADER || (len == 0) != (na_size == 0)) {
        HGX_LOG_ERROR(BULK, "malformed bulk descriptor (count %u, na size %u, len %llu)",
                      count, na_size, (unsigned long long)len);
        return HG_PROTOCOL_ERROR;
    }
    /* Remote handles keep no segment list: one entry is enough. */
    struct hg_bulk *bulk = bulk_new(hg_class, 1);
    if (!bulk)
        return HG_NOMEM;
    bulk->segment_count = count;
    bulk->remote = true;
    bulk->flags = p[5];
    bulk->len = len;
    bulk->local_id = hgx_get_u64(p + 24);
    bulk->desc_size = HG_BULK_DESC_HEADER + (hg_size_t)na_size;
    hg_return_t ret = HG_SUCCESS;
    if (p[6] & HG_BULK_DESC_BOUND)
        ret = bound_deserialize(bulk, p, buf_size);
    if (ret == HG_SUCCESS && (p[6] & HG_BULK_DESC_EAGER))
        ret = eager_deserialize(bulk, p, buf_size);
    if (ret != HG_SUCCESS) {
        bulk_destroy(bulk);
        return ret;
    }
    bulk->desc = malloc((size_t)bulk->desc_size);
    if (!bulk->desc) {
        bulk_destroy(bulk);
        return HG_NOMEM;
    }
    memcpy(bulk->desc, p, (size_t)bulk->desc_size);
    if (na_size > 0) {
        na_return_t na_ret = NA_Mem_handle_deserialize(hg_class->na_class, &bulk->mem,
                                                       p + HG_BULK_DESC_HEADER, na_size);
        if (na_ret != NA_SUCCESS) {
            HGX_LOG_ERROR(BULK, "malformed memory handle in descriptor: %s",
                          NA_Error_to_string(na_ret));
            bulk_destroy(bulk);
            return na_ret == NA_NOMEM ? HG_NOMEM : HG_PROTOCOL_ERROR;
        }
    }
    *handle = bulk;
    return HG_SUCCESS;
}

struct hg_bulk *hg_bulk_find_local(hg_class_t *hg_class, uint64_t local_id)
{
    struct hg_bulk *found = NULL;

    pthread_mutex_lock(&hg_class->lock);
    for (struct hg_bulk *b = hg_class->local_bulks; b; b = b->next_local)
        if (b->local_id == local_id) {
            found = b;
            atomic_fetch_add(&b->refcount, 1);
            break;
        }
    pthread_mutex_unlock(&hg_class->lock);
    return found;
}

hg_return_t HG_Bulk_bind(hg_bulk_t handle, hg_context_t *context)
{
    if (!handle || !context || handle->remote) {
        HGX_LOG_ERROR(BULK, "only a local bulk handle can be bound to a context");
        return HG_INVALID_ARG;
    }
    hg_addr_t self = HG_ADDR_NULL;
    hg_return_t ret = HG_Addr_self(handle->hg_class, &self);
    if (ret != HG_SUCCESS)
        return ret;
    if (handle->addr)
        HG_Addr_free(handle->hg_class, handle->addr);
    handle->addr = self;
    handle->context_id = HG_Context_get_id(context);
    return HG_SUCCESS;
}

hg_addr_t HG_Bulk_get_addr(hg_bulk_t handle)
{
    return handle ? handle->addr : HG_ADDR_NULL;
}

uint8_t HG_Bulk_get_context_id(hg_bulk_t handle)
{
    return handle ? handle->context_id : 0;
}
