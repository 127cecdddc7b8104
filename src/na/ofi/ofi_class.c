/*
 * ofi_class.c -- protocols, provider setup and the class and context life cycle, and
 * the ops table.
 */
#include "ofi_int.h"
#include "na_ipaddr.h"

static const struct ofi_proto ofi_protos[] = {
    {"tcp", "tcp;ofi_rxm", NULL, "FI_TCP_IFACE", false, false, false, false,
     OFI_CANCEL_FORCE_GETS, false, OFI_MAX_SEGMENTS, false},
    {"sockets", "sockets", NULL, "FI_SOCKETS_IFACE", false, false, false, false,
     OFI_CANCEL_WAIT, false, OFI_MAX_SEGMENTS, true},
    {"shm", "shm", "fi_shm://", NULL, true, true, true, true, OFI_CANCEL_FORCE, true,
     OFI_SHM_MAX_SEGMENTS, false},
};

/* The plugin's parameters (na_ops.params), read at class init. */
static const struct hgx_param ofi_param_retry_timeout_ms = {
    .name = "HGX_OFI_RETRY_TIMEOUT_MS",
    .type = HGX_PARAM_INT,
    .def = OFI_RETRY_TIMEOUT_MS,
    .min = 10,
    .max = 3600000,
    .help = "milliseconds a post the provider keeps refusing (EAGAIN) waits before it "
            "fails with NA_HOSTUNREACH; each part of a put/get taken restarts it",
};

static const struct hgx_param *const ofi_params[] = {
    &ofi_param_retry_timeout_ms,
    NULL,
};

/* Translate a positive libfabric error code. */
na_return_t ofi_na_error(int err)
{
    switch (err) {
    case 0:
        return NA_SUCCESS;
    case FI_EAGAIN:
        return NA_AGAIN;
    case FI_ENOMEM:
    case FI_ENOSPC:
        return NA_NOMEM;
    case FI_EINVAL:
        return NA_INVALID_ARG;
    case FI_ECANCELED:
        return NA_CANCELED;
    case FI_ETRUNC:
    case FI_EMSGSIZE:
    case FI_ETOOSMALL:
        return NA_MSGSIZE;
    case FI_EACCES:
        return NA_ACCESS;
    case FI_EPERM:
    case FI_EKEYREJECTED:
        return NA_PERMISSION;
    case FI_EFAULT:
        return NA_FAULT;
    case FI_EBUSY:
        return NA_BUSY;
    case FI_ENODEV:
    case FI_ENODATA:
        return NA_NODEV;
    case FI_ENOSYS:
    case FI_EOPNOTSUPP:
        return NA_OPNOTSUPPORTED;
    case FI_EOVERFLOW:
        return NA_OVERFLOW;
    case FI_EADDRINUSE:
        return NA_ADDRINUSE;
    case FI_EADDRNOTAVAIL:
        return NA_ADDRNOTAVAIL;
    case FI_ETIMEDOUT:
        return NA_TIMEOUT;
    case FI_EIO:
    case FI_EREMOTEIO:
        return NA_IO_ERROR;
    case FI_ENOENT: /* sockets, when it cannot connect to the peer */
    case FI_ENETDOWN:
    case FI_ENETUNREACH:
    case FI_EHOSTDOWN:
    case FI_EHOSTUNREACH:
    case FI_ECONNREFUSED:
    case FI_ECONNRESET:
    case FI_ECONNABORTED:
    case FI_ENOTCONN:
    case FI_ESHUTDOWN:
        return NA_HOSTUNREACH;
    default:
        return NA_PROTOCOL_ERROR;
    }
}

const struct ofi_proto *ofi_proto_find(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof(ofi_protos) / sizeof(ofi_protos[0]); i++)
        if (strlen(ofi_protos[i].name) == len &&
            strncmp(ofi_protos[i].name, name, len) == 0)
            return &ofi_protos[i];
    return NULL;
}

static bool ofi_check_protocol(const char *protocol_name)
{
    return protocol_name && ofi_proto_find(protocol_name, strlen(protocol_name)) != NULL;
}

