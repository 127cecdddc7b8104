/*
 * na_mpi_dynamic.c -- the MPI NA plugin: mpi+dynamic: ports, names, connect/accept
 * threads, connections. The plugin as a whole: na_mpi_priv.h.
 */
#include "na_mpi_priv.h"

/*------------------------------------------------------------ mpi+dynamic
 *
 * A listener opens a port (MPI_Open_port) and, when a name server answers,
 * publishes it under a service name (env HGX_MPI_SERVICE, default "hgx").
 * MPI_Comm_accept blocks, so an acceptor thread loops on it (on dyn_self)
 * and hands each new intercommunicator to the progress loop under a lock;
 * this needs MPI_THREAD_MULTIPLE, checked at init. A lookup of
 * "mpi+dynamic://PORT" (port percent-escaped) or "mpi+dynamic://NAME"
 * (MPI_Lookup_name) runs MPI_Comm_connect in a helper thread and waits at most
 * HGX_MPI_CONNECT_TIMEOUT_MS (default 10000): Open MPI 4.1 has no usable
 * connect/accept timeout (its own PMIx exchange waits 600 s), so past the
 * bound the lookup fails with NA_ADDRNOTAVAIL and the helper thread is left
 * behind (detached). Should its connect still succeed, the helper closes the
 * connection as a finalizing class would (BYE, MPI_Comm_disconnect), so the
 * server does not keep a peer that never talks; NA_Finalize waits (bounded by
 * the same parameter) for such helpers, since MPI_Finalize must not run while
 * a thread is inside MPI. Connects run one at a time (each is collective on
 * the connecting communicator). Below
 * MPI_THREAD_MULTIPLE only a client can exist (no acceptor), and a lookup
 * connects in the calling thread instead, unbounded, as Mercury's does
 * (nm_dyn_connect_inline): no helper thread ever calls MPI then.
 *
 * Every connection has its own mpi_emul instance sharing the registry of the
 * self connection, so put/get work across intercommunicators. Teardown: the
 * side that finalizes first sends BYE (top tag) and calls
 * MPI_Comm_disconnect, the other side disconnects when its progress sees the
 * BYE (MPI_Comm_disconnect is collective: a peer that never progresses nor
 * finalizes holds the finalizing side). Open MPI cannot interrupt a blocked
 * MPI_Comm_accept (a connect to one's own port deadlocks), so finalize joins
 * the acceptor only if it has left accept; otherwise it is detached, works on
 * its own refcounted state, and MPI_Finalize ends it.
 */

static const char *nm_library_name(char *buf, size_t n)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(v, &len) != MPI_SUCCESS)
        snprintf(v, sizeof(v), "unknown MPI");
    if (strstr(v, "MPICH")) {
        const char *dev = strstr(v, "ch4:") ? strstr(v, "ch4:") : strstr(v, "ch3:");
        size_t dl = dev ? strcspn(dev, " \t\n,") : 0;
        snprintf(buf, n, "MPICH%s%.*s", dev ? " " : "", (int)dl, dev ? dev : "");
    } else {
        snprintf(buf, n, "%.*s", (int)strcspn(v, ",\n"), v);
    }
    return buf;
}

/*
 * MPI_Open_port, MPI_Close_port and the name service act on no communicator:
 * MPI-3 libraries raise their errors on MPI_COMM_WORLD, MPI-4 ones on
 * MPI_COMM_SELF, and those handlers are the application's (fatal by
 * default). So each such call runs with MPI_ERRORS_RETURN on both, and the
 * application's handlers are put back right after it; calls in several
 * threads at once share one window (counted). A lookup abandoned in its
 * helper thread (see nm_dyn_connect) keeps the window open until MPI_Lookup_name
 * returns. Accept runs on dyn_self and connect on dyn_connect_self, private
 * dups of MPI_COMM_SELF with MPI_ERRORS_RETURN: the acceptor blocked in
 * MPI_Comm_accept for the life of a listener changes nothing of the
 * application's, and a connect never runs a collective on the communicator
 * an accept is blocked on.
 */
