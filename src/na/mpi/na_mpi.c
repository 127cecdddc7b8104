/*
 * na_mpi.c -- the MPI NA plugin: class: initialize, finalize, contexts, cancel and the
 * ops table. The plugin as a whole: na_mpi_priv.h.
 */
#include "na_mpi_priv.h"

static MPI_Comm na_mpi_user_comm = MPI_COMM_NULL;
static MPI_Comm na_mpi_intra_comm = MPI_COMM_NULL; /* NA_MPI_Set_init_intra_comm */
static int na_mpi_init_refs; /* classes that rely on MPI_Init done by us */
static hgx_lock_t na_mpi_global_lock = HGX_LOCK_MUTEX_INITIALIZER; /* MPI init, comms */

void na_mpi_set_comm(MPI_Comm comm)
{
    hgx_lock(&na_mpi_global_lock);
    na_mpi_user_comm = comm;
    hgx_unlock(&na_mpi_global_lock);
}

void na_mpi_set_intra_comm(MPI_Comm comm)
{
    hgx_lock(&na_mpi_global_lock);
    na_mpi_intra_comm = comm;
    hgx_unlock(&na_mpi_global_lock);
}

void nm_log_err(const char *what, int rc)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof(s), "error %d", rc);
    HGX_LOG_ERROR(MPI, "%s failed: %s", what, s);
}

/*
 * The communicator mpi+static runs on when the application gave Mercury's
 * intra communicator. In Mercury it is one side (servers or clients) of a
 * split of MPI_COMM_WORLD and the plugin reaches the other side through an
 * intercommunicator over MPI_COMM_WORLD; hgx reaches every rank directly, so
 * a comm smaller than MPI_COMM_WORLD means MPI_COMM_WORLD, and one spanning
 * it is used as it is (addresses are then its ranks).
 */
static na_return_t nm_intra_base(MPI_Comm intra, MPI_Comm *base)
{
    int inter = 0, n = 0, world = 0, rc;
    if ((rc = MPI_Comm_test_inter(intra, &inter)) != MPI_SUCCESS ||
        (rc = MPI_Comm_size(intra, &n)) != MPI_SUCCESS ||
        (rc = MPI_Comm_size(MPI_COMM_WORLD, &world)) != MPI_SUCCESS) {
        nm_log_err("checking the NA_MPI_Set_init_intra_comm communicator", rc);
        return NA_INVALID_ARG;
    }
    if (inter) {
        HGX_LOG_ERROR(MPI, "NA_MPI_Set_init_intra_comm was given an intercommunicator; "
                           "mpi+static needs an intracommunicator");
        return NA_INVALID_ARG;
    }
    *base = n == world ? intra : MPI_COMM_WORLD;
    HGX_LOG_DEBUG(MPI, "mpi+static: intra communicator of %d of %d ranks, running on %s",
                  n, world, n == world ? "it" : "MPI_COMM_WORLD");
    return NA_SUCCESS;
}

/* Date the activity noted since the last call at t. A note can be up to
 * NA's spin window old when dated: the polling window only grows by it. */
void nm_date_activity(struct nm_class *pc, uint64_t t)
{
    if (!atomic_load_explicit(&pc->noted, memory_order_relaxed))
        return;
    unsigned kind = atomic_exchange_explicit(&pc->noted, 0u, memory_order_relaxed);
    if (!kind)
        return;
    uint64_t until = t + (kind & ACT_POST ? NM_POST_SPIN_US : NM_EVENT_SPIN_US);
    atomic_store(&pc->last_activity_us, t);
    if (atomic_load(&pc->spin_until_us) < until)
        atomic_store(&pc->spin_until_us, until);
}