static struct fi_info *ofi_hints(const struct ofi_proto *proto, bool single)
{
    struct fi_info *hints = fi_allocinfo();
    if (!hints)
        return NULL;
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ |
                  FI_REMOTE_WRITE | FI_DIRECTED_RECV;
    hints->mode = FI_CONTEXT | FI_CONTEXT2; /* each posted op has its own fi_context2 */
    hints->domain_attr->cq_data_size = sizeof(na_tag_t); /* unexpected messages' tags */
    /* One thread alone: the provider may skip its own locks. */
    hints->domain_attr->threading = single ? FI_THREAD_DOMAIN : FI_THREAD_SAFE;
    /* Every registration mode we can honor; the provider keeps what it needs.
     * Not FI_MR_PROV_KEY: tcp and sockets then number keys 0, 1, 2... in
     * every process alike, and a descriptor whose key was changed by one, or
     * that came from another process, reached another region of the target.
     * Our keys are random (ofi_mr_open). */
    hints->domain_attr->mr_mode =
        FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_ENDPOINT;
    hints->fabric_attr->prov_name = strdup(proto->prov_name);
    if (!hints->fabric_attr->prov_name) {
        fi_freeinfo(hints);
        return NULL;
    }
    return hints;
}

/* Source address for tcp/sockets, listener or not: a client's address is
 * its name in every message header and rxm's connection requests, so it
 * must be one its peers can reach (na_netif.h chooses it). Port 0: any.
 * A host of the other family than addr_format's fails here, as in Mercury
 * (NA_ADDRNOTAVAIL). */
static na_return_t ofi_hints_set_src(struct ofi_class *cls, struct fi_info *hints,
                                     const struct na_info *info)
{
    const struct na_netif_spec spec = {
        .host = info->host,
        .port = info->port,
        .subnet = info->init_info->ip_subnet,
        .env_name = cls->proto->iface_env,
        .family = na_ipaddr_family(info->init_info->addr_format)};
    struct sockaddr_storage ss;
    socklen_t len;
    na_return_t ret = na_netif_select(&spec, &ss, &len, NULL);
    if (ret != NA_SUCCESS)
        return ret;
    char desc[sizeof(cls->bind_desc) - 4];
    ofi_raw_addr_format(cls, (const unsigned char *)&ss, len, desc, sizeof(desc));
    snprintf(cls->bind_desc, sizeof(cls->bind_desc), " on %s", desc);
    hints->src_addr = malloc(len);
    if (!hints->src_addr)
        return NA_NOMEM;
    memcpy(hints->src_addr, &ss, len);
    hints->src_addrlen = len;
    hints->addr_format = ss.ss_family == AF_INET ? FI_SOCKADDR_IN : FI_SOCKADDR_IN6;
    return NA_SUCCESS;
}

/* libfabric reads these once, at its first call (whatever the protocol);
 * a user setting wins. */
static void ofi_set_provider_defaults(void)
{
    /* Make fi_av_remove close rxm's connection to the peer, as
     * NA_Addr_set_remove asks. */
    setenv("FI_AV_REMOVE_CLEANUP", "1", 0);
    /* rxm lets tcp receive straight into the user's buffer; a message that
     * does not fit then makes tcp drop the connection. Bounce buffers keep a
     * truncation local. */
    setenv("FI_OFI_RXM_ENABLE_DYN_RBUF", "0", 0);
    /* The sockets provider's progress thread spins for this many ms after
     * each activity (10 by default). hgx's own progress already polls before
     * it sleeps; the provider's spinning besides takes a core per class, and
     * on a busy machine the threads that carry the next message then wait for
     * it (ofi+sockets RPCs served from an event loop: 31 ms median with the
     * spin, 8 ms without, on 2 loaded cores). */
    setenv("FI_SOCKETS_PE_WAITTIME", "0", 0);
}