static hgx_lock_t dyn_eh_lock = HGX_LOCK_MUTEX_INITIALIZER;
static int dyn_eh_depth;
static MPI_Errhandler dyn_eh_world, dyn_eh_self;
static MPI_Comm dyn_self = MPI_COMM_NULL;         /* kept until MPI_Finalize: a detached
                                                     acceptor may still use it */
static MPI_Comm dyn_connect_self = MPI_COMM_NULL; /* likewise, for connects */

static void nm_dyn_eh_enter(void)
{
    hgx_lock(&dyn_eh_lock);
    if (dyn_eh_depth++ == 0) {
        MPI_Comm_get_errhandler(MPI_COMM_WORLD, &dyn_eh_world);
        MPI_Comm_get_errhandler(MPI_COMM_SELF, &dyn_eh_self);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    }
    hgx_unlock(&dyn_eh_lock);
}

static void nm_dyn_eh_leave(void)
{
    hgx_lock(&dyn_eh_lock);
    if (--dyn_eh_depth == 0) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, dyn_eh_world);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, dyn_eh_self);
        MPI_Errhandler_free(&dyn_eh_world);
        MPI_Errhandler_free(&dyn_eh_self);
    }
    hgx_unlock(&dyn_eh_lock);
}

int nm_dyn_close_port(const char *port)
{
    nm_dyn_eh_enter();
    int rc = MPI_Close_port(port);
    nm_dyn_eh_leave();
    return rc;
}

static int nm_dyn_dup_self(MPI_Comm *c)
{
    if (*c != MPI_COMM_NULL)
        return MPI_SUCCESS;
    int rc = MPI_Comm_dup(MPI_COMM_SELF, c);
    return rc == MPI_SUCCESS ? MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN) : rc;
}

/* The communicators accept and connect run on (created once per process). */
int nm_dyn_self_comm(void)
{
    hgx_lock(&dyn_eh_lock);
    int rc = nm_dyn_dup_self(&dyn_self);
    if (rc == MPI_SUCCESS)
        rc = nm_dyn_dup_self(&dyn_connect_self);
    hgx_unlock(&dyn_eh_lock);
    return rc;
}

/* Open a port; on failure log the real cause (MPICH ch4:ucx has no MPI_Open_port). */
na_return_t nm_dyn_open_port(char *port, const char *why)
{
    nm_dyn_eh_enter();
    int rc = MPI_Open_port(MPI_INFO_NULL, port);
    nm_dyn_eh_leave();
    if (rc != MPI_SUCCESS) {
        char lib[128], es[MPI_MAX_ERROR_STRING];
        int len = 0;
        if (MPI_Error_string(rc, es, &len) != MPI_SUCCESS)
            snprintf(es, sizeof(es), "error %d", rc);
        HGX_LOG_ERROR(
            MPI,
            "MPI_Open_port is not supported by this MPI (%s): %s needs dynamic process "
            "support (MPI_Open_port/MPI_Comm_accept/MPI_Comm_connect); use Open MPI with "
            "ompi-server (tools/ompi-dynamic-run.sh) or mpi+static [MPI_Open_port: %s]",
            nm_library_name(lib, sizeof(lib)), why, es);
        return NA_PROTONOSUPPORT;
    }
    return NA_SUCCESS;
}