#ifdef OPEN_MPI
/*
 * Open MPI 4.1 (ob1 over a single-copy BTL, e.g. vader with CMA) writes a
 * truncated rendezvous message whole, past the end of the receive buffer
 * (measured with 4.1.4: 5000 bytes sent to a 4200-byte MPI_Irecv all land).
 * So a receive posted before the size of its message is known must never be
 * truncated: it is posted for INT_MAX bytes (no message of ours is larger:
 * MPI_BYTE, int count) into a sink, SINK_SIZE bytes of address space mapped
 * without reserving memory (MAP_NORESERVE), so only pages a message touches
 * get memory, and the message is copied to the NA buffer when it fits. The
 * pages a large message took above SINK_KEEP are given back after it. Where
 * the mapping fails (strict overcommit, address space limit) the receive
 * takes the probed path, which knows the size before receiving.
 */

/* A sink for one receive, NULL if none can be had. Lock held. */
char *nm_sink_get(struct nm_class *pc)
{
    char *s = pc->sink_free;
    if (s) {
        memcpy(&pc->sink_free, s, sizeof(pc->sink_free));
        return s;
    }
    if (pc->nsinks >= SINK_MAX || pc->sink_failed)
        return NULL;
    s = mmap(NULL, SINK_SIZE, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s == MAP_FAILED) {
        pc->sink_failed = true;
        HGX_LOG_WARNING(MPI,
                        "cannot map a receive sink (%s): receives without one are probed",
                        strerror(errno));
        return NULL;
    }
    pc->nsinks++;
    return s;
}

/* The receive into s is over; count: bytes it may have written. A request
 * freed unfinished (MPI_ERR_REQUEST, finalize) may still be written into by
 * MPI: its sink stays mapped. Lock held. */
void nm_sink_put(struct nm_class *pc, char *s, int err, size_t count)
{
    if (err == MPI_ERR_REQUEST)
        return;
    if (err != MPI_SUCCESS)
        count = SINK_SIZE;
    if (count > SINK_KEEP)
        madvise(s + SINK_KEEP, count - SINK_KEEP, MADV_DONTNEED);
    memcpy(s, &pc->sink_free, sizeof(pc->sink_free));
    pc->sink_free = s;
}

/* Finalize, after the request table: unmap the sinks given back. */
static void nm_sinks_unmap(struct nm_class *pc)
{
    while (pc->sink_free) {
        char *s = pc->sink_free;
        memcpy(&pc->sink_free, s, sizeof(pc->sink_free));
        munmap(s, SINK_SIZE);
        pc->nsinks--;
    }
    if (pc->nsinks)
        HGX_LOG_DEBUG(MPI, "finalize: %d receive sinks left mapped (requests unfinished)",
                      pc->nsinks);
}
#endif

/*------------------------------------------------------------ class */

static bool nm_check_protocol(const char *protocol_name)
{
    return strcmp(protocol_name, "static") == 0 || strcmp(protocol_name, "dynamic") == 0;
}

static const char *nm_thread_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE:
        return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
        return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
        return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
        return "MPI_THREAD_MULTIPLE";
    default:
        return "an unknown level";
    }
}

/*
 * A listener's MPI_Comm_accept blocks until a client comes (MPI has no
 * nonblocking accept), so it runs in an acceptor thread while the class
 * progresses in others: that needs MPI_THREAD_MULTIPLE. Mercury's listener
 * runs such a thread too and asks for MPI_THREAD_MULTIPLE when it initializes
 * MPI (its test harness does so for servers). A client connects inline and
 * works at any level.
 */
static na_return_t nm_dyn_check_listen_level(int provided)
{
    if (provided >= MPI_THREAD_MULTIPLE)
        return NA_SUCCESS;
    HGX_LOG_ERROR(MPI,
                  "a listening mpi+dynamic class needs MPI_THREAD_MULTIPLE (its acceptor "
                  "thread blocks in MPI_Comm_accept while the class progresses) but MPI "
                  "provides %s (%d): initialize MPI with MPI_Init_thread(..., "
                  "MPI_THREAD_MULTIPLE, ...) or let NA initialize it; a non-listening "
                  "mpi+dynamic class works at any thread level",
                  nm_thread_level_name(provided), provided);
    return NA_PROTONOSUPPORT;
}

