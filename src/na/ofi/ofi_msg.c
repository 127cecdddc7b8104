/*
 * ofi_msg.c -- the NA message calls.
 */
#include "ofi_int.h"

size_t ofi_msg_get_max_unexpected_size(const na_class_t *na_class)
{
    return ofi_class(na_class)->max_unexpected_size;
}

size_t ofi_msg_get_max_expected_size(const na_class_t *na_class)
{
    return ofi_class(na_class)->max_expected_size;
}

size_t ofi_msg_get_unexpected_header_size(const na_class_t *na_class)
{
    (void)na_class;
    return OFI_HDR_SIZE;
}

na_tag_t ofi_msg_get_max_tag(const na_class_t *na_class)
{
    (void)na_class;
    return (na_tag_t)OFI_TAG_NA_MASK;
}

na_return_t ofi_msg_init_unexpected(na_class_t *na_class, void *buf, size_t buf_size)
{
    if (buf_size < OFI_HDR_SIZE) {
        HGX_LOG_ERROR(OFI, "buffer of %zu bytes cannot hold the %d-byte header", buf_size,
                      OFI_HDR_SIZE);
        return NA_OVERFLOW;
    }
    memcpy(buf, ofi_class(na_class)->hdr, OFI_HDR_SIZE);
    return NA_SUCCESS;
}

/* Local descriptor of a message buffer: its msg_buf_alloc registration, or
 * a registration just for this op when the provider requires FI_MR_LOCAL. */
static na_return_t ofi_msg_desc(struct ofi_class *cls, struct ofi_op *oop,
                                void *plugin_data, uint64_t access)
{
    na_return_t ret = NA_SUCCESS;

    if (plugin_data)
        oop->desc = fi_mr_desc(plugin_data);
    else if ((cls->mr_mode & FI_MR_LOCAL) && oop->buf_size > 0) {
        oop->tmp_mr = ofi_mr_open(cls, oop->buf, oop->buf_size, access, &ret);
        if (oop->tmp_mr)
            oop->desc = fi_mr_desc(oop->tmp_mr);
    }
    return ret;
}

/* Fill in a message op (peer already set) and submit it. */
static na_return_t ofi_msg_submit(struct ofi_class *cls, struct ofi_op *oop, void *buf,
                                  size_t buf_size, void *plugin_data, uint64_t tag)
{
    na_return_t ret = NA_SUCCESS;

    oop->buf = buf;
    oop->buf_size = buf_size;
    oop->tag = tag;
    oop->fi_addr = FI_ADDR_UNSPEC;
    if (oop->peer)
        ret = ofi_peer_fi_addr(cls, oop->peer, &oop->fi_addr);
    if (ret == NA_SUCCESS)
        ret = ofi_msg_desc(cls, oop, plugin_data,
                           oop->kind == OFI_OP_RECV ? FI_RECV : FI_SEND);
    if (ret != NA_SUCCESS) {
        ofi_op_release(cls, oop);
        return ret;
    }
    if (oop->kind != OFI_OP_RECV && cls->piece_size && buf_size > cls->piece_size)
        ofi_pieces_split(cls, oop);
    return ofi_submit(cls, oop, false);
}

na_return_t ofi_msg_send_unexpected(na_class_t *na_class, na_context_t *context,
                                    na_op_id_t *op, const void *buf, size_t buf_size,
                                    void *plugin_data, na_addr_t *dest_addr,
                                    uint8_t dest_id, na_tag_t tag)
{
    struct ofi_op *oop =
        ofi_op_start(op, OFI_OP_SEND_UNEXPECTED, ofi_addr_peer(dest_addr));

    (void)context;
    /* The buffer is only read; it is kept non-const to share the op field. */
    return ofi_msg_submit(ofi_class(na_class), oop, (void *)(uintptr_t)buf, buf_size,
                          plugin_data, OFI_TAG_UNEXPECTED | ofi_tag(dest_id, tag));
}