void nm_dyn_escape(const char *in, char *out, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 4 < n; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
            (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-' ||
            *p == '~') {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    out[o] = '\0';
}

static int nm_hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

bool nm_dyn_unescape(const char *in, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = in; *p; p++) {
        if (o + 1 >= n)
            return false;
        if (*p == '%') {
            int h = nm_hexval(p[1]), l = h < 0 ? -1 : nm_hexval(p[2]);
            if (h < 0 || l < 0)
                return false;
            out[o++] = (char)(h * 16 + l);
            p += 2;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
    return o > 0;
}

const struct hgx_param nm_param_connect_timeout_ms = {
    .name = "HGX_MPI_CONNECT_TIMEOUT_MS",
    .type = HGX_PARAM_INT,
    .def = 10000,
    .min = 1,
    .max = 86400000,
    .help = "milliseconds an mpi+dynamic lookup waits for MPI_Lookup_name and "
            "MPI_Comm_connect before it fails with NA_ADDRNOTAVAIL (and NA_Finalize "
            "for the connects of lookups that gave up)",
};

const struct hgx_param nm_param_service = {
    .name = "HGX_MPI_SERVICE",
    .type = HGX_PARAM_STRING,
    .def_string = "hgx",
    .help = "service name an mpi+dynamic server publishes (MPI_Publish_name)",
};

struct dyn_acceptor {
    hgx_lock_t mu; /* HGX_LOCK_MUTEX: nm_dyn_take_accepted holds it across MPI calls */
    int refs;
    bool closing, in_accept;
    char port[MPI_MAX_PORT_NAME];
    MPI_Comm *pending;
    size_t npending, cap;
    pthread_t thr;
};

static void nm_acceptor_unref(struct dyn_acceptor *a)
{
    hgx_lock(&a->mu);
    int left = --a->refs;
    hgx_unlock(&a->mu);
    if (left == 0) {
        free(a->pending);
        hgx_lock_fini(&a->mu);
        free(a);
    }
}

static void *nm_acceptor_main(void *arg)
{
    struct dyn_acceptor *a = arg;
    for (;;) {
        hgx_lock(&a->mu);
        bool closing = a->closing;
        a->in_accept = !closing;
        hgx_unlock(&a->mu);
        if (closing)
            break;
        MPI_Comm c = MPI_COMM_NULL;
        int rc = MPI_Comm_accept(a->port, MPI_INFO_NULL, 0, dyn_self, &c);
        hgx_lock(&a->mu);
        a->in_accept = false;
        if (a->closing) { /* the class is gone: the connection is never used */
            hgx_unlock(&a->mu);
            break;
        }
        if (rc != MPI_SUCCESS) {
            hgx_unlock(&a->mu);
            nm_log_err("MPI_Comm_accept (acceptor thread stops; no new connections)", rc);
            break;
        }
        if (a->npending == a->cap) {
            size_t cap = a->cap ? a->cap * 2 : 8;
            MPI_Comm *p = realloc(a->pending, cap * sizeof(*p));
            if (!p) {
                hgx_unlock(&a->mu);
                HGX_LOG_ERROR(MPI, "out of memory: dropping an accepted connection");
                MPI_Comm_disconnect(&c);
                continue;
            }
            a->pending = p;
            a->cap = cap;
        }
        a->pending[a->npending++] = c;
        hgx_unlock(&a->mu);
    }
    nm_acceptor_unref(a);
    return NULL;
}

struct dyn_connector {
    /* a pthread mutex, not an hgx_lock_t: the caller waits on cv with it */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    bool done, abandoned, is_name;
    int rc, tag_bye;
    const char *failed_call;
    MPI_Comm comm;
    char target[MPI_MAX_PORT_NAME];
    char port[MPI_MAX_PORT_NAME];
};

static void nm_connector_unref(struct dyn_connector *k)
{
    pthread_mutex_lock(&k->mu);
    int left = --k->refs;
    pthread_mutex_unlock(&k->mu);
    if (left == 0) {
        pthread_cond_destroy(&k->cv);
        pthread_mutex_destroy(&k->mu);
        free(k);
    }
}

/* MPI_Lookup_name (a service name) and MPI_Comm_connect, in the calling
 * thread; *failed names the call that failed. */
static int nm_dyn_lookup_connect(const char *target, bool is_name, char *port,
                                 MPI_Comm *c, const char **failed)
{
    int rc = MPI_SUCCESS;
    if (is_name) {
        nm_dyn_eh_enter();
        rc = MPI_Lookup_name(target, MPI_INFO_NULL, port);
        nm_dyn_eh_leave();
        if (rc != MPI_SUCCESS) {
            *failed = "MPI_Lookup_name";
            return rc;
        }
    } else {
        snprintf(port, MPI_MAX_PORT_NAME, "%s", target);
    }
    rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, dyn_connect_self, c);
    if (rc != MPI_SUCCESS)
        *failed = "MPI_Comm_connect";
    return rc;
}

static void nm_dyn_log_connect_error(const char *call, const char *target, int rc)
{
    char es[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, es, &len) != MPI_SUCCESS)
        snprintf(es, sizeof(es), "error %d", rc);
    HGX_LOG_ERROR(MPI, "mpi+dynamic: %s for \"%s\" failed: %s", call, target, es);
}