static na_return_t nm_initialize(na_class_t *na_class, const struct na_info *info,
                                 bool listen)
{
    bool dynamic = strcmp(info->protocol_name, "dynamic") == 0;
    char port[MPI_MAX_PORT_NAME] = "";
    int inited = 0, finalized = 0, provided = 0, rc;
    bool we_init = false;
    na_return_t ret;

    if (info->host) {
        HGX_LOG_ERROR(MPI, "mpi+%s takes no address in the info string (got \"%s\")",
                      info->protocol_name, info->host);
        return NA_INVALID_ARG;
    }
    MPI_Finalized(&finalized);
    if (finalized) {
        HGX_LOG_ERROR(MPI, "MPI was already finalized; it cannot be initialized again");
        return NA_PROTOCOL_ERROR;
    }
    hgx_lock(&na_mpi_global_lock);
    MPI_Initialized(&inited);
    if (!inited) {
        if (na_mpi_user_comm != MPI_COMM_NULL || na_mpi_intra_comm != MPI_COMM_NULL) {
            hgx_unlock(&na_mpi_global_lock);
            HGX_LOG_ERROR(MPI, "a communicator was given (NA_MPI_Set_init_intra_comm or "
                               "hgx_init_mpi) but MPI is not initialized");
            return NA_INVALID_ARG;
        }
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS) {
            hgx_unlock(&na_mpi_global_lock);
            nm_log_err("MPI_Init_thread", rc);
            return NA_PROTOCOL_ERROR;
        }
        if (provided < MPI_THREAD_SERIALIZED) {
            MPI_Finalize();
            hgx_unlock(&na_mpi_global_lock);
            HGX_LOG_ERROR(
                MPI,
                "MPI provides thread level %d, below MPI_THREAD_SERIALIZED which the NA "
                "progress thread needs",
                provided);
            return NA_PROTONOSUPPORT;
        }
        we_init = true;
        na_mpi_init_refs++;
    } else if (na_mpi_init_refs > 0) {
        /* MPI is ours, started for another class: this class holds it too, or
         * finalizing that class first would end MPI under this one. */
        we_init = true;
        na_mpi_init_refs++;
    } else {
        MPI_Query_thread(&provided);
        if (provided < MPI_THREAD_SERIALIZED)
            HGX_LOG_WARNING(
                MPI,
                "the application initialized MPI at thread level %d (< SERIALIZED): "
                "call NA only from the thread that calls MPI",
                provided);
    }
    MPI_Comm base = na_mpi_user_comm != MPI_COMM_NULL ? na_mpi_user_comm : MPI_COMM_WORLD;
    MPI_Comm intra =
        na_mpi_user_comm == MPI_COMM_NULL ? na_mpi_intra_comm : MPI_COMM_NULL;
    hgx_unlock(&na_mpi_global_lock);
    /* mpi+dynamic connects each process on its own: an intra comm changes nothing */
    if (!dynamic && intra != MPI_COMM_NULL &&
        (ret = nm_intra_base(intra, &base)) != NA_SUCCESS)
        goto undo_init;

    if (dynamic) {
        MPI_Query_thread(&provided);
        if (listen && (ret = nm_dyn_check_listen_level(provided)) != NA_SUCCESS)
            goto undo_init;
        rc = nm_dyn_self_comm();
        if (rc != MPI_SUCCESS) {
            nm_log_err("MPI_Comm_dup(MPI_COMM_SELF)", rc);
            ret = hgx_mpi_err_to_na(rc);
            goto undo_init;
        }
        /* Probe (and, for a listener, keep) a port: fails clearly where the MPI
         * library has no dynamic process support. */
        ret = nm_dyn_open_port(port, "mpi+dynamic");
        if (ret != NA_SUCCESS)
            goto undo_init;
        if (!listen) {
            nm_dyn_close_port(port);
            port[0] = '\0';
        }
        base = MPI_COMM_SELF;
    }

    struct nm_class *pc = calloc(1, sizeof(*pc));
    if (!pc) {
        ret = NA_NOMEM;
        goto undo_init;
    }
    pc->we_init_mpi = we_init;
    pc->wait.fd = pc->wait.timer_fd = -1;
    hgx_list_init(&pc->uq);
    hgx_list_init(&pc->eq);
    hgx_list_init(&pc->held);
    hgx_list_init(&pc->conns);
    pc->held_max = (int)hgx_param_get_int(&hgx_param_na_unexpected_max);
    hgx_lock_init_as(&pc->lock, na_class->single ? HGX_LOCK_NONE : HGX_LOCK_MUTEX);
    hgx_mreqtab_init(&pc->tab);

    rc = MPI_Comm_dup(base, &pc->comm); /* collective over base */
    if (rc != MPI_SUCCESS) {
        nm_log_err("MPI_Comm_dup", rc);
        ret = NA_PROTOCOL_ERROR;
        goto free_pc;
    }
    pc->dcomm = MPI_COMM_NULL;
    if ((rc = MPI_Comm_set_errhandler(pc->comm, MPI_ERRORS_RETURN)) != MPI_SUCCESS ||
        (rc = MPI_Comm_dup(pc->comm, &pc->dcomm)) != MPI_SUCCESS || /* handler too */
        (rc = MPI_Comm_rank(pc->comm, &pc->rank)) != MPI_SUCCESS ||
        (rc = MPI_Comm_size(pc->comm, &pc->size)) != MPI_SUCCESS) {
        nm_log_err("setting up the communicator", rc);
        ret = NA_PROTOCOL_ERROR;
        goto free_comm;
    }
    pc->rank_addrs = calloc((size_t)pc->size, sizeof(*pc->rank_addrs));
    if (!pc->rank_addrs) {
        ret = NA_NOMEM;
        goto free_comm;
    }
    int *tag_ub = NULL, flag = 0;
    rc = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    if (rc != MPI_SUCCESS || !flag || !tag_ub ||
        *tag_ub < TAG_EXP_BASE + MIN_NA_TAGS - 1) {
        HGX_LOG_ERROR(MPI,
                      "MPI_TAG_UB is %d; at least %d is needed for the hgx tag layout",
                      tag_ub && flag ? *tag_ub : -1, TAG_EXP_BASE + MIN_NA_TAGS - 1);
        ret = NA_PROTONOSUPPORT;
        goto free_comm;
    }
    /* mpi+dynamic connections: TAG_EXP_BASE .. tag_ub - 1 holds the NA tags
     * and, above them, the tag generations (at most half, leaving the NA at
     * least MIN_NA_TAGS; none if that does not fit two generations) */
    long long above = (long long)*tag_ub - TAG_EXP_BASE;
    if (dynamic) {
        pc->conn_gen_bits = hgx_emul_gen_bits((above - MIN_NA_TAGS) / 2);
        pc->max_tag = (na_tag_t)(above - 1 - hgx_emul_gen_span(pc->conn_gen_bits));
        pc->conn_gen_base = TAG_EXP_BASE + (int)pc->max_tag + 1;
    } else {
        pc->max_tag = (na_tag_t)above;
    }
    pc->tag_bye = *tag_ub; /* mpi+dynamic: above every NA and data tag */

    const struct na_init_info *ii = info->init_info;
    pc->max_unexp = ii->max_unexpected_size ? ii->max_unexpected_size : DEFAULT_MSG_SIZE;
    pc->max_exp = ii->max_expected_size ? ii->max_expected_size : DEFAULT_MSG_SIZE;
    if (pc->max_unexp > INT_MAX - UNEXP_HDR_SIZE || pc->max_exp > INT_MAX) {
        HGX_LOG_ERROR(MPI, "message size hints above INT_MAX are not supported");
        ret = NA_INVALID_ARG;
        goto free_comm;
    }
    ret = hgx_emul_create(&pc->emul, pc->comm, &pc->tab, TAG_CTRL, TAG_PUT_BASE,
                          TAG_GET_BASE);
    if (ret != NA_SUCCESS) {
        if (pc->emul) {
            hgx_emul_close(pc->emul);
            hgx_mreqtab_destroy(&pc->tab, 100);
            hgx_emul_free(pc->emul);
        }
        goto free_comm;
    }
    hgx_emul_set_data_comm(pc->emul, pc->dcomm);
    /* dcomm carries data only: the tag generations take TAG_EXP_BASE .. tag_ub */
    hgx_emul_set_tag_gens(pc->emul, TAG_EXP_BASE, hgx_emul_gen_bits(above + 1));
    if (dynamic) {
        pc->dynamic = true;
        pc->connect_inline = provided < MPI_THREAD_MULTIPLE; /* clients only (above) */
        if (pc->connect_inline)
            HGX_LOG_DEBUG(MPI,
                          "mpi+dynamic client at %s: lookups connect in the calling "
                          "thread, not bounded by HGX_MPI_CONNECT_TIMEOUT_MS",
                          nm_thread_level_name(provided));
        pc->self_conn = calloc(1, sizeof(*pc->self_conn));
        if (!pc->self_conn) {
            hgx_emul_close(pc->emul);
            hgx_mreqtab_destroy(&pc->tab, 100);
            hgx_emul_free(pc->emul);
            ret = NA_NOMEM;
            goto free_comm;
        }
        pc->self_conn->comm = pc->comm;
        pc->self_conn->emul = pc->emul;
        pc->self_conn->is_self = true;
        if (listen) {
            memcpy(pc->port, port, sizeof(pc->port));
            pc->listening = true;
            port[0] = '\0'; /* owned by the class now */
            ret = nm_dyn_listen(pc);
            if (ret != NA_SUCCESS) {
                nm_dyn_close_port(pc->port);
                free(pc->self_conn);
                hgx_emul_close(pc->emul);
                hgx_mreqtab_destroy(&pc->tab, 100);
                hgx_emul_free(pc->emul);
                goto free_comm;
            }
            HGX_LOG_DEBUG(MPI, "mpi+dynamic listening on port %s", pc->port);
        }
    }
    na_class->plugin_class = pc;
    HGX_LOG_DEBUG(MPI,
                  "mpi+%s rank %d of %d, tag_ub %d, max NA tag %u, tag-generation bits "
                  "%u (connections: %u)",
                  info->protocol_name, pc->rank, pc->size, *tag_ub, pc->max_tag,
                  hgx_emul_gen_bits(above + 1), pc->conn_gen_bits);
    return NA_SUCCESS;

