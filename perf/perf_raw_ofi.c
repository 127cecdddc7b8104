/*
 * perf_raw_ofi.c -- raw libfabric baseline: an RDM endpoint of the same
 * provider as na_ofi ("tcp;ofi_rxm" or "shm"), fi_tsend/fi_trecv for
 * messages, fi_read/fi_write for bulk; completions busy-polled from the CQ.
 */
#include "config.h"
#include "perf_raw.h"

#ifdef HGX_HAVE_OFI
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ofi_slot {
    struct fi_context2 ctx; /* first: the CQ hands this pointer back */
    int slot;
    int rma;
};

struct ofi_raw {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    struct fid_mr *mr_msg, *mr_big;
    void *desc_msg, *desc_big;
    char *msg, *big;
    size_t msg_size, big_size;
    fi_addr_t peer[PERF_MAX_CLIENTS]; /* a client's server is peer[0] */
    uint64_t rkey, raddr;
    size_t max_msg;
    uint64_t put_flags; /* what hgx asks of a put of this size class */
    int rma_pending;
    struct ofi_slot slots[PERF_RAW_NSLOTS];
};

#define OFI_CHK(call)                                                                    \
    do {                                                                                 \
        int rc_ = (int)(call);                                                           \
        if (rc_) {                                                                       \
            fprintf(stderr, "hgx-perf raw ofi: %s: %s\n", #call, fi_strerror(-rc_));     \
            return -1;                                                                   \
        }                                                                                \
    } while (0)

static void *desc_of(struct ofi_raw *o, const void *buf)
{
    const char *p = buf;
    if (p >= o->big && p < o->big + o->big_size)
        return o->desc_big;
    return o->desc_msg;
}

static int ofi_progress_cq(struct ofi_raw *o, struct raw_completion *out, int max);

static int ofi_send(void *t, int peer, int slot, const void *buf, size_t len,
                    uint64_t tag)
{
    struct ofi_raw *o = t;
    struct ofi_slot *s = &o->slots[slot];
    s->slot = slot;
    s->rma = 0;
    for (;;) {
        ssize_t rc =
            fi_tsend(o->ep, buf, len, desc_of(o, buf), o->peer[peer], tag, &s->ctx);
        if (rc == 0)
            return 0;
        if (rc != -FI_EAGAIN) {
            fprintf(stderr, "hgx-perf raw ofi: fi_tsend: %s\n", fi_strerror((int)-rc));
            return -1;
        }
        fi_cq_read(o->cq, NULL, 0); /* progress */
    }
}

static int ofi_recv(void *t, int slot, void *buf, size_t len, uint64_t tag, int any)
{
    struct ofi_raw *o = t;
    struct ofi_slot *s = &o->slots[slot];
    s->slot = slot;
    s->rma = 0;
    for (;;) {
        ssize_t rc = fi_trecv(o->ep, buf, len, desc_of(o, buf), FI_ADDR_UNSPEC, tag,
                              any ? ~(uint64_t)0 : 0, &s->ctx);
        if (rc == 0)
            return 0;
        if (rc != -FI_EAGAIN) {
            fprintf(stderr, "hgx-perf raw ofi: fi_trecv: %s\n", fi_strerror((int)-rc));
            return -1;
        }
        fi_cq_read(o->cq, NULL, 0);
    }
}

static int ofi_progress_cq(struct ofi_raw *o, struct raw_completion *out, int max)
{
    struct fi_cq_tagged_entry e[64];
    if (max > 64)
        max = 64;
    ssize_t n = fi_cq_read(o->cq, e, (size_t)max);
    if (n == -FI_EAGAIN)
        return 0;
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry err = {0};
        if (fi_cq_readerr(o->cq, &err, 0) < 0)
            return 0;
        struct ofi_slot *s = err.op_context;
        if (err.err == FI_ECANCELED && s) {
            out[0] = (struct raw_completion){.slot = s->slot, .ev = RAW_EV_CANCELLED};
            return 1;
        }
        fprintf(stderr, "hgx-perf raw ofi: completion error %s\n", fi_strerror(err.err));
        return -1;
    }
    if (n < 0) {
        fprintf(stderr, "hgx-perf raw ofi: fi_cq_read: %s\n", fi_strerror((int)-n));
        return -1;
    }
    int k = 0;
    for (ssize_t i = 0; i < n; i++) {
        struct ofi_slot *s = e[i].op_context;
        if (s->rma) {
            if (--o->rma_pending == 0)
                out[k++] = (struct raw_completion){.slot = s->slot, .ev = RAW_EV_RMA};
            continue;
        }
        out[k++] = (struct raw_completion){.slot = s->slot,
                                           .ev = (e[i].flags & FI_RECV) ? RAW_EV_RECV
                                                                        : RAW_EV_SEND,
                                           .tag = e[i].tag,
                                           .len = e[i].len};
    }
    return k;
}