/* Connect helpers: one connects at a time (dyn_connect_mu); dyn_helpers
 * counts the running ones, for NA_Finalize to wait on. */
static pthread_mutex_t dyn_connect_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t dyn_helpers_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dyn_helpers_cv = PTHREAD_COND_INITIALIZER;
static int dyn_helpers;

/* A connection whose lookup gave up: close it as a finalizing class closes
 * its connections, so the server's progress sees BYE and disconnects too. */
static void nm_dyn_close_abandoned(MPI_Comm c, int tag_bye, const char *target)
{
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (finalized)
        return;
    HGX_LOG_DEBUG(MPI, "mpi+dynamic: closing the late connection to \"%s\"", target);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    uint32_t bye = UNEXP_MAGIC;
    int rc = MPI_Send(&bye, (int)sizeof(bye), MPI_BYTE, 0, tag_bye, c);
    if (rc != MPI_SUCCESS)
        nm_log_err("MPI_Send (BYE)", rc);
    rc = MPI_Comm_disconnect(&c);
    if (rc != MPI_SUCCESS)
        nm_log_err("MPI_Comm_disconnect", rc);
}

static void *nm_connector_main(void *arg)
{
    struct dyn_connector *k = arg;
    const char *failed = NULL;
    MPI_Comm c = MPI_COMM_NULL;
    pthread_mutex_lock(&dyn_connect_mu);
    int rc = nm_dyn_lookup_connect(k->target, k->is_name, k->port, &c, &failed);
    pthread_mutex_unlock(&dyn_connect_mu);
    pthread_mutex_lock(&k->mu);
    k->done = true;
    k->rc = rc;
    k->failed_call = failed;
    bool abandoned = k->abandoned;
    if (!abandoned)
        k->comm = c;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
    if (abandoned && rc == MPI_SUCCESS)
        nm_dyn_close_abandoned(c, k->tag_bye, k->target);
    nm_connector_unref(k);
    pthread_mutex_lock(&dyn_helpers_mu);
    dyn_helpers--;
    pthread_cond_broadcast(&dyn_helpers_cv);
    pthread_mutex_unlock(&dyn_helpers_mu);
    return NULL;
}

static struct timespec nm_dyn_connect_deadline(int64_t ms)
{
    return hgx_clock_timespec(hgx_clock_after_ms(hgx_clock_now_ns(), (uint64_t)ms));
}

/* NA_Finalize: wait (bounded) for helpers of abandoned lookups to leave MPI. */
static void nm_dyn_wait_helpers(void)
{
    int64_t ms = hgx_param_get_int(&nm_param_connect_timeout_ms);
    struct timespec dl = nm_dyn_connect_deadline(ms);
    pthread_mutex_lock(&dyn_helpers_mu);
    while (dyn_helpers > 0 &&
           pthread_cond_timedwait(&dyn_helpers_cv, &dyn_helpers_mu, &dl) != ETIMEDOUT)
        ;
    int left = dyn_helpers;
    pthread_mutex_unlock(&dyn_helpers_mu);
    if (left > 0)
        HGX_LOG_WARNING(MPI,
                        "mpi+dynamic: %d connect(s) of lookups that gave up are still "
                        "inside MPI after %" PRId64 " ms (HGX_MPI_CONNECT_TIMEOUT_MS); "
                        "MPI_Finalize must not run before they return",
                        left, ms);
}

/* Below MPI_THREAD_MULTIPLE: the lookup and connect in the calling thread,
 * blocking until MPI returns (MPI has no connect timeout to bound it). */
na_return_t nm_dyn_connect_inline(const char *target, bool is_name, MPI_Comm *comm_p,
                                  char *port_out)
{
    const char *failed = NULL;
    int rc = nm_dyn_lookup_connect(target, is_name, port_out, comm_p, &failed);
    if (rc == MPI_SUCCESS)
        return NA_SUCCESS;
    nm_dyn_log_connect_error(failed, target, rc);
    return NA_ADDRNOTAVAIL;
}

