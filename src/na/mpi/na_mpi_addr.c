/*
 * na_mpi_addr.c -- the MPI NA plugin: addresses: rank and connection addresses, lookup,
 * strings, serialization. The plugin as a whole: na_mpi_priv.h.
 */
#include "na_mpi_priv.h"

/*------------------------------------------------------------ addresses */

/* A reference to rank's address in the class (mpi+static), created on first
 * use: no allocation per received message. */
static na_return_t nm_rank_addr(na_class_t *na_class, int rank, na_addr_t **addr_p)
{
    _Atomic(struct nm_addr *) *slot = &PC(na_class)->rank_addrs[rank];
    struct nm_addr *a = atomic_load(slot);
    if (!a) {
        struct nm_addr *fresh = calloc(1, sizeof(*fresh));
        if (!fresh)
            return NA_NOMEM;
        na_addr_init_owned(na_class, &fresh->head);
        fresh->rank = rank;
        if (atomic_compare_exchange_strong(slot, &a, fresh))
            a = fresh;
        else
            free(fresh); /* another thread installed one first: a is it */
    }
    *addr_p = na_addr_ref(&a->head);
    return NA_SUCCESS;
}

na_return_t nm_addr_new(na_class_t *na_class, struct dyn_conn *conn, int rank,
                        na_addr_t **addr_p)
{
    if (!conn && rank >= 0 && rank < PC(na_class)->size)
        return nm_rank_addr(na_class, rank, addr_p);
    struct nm_addr *a = calloc(1, sizeof(*a));
    if (!a)
        return NA_NOMEM;
    na_addr_init(na_class, &a->head);
    a->rank = rank;
    a->conn = conn;
    *addr_p = &a->head;
    return NA_SUCCESS;
}

static na_return_t nm_dyn_lookup(na_class_t *na_class, const char *name,
                                 na_addr_t **addr_p)
{
    struct nm_class *pc = PC(na_class);
    char target[MPI_MAX_PORT_NAME], port[MPI_MAX_PORT_NAME];
    if (strncmp(name, "dynamic://", 10) != 0) {
        HGX_LOG_ERROR(MPI, "address \"%s\" is not of the form mpi+dynamic://PORT-OR-NAME",
                      name);
        return strncmp(name, "static://", 9) == 0 ? NA_PROTONOSUPPORT : NA_INVALID_ARG;
    }
    if (strlen(name + 10) >= sizeof(target) ||
        !nm_dyn_unescape(name + 10, target, sizeof(target))) {
        HGX_LOG_ERROR(MPI, "address \"%s\": empty, too long or bad %%-escape", name);
        return NA_INVALID_ARG;
    }
    /* Port names (Open MPI "JOBID.VPID:TAG", MPICH "tag#...$") hold ':' or '$';
     * anything else is a service name for MPI_Lookup_name. */
    bool is_name = !strchr(target, ':') && !strchr(target, '$');
    hgx_lock(&pc->lock);
    if (!is_name && pc->listening && strcmp(target, pc->port) == 0) {
        hgx_unlock(&pc->lock);
        return nm_addr_new(na_class, pc->self_conn, 0, addr_p);
    }
    struct hgx_list *it;
    hgx_list_for_each(it, &pc->conns)
    {
        struct dyn_conn *k = hgx_list_entry(it, struct dyn_conn, link);
        if (!k->dead && k->port && !is_name && strcmp(k->port, target) == 0) {
            hgx_unlock(&pc->lock);
            return nm_addr_new(na_class, k, 0, addr_p);
        }
    }
    MPI_Comm c = MPI_COMM_NULL;
    na_return_t ret;
    if (pc->connect_inline) {
        /* still locked: no other thread's progress calls MPI meanwhile */
        ret = nm_dyn_connect_inline(target, is_name, &c, port);
    } else {
        hgx_unlock(&pc->lock); /* the helper thread may block, progress goes on */
        ret = nm_dyn_connect(target, is_name, pc->tag_bye, &c, port);
        hgx_lock(&pc->lock);
    }
    struct dyn_conn *k = ret == NA_SUCCESS ? nm_conn_add(pc, c, port) : NULL;
    if (ret == NA_SUCCESS && !k) {
        MPI_Comm_disconnect(&c);
        ret = NA_NOMEM;
    }
    hgx_unlock(&pc->lock);
    if (ret != NA_SUCCESS)
        return ret;
    HGX_LOG_DEBUG(MPI, "mpi+dynamic: connected to %s (connection %d)", target, k->id);
    return nm_addr_new(na_class, k, 0, addr_p);
}

na_return_t nm_addr_lookup(na_class_t *na_class, const char *name, na_addr_t **addr_p)
{
    struct nm_class *pc = PC(na_class);
    const char *p = name;
    if (pc->dynamic)
        return nm_dyn_lookup(na_class, name, addr_p);
    if (strncmp(p, "static://", 9) != 0) {
        if (strncmp(p, "dynamic://", 10) == 0) {
            char port[MPI_MAX_PORT_NAME];
            if (nm_dyn_open_port(port, "looking up an mpi+dynamic address") ==
                NA_SUCCESS) {
                nm_dyn_close_port(port);
                HGX_LOG_ERROR(MPI,
                              "address \"%s\" needs a class initialized with mpi+dynamic "
                              "(this one is mpi+static)",
                              name);
            }
            return NA_PROTONOSUPPORT;
        }
        HGX_LOG_ERROR(MPI, "address \"%s\" is not of the form mpi+static://RANK", name);
        return NA_INVALID_ARG;
    }
    p += 9;
    long rank = 0;
    if (!*p || strlen(p) > 10) {
        HGX_LOG_ERROR(MPI, "address \"%s\": rank missing or too long", name);
        return NA_INVALID_ARG;
    }
    for (const char *q = p; *q; q++) {
        if (*q < '0' || *q > '9') {
            HGX_LOG_ERROR(MPI, "address \"%s\": rank must be decimal digits only", name);
            return NA_INVALID_ARG;
        }
        rank = rank * 10 + (*q - '0');
    }
    if (rank >= pc->size) {
        HGX_LOG_ERROR(MPI, "address \"%s\": rank %ld is not below the job size %d", name,
                      rank, pc->size);
        return NA_ADDRNOTAVAIL;
    }
    return nm_addr_new(na_class, NULL, (int)rank, addr_p);
}