free_comm:
    if (pc->dcomm != MPI_COMM_NULL)
        MPI_Comm_free(&pc->dcomm);
    MPI_Comm_free(&pc->comm);
free_pc:
    free(pc->rank_addrs);
    hgx_lock_fini(&pc->lock);
    free(pc);
undo_init:
    if (port[0])
        nm_dyn_close_port(port);
    if (we_init) {
        hgx_lock(&na_mpi_global_lock);
        if (--na_mpi_init_refs == 0)
            MPI_Finalize();
        hgx_unlock(&na_mpi_global_lock);
    }
    return ret;
}

static na_return_t nm_finalize(na_class_t *na_class)
{
    struct nm_class *pc = PC(na_class);
    hgx_lock(&pc->lock);
    struct hgx_emul_stats st;
    hgx_emul_get_stats(pc->emul, &st);
    if (st.bad_packets || st.refused)
        HGX_LOG_DEBUG(
            MPI_EMUL,
            "%lu malformed packets, %lu refused requests, %lu late chunks dropped",
            st.bad_packets, st.refused, st.late_dropped);
    nm_drop_held(pc);
    if (pc->dynamic) {
        nm_dyn_finalize(pc);
        struct hgx_list *it;
        hgx_list_for_each(it, &pc->conns)
        {
            hgx_emul_close(hgx_list_entry(it, struct dyn_conn, link)->emul);
        }
    }
    hgx_emul_close(pc->emul);
    hgx_mreqtab_destroy(&pc->tab, 1000);
    if (pc->dynamic) {
        struct hgx_list *it;
        while ((it = hgx_list_pop_front(&pc->conns))) {
            struct dyn_conn *k = hgx_list_entry(it, struct dyn_conn, link);
            nm_dyn_disconnect(k, true, pc->tag_bye);
            hgx_emul_free(k->emul);
            free(k->port);
            free(k);
        }
        free(pc->self_conn);
    }
    hgx_emul_free(pc->emul);
#ifdef OPEN_MPI
    nm_sinks_unmap(pc);
#endif
    if (pc->ndropped)
        HGX_LOG_DEBUG(MPI, "%lu received messages were dropped", pc->ndropped);
    int rc = MPI_Comm_free(&pc->comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_free(&pc->dcomm);
    if (rc != MPI_SUCCESS)
        nm_log_err("MPI_Comm_free", rc);
    hgx_unlock(&pc->lock);
    hgx_lock_fini(&pc->lock);
    na_wait_set_close(&pc->wait);
    for (int r = 0; r < pc->size; r++)
        free(atomic_load(&pc->rank_addrs[r]));
    free(pc->rank_addrs);
    bool we_init = pc->we_init_mpi;
    free(pc);
    if (we_init) {
        hgx_lock(&na_mpi_global_lock);
        if (--na_mpi_init_refs == 0) {
            rc = MPI_Finalize();
            if (rc != MPI_SUCCESS)
                nm_log_err("MPI_Finalize", rc);
        }
        hgx_unlock(&na_mpi_global_lock);
    }
    return NA_SUCCESS;
}

static na_return_t nm_context_create(na_class_t *na_class, na_context_t *context,
                                     uint8_t id)
{
    (void)na_class, (void)id;
    context->plugin_context = NULL; /* all contexts share the class's MPI state */
    return NA_SUCCESS;
}

static na_return_t nm_context_destroy(na_class_t *na_class, na_context_t *context)
{
    (void)na_class, (void)context;
    return NA_SUCCESS;
}

/* Ask MPI to cancel the receive mo has in MPI, on a copy of its handle (the
 * request table still holds the request); it completes there as usual, and
 * its handler reads MPI_Test_cancelled. */
static void nm_cancel_irecv(struct nm_op *mo)
{
    MPI_Request r = mo->req;
    int rc = MPI_Cancel(&r);
    if (rc != MPI_SUCCESS)
        nm_log_err("MPI_Cancel", rc);
}

static na_return_t nm_cancel(na_class_t *na_class, na_context_t *context, na_op_id_t *op)
{
    (void)context;
    struct nm_class *pc = PC(na_class);
    struct nm_op *mo = na_op_plugin(op);
    hgx_lock(&pc->lock);
    if (atomic_load(&op->state) != NA_OP_CANCELING) {
        hgx_unlock(&pc->lock); /* completed meanwhile */
        return NA_SUCCESS;
    }
    switch (op->info.type) {
    case NA_CB_RECV_UNEXPECTED:
        if (hgx_list_linked(&mo->link)) { /* still waiting on uq */
            hgx_list_remove(&mo->link);
            nm_op_done(pc, op, NA_CANCELED);
        } else if (mo->irecv) {
            nm_cancel_irecv(mo); /* its handler tells cancelled from received */
        } /* else: already matched, its local Imrecv completes soon */
        break;
    case NA_CB_RECV_EXPECTED:
        if (hgx_list_linked(&mo->link)) { /* still waiting on eq */
            hgx_list_remove(&mo->link);
            nm_late_expect(pc, mo->src, mo->tag, mo->comm); /* its message may come */
            nm_op_done(pc, op, NA_CANCELED);
        } else if (mo->irecv) {
            nm_cancel_irecv(mo); /* nm_recv_exp_done tells cancelled from received */
        }                        /* else: matched, its local Imrecv completes soon */
        break;
    case NA_CB_SEND_EXPECTED:
    case NA_CB_SEND_UNEXPECTED: {
        /* MPI_Cancel on a copy of the handle; the table sees it complete and
         * MPI_Test_cancelled decides between NA_CANCELED and the real result
         * (sends that MPI cannot cancel complete normally). */
        MPI_Request r = mo->req;
        int rc = MPI_Cancel(&r);
        if (rc != MPI_SUCCESS)
            nm_log_err("MPI_Cancel", rc);
        break;
    }
    case NA_CB_PUT:
    case NA_CB_GET:
        if (mo->oreq)
            hgx_emul_cancel(mo->emul, mo->oreq);
        break;
    default:
        break;
    }
    hgx_unlock(&pc->lock);
    return NA_SUCCESS;
}

static const struct hgx_param *const nm_params[] = {
    &nm_param_connect_timeout_ms,      &nm_param_service,
    &hgx_emul_param_cancel_timeout_ms, &hgx_emul_param_zombie_ms,
    &hgx_emul_param_target_idle_ms,    NULL,
};

const struct na_ops na_mpi_ops = {
    .class_name = "mpi",
    .protocols = (const char *const[]){"static", "dynamic", NULL},
    .log_subsys = HGX_SUBSYS_MPI,
    .params = nm_params,
    /* Every piece is one emulated transfer with its own request and CTS
     * round trip; the emulation moves a transfer in HGX_EMUL_CHUNK (16 MiB)
     * messages itself. With 256 KiB pieces Open MPI bulk ran at 0.77-0.90x raw at
     * >= 1 MiB, with 16 MiB pieces at 0.89-1.15x (docs/performance.md). */
    .rma_piece_max = (size_t)16 << 20,
    .op_size = sizeof(struct nm_op),
    .check_protocol = nm_check_protocol,
    .initialize = nm_initialize,
    .finalize = nm_finalize,
    .cleanup = NULL,
    .context_create = nm_context_create,
    .context_destroy = nm_context_destroy,
    .addr_lookup = nm_addr_lookup,
    .addr_destroy = nm_addr_destroy,
    .addr_set_remove = NULL,
    .addr_self = nm_addr_self,
    .addr_cmp = nm_addr_cmp,
    .addr_is_self = nm_addr_is_self,
    .addr_to_string = nm_addr_to_string,
    .addr_get_serialize_size = nm_addr_get_serialize_size,
    .addr_serialize = nm_addr_serialize,
    .addr_deserialize = nm_addr_deserialize,
    .msg_get_max_unexpected_size = nm_max_unexp,
    .msg_get_max_expected_size = nm_max_exp,
    .msg_get_unexpected_header_size = NULL,
    .msg_get_expected_header_size = NULL,
    .msg_get_max_tag = nm_max_tag,
    .msg_send_unexpected = nm_send_unexpected,
    .msg_recv_unexpected = nm_recv_unexpected,
    .msg_send_expected = nm_send_expected,
    .msg_recv_expected = nm_recv_expected,
    .mem_handle_create = nm_mem_handle_create,
    .mem_handle_create_segments = nm_mem_handle_create_segments,
    .mem_handle_free = nm_mem_handle_free,
    .mem_handle_get_max_segments = nm_mem_max_segments,
    .mem_register = nm_mem_register,
    .mem_deregister = nm_mem_deregister,
    .mem_handle_get_serialize_size = nm_mem_serialize_size,
    .mem_handle_serialize = nm_mem_serialize,
    .mem_handle_deserialize = nm_mem_deserialize,
    .rma = nm_rma,
    .poll_get_fd = nm_poll_get_fd,
    .poll_try_wait = nm_poll_try_wait,
    .poll = nm_poll,
    .poll_wait = nm_poll_wait,
    .cancel = nm_cancel,
};