/* Runs MPI_Lookup_name + MPI_Comm_connect in a helper thread, bounded. */
na_return_t nm_dyn_connect(const char *target, bool is_name, int tag_bye,
                           MPI_Comm *comm_p, char *port_out)
{
    struct dyn_connector *k = calloc(1, sizeof(*k));
    if (!k)
        return NA_NOMEM;
    /* a monotonic deadline (hgx_clock_timespec): a wall clock step cannot
     * cut the wait short or stretch it */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, &ca);
    pthread_condattr_destroy(&ca);
    k->refs = 2;
    k->is_name = is_name;
    k->tag_bye = tag_bye;
    snprintf(k->target, sizeof(k->target), "%s", target);
    pthread_mutex_lock(&dyn_helpers_mu);
    dyn_helpers++;
    pthread_mutex_unlock(&dyn_helpers_mu);
    pthread_t t;
    if (pthread_create(&t, NULL, nm_connector_main, k) != 0) {
        pthread_mutex_lock(&dyn_helpers_mu);
        dyn_helpers--;
        pthread_mutex_unlock(&dyn_helpers_mu);
        k->refs = 1;
        nm_connector_unref(k);
        return NA_NOMEM;
    }
    pthread_detach(t);
    int64_t ms = hgx_param_get_int(&nm_param_connect_timeout_ms);
    struct timespec dl = nm_dyn_connect_deadline(ms);
    na_return_t ret = NA_SUCCESS;
    pthread_mutex_lock(&k->mu);
    while (!k->done) {
        if (pthread_cond_timedwait(&k->cv, &k->mu, &dl) == ETIMEDOUT && !k->done)
            break;
    }
    if (!k->done) {
        k->abandoned = true;
        HGX_LOG_ERROR(
            MPI,
            "mpi+dynamic: %s \"%s\" did not complete within %" PRId64 " ms "
            "(HGX_MPI_CONNECT_TIMEOUT_MS): is the server running and accepting, and were "
            "both "
            "jobs started with the same ompi-server (mpirun --ompi-server file:URI)?",
            is_name ? "lookup/connect of service" : "MPI_Comm_connect to port", target,
            ms);
        ret = NA_ADDRNOTAVAIL;
    } else if (k->rc != MPI_SUCCESS) {
        nm_dyn_log_connect_error(k->failed_call, target, k->rc);
        ret = NA_ADDRNOTAVAIL;
    } else {
        *comm_p = k->comm;
        snprintf(port_out, MPI_MAX_PORT_NAME, "%s", k->port);
    }
    pthread_mutex_unlock(&k->mu);
    nm_connector_unref(k);
    return ret;
}

/* New connection record for an intercommunicator. Class lock held. */
struct dyn_conn *nm_conn_add(struct nm_class *pc, MPI_Comm c, const char *port)
{
    struct dyn_conn *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    if (hgx_emul_create(&k->emul, c, &pc->tab, TAG_CTRL, TAG_PUT_BASE, TAG_GET_BASE) !=
            NA_SUCCESS ||
        (port && !(k->port = strdup(port)))) {
        hgx_emul_free(k->emul);
        free(k);
        return NULL;
    }
    hgx_emul_share_registry(k->emul, pc->emul);
    hgx_emul_set_tag_gens(k->emul, pc->conn_gen_base, pc->conn_gen_bits);
    k->comm = c;
    k->id = ++pc->nconns;
    hgx_list_push_front(&pc->conns, &k->link);
    return k;
}

/* Move connections accepted by the acceptor thread into the class. Lock held. */
int nm_dyn_take_accepted(struct nm_class *pc)
{
    struct dyn_acceptor *a = pc->acc;
    int n = 0;
    if (!a)
        return 0;
    hgx_lock(&a->mu);
    for (size_t i = 0; i < a->npending; i++) {
        MPI_Comm c = a->pending[i];
        struct dyn_conn *k = nm_conn_add(pc, c, NULL);
        if (!k) {
            HGX_LOG_ERROR(MPI, "out of memory: dropping an accepted connection");
            MPI_Comm_disconnect(&c);
        } else {
            HGX_LOG_DEBUG(MPI, "mpi+dynamic: accepted connection %d", k->id);
            n++;
        }
    }
    a->npending = 0;
    hgx_unlock(&a->mu);
    return n;
}