static na_return_t ofi_getinfo(struct ofi_class *cls, const struct na_info *info)
{
    na_return_t ret = NA_SUCCESS;
    struct fi_info *hints = ofi_hints(cls->proto, cls->single);

    HGX_CHECK(OFI, !hints, out, ret, NA_NOMEM, "out of memory for fi_info hints");
    if (!cls->proto->str_prefix) {
        ret = ofi_hints_set_src(cls, hints, info);
        if (ret != NA_SUCCESS)
            goto out;
    } else {
        if (info->host)
            HGX_LOG_DEBUG(OFI, "shm ignores host \"%s\"", info->host);
        if (info->init_info->addr_format != NA_ADDR_UNSPEC)
            HGX_LOG_DEBUG(OFI,
                          "shm addresses are no IP addresses: addr_format %d ignored",
                          (int)info->init_info->addr_format);
    }
    ofi_set_provider_defaults();
    int rc = fi_getinfo(OFI_API_VERSION, NULL, NULL, 0, hints, &cls->info);
    HGX_CHECK(
        OFI, rc != 0, out, ret, rc == -FI_ENODATA ? NA_NODEV : ofi_na_error(-rc),
        "libfabric provider \"%s\" unavailable for ofi+%s (RDM, tagged, RMA, directed "
        "receive, thread safe): %s",
        cls->proto->prov_name, cls->proto->name, fi_strerror(-rc));
    cls->mr_mode = cls->info->domain_attr->mr_mode;
    HGX_LOG_DEBUG(OFI, "provider %s, domain %s, mr_mode 0x%llx",
                  cls->info->fabric_attr->prov_name, cls->info->domain_attr->name,
                  (unsigned long long)cls->mr_mode);
out:
    fi_freeinfo(hints);
    return ret;
}

/* Prefer a CQ with an fd to block on; shm has none (and its fi_cq_sread
 * spins), so it gets no wait object and poll_wait sleeps in short steps;
 * its wait fd is the timer alone, set to those steps. NA_NO_BLOCK (busy
 * polling) asks for no wait object and has no wait fd: neither is free.
 * With one, rxm (1.17) opens its tcp CQ with an fd too, and tcp keeps every
 * connection socket and its completion-signal socketpair in an epoll set
 * nested in ours: each message arrival and each completion signal then runs
 * the kernel's epoll wake-up callbacks on two levels, 1.5-2.5 us per round
 * trip here (the raw loop too). Every wait object rxm can wake on costs the
 * same; doing without one costs milliseconds after an idle gap
 * (docs/na-ofi.md, "ofi+tcp round trip and the wait object"). */
/* The wait fd a thread sleeps on: the CQ's fd, if any, and the timer of the
 * plugin's timed duties (ofi_cq.c), in one set. */
static na_return_t ofi_open_wait(struct ofi_class *cls)
{
    int err = na_wait_set_open(&cls->wait);
    if (err == 0 && cls->cq_fd >= 0)
        err = na_wait_set_add(&cls->wait, cls->cq_fd);
    if (err) {
        HGX_LOG_ERROR(OFI, "cannot create the wait fd: %s", strerror(err));
        return NA_NOMEM;
    }
    return NA_SUCCESS;
}

static na_return_t ofi_open_cq(struct ofi_class *cls)
{
    struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_FD};
    int rc = cls->no_block ? -FI_ENOSYS : fi_cq_open(cls->domain, &attr, &cls->cq, NULL);

    if (rc == 0) {
        rc = fi_control(&cls->cq->fid, FI_GETWAIT, &cls->cq_fd);
        if (rc != 0) {
            HGX_LOG_ERROR(OFI, "fi_control(FI_GETWAIT) failed: %s", fi_strerror(-rc));
            return ofi_na_error(-rc);
        }
        return ofi_open_wait(cls);
    }
    HGX_LOG_DEBUG(OFI, "no fd wait object (%s), polling the CQ",
                  cls->no_block ? "NA_NO_BLOCK" : fi_strerror(-rc));
    attr.wait_obj = FI_WAIT_NONE;
    rc = fi_cq_open(cls->domain, &attr, &cls->cq, NULL);
    if (rc != 0) {
        HGX_LOG_ERROR(OFI, "fi_cq_open failed: %s", fi_strerror(-rc));
        return ofi_na_error(-rc);
    }
    return cls->no_block ? NA_SUCCESS : ofi_open_wait(cls);
}