static int ofi_poll(void *t, struct raw_completion *out, int max)
{
    return ofi_progress_cq(t, out, max);
}

static int ofi_cancel(void *t, int slot)
{
    struct ofi_raw *o = t;
    ssize_t rc = fi_cancel(&o->ep->fid, &o->slots[slot].ctx);
    return rc == 0 || rc == -FI_ENOENT ? 0 : -1;
}

/* One transfer, split at the provider's max_msg_size, all pieces posted at once. */
static int ofi_rma(void *t, int put, void *local, size_t len)
{
    struct ofi_raw *o = t;
    size_t off = 0;
    int piece = 0;
    do {
        size_t n = len - off < o->max_msg ? len - off : o->max_msg;
        struct ofi_slot *s = &o->slots[PERF_RAW_SEND_BASE + 8192 + (piece++ % 4096)];
        s->slot = PERF_RAW_RMA_SLOT;
        s->rma = 1;
        for (;;) {
            struct iovec iov = {(char *)local + off, n};
            struct fi_rma_iov riov = {o->raddr + off, n, o->rkey};
            struct fi_msg_rma m = {.msg_iov = &iov,
                                   .desc = &o->desc_big,
                                   .iov_count = 1,
                                   .addr = o->peer[0],
                                   .rma_iov = &riov,
                                   .rma_iov_count = 1,
                                   .context = &s->ctx};
            ssize_t rc = put ? fi_writemsg(o->ep, &m, o->put_flags)
                             : fi_read(o->ep, (char *)local + off, n, o->desc_big,
                                       o->peer[0], o->raddr + off, o->rkey, &s->ctx);
            if (rc == 0)
                break;
            if (rc != -FI_EAGAIN) {
                fprintf(stderr, "hgx-perf raw ofi: fi_%s: %s\n", put ? "write" : "read",
                        fi_strerror((int)-rc));
                return -1;
            }
            fi_cq_read(o->cq, NULL, 0);
        }
        o->rma_pending++;
        off += n;
    } while (off < len);
    return 0;
}

static int ofi_reg(struct ofi_raw *o, void *buf, size_t len, uint64_t key,
                   struct fid_mr **mr, void **desc)
{
    OFI_CHK(fi_mr_reg(o->domain, buf, len,
                      FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
                          FI_REMOTE_WRITE,
                      0, key, 0, mr, NULL));
    if (o->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
        OFI_CHK(fi_mr_bind(*mr, &o->ep->fid, 0));
        OFI_CHK(fi_mr_enable(*mr));
    }
    *desc = fi_mr_desc(*mr);
    return 0;
}