void nm_dyn_disconnect(struct dyn_conn *k, bool send_bye, int tag_bye)
{
    if (k->dead || k->is_self)
        return;
    if (send_bye) {
        uint32_t bye = UNEXP_MAGIC;
        int rc = MPI_Send(&bye, (int)sizeof(bye), MPI_BYTE, 0, tag_bye, k->comm);
        if (rc != MPI_SUCCESS)
            nm_log_err("MPI_Send (BYE)", rc);
    }
    int rc = MPI_Comm_disconnect(&k->comm);
    if (rc != MPI_SUCCESS)
        nm_log_err("MPI_Comm_disconnect", rc);
    k->comm = MPI_COMM_NULL;
    k->dead = true;
}

/* BYE from the peer: it is finalizing; disconnect our side. Lock held. */
int nm_dyn_check_bye(struct nm_class *pc, struct dyn_conn *k)
{
    int flag = 0;
    MPI_Message msg;
    uint32_t bye = 0;
    if (MPI_Improbe(0, pc->tag_bye, k->comm, &flag, &msg, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS ||
        !flag)
        return 0;
    MPI_Mrecv(&bye, (int)sizeof(bye), MPI_BYTE, &msg, MPI_STATUS_IGNORE);
    HGX_LOG_DEBUG(MPI, "mpi+dynamic: connection %d closed by the peer", k->id);
    nm_dyn_disconnect(k, false, 0);
    return 1;
}

/* Listener setup: acceptor thread and service name. Class lock not needed (init). */
na_return_t nm_dyn_listen(struct nm_class *pc)
{
    struct dyn_acceptor *a = calloc(1, sizeof(*a));
    if (!a)
        return NA_NOMEM;
    hgx_lock_init_as(&a->mu, HGX_LOCK_MUTEX);
    a->refs = 2;
    memcpy(a->port, pc->port, sizeof(a->port));
    if (pthread_create(&a->thr, NULL, nm_acceptor_main, a) != 0) {
        a->refs = 1;
        nm_acceptor_unref(a);
        HGX_LOG_ERROR(MPI, "cannot start the mpi+dynamic acceptor thread");
        return NA_NOMEM;
    }
    pc->acc = a;
    snprintf(pc->service, sizeof(pc->service), "%s",
             hgx_param_get_string(&nm_param_service));
    nm_dyn_eh_enter();
    int rc = MPI_Publish_name(pc->service, MPI_INFO_NULL, pc->port);
    nm_dyn_eh_leave();
    if (rc == MPI_SUCCESS) {
        pc->published = true;
        HGX_LOG_DEBUG(MPI, "mpi+dynamic: published service \"%s\"", pc->service);
    } else {
        char es[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, es, &len);
        HGX_LOG_WARNING(MPI,
                        "mpi+dynamic: MPI_Publish_name(\"%s\") failed (%s); only the "
                        "port address works (no name server, or the name is taken)",
                        pc->service, es);
    }
    return NA_SUCCESS;
}

void nm_dyn_finalize(struct nm_class *pc)
{
    nm_dyn_wait_helpers();
    if (pc->acc) {
        struct dyn_acceptor *a = pc->acc;
        hgx_lock(&a->mu);
        a->closing = true;
        bool blocked = a->in_accept;
        hgx_unlock(&a->mu);
        if (blocked)
            pthread_detach(a->thr); /* ends with MPI_Finalize; see the comment above */
        else
            pthread_join(a->thr, NULL);
        nm_dyn_take_accepted(pc); /* connections that arrived meanwhile get their BYE */
        nm_acceptor_unref(a);
        pc->acc = NULL;
    }
    if (pc->published) {
        nm_dyn_eh_enter();
        int rc = MPI_Unpublish_name(pc->service, MPI_INFO_NULL, pc->port);
        nm_dyn_eh_leave();
        if (rc != MPI_SUCCESS)
            nm_log_err("MPI_Unpublish_name", rc);
    }
    if (pc->listening) {
        int rc = nm_dyn_close_port(pc->port);
        if (rc != MPI_SUCCESS)
            nm_log_err("MPI_Close_port", rc);
    }
}

/* Finalize: messages claimed for NA receives never posted. Lock held. */
