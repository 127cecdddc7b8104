/*
 * ucx_class.c -- the UCX plugin's class: UCP context and worker, listener,
 * initialization and finalization, and the ops table.
 */
#include "ucx_int.h"
#include "na_netif.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static bool ucx_check_protocol(const char *protocol_name)
{
    return strcmp(protocol_name, "tcp") == 0 || strcmp(protocol_name, "shm") == 0 ||
           strcmp(protocol_name, "all") == 0;
}

/* Transports per protocol; sockaddr wire-up uses the tcp connection manager,
 * which UCX_TLS does not filter. */
static const char *ucx_tls(const char *proto)
{
    if (strcmp(proto, "tcp") == 0)
        return "tcp,self";
    if (strcmp(proto, "shm") == 0)
        return "posix,sysv,cma,self,tcp";
    return NULL;
}

/* Our endpoints ask for peer-failure handling, and UCX 1.13's shared-memory
 * transports only offer it when told to: without this, shm traffic silently
 * goes over TCP loopback. The user's own UCX setting wins. */
static bool ucx_mm_error_handling(const char *proto)
{
    return strcmp(proto, "tcp") != 0 && !getenv("UCX_MM_ERROR_HANDLING") &&
           !getenv("UCX_POSIX_ERROR_HANDLING") && !getenv("UCX_SYSV_ERROR_HANDLING");
}

/* shm keeps tcp in UCX_TLS only for the listener's wire-up, but UCX then
 * picks tcp as the high-bandwidth RMA lanes of every shm endpoint (cma offers
 * no peer-failure handling), and an endpoint's lanes keep their interfaces
 * polled: an epoll_wait per TCP device in every worker progress. Without
 * rendezvous lanes the endpoint is shared memory only; messages (<= 8 KiB) are
 * eager and put/get data goes by rendezvous over shared-memory active
 * messages. The CM connection
 * still reports a dead peer. The user's own UCX setting wins. */
static bool ucx_no_rndv_lanes(const char *proto)
{
    return strcmp(proto, "shm") == 0 && !getenv("UCX_MAX_RNDV_RAILS");
}

static na_return_t ucx_config_set(ucp_config_t *config, const char *name,
                                  const char *value)
{
    ucs_status_t st = ucp_config_modify(config, name, value);
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "cannot set UCX_%s=%s: %s", name, value,
                      ucs_status_string(st));
        return NA_PROTOCOL_ERROR;
    }
    return NA_SUCCESS;
}

/* ifname: the interface the class names ("" for any); UCX's network
 * devices are kept to it, so that a class on loopback never sends over
 * another interface. The user's UCX_NET_DEVICES wins. An IPv6 class has
 * UCX's tcp transport take its interfaces' IPv6 addresses: UCP hands a
 * peer's data lanes the address its connection came from, so the tcp
 * interfaces must listen in the family of the connections (UCX 1.13 with
 * an IPv4 tcp interface and an IPv6 connection writes an IPv6 address into
 * room for an IPv4 one). ucp_config_modify names a transport's setting
 * without its table's prefix: "AF_PRIO" is UCX_TCP_AF_PRIO, and the
 * user's UCX_TCP_AF_PRIO wins. */