/* Return the NA error of a failed setup call (logged) from the caller. */
#define OFI_TRY(cls, call, what)                                                         \
    do {                                                                                 \
        int rc_ = (call);                                                                \
        if (rc_ != 0) {                                                                  \
            HGX_LOG_ERROR(OFI, "%s failed for ofi+%s%s: %s", what, (cls)->proto->name,   \
                          (cls)->bind_desc, fi_strerror(-rc_));                          \
            return ofi_na_error(-rc_);                                                   \
        }                                                                                \
    } while (0)

static na_return_t ofi_open_endpoint(struct ofi_class *cls)
{
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};

    OFI_TRY(cls, fi_fabric(cls->info->fabric_attr, &cls->fabric, NULL), "fi_fabric");
    OFI_TRY(cls, fi_domain(cls->fabric, cls->info, &cls->domain, NULL), "fi_domain");
    /* tcp binds its listening socket here (address in use / not available),
     * sockets in fi_enable. */
    OFI_TRY(cls, fi_endpoint(cls->domain, cls->info, &cls->ep, NULL), "fi_endpoint");
    na_return_t ret = ofi_open_cq(cls);
    if (ret != NA_SUCCESS)
        return ret;
    OFI_TRY(cls, fi_av_open(cls->domain, &av_attr, &cls->av, NULL), "fi_av_open");
    OFI_TRY(cls, fi_ep_bind(cls->ep, &cls->cq->fid, FI_TRANSMIT | FI_RECV),
            "fi_ep_bind(cq)");
    OFI_TRY(cls, fi_ep_bind(cls->ep, &cls->av->fid, 0), "fi_ep_bind(av)");
    OFI_TRY(cls, fi_enable(cls->ep), "fi_enable");
    return NA_SUCCESS;
}

static na_return_t ofi_read_self_addr(struct ofi_class *cls)
{
    unsigned char name[256] = {0};
    size_t len = sizeof(name);
    int rc = fi_getname(&cls->ep->fid, name, &len);

    if (rc != 0 || len > OFI_RAW_ADDR_MAX) {
        HGX_LOG_ERROR(OFI, "fi_getname failed or address too long (%zu): %s", len,
                      fi_strerror(rc ? -rc : FI_ETOOSMALL));
        return NA_PROTOCOL_ERROR;
    }
    if (!ofi_raw_addr_normalize(cls, name, &len)) {
        HGX_LOG_ERROR(OFI, "unexpected address format from fi_getname");
        return NA_PROTOCOL_ERROR;
    }
    memcpy(cls->self_raw, name, len);
    cls->self_len = len;

    /* The header every unexpected message we send starts with. */
    cls->hdr[0] = OFI_HDR_MAGIC;
    cls->hdr[1] = OFI_HDR_VERSION;
    hgx_put_u16(cls->hdr + 2, (uint16_t)len);
    memcpy(cls->hdr + 4, name, len);
    return NA_SUCCESS;
}

static size_t ofi_size_limit(size_t requested, size_t provider_max, const char *what)
{
    size_t size = requested ? requested : OFI_MSG_SIZE_DEFAULT;
    if (size < OFI_HDR_SIZE)
        size = OFI_HDR_SIZE;
    if (size > provider_max) {
        if (requested)
            HGX_LOG_WARNING(OFI, "%s size %zu capped to the provider's %zu", what, size,
                            provider_max);
        size = provider_max;
    }
    return size;
}