static int ofi_setup(struct ofi_raw *o, const struct perf_config *cfg,
                     struct perf_oob *oob)
{
    struct fi_info *hints = fi_allocinfo();
    if (!hints)
        return -1;
    int shm = strcmp(cfg->proto, "shm") == 0;
    /* Like for like: hgx completes a put only once the target has the data,
     * which over tcp takes FI_DELIVERY_COMPLETE (shm writes large puts by
     * CMA, complete when written, so hgx does not ask there). */
    o->put_flags = FI_COMPLETION | (shm ? 0 : FI_DELIVERY_COMPLETE);
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps =
        FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->domain_attr->mr_mode =
        FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    hints->fabric_attr->prov_name = strdup(shm ? "shm" : "tcp;ofi_rxm");
    if (!shm) {
        struct sockaddr_in *sin = calloc(1, sizeof(*sin));
        if (!sin)
            return -1;
        char ifname[64];
        sin->sin_family = AF_INET;
        sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (cfg->remote && perf_routable_if(ifname, sizeof(ifname), &sin->sin_addr)) {
            free(sin);
            fi_freeinfo(hints);
            return -1;
        }
        hints->src_addr = sin;
        hints->src_addrlen = sizeof(*sin);
        hints->addr_format = FI_SOCKADDR_IN;
    }
    int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &o->info);
    fi_freeinfo(hints);
    if (rc) {
        fprintf(stderr, "hgx-perf raw ofi: fi_getinfo(%s): %s\n", cfg->proto,
                fi_strerror(-rc));
        return -1;
    }
    o->max_msg =
        o->info->ep_attr->max_msg_size ? o->info->ep_attr->max_msg_size : (1u << 30);
    OFI_CHK(fi_fabric(o->info->fabric_attr, &o->fabric, NULL));
    OFI_CHK(fi_domain(o->fabric, o->info, &o->domain, NULL));
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    OFI_CHK(fi_av_open(o->domain, &av_attr, &o->av, NULL));
    /* --raw-wait: the loop still busy-polls, but the provider maintains the
     * fd (with rxm over tcp that costs per message, docs/na-ofi.md). */
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED,
                                 .size = 4 * PERF_RAW_NSLOTS,
                                 .wait_obj = cfg->raw_wait ? FI_WAIT_FD : FI_WAIT_NONE};
    OFI_CHK(fi_cq_open(o->domain, &cq_attr, &o->cq, NULL));
    OFI_CHK(fi_endpoint(o->domain, o->info, &o->ep, NULL));
    OFI_CHK(fi_ep_bind(o->ep, &o->av->fid, 0));
    OFI_CHK(fi_ep_bind(o->ep, &o->cq->fid, FI_TRANSMIT | FI_RECV));
    OFI_CHK(fi_enable(o->ep));

    o->msg_size = (size_t)(PERF_RAW_SRV_RECVS + 2) * PERF_RAW_MSG_MAX;
    o->big_size = perf_raw_big_size(cfg);
    o->msg = aligned_alloc(4096, o->msg_size);
    o->big = aligned_alloc(4096, o->big_size);
    if (!o->msg || !o->big)
        return -1;
    memset(o->msg, 0, o->msg_size);
    memset(o->big, cfg->server ? 0x5a : 0xa5, o->big_size);
    if (ofi_reg(o, o->msg, o->msg_size, 1, &o->mr_msg, &o->desc_msg) ||
        ofi_reg(o, o->big, o->big_size, 2, &o->mr_big, &o->desc_big))
        return -1;

    /* exchange names and the big region's key and address */
    char name[256];
    size_t len = sizeof(name);
    OFI_CHK(fi_getname(&o->ep->fid, name, &len));
    uint64_t mine[2] = {fi_mr_key(o->mr_big),
                        (o->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
                            ? (uint64_t)(uintptr_t)o->big
                            : 0};
    /* One exchange per channel: a server inserts each client; the remote
     * key is of the first peer only (a client's server: only clients issue
     * RMA). */
    for (int k = 0; k < perf_oob_count(cfg); k++) {
        uint64_t theirs[2];
        char peer[256];
        size_t plen = 0, tlen = 0;
        if (perf_oob_send_blob(&oob[k], name, len) ||
            perf_oob_send_blob(&oob[k], mine, sizeof(mine)) ||
            perf_oob_recv_blob(&oob[k], peer, sizeof(peer), &plen) ||
            perf_oob_recv_blob(&oob[k], theirs, sizeof(theirs), &tlen))
            return -1;
        if (fi_av_insert(o->av, peer, 1, &o->peer[k], 0, NULL) != 1) {
            fprintf(stderr, "hgx-perf raw ofi: fi_av_insert failed\n");
            return -1;
        }
        if (k == 0) {
            o->rkey = theirs[0];
            o->raddr = theirs[1];
        }
    }
    return 0;
}

static void ofi_teardown(struct ofi_raw *o)
{
    if (o->mr_msg)
        fi_close(&o->mr_msg->fid);
    if (o->mr_big)
        fi_close(&o->mr_big->fid);
    if (o->ep)
        fi_close(&o->ep->fid);
    if (o->cq)
        fi_close(&o->cq->fid);
    if (o->av)
        fi_close(&o->av->fid);
    if (o->domain)
        fi_close(&o->domain->fid);
    if (o->fabric)
        fi_close(&o->fabric->fid);
    if (o->info)
        fi_freeinfo(o->info);
    free(o->msg);
    free(o->big);
}

int perf_raw_ofi_run(const struct perf_config *cfg, struct perf_oob *oob,
                     struct perf_results *res)
{
    struct ofi_raw *o = calloc(1, sizeof(*o));
    if (!o)
        return -1;
    int ret = ofi_setup(o, cfg, oob);
    if (ret == 0) {
        struct raw_transport rt = {
            .t = o,
            .msg = o->msg,
            .big = o->big,
            .big_size = o->big_size,
            .send = ofi_send,
            .recv = ofi_recv,
            .poll = ofi_poll,
            .cancel = ofi_cancel,
            .rma = ofi_rma,
            .max_recvs = (int)o->info->rx_attr->size,
            .max_outstanding = strcmp(cfg->proto, "shm") ? 0 : PERF_RAW_SRV_POSTED(1)};
        ret = perf_raw_drive(cfg, &rt, res);
    }
    perf_oob_barrier(cfg, oob); /* all done before any closes its endpoint */
    ofi_teardown(o);
    free(o);
    return ret;
}
#else
int perf_raw_ofi_run(const struct perf_config *cfg, struct perf_oob *oob,
                     struct perf_results *res)
{
    (void)cfg, (void)oob, (void)res;
    return -1;
}
#endif