static na_return_t ucx_context_open(struct ucx_class *cls, const char *proto,
                                    const char *ifname)
{
    ucp_config_t *config = NULL;
    ucs_status_t st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "ucp_config_read failed: %s", ucs_status_string(st));
        return NA_PROTOCOL_ERROR;
    }
    const char *tls = ucx_tls(proto);
    na_return_t ret = NA_SUCCESS;
    if (tls)
        ret = ucx_config_set(config, "TLS", tls);
    if (ret == NA_SUCCESS && *ifname && !getenv("UCX_NET_DEVICES"))
        ret = ucx_config_set(config, "NET_DEVICES", ifname);
    if (ret == NA_SUCCESS && cls->family == AF_INET6 && !getenv("UCX_TCP_AF_PRIO"))
        ret = ucx_config_set(config, "AF_PRIO", "inet6");
    if (ret == NA_SUCCESS && ucx_mm_error_handling(proto))
        ret = ucx_config_set(config, "MM_ERROR_HANDLING", "y");
    if (ret == NA_SUCCESS && ucx_no_rndv_lanes(proto))
        ret = ucx_config_set(config, "MAX_RNDV_RAILS", "0");
    /* Messages (at most UCX_MSG_SIZE_MAX) stay eager: a rendezvous message
     * holds its sender until the receiver fetches it, so a slow or dropped
     * peer would keep sends (and their window slots) in flight. */
    if (ret == NA_SUCCESS && !getenv("UCX_RNDV_THRESH"))
        ret = ucx_config_set(config, "RNDV_THRESH", UCX_RNDV_THRESH);
    if (ret != NA_SUCCESS) {
        ucp_config_release(config);
        return ret;
    }
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features =
                               UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP};
    st = ucp_init(&params, config, &cls->context);
    ucp_config_release(config);
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "ucp_init (%s) failed: %s", proto, ucs_status_string(st));
        return NA_NODEV;
    }
    return NA_SUCCESS;
}

static na_return_t ucx_worker_open(struct ucx_class *cls)
{
    ucp_worker_params_t params = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE |
                                                UCP_WORKER_PARAM_FIELD_CLIENT_ID,
                                  .thread_mode = UCS_THREAD_MODE_SERIALIZED,
                                  .client_id = cls->id};
    ucs_status_t st = ucp_worker_create(cls->context, &params, &cls->worker);
    if (st == UCS_OK)
        st = ucp_worker_get_efd(cls->worker, &cls->efd);
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "cannot create the worker: %s", ucs_status_string(st));
        return NA_PROTOCOL_ERROR;
    }
    na_return_t ret = ucx_wait_add_worker(cls);
    return ret == NA_SUCCESS ? ucx_am_handler_set(cls) : ret;
}

/* A free port for port 0: the listener's id is derived from its address,
 * and the id must be in the worker (client id) before the listener exists. */
static int ucx_free_port(const struct sockaddr_storage *at, socklen_t len)
{
    struct sockaddr_storage bound = *at;
    socklen_t blen = sizeof(bound);
    int fd = socket(at->ss_family, SOCK_STREAM, 0), port = -1;
    if (fd < 0)
        return -1;
    if (bind(fd, (const struct sockaddr *)at, len) == 0 &&
        getsockname(fd, (struct sockaddr *)&bound, &blen) == 0)
        port = na_ipaddr_port((const struct sockaddr *)&bound);
    close(fd);
    return port;
}

/* A port in use is told apart (NA_ADDRINUSE) and, when the caller will try
 * another (busy_quiet), not logged as an error. */
static na_return_t ucx_listen(struct ucx_class *cls, const struct sockaddr_storage *at,
                              socklen_t len, char *str, size_t size, bool busy_quiet)
{
    ucp_listener_params_t params = {
        .field_mask =
            UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
        .sockaddr = {.addr = (const struct sockaddr *)at, .addrlen = len},
        .conn_handler = {.cb = ucx_conn_cb, .arg = cls}};
    ucs_status_t st = ucp_listener_create(cls->worker, &params, &cls->listener);
    if (st == UCS_ERR_BUSY && busy_quiet) {
        HGX_LOG_DEBUG(UCX, "port of %s taken before the listener bound it", str);
        return NA_ADDRINUSE;
    }
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "cannot listen on %s: %s", str, ucs_status_string(st));
        return st == UCS_ERR_BUSY ? NA_ADDRINUSE : NA_ADDRNOTAVAIL;
    }
    ucp_listener_attr_t attr = {.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR};
    if ((st = ucp_listener_query(cls->listener, &attr)) != UCS_OK) {
        HGX_LOG_ERROR(UCX, "cannot query the listener: %s", ucs_status_string(st));
        return NA_PROTOCOL_ERROR;
    }
    ucx_sockaddr_string((const struct sockaddr *)&attr.sockaddr, cls->proto, str, size);
    return NA_SUCCESS;
}