na_return_t ofi_msg_send_expected(na_class_t *na_class, na_context_t *context,
                                  na_op_id_t *op, const void *buf, size_t buf_size,
                                  void *plugin_data, na_addr_t *dest_addr,
                                  uint8_t dest_id, na_tag_t tag)
{
    struct ofi_op *oop = ofi_op_start(op, OFI_OP_SEND, ofi_addr_peer(dest_addr));

    (void)context;
    return ofi_msg_submit(ofi_class(na_class), oop, (void *)(uintptr_t)buf, buf_size,
                          plugin_data, ofi_tag(dest_id, tag));
}

na_return_t ofi_msg_recv_unexpected(na_class_t *na_class, na_context_t *context,
                                    na_op_id_t *op, void *buf, size_t buf_size,
                                    void *plugin_data)
{
    struct ofi_op *oop = ofi_op_start(op, OFI_OP_RECV, NULL);

    return ofi_msg_submit(ofi_class(na_class), oop, buf, buf_size, plugin_data,
                          OFI_TAG_UNEXPECTED | ofi_tag(context->id, 0));
}

na_return_t ofi_msg_recv_expected(na_class_t *na_class, na_context_t *context,
                                  na_op_id_t *op, void *buf, size_t buf_size,
                                  void *plugin_data, na_addr_t *source_addr,
                                  uint8_t source_id, na_tag_t tag)
{
    struct ofi_class *cls = ofi_class(na_class);
    struct ofi_op *oop = ofi_op_start(op, OFI_OP_RECV, ofi_addr_peer(source_addr));

    (void)source_id; /* one endpoint per class: the sender's context is not visible */
    if (__builtin_expect(atomic_load_explicit(&cls->late_live, memory_order_relaxed), 0))
        ofi_late_forget(cls, ofi_tag(context->id, tag));
    return ofi_msg_submit(cls, oop, buf, buf_size, plugin_data,
                          ofi_tag(context->id, tag));
}

/* Post a receive into every entry of the provider's pool and cancel them
 * all, so that each entry holds the class's ignore mask (see
 * recv_stale_ignore). Nobody sends the tag, and no message can reach the
 * class yet: nothing else completes meanwhile. */
static na_return_t ofi_recv_prime(struct ofi_class *cls)
{
    size_t n = cls->info->rx_attr->size, posted = 0, done = 0;
    struct fi_context2 *ctx = calloc(n, sizeof(*ctx));

    if (!ctx)
        return NA_NOMEM;
    while (posted < n && fi_trecv(cls->ep, NULL, 0, NULL, FI_ADDR_UNSPEC,
                                  OFI_TAG_UNEXPECTED | OFI_TAG_CTRL, cls->recv_ignore,
                                  &ctx[posted]) == 0)
        posted++;
    for (size_t i = 0; i < posted; i++)
        fi_cancel(&cls->ep->fid, &ctx[i]);
    uint64_t end = hgx_clock_after_ms(hgx_clock_now_ns(), OFI_PRIME_TIMEOUT_MS);
    while (done < posted && hgx_clock_now_ns() < end) {
        struct fi_cq_tagged_entry entries[OFI_CQ_BATCH];
        struct fi_cq_err_entry err = {0};
        ssize_t rc = fi_cq_read(cls->cq, entries, OFI_CQ_BATCH);
        if (rc == -FI_EAVAIL && fi_cq_readerr(cls->cq, &err, 0) == 1)
            done++;
        else if (rc > 0)
            done += (size_t)rc;
    }
    free(ctx);
    if (done < posted) {
        HGX_LOG_ERROR(OFI,
                      "%zu of %zu receives posted to set the provider's ignore "
                      "masks were not canceled",
                      posted - done, posted);
        return NA_PROTOCOL_ERROR;
    }
    HGX_LOG_DEBUG(OFI, "ignore mask set in %zu receive entries", posted);
    return NA_SUCCESS;
}

na_return_t ofi_msg_recv_init(struct ofi_class *cls, uint8_t max_contexts)
{
    cls->recv_ignore = (max_contexts == 1 ? OFI_TAG_CTX_MASK : 0) |
                       (cls->piece_size ? OFI_TAG_PIECE_IGNORE : 0);
    if (!cls->recv_ignore || !cls->proto->recv_stale_ignore)
        return NA_SUCCESS;
    return ofi_recv_prime(cls);
}