static void ofi_set_limits(struct ofi_class *cls, const struct na_init_info *init_info)
{
    const struct fi_info *fi = cls->info;
    size_t max_msg = fi->ep_attr->max_msg_size;

    cls->max_msg_size = max_msg;
    if (cls->proto->msg_max_inject &&
        fi->tx_attr->inject_size >= OFI_MSG_SIZE_MIN_INJECT &&
        fi->tx_attr->inject_size < max_msg) {
        /* Two pieces of at most the inject size each (ofi_pieces.c). */
        cls->piece_size = fi->tx_attr->inject_size;
        if (max_msg > 2 * cls->piece_size)
            max_msg = 2 * cls->piece_size;
    }
    cls->iov_limit =
        fi->tx_attr->iov_limit < OFI_IOV_MAX ? fi->tx_attr->iov_limit : OFI_IOV_MAX;
    cls->rma_iov_limit = fi->tx_attr->rma_iov_limit < OFI_IOV_MAX
                             ? fi->tx_attr->rma_iov_limit
                             : OFI_IOV_MAX;
    if (cls->iov_limit == 0)
        cls->iov_limit = 1;
    if (cls->rma_iov_limit == 0 || cls->proto->put_delivered_above_inject)
        cls->rma_iov_limit = 1;
    cls->max_unexpected_size =
        ofi_size_limit(init_info->max_unexpected_size, max_msg, "unexpected");
    cls->max_expected_size =
        ofi_size_limit(init_info->max_expected_size, max_msg, "expected");
    HGX_LOG_DEBUG(OFI, "iov limit %zu, rma iov limit %zu, max msg %zu, inject %zu",
                  cls->iov_limit, cls->rma_iov_limit, max_msg, fi->tx_attr->inject_size);
}

/* The peer table's values at class teardown (na_peer_map_for_each). */
static void ofi_peer_free(void *peer, void *arg)
{
    (void)arg;
    ofi_link_saved_free(peer); /* an op may be held at a forced finalize */
    free(peer);
}