/* The family of a class that names no address: the one
 * na_init_info.addr_format asks for, else IPv4. shm (and na+sm through it)
 * ignores the format, as Mercury's na+sm does: its loopback wire-up
 * address is no network address. */
static int ucx_family(const char *proto, enum na_addr_format format)
{
    int family = strcmp(proto, "shm") == 0 ? AF_UNSPEC : na_ipaddr_family(format);
    return family == AF_UNSPEC ? AF_INET : family;
}

/* UCX's tcp transport takes no IPv6 loopback or link-local address, and a
 * connection's data lanes go to the address it came from: such a listener
 * could accept connections and never carry them. */
static bool ucx_v6_unusable(const struct sockaddr_storage *at)
{
    const struct in6_addr *a = &((const struct sockaddr_in6 *)at)->sin6_addr;
    return at->ss_family == AF_INET6 &&
           (IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_LINKLOCAL(a));
}

/* The listening address (the id derives from it; port 0 for any) and its
 * interface, for a listener or a client that names one. A host of the
 * other family than addr_format's fails (NA_ADDRNOTAVAIL). shm peers share
 * our host: its listener stays on loopback unless told otherwise. */
static na_return_t ucx_netif(const struct ucx_class *cls, const struct na_info *info,
                             struct sockaddr_storage *at, socklen_t *len, char *ifname)
{
    bool shm = strcmp(cls->proto, "shm") == 0;
    const struct na_netif_spec spec = {
        .host = info->host || !shm ? info->host : "127.0.0.1",
        .port = info->port,
        .subnet = info->init_info->ip_subnet,
        .env_name = "UCX_NET_DEVICES",
        .family = na_ipaddr_family(shm ? NA_ADDR_UNSPEC : info->init_info->addr_format)};
    na_return_t ret = na_netif_select(&spec, at, len, ifname);
    if (ret == NA_SUCCESS && ucx_v6_unusable(at)) {
        char hp[NA_IPADDR_STR_MAX];
        na_ipaddr_string((const struct sockaddr *)at, hp, sizeof(hp));
        HGX_LOG_ERROR(UCX,
                      "ucx+%s cannot use %s: UCX's tcp transport takes no IPv6 "
                      "loopback or link-local address (use 127.0.0.1 or a global "
                      "IPv6 address)",
                      cls->proto, hp);
        return NA_ADDRNOTAVAIL;
    }
    return ret;
}

/* Listening address with its port and the id, known before the worker is
 * created. */
static na_return_t ucx_listen_addr(struct ucx_class *cls, struct sockaddr_storage *at,
                                   socklen_t len, char *str, size_t size)
{
    struct sockaddr *sa = (struct sockaddr *)at;
    if (na_ipaddr_port(sa) == 0) {
        int port = ucx_free_port(at, len);
        if (port <= 0) {
            char hp[NA_IPADDR_STR_MAX];
            na_ipaddr_string(sa, hp, sizeof(hp));
            HGX_LOG_ERROR(UCX, "no free TCP port on %s: %s", hp, strerror(errno));
            return NA_ADDRNOTAVAIL;
        }
        na_ipaddr_set_port(sa, port);
    }
    ucx_sockaddr_string(sa, cls->proto, str, size);
    cls->id = ucx_hash_id(strstr(str, "://") + 3);
    return NA_SUCCESS;
}

/* Listen on info's address, the worker created with the id derived from it.
 * For port 0 the port is picked first (the id needs it before the worker
 * exists), and another socket can take it before the listener binds it:
 * outgoing connections draw from the same ephemeral range. Then a new port
 * is picked, with a new worker for its id. */
