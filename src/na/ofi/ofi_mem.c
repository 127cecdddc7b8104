/*
 * ofi_mem.c -- registrations, message buffers, memory handles and their wire form.
 */
#include "ofi_int.h"

/* Register one buffer; FI_MR_ENDPOINT providers also need it bound and enabled. */
struct fid_mr *ofi_mr_open(struct ofi_class *cls, const void *buf, size_t len,
                           uint64_t access, na_return_t *ret)
{
    struct fid_mr *mr = NULL;
    int rc = -FI_ENOKEY;

    /* A random key: a forged or foreign one names no registration (a
     * collision with a live key is refused by the provider: draw again). */
    for (int tries = 0; rc == -FI_ENOKEY && tries < 8; tries++) {
        uint64_t key = 0;
        if (getrandom(&key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
            HGX_LOG_ERROR(OFI, "getrandom failed for a memory key");
            *ret = NA_PROTOCOL_ERROR;
            return NULL;
        }
        rc = fi_mr_reg(cls->domain, buf, len, access, 0, key, 0, &mr, NULL);
    }

    if (rc == 0 && (cls->mr_mode & FI_MR_ENDPOINT)) {
        rc = fi_mr_bind(mr, &cls->ep->fid, 0);
        if (rc == 0)
            rc = fi_mr_enable(mr);
    }
    if (rc != 0) {
        HGX_LOG_ERROR(OFI, "registering %zu bytes at %p failed: %s", len, buf,
                      fi_strerror(-rc));
        if (mr)
            fi_close(&mr->fid);
        *ret = ofi_na_error(-rc);
        return NULL;
    }
    return mr;
}

void ofi_mr_close(struct fid_mr *mr)
{
    int rc = fi_close(&mr->fid);
    if (rc != 0)
        HGX_LOG_ERROR(OFI, "closing a memory registration failed: %s", fi_strerror(-rc));
}

/* Message buffers are registered up front when the provider wants local
 * descriptors (FI_MR_LOCAL); plugin_data is then their registration. */
void *ofi_msg_buf_alloc(na_class_t *na_class, size_t buf_size, unsigned long flags,
                        void **plugin_data_p)
{
    struct ofi_class *cls = ofi_class(na_class);
    void *buf = NULL;
    na_return_t ret;

    (void)flags;
    *plugin_data_p = NULL;
    if (posix_memalign(&buf, (size_t)sysconf(_SC_PAGESIZE), buf_size) != 0) {
        HGX_LOG_ERROR(OFI, "out of memory for a %zu-byte message buffer", buf_size);
        return NULL;
    }
    if (cls->mr_mode & FI_MR_LOCAL) {
        struct fid_mr *mr = ofi_mr_open(cls, buf, buf_size, FI_SEND | FI_RECV, &ret);
        if (!mr) {
            free(buf);
            return NULL;
        }
        *plugin_data_p = mr;
    }
    return buf;
}

void ofi_msg_buf_free(na_class_t *na_class, void *buf, void *plugin_data)
{
    (void)na_class;
    if (plugin_data)
        ofi_mr_close(plugin_data);
    free(buf);
}

static struct ofi_mem_handle *ofi_mh_alloc(size_t nseg, unsigned long flags)
{
    struct ofi_mem_handle *mh = calloc(1, sizeof(*mh));
    if (!mh)
        return NULL;
    mh->nseg = nseg;
    mh->segs = nseg == 1 ? &mh->one_seg : calloc(nseg, sizeof(*mh->segs));
    if (!mh->segs) {
        free(mh);
        return NULL;
    }
    mh->head.flags = flags;
    return mh;
}

na_return_t ofi_mem_handle_create(na_class_t *na_class, void *buf, size_t buf_size,
                                  unsigned long flags, na_mem_handle_t **mem_handle_p)
{
    struct na_segment seg = {.base = buf, .len = buf_size};
    return ofi_mem_handle_create_segments(na_class, &seg, 1, flags, mem_handle_p);
}

na_return_t ofi_mem_handle_create_segments(na_class_t *na_class,
                                           struct na_segment *segments,
                                           size_t segment_count, unsigned long flags,
                                           na_mem_handle_t **mem_handle_p)
{
    size_t max = ofi_class(na_class)->proto->max_segments;
    if (segment_count == 0 || segment_count > max) {
        HGX_LOG_ERROR(OFI, "segment count %zu not in 1..%zu", segment_count, max);
        return NA_INVALID_ARG;
    }
    struct ofi_mem_handle *mh = ofi_mh_alloc(segment_count, flags);
    if (!mh) {
        HGX_LOG_ERROR(OFI, "out of memory for a memory handle");
        return NA_NOMEM;
    }
    for (size_t i = 0; i < segment_count; i++) {
        mh->segs[i].addr = (uint64_t)(uintptr_t)segments[i].base;
        mh->segs[i].len = segments[i].len;
        mh->head.len += segments[i].len;
    }
    *mem_handle_p = &mh->head;
    return NA_SUCCESS;
}

/* Where hgx checks RMA, a registered segment is also in the key table. */
static void ofi_mh_close_segs(struct ofi_class *cls, struct ofi_mem_handle *mh)
{
    for (size_t i = 0; i < mh->nseg; i++)
        if (mh->segs[i].mr) {
            if (cls->proto->rma_unchecked) {
                ofi_mutex_lock(cls, &cls->ctrl_lock);
                uint64_t lease_end = hgx_ofi_keytab_remove(&cls->keys, mh->segs[i].key);
                ofi_mutex_unlock(cls, &cls->ctrl_lock);
                hgx_ofi_lease_wait(lease_end); /* no transfer starts after we return */
            }
            ofi_mr_close(mh->segs[i].mr);
            mh->segs[i].mr = NULL;
            mh->segs[i].desc = NULL;
        }
}

void ofi_mem_handle_free(na_class_t *na_class, na_mem_handle_t *mem_handle)
{
    struct ofi_mem_handle *mh = ofi_mh(mem_handle);
    ofi_mh_close_segs(ofi_class(na_class), mh);
    if (mh->segs != &mh->one_seg)
        free(mh->segs);
    free(mh);
}

size_t ofi_mem_handle_get_max_segments(const na_class_t *na_class)
{
    return ofi_class(na_class)->proto->max_segments;
}

static uint64_t ofi_mr_access(unsigned long flags)
{
    uint64_t access = FI_READ | FI_WRITE; /* as the local side of put/get */
    if (flags & NA_MEM_READ_ONLY)
        access |= FI_REMOTE_READ;
    if (flags & NA_MEM_WRITE_ONLY)
        access |= FI_REMOTE_WRITE;
    return access;
}

/* Record a new registration for the targets' checks (rma_unchecked). */
static na_return_t ofi_mr_expose(struct ofi_class *cls, const struct ofi_seg *seg,
                                 unsigned long flags)
{
    unsigned int access = ((flags & NA_MEM_READ_ONLY) ? HGX_OFI_CHECK_READ : 0) |
                          ((flags & NA_MEM_WRITE_ONLY) ? HGX_OFI_CHECK_WRITE : 0);

    ofi_mutex_lock(cls, &cls->ctrl_lock);
    na_return_t ret =
        hgx_ofi_keytab_add(&cls->keys, seg->key, seg->addr, seg->len, access);
    ofi_mutex_unlock(cls, &cls->ctrl_lock);
    if (ret != NA_SUCCESS)
        HGX_LOG_ERROR(OFI, "recording a registration for RMA checks failed: %s",
                      ret == NA_NOMEM ? "out of memory" : "key in use");
    return ret;
}

/* One registration per segment: tcp allows a single iov per registration. */
na_return_t ofi_mem_register(na_class_t *na_class, na_mem_handle_t *mem_handle)
{
    struct ofi_class *cls = ofi_class(na_class);
    struct ofi_mem_handle *mh = ofi_mh(mem_handle);
    uint64_t access = ofi_mr_access(mh->head.flags);
    na_return_t ret = NA_SUCCESS;

    for (size_t i = 0; i < mh->nseg; i++) {
        struct ofi_seg *seg = &mh->segs[i];
        if (seg->len == 0)
            continue;
        seg->mr = ofi_mr_open(cls, (void *)(uintptr_t)seg->addr, seg->len, access, &ret);
        if (seg->mr) {
            seg->key = fi_mr_key(seg->mr);
            seg->desc = fi_mr_desc(seg->mr);
            if (cls->proto->rma_unchecked &&
                (ret = ofi_mr_expose(cls, seg, mh->head.flags)) != NA_SUCCESS) {
                ofi_mr_close(seg->mr);
                seg->mr = NULL;
            }
        }
        if (!seg->mr) {
            ofi_mh_close_segs(cls, mh);
            return ret;
        }
    }
    mh->head.registered = true;
    return NA_SUCCESS;
}

na_return_t ofi_mem_deregister(na_class_t *na_class, na_mem_handle_t *mem_handle)
{
    struct ofi_mem_handle *mh = ofi_mh(mem_handle);
    ofi_mh_close_segs(ofi_class(na_class), mh);
    mh->head.registered = false;
    return NA_SUCCESS;
}

size_t ofi_mem_handle_get_serialize_size(na_class_t *na_class,
                                         na_mem_handle_t *mem_handle)
{
    (void)na_class;
    return OFI_MH_HDR_SIZE + ofi_mh(mem_handle)->nseg * OFI_MH_SEG_SIZE;
}

na_return_t ofi_mem_handle_serialize(na_class_t *na_class, void *buf, size_t buf_size,
                                     na_mem_handle_t *mem_handle)
{
    struct ofi_mem_handle *mh = ofi_mh(mem_handle);
    size_t need = ofi_mem_handle_get_serialize_size(na_class, mem_handle);
    unsigned char *p = buf;

    if (buf_size < need) {
        HGX_LOG_ERROR(OFI, "buffer of %zu bytes too small for a handle of %zu", buf_size,
                      need);
        return NA_OVERFLOW;
    }
    hgx_put_u16(p, OFI_MH_MAGIC);
    p[2] = OFI_MH_VERSION;
    p[3] = (unsigned char)mh->head.flags;
    hgx_put_u32(p + 4, (uint32_t)mh->nseg);
    hgx_put_u64(p + 8, mh->head.len);
    p += OFI_MH_HDR_SIZE;
    for (size_t i = 0; i < mh->nseg; i++, p += OFI_MH_SEG_SIZE) {
        hgx_put_u64(p, mh->segs[i].addr);
        hgx_put_u64(p + 8, mh->segs[i].len);
        hgx_put_u64(p + 16, mh->segs[i].key);
    }
    return NA_SUCCESS;
}

/* Untrusted bytes: every field is checked before it is used. */
na_return_t ofi_mem_handle_deserialize(na_class_t *na_class,
                                       na_mem_handle_t **mem_handle_p, const void *buf,
                                       size_t buf_size)
{
    const unsigned char *p = buf;

    if (buf_size < OFI_MH_HDR_SIZE || hgx_get_u16(p) != OFI_MH_MAGIC ||
        p[2] != OFI_MH_VERSION) {
        HGX_LOG_ERROR(OFI, "not an ofi memory handle (%zu bytes)", buf_size);
        return NA_PROTOCOL_ERROR;
    }
    unsigned long flags = p[3];
    uint64_t nseg = hgx_get_u32(p + 4);
    uint64_t total = hgx_get_u64(p + 8);
    if (flags == 0 || (flags & ~(unsigned long)NA_MEM_READWRITE) != 0 || nseg == 0 ||
        nseg > ofi_class(na_class)->proto->max_segments ||
        buf_size < OFI_MH_HDR_SIZE + nseg * OFI_MH_SEG_SIZE || total > SIZE_MAX) {
        HGX_LOG_ERROR(OFI,
                      "memory handle descriptor has bad flags (0x%lx), segment count "
                      "(%llu) or size (%zu bytes)",
                      flags, (unsigned long long)nseg, buf_size);
        return NA_PROTOCOL_ERROR;
    }
    struct ofi_mem_handle *mh = ofi_mh_alloc((size_t)nseg, flags);
    if (!mh) {
        HGX_LOG_ERROR(OFI, "out of memory for a memory handle");
        return NA_NOMEM;
    }
    uint64_t sum = 0;
    p += OFI_MH_HDR_SIZE;
    for (size_t i = 0; i < nseg; i++, p += OFI_MH_SEG_SIZE) {
        struct ofi_seg *seg = &mh->segs[i];
        seg->addr = hgx_get_u64(p);
        seg->len = hgx_get_u64(p + 8);
        seg->key = hgx_get_u64(p + 16);
        if (seg->len > UINT64_MAX - seg->addr || seg->len > UINT64_MAX - sum) {
            ofi_mem_handle_free(na_class, &mh->head);
            HGX_LOG_ERROR(OFI, "memory handle segment %zu overflows", i);
            return NA_PROTOCOL_ERROR;
        }
        sum += seg->len;
    }
    if (sum != total) {
        ofi_mem_handle_free(na_class, &mh->head);
        HGX_LOG_ERROR(OFI, "memory handle segments sum to %llu, not %llu",
                      (unsigned long long)sum, (unsigned long long)total);
        return NA_PROTOCOL_ERROR;
    }
    mh->head.len = (size_t)total;
    mh->head.remote = true;
    *mem_handle_p = &mh->head;
    return NA_SUCCESS;
}