void nm_addr_destroy(na_class_t *na_class, na_addr_t *addr)
{
    (void)na_class;
    free(addr);
}

na_return_t nm_addr_self(na_class_t *na_class, na_addr_t **addr_p)
{
    struct nm_class *pc = PC(na_class);
    return nm_addr_new(na_class, pc->self_conn, pc->rank, addr_p);
}

bool nm_addr_cmp(na_class_t *na_class, na_addr_t *a1, na_addr_t *a2)
{
    (void)na_class;
    return ((struct nm_addr *)a1)->rank == ((struct nm_addr *)a2)->rank &&
           ((struct nm_addr *)a1)->conn == ((struct nm_addr *)a2)->conn;
}

bool nm_addr_is_self(na_class_t *na_class, na_addr_t *addr)
{
    if (PC(na_class)->dynamic)
        return ((struct nm_addr *)addr)->conn == PC(na_class)->self_conn;
    return ((struct nm_addr *)addr)->rank == PC(na_class)->rank;
}

/* mpi+dynamic address string of a connection. */
static na_return_t nm_dyn_addr_string(struct nm_class *pc, struct dyn_conn *k, char *buf,
                                      size_t n)
{
    char esc[3 * MPI_MAX_PORT_NAME + 1];
    const char *port = k->is_self ? (pc->listening ? pc->port : NULL) : k->port;
    int w;
    if (port) {
        nm_dyn_escape(port, esc, sizeof(esc));
        w = snprintf(buf, n, "mpi+dynamic://%s", esc);
    } else if (k->is_self) {
        w = snprintf(buf, n, "mpi+dynamic://self-%ld",
                     (long)getpid()); /* not listening */
    } else {
        w = snprintf(buf, n, "mpi+dynamic://accepted-%d",
                     k->id); /* not looked up by name */
    }
    return w < 0 || (size_t)w >= n ? NA_OVERFLOW : NA_SUCCESS;
}

static na_return_t nm_addr_string(struct nm_class *pc, const struct nm_addr *a, char *buf,
                                  size_t n)
{
    if (pc->dynamic)
        return nm_dyn_addr_string(pc, a->conn, buf, n);
    int w = snprintf(buf, n, "mpi+static://%d", a->rank);
    return w < 0 || (size_t)w >= n ? NA_OVERFLOW : NA_SUCCESS;
}

na_return_t nm_addr_to_string(na_class_t *na_class, char *buf, size_t *buf_size,
                              na_addr_t *addr)
{
    return nm_addr_string(PC(na_class), (struct nm_addr *)addr, buf, *buf_size);
}

const char *na_mpi_port_string(na_class_t *na_class)
{
    struct nm_class *pc = PC(na_class);
    if (pc->dynamic && !pc->listening)
        return NULL;
    hgx_lock(&pc->lock);
    if (!pc->port_str[0]) {
        struct nm_addr self = {.rank = pc->rank, .conn = pc->self_conn};
        if (nm_addr_string(pc, &self, pc->port_str, sizeof(pc->port_str)) != NA_SUCCESS)
            pc->port_str[0] = '\0';
    }
    hgx_unlock(&pc->lock);
    return pc->port_str[0] ? pc->port_str : NULL;
}

size_t nm_addr_get_serialize_size(na_class_t *na_class, na_addr_t *addr)
{
    (void)addr;
    if (PC(na_class)->dynamic) { /* the address string (lookups connect) */
        char s[DYN_ADDR_MAX];
        if (nm_dyn_addr_string(PC(na_class), ((struct nm_addr *)addr)->conn, s,
                               sizeof(s)) != NA_SUCCESS)
            return 0;
        return strlen(s) + 1;
    }
    return sizeof(int32_t);
}

na_return_t nm_addr_serialize(na_class_t *na_class, void *buf, size_t buf_size,
                              na_addr_t *addr)
{
    if (PC(na_class)->dynamic)
        return nm_dyn_addr_string(PC(na_class), ((struct nm_addr *)addr)->conn, buf,
                                  buf_size);
    (void)buf_size;
    int32_t r = ((struct nm_addr *)addr)->rank;
    memcpy(buf, &r, sizeof(r));
    return NA_SUCCESS;
}

na_return_t nm_addr_deserialize(na_class_t *na_class, na_addr_t **addr_p, const void *buf,
                                size_t buf_size)
{
    int32_t r;
    if (PC(na_class)->dynamic) {
        const char *s = buf;
        if (buf_size < 15 || !memchr(s, '\0', buf_size) || strncmp(s, "mpi+", 4) != 0)
            return NA_INVALID_ARG;
        return nm_dyn_lookup(na_class, s + 4, addr_p);
    }
    if (buf_size < sizeof(r))
        return NA_INVALID_ARG;
    memcpy(&r, buf, sizeof(r));
    if (r < 0 || r >= PC(na_class)->size) {
        HGX_LOG_ERROR(MPI, "serialized address names rank %d, job size is %d", (int)r,
                      PC(na_class)->size);
        return NA_INVALID_ARG;
    }
    return nm_addr_new(na_class, NULL, r, addr_p);
}