static na_return_t ucx_open_listening(struct ucx_class *cls,
                                      const struct sockaddr_storage *at, socklen_t len,
                                      char *str, size_t size)
{
    bool any_port = na_ipaddr_port((const struct sockaddr *)at) == 0;
    for (int tries = 1;; tries++) {
        struct sockaddr_storage sa = *at;
        bool retry = any_port && tries < UCX_LISTEN_TRIES;
        na_return_t ret = ucx_listen_addr(cls, &sa, len, str, size);
        if (ret == NA_SUCCESS)
            ret = ucx_worker_open(cls);
        if (ret == NA_SUCCESS)
            ret = ucx_listen(cls, &sa, len, str, size, retry);
        if (ret != NA_ADDRINUSE || !retry)
            return ret;
        ucp_worker_destroy(cls->worker);
        cls->worker = NULL;
        cls->efd = -1;
    }
}

/* Our own peer: an ep on our own worker (the "self" transport). */
static na_return_t ucx_self_open(struct ucx_class *cls, const char *str)
{
    ucp_address_t *wa = NULL;
    size_t wa_len = 0;
    ucs_status_t st = ucp_worker_get_address(cls->worker, &wa, &wa_len);
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "cannot get the worker address: %s", ucs_status_string(st));
        return NA_PROTOCOL_ERROR;
    }
    cls->self = ucx_peer_new(cls, cls->id, str, false);
    if (!cls->self) {
        ucp_worker_release_address(cls->worker, wa);
        return NA_NOMEM;
    }
    cls->self->self = true;
    ucx_peer_move(cls->self, UCX_CONN_UP);
    ucp_ep_params_t params = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                              .address = wa};
    st = ucp_ep_create(cls->worker, &params, &cls->self->ep);
    ucp_worker_release_address(cls->worker, wa);
    if (st != UCS_OK) {
        HGX_LOG_ERROR(UCX, "cannot create the self endpoint: %s%s", ucs_status_string(st),
                      cls->family == AF_INET6 ? " (an IPv6 class needs a network device "
                                                "with a global IPv6 address)"
                                              : "");
        return NA_PROTOCOL_ERROR;
    }
    return NA_SUCCESS;
}

static bool ucx_closing(void *arg)
{
    return ((struct ucx_class *)arg)->closing > 0;
}

static void ucx_class_free(struct ucx_class *cls)
{
    /* Forced closes from cancel escalations: let them finish (bounded). */
    ucx_progress_while(cls, ucx_closing, cls);
    /* Before the peers go: a message being received may need its sender. */
    if (cls->worker)
        ucx_late_drain_all(cls);
    struct hgx_list *it;
    while ((it = hgx_list_pop_front(&cls->peers))) {
        struct ucx_peer *p = hgx_list_entry(it, struct ucx_peer, link);
        ucx_pending_fail(p, NA_CANCELED);
        if (p->ep)
            ucx_close_ep(cls, p->ep);
        free(p);
    }
    /* Peers' transfers the closes did not end: UCX is done with them. */
    ucx_tx_end_all(cls);
    na_peer_map_fini(&cls->peer_map);
    na_slots_fini(&cls->regions);
    na_slots_fini(&cls->rma_ops);
    for (unsigned i = 0; i < cls->n_unexp; i++) {
        while ((it = hgx_list_pop_front(&cls->unexp[i].held))) {
            ucx_held_add(cls, &cls->unexp[i], -1);
            free(hgx_list_entry(it, struct ucx_held, link));
        }
    }
    if (cls->listener)
        ucp_listener_destroy(cls->listener);
    if (cls->worker)
        ucp_worker_destroy(cls->worker);
    if (cls->context)
        ucp_cleanup(cls->context);
    ucx_wait_close(cls);
    hgx_lock_fini(&cls->lock);
    free(cls);
}

/* The plugin's parameters (na_ops.params), read at class init. */
static const struct hgx_param ucx_param_send_window = {
    .name = "HGX_UCX_SEND_WINDOW",
    .type = HGX_PARAM_INT,
    .def = 256,
    .min = 1,
    .max = 1048576,
    .help = "sends per UCX endpoint that may hold a UCX request; more wait in order",
};