static void ofi_class_free(struct ofi_class *cls)
{
    if (cls->ep)
        fi_close(&cls->ep->fid);
    /* Contexts of forced cancels the provider never completed. */
    for (struct ofi_ctx_chunk *c = cls->ctx_chunks; c; c = c->next)
        for (size_t i = 0; i < OFI_CTX_CHUNK; i++)
            if (c->ctx[i].bounce)
                ofi_bounce_put(c->ctx[i].bounce);
    ofi_late_fini(cls);
    /* Their registrations go before the domain. */
    for (struct ofi_bounce *b = cls->bounce_free, *next; b; b = next) {
        next = b->next_free;
        ofi_bounce_free(b);
    }
    if (cls->hdr_mr)
        fi_close(&cls->hdr_mr->fid);
    if (cls->ctrl_rx_mr)
        fi_close(&cls->ctrl_rx_mr->fid);
    free(cls->ctrl_rx);
    for (struct ofi_ctrl_out *o = cls->outbox, *next; o; o = next) {
        next = o->next;
        free(o); /* its peer goes with the peer table */
    }
    hgx_ofi_keytab_destroy(&cls->keys);
    na_slots_fini(&cls->cookies);
    if (cls->av)
        fi_close(&cls->av->fid);
    na_wait_set_close(&cls->wait);
    if (cls->cq)
        fi_close(&cls->cq->fid);
    if (cls->domain)
        fi_close(&cls->domain->fid);
    if (cls->fabric)
        fi_close(&cls->fabric->fid);
    if (cls->info)
        fi_freeinfo(cls->info);
    na_peer_map_for_each(&cls->peers, ofi_peer_free, NULL);
    na_peer_map_fini(&cls->peers);
    for (struct ofi_ctx_chunk *c = cls->ctx_chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    pthread_mutex_destroy(&cls->ctrl_lock);
    hgx_lock_fini(&cls->ctx_lock);
    pthread_mutex_destroy(&cls->lock);
    free(cls);
}

static void ofi_cleanup(void);

static na_return_t ofi_initialize(na_class_t *na_class, const struct na_info *info,
                                  bool listen)
{
    na_return_t ret = NA_SUCCESS;
    struct ofi_class *cls = calloc(1, sizeof(*cls));

    (void)listen; /* an rxm endpoint always accepts connections */
    HGX_CHECK(OFI, !cls, error, ret, NA_NOMEM, "out of memory for the ofi class");
    pthread_mutex_init(&cls->lock, NULL);
    pthread_mutex_init(&cls->ctrl_lock, NULL);
    hgx_ofi_keytab_init(&cls->keys);
    ofi_list_init(&cls->retry);
    na_cancel_watcher_init(&cls->cancel_watcher);
    cls->retry_timeout_ms = (uint64_t)hgx_param_get_int(&ofi_param_retry_timeout_ms);
    hgx_list_init(&cls->escalated);
    ofi_list_init(&cls->checking);
    ofi_list_init(&cls->reassembly);
    cls->cq_fd = cls->wait.fd = cls->wait.timer_fd = -1;
    cls->no_block = (na_class->progress_mode & NA_NO_BLOCK) != 0;
    cls->no_retry = (na_class->progress_mode & NA_NO_RETRY) != 0;
    cls->na_class = na_class;
    cls->single = na_class->single;
    hgx_lock_init_mode(&cls->ctx_lock, cls->single);
    cls->proto = ofi_proto_find(info->protocol_name, strlen(info->protocol_name));
    HGX_CHECK(OFI, !cls->proto, error, ret, NA_PROTONOSUPPORT,
              "protocol \"%s\" not supported by ofi", info->protocol_name);
    na_peer_map_init(&cls->peers);

    /* A dead process's shm region under a recycled PID makes fi_enable
     * fail with EBUSY: drop such leftovers first. */
    if (strcmp(cls->proto->name, "shm") == 0)
        ofi_cleanup();
    ret = ofi_getinfo(cls, info);
    if (ret != NA_SUCCESS)
        goto error;
    ret = ofi_open_endpoint(cls);
    if (ret != NA_SUCCESS)
        goto error;
    ret = ofi_read_self_addr(cls);
    if (ret != NA_SUCCESS)
        goto error;
    ofi_set_limits(cls, info->init_info);
    if (cls->mr_mode & FI_MR_LOCAL) {
        cls->hdr_mr = ofi_mr_open(cls, cls->hdr, sizeof(cls->hdr), FI_SEND, &ret);
        if (!cls->hdr_mr)
            goto error;
        cls->hdr_desc = fi_mr_desc(cls->hdr_mr);
    }
    if ((ret = ofi_msg_recv_init(cls, na_class->max_contexts)) != NA_SUCCESS)
        goto error;
    if (cls->proto->rma_unchecked && (ret = ofi_ctrl_init(cls)) != NA_SUCCESS)
        goto error;
    na_class->plugin_class = cls;
    return NA_SUCCESS;

error:
    if (cls)
        ofi_class_free(cls);
    return ret;
}

static na_return_t ofi_finalize(na_class_t *na_class)
{
    struct ofi_class *cls = ofi_class(na_class);
    if (cls)
        ofi_class_free(cls);
    na_class->plugin_class = NULL;
    return NA_SUCCESS;
}

/* libfabric's shm regions are /dev/shm/PID:N:N; remove those of dead processes. */
static void ofi_cleanup(void)
{
    DIR *dir = opendir("/dev/shm");
    struct dirent *ent;

    if (!dir)
        return;
    while ((ent = readdir(dir)) != NULL) {
        if (!ofi_shm_owner_gone(ent->d_name))
            continue;
        char path[300];
        snprintf(path, sizeof(path), "/dev/shm/%s", ent->d_name);
        if (unlink(path) == 0)
            HGX_LOG_DEBUG(OFI, "removed stale shm region %s", path);
    }
    closedir(dir);
}

static na_return_t ofi_context_create(na_class_t *na_class, na_context_t *context,
                                      uint8_t id)
{
    (void)na_class;
    (void)id; /* carried in the tags */
    context->plugin_context = NULL;
    return NA_SUCCESS;
}

static na_return_t ofi_context_destroy(na_class_t *na_class, na_context_t *context)
{
    (void)na_class;
    (void)context;
    return NA_SUCCESS;
}

const struct na_ops na_ofi_ops = {
    .class_name = "ofi",
    .params = ofi_params,
    .protocols = (const char *const[]){"tcp", "sockets", "shm", NULL},
    /* Mercury's shared-memory plugin, when UCX (which ranks higher) is not built;
     * and Mercury's name of tcp with the rxm utility provider, which is what
     * "tcp" is here. */
    .aliases = (const struct na_alias[]){{"na", "sm", "shm", 1, true},
                                         {"ofi", "tcp;ofi_rxm", "tcp", 1, false},
                                         {NULL, NULL, NULL, 0, false}},
    .log_subsys = HGX_SUBSYS_OFI,
    /* The plugin cuts operations at the provider's limits itself, and over
     * tcp every piece of a get is one more read request (and head round
     * trip): 256 KiB pieces held ofi+tcp pulls at ~0.3x the raw fi_read
     * (docs/na-ofi.md). */
    .rma_piece_max = (size_t)16 << 20,
    .op_size = sizeof(struct ofi_op),
    .check_protocol = ofi_check_protocol,
    .initialize = ofi_initialize,
    .finalize = ofi_finalize,
    .cleanup = ofi_cleanup,
    .context_create = ofi_context_create,
    .context_destroy = ofi_context_destroy,
    .addr_lookup = ofi_addr_lookup,
    .addr_destroy = ofi_addr_destroy,
    .addr_owned_release = ofi_addr_owned_release,
    .addr_set_remove = ofi_addr_set_remove,
    .addr_self = ofi_addr_self,
    .addr_cmp = ofi_addr_cmp,
    .addr_is_self = ofi_addr_is_self,
    .addr_to_string = ofi_addr_to_string,
    .addr_get_serialize_size = ofi_addr_get_serialize_size,
    .addr_serialize = ofi_addr_serialize,
    .addr_deserialize = ofi_addr_deserialize,
    .msg_get_max_unexpected_size = ofi_msg_get_max_unexpected_size,
    .msg_get_max_expected_size = ofi_msg_get_max_expected_size,
    .msg_get_unexpected_header_size = ofi_msg_get_unexpected_header_size,
    .msg_get_expected_header_size = NULL,
    .msg_get_max_tag = ofi_msg_get_max_tag,
    .msg_buf_alloc = ofi_msg_buf_alloc,
    .msg_buf_free = ofi_msg_buf_free,
    .msg_init_unexpected = ofi_msg_init_unexpected,
    .msg_send_unexpected = ofi_msg_send_unexpected,
    .msg_recv_unexpected = ofi_msg_recv_unexpected,
    .msg_send_expected = ofi_msg_send_expected,
    .msg_recv_expected = ofi_msg_recv_expected,
    .mem_handle_create = ofi_mem_handle_create,
    .mem_handle_create_segments = ofi_mem_handle_create_segments,
    .mem_handle_free = ofi_mem_handle_free,
    .mem_handle_get_max_segments = ofi_mem_handle_get_max_segments,
    .mem_register = ofi_mem_register,
    .mem_deregister = ofi_mem_deregister,
    .mem_handle_get_serialize_size = ofi_mem_handle_get_serialize_size,
    .mem_handle_serialize = ofi_mem_handle_serialize,
    .mem_handle_deserialize = ofi_mem_handle_deserialize,
    .rma = ofi_rma,
    .poll_get_fd = ofi_poll_get_fd,
    .poll_try_wait = ofi_poll_try_wait,
    .poll = ofi_poll,
    .poll_wait = ofi_poll_wait,
    .wakes_contexts = true,
    .cancel = ofi_cancel,
};

void hgx_ofi_ctrl_counts(const na_class_t *na_class, struct hgx_ofi_ctrl_counts *c)
{
    const struct ofi_class *cls =
        na_class->ops == &na_ofi_ops ? ofi_class(na_class) : NULL;

    *c = (struct hgx_ofi_ctrl_counts){0};
    if (cls) {
        c->bad = atomic_load(&cls->n_bad_ctrl);
        c->refused = atomic_load(&cls->n_check_refused);
        c->stale = atomic_load(&cls->n_stale_answers);
        c->pieces_dropped = atomic_load(&cls->n_pieces_dropped);
        c->late_dropped = atomic_load(&cls->n_late_dropped);
        c->late_seconds = atomic_load(&cls->n_late_seconds);
    }
}