/* Not HGX_NA_CANCEL_TIMEOUT_MS: escalation here drops the peer's whole
 * connection, failing its other operations, so it waits for a peer that is
 * really gone rather than for a transfer that is merely slow. */
static const struct hgx_param ucx_param_cancel_escalate_ms = {
    .name = "HGX_UCX_CANCEL_ESCALATE_MS",
    .type = HGX_PARAM_INT,
    .def = 10000,
    .min = 0,
    .max = 3600000,
    .help = "milliseconds a cancelled UCX send or put/get may stay in flight before "
            "the plugin drops its peer's connection",
};

static const struct hgx_param *const ucx_params[] = {
    &ucx_param_send_window,
    &ucx_param_cancel_escalate_ms,
    NULL,
};

static na_return_t ucx_initialize(na_class_t *na_class, const struct na_info *info,
                                  bool listen)
{
    unsigned n_unexp = na_class->max_contexts;
    char str[UCX_ADDR_STR_MAX];
    na_return_t ret;

    struct ucx_class *cls =
        calloc(1, sizeof(*cls) + n_unexp * sizeof(struct ucx_unexp_box));
    if (!cls)
        return NA_NOMEM;
    hgx_list_init(&cls->peers);
    hgx_list_init(&cls->txs);
    na_peer_map_init(&cls->peer_map);
    cls->n_unexp = n_unexp;
    ucx_late_init(cls);
    for (unsigned i = 0; i < n_unexp; i++) {
        hgx_list_init(&cls->unexp[i].posted);
        hgx_list_init(&cls->unexp[i].held);
    }
    /* Held across ucp_worker_progress (ucx_class.lock says why a mutex). */
    hgx_lock_init_as(&cls->lock, na_class->single ? HGX_LOCK_NONE : HGX_LOCK_MUTEX);
    cls->na_class = na_class;
    cls->efd = cls->wait.fd = cls->wait.timer_fd = -1;
    cls->send_window = (unsigned)hgx_param_get_int(&ucx_param_send_window);
    cls->unexp_max = (unsigned)hgx_param_get_int(&hgx_param_na_unexpected_max);
    na_cancel_watcher_init_param(&cls->cancel_watcher, &ucx_param_cancel_escalate_ms);
    snprintf(cls->proto, sizeof(cls->proto), "%s", info->protocol_name);
    cls->family = ucx_family(cls->proto, info->init_info->addr_format);
    struct sockaddr_storage at;
    socklen_t at_len = 0;
    char ifname[IF_NAMESIZE] = "";
    if (listen || info->host) {
        ret = ucx_netif(cls, info, &at, &at_len, ifname);
        if (ret != NA_SUCCESS)
            goto error;
        cls->family = at.ss_family;
    }
    ret = ucx_wait_open(cls);
    if (ret == NA_SUCCESS)
        ret = ucx_context_open(cls, cls->proto, ifname);
    if (ret != NA_SUCCESS)
        goto error;
    if (listen) {
        ret = ucx_open_listening(cls, &at, at_len, str, sizeof(str));
    } else {
        cls->id = ucx_random_id();
        snprintf(str, sizeof(str), "ucx+%s://id-%08x", cls->proto, cls->id);
        ret = ucx_worker_open(cls);
    }
    if (ret != NA_SUCCESS)
        goto error;
    ret = ucx_self_open(cls, str);
    if (ret != NA_SUCCESS)
        goto error;
    na_class->plugin_class = cls;
    HGX_LOG_DEBUG(UCX, "class %s ready (id %08x)", str, cls->id);
    return NA_SUCCESS;

error:
    ucx_class_free(cls);
    return ret;
}

static na_return_t ucx_finalize(na_class_t *na_class)
{
    ucx_class_free(ucx_cls(na_class));
    na_class->plugin_class = NULL;
    return NA_SUCCESS;
}

/* A context's plugin data is its id's unexpected receives and kept messages
 * (NA checked id against max_contexts): one load finds them. The box knows
 * its context to tell whether its ops still need the worker. */
static na_return_t ucx_context_create(na_class_t *na_class, na_context_t *context,
                                      uint8_t id)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct ucx_unexp_box *box = &cls->unexp[id];
    hgx_lock(&cls->lock);
    box->context = context;
    hgx_unlock(&cls->lock);
    context->plugin_context = box;
    return NA_SUCCESS;
}

static na_return_t ucx_context_destroy(na_class_t *na_class, na_context_t *context)
{
    struct ucx_class *cls = ucx_cls(na_class);
    hgx_lock(&cls->lock);
    ((struct ucx_unexp_box *)context->plugin_context)->context = NULL;
    hgx_unlock(&cls->lock);
    return NA_SUCCESS;
}

const struct na_ops na_ucx_ops = {
    .class_name = "ucx",
    .protocols = (const char *const[]){"tcp", "shm", "all", NULL},
    /* Mercury's shared-memory plugin: ucx+shm is preferred to ofi+shm, as it
     * is the faster and has a wait fd. */
    .aliases = (const struct na_alias[]){{"na", "sm", "shm", 2, true},
                                         {NULL, NULL, NULL, 0, false}},
    .log_subsys = HGX_SUBSYS_UCX,
    .params = ucx_params,
    /* One put is one put_nbx plus a flush: with 256 KiB pieces a 1 MiB push
     * paid four flushes and ran at ~0.5x the raw put+flush over shm; one piece
     * per transfer up to 16 MiB runs at 0.95-1.0x (docs/performance.md). */
    .rma_piece_max = (size_t)16 << 20,
    .op_size = sizeof(struct ucx_op),
    .check_protocol = ucx_check_protocol,
    .initialize = ucx_initialize,
    .finalize = ucx_finalize,
    .context_create = ucx_context_create,
    .context_destroy = ucx_context_destroy,
    .addr_lookup = ucx_addr_lookup,
    .addr_destroy = ucx_addr_destroy,
    .addr_set_remove = ucx_addr_set_remove,
    .addr_self = ucx_addr_self,
    .addr_cmp = ucx_addr_cmp,
    .addr_is_self = ucx_addr_is_self,
    .addr_to_string = ucx_addr_to_string,
    .addr_key = ucx_addr_key,
    .addr_get_serialize_size = ucx_addr_get_serialize_size,
    .addr_serialize = ucx_addr_serialize,
    .addr_deserialize = ucx_addr_deserialize,
    .msg_get_max_unexpected_size = ucx_msg_get_max_size,
    .msg_get_max_expected_size = ucx_msg_get_max_size,
    .msg_get_max_tag = ucx_msg_get_max_tag,
    .msg_send_unexpected = ucx_msg_send_unexpected,
    .msg_recv_unexpected = ucx_msg_recv_unexpected,
    .msg_send_expected = ucx_msg_send_expected,
    .msg_recv_expected = ucx_msg_recv_expected,
    .mem_handle_create = ucx_mem_handle_create,
    .mem_handle_create_segments = ucx_mem_handle_create_segments,
    .mem_handle_free = ucx_mem_handle_free,
    .mem_handle_get_max_segments = ucx_mem_handle_get_max_segments,
    .mem_register = ucx_mem_register,
    .mem_deregister = ucx_mem_deregister,
    .mem_handle_get_serialize_size = ucx_mem_handle_get_serialize_size,
    .mem_handle_serialize = ucx_mem_handle_serialize,
    .mem_handle_deserialize = ucx_mem_handle_deserialize,
    .rma = ucx_rma_op,
    .poll_get_fd = ucx_poll_get_fd,
    .poll_try_wait = ucx_poll_try_wait,
    .poll = ucx_poll,
    .poll_wait = ucx_poll_wait,
    .wakes_contexts = true,
    .cancel = ucx_cancel,
};
