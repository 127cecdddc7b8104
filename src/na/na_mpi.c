/*
 * na_mpi.c -- the MPI NA plugin ("mpi+static"; "mpi+dynamic" is not done yet).
 *
 * One MPI_Comm_dup of MPI_COMM_WORLD (or of the comm given to
 * na_mpi_set_comm()) with MPI_ERRORS_RETURN carries all traffic, so no tag of
 * the application can match ours. Tag space of that communicator:
 *
 *   0                         unexpected messages (8-byte header carries the NA tag)
 *   1                         mpi_emul control packets
 *   2 .. 2+S-1                mpi_emul put data   (origin -> target), S = MPI_EMUL_NSLOTS
 *   2+S .. 2+2S-1             mpi_emul get data   (target -> origin)
 *   2+2S .. MPI_TAG_UB        expected messages: 2+2S + NA tag
 *
 * All nonblocking MPI requests live in one table tested with MPI_Testsome
 * from poll(); unexpected messages are taken with MPI_Improbe/MPI_Imrecv only
 * when an NA unexpected receive is posted, so earlier ones stay queued in MPI
 * (bounded by MPI's own unexpected-message resources). One class mutex
 * serializes every MPI call, so MPI_THREAD_SERIALIZED is enough.
 */
#include "na_mpi.h"
#include "mpi_emul.h"
#include "mpi_reqtab.h"
#include "na_plugin.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_UNEXP    0
#define TAG_CTRL     1
#define TAG_PUT_BASE 2
#define TAG_GET_BASE (TAG_PUT_BASE + MPI_EMUL_NSLOTS)
#define TAG_EXP_BASE (TAG_GET_BASE + MPI_EMUL_NSLOTS)
#define MIN_NA_TAGS  1024

#define UNEXP_MAGIC    0x48554e58u /* "HUNX" */
#define UNEXP_HDR_SIZE 8
#define DEFAULT_MSG_SIZE 4096

struct mpi_class {
    MPI_Comm comm;
    int rank, size;
    bool we_init_mpi;
    pthread_mutex_t lock;
    struct hgx_mreqtab tab;
    struct mpi_emul *emul;
    size_t max_unexp, max_exp;
    na_tag_t max_tag;
    struct mpi_op *uq_head, *uq_tail; /* posted unexpected receives */
    struct mpi_op *eq_head;           /* posted expected receives (not yet in MPI) */
    unsigned long ncompleted;
};

struct mpi_addr {
    na_addr_t head;
    int rank;
};

struct mpi_mem {
    na_mem_handle_t head;
    struct mpi_emul_mem em;
    struct na_segment one;
};

struct mpi_op {
    na_class_t *na_class;
    MPI_Request req;
    void *bounce;
    void *buf;
    size_t buf_size;
    struct mpi_op *next;
    struct mpi_emul_oreq *oreq;
    bool in_uq, in_eq;
    int src, tag;
};

static MPI_Comm na_mpi_user_comm = MPI_COMM_NULL;
static int na_mpi_init_refs; /* classes that rely on MPI_Init done by us */
static pthread_mutex_t na_mpi_global_lock = PTHREAD_MUTEX_INITIALIZER;

void na_mpi_set_comm(MPI_Comm comm)
{
    pthread_mutex_lock(&na_mpi_global_lock);
    na_mpi_user_comm = comm;
    pthread_mutex_unlock(&na_mpi_global_lock);
}

#define PC(cls) ((struct mpi_class *)(cls)->plugin_class)

static void log_mpi(const char *what, int rc)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof(s), "error %d", rc);
    HGX_LOG_ERROR(MPI, "%s failed: %s", what, s);
}

static na_return_t na_from_mpi(int rc)
{
    int cls = rc;
    if (rc == MPI_SUCCESS)
        return NA_SUCCESS;
    MPI_Error_class(rc, &cls);
    switch (cls) {
    case MPI_ERR_TRUNCATE:
        return NA_MSGSIZE;
    case MPI_ERR_NO_MEM:
        return NA_NOMEM;
    case MPI_ERR_RANK:
    case MPI_ERR_TAG:
    case MPI_ERR_COUNT:
        return NA_INVALID_ARG;
    default:
        return NA_PROTOCOL_ERROR;
    }
}

static void op_done(struct mpi_class *pc, na_op_id_t *op, na_return_t ret)
{
    pc->ncompleted++;
    na_op_complete(op, ret);
}

/*------------------------------------------------------------ class */

static bool mpi_check_protocol(const char *protocol_name)
{
    return strcmp(protocol_name, "static") == 0 || strcmp(protocol_name, "dynamic") == 0;
}

static na_return_t mpi_dynamic_unavailable(void)
{
    /* Report the real cause first: many MPI builds have no MPI_Open_port. */
    char port[MPI_MAX_PORT_NAME];
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Open_port(MPI_INFO_NULL, port);
    if (rc != MPI_SUCCESS) {
        log_mpi("MPI_Open_port (needed by mpi+dynamic; this MPI library has no dynamic "
                "process support, e.g. MPICH ch4:ucx)",
            rc);
        return NA_PROTONOSUPPORT;
    }
    MPI_Close_port(port);
    HGX_LOG_ERROR(MPI, "mpi+dynamic is not implemented yet in this build; use mpi+static");
    return NA_PROTONOSUPPORT;
}

static na_return_t mpi_initialize(na_class_t *na_class, const struct na_info *info, bool listen)
{
    (void)listen;
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
    pthread_mutex_lock(&na_mpi_global_lock);
    MPI_Initialized(&inited);
    if (!inited) {
        if (na_mpi_user_comm != MPI_COMM_NULL) {
            pthread_mutex_unlock(&na_mpi_global_lock);
            HGX_LOG_ERROR(MPI, "na_mpi_set_comm() was given a communicator but MPI is not initialized");
            return NA_INVALID_ARG;
        }
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS) {
            pthread_mutex_unlock(&na_mpi_global_lock);
            log_mpi("MPI_Init_thread", rc);
            return NA_PROTOCOL_ERROR;
        }
        if (provided < MPI_THREAD_SERIALIZED) {
            MPI_Finalize();
            pthread_mutex_unlock(&na_mpi_global_lock);
            HGX_LOG_ERROR(MPI,
                "MPI provides thread level %d, below MPI_THREAD_SERIALIZED which the NA "
                "progress thread needs",
                provided);
            return NA_PROTONOSUPPORT;
        }
        we_init = true;
        na_mpi_init_refs++;
    } else {
        MPI_Query_thread(&provided);
        if (provided < MPI_THREAD_SERIALIZED)
            HGX_LOG_WARNING(MPI,
                "the application initialized MPI at thread level %d (< SERIALIZED): "
                "call NA only from the thread that calls MPI",
                provided);
    }
    MPI_Comm base = na_mpi_user_comm != MPI_COMM_NULL ? na_mpi_user_comm : MPI_COMM_WORLD;
    pthread_mutex_unlock(&na_mpi_global_lock);

    if (strcmp(info->protocol_name, "dynamic") == 0) {
        ret = mpi_dynamic_unavailable();
        goto undo_init;
    }

    struct mpi_class *pc = calloc(1, sizeof(*pc));
    if (!pc) {
        ret = NA_NOMEM;
        goto undo_init;
    }
    pc->we_init_mpi = we_init;
    pthread_mutex_init(&pc->lock, NULL);
    hgx_mreqtab_init(&pc->tab);

    rc = MPI_Comm_dup(base, &pc->comm); /* collective over base */
    if (rc != MPI_SUCCESS) {
        log_mpi("MPI_Comm_dup", rc);
        ret = NA_PROTOCOL_ERROR;
        goto free_pc;
    }
    if ((rc = MPI_Comm_set_errhandler(pc->comm, MPI_ERRORS_RETURN)) != MPI_SUCCESS ||
        (rc = MPI_Comm_rank(pc->comm, &pc->rank)) != MPI_SUCCESS ||
        (rc = MPI_Comm_size(pc->comm, &pc->size)) != MPI_SUCCESS) {
        log_mpi("setting up the communicator", rc);
        ret = NA_PROTOCOL_ERROR;
        goto free_comm;
    }
    int *tag_ub = NULL, flag = 0;
    rc = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    if (rc != MPI_SUCCESS || !flag || !tag_ub || *tag_ub < TAG_EXP_BASE + MIN_NA_TAGS - 1) {
        HGX_LOG_ERROR(MPI, "MPI_TAG_UB is %d; at least %d is needed for the hgx tag layout",
            tag_ub && flag ? *tag_ub : -1, TAG_EXP_BASE + MIN_NA_TAGS - 1);
        ret = NA_PROTONOSUPPORT;
        goto free_comm;
    }
    pc->max_tag = (na_tag_t)(*tag_ub - TAG_EXP_BASE);

    const struct na_init_info *ii = info->init_info;
    pc->max_unexp = ii->max_unexpected_size ? ii->max_unexpected_size : DEFAULT_MSG_SIZE;
    pc->max_exp = ii->max_expected_size ? ii->max_expected_size : DEFAULT_MSG_SIZE;
    if (pc->max_unexp > INT_MAX - UNEXP_HDR_SIZE || pc->max_exp > INT_MAX) {
        HGX_LOG_ERROR(MPI, "message size hints above INT_MAX are not supported");
        ret = NA_INVALID_ARG;
        goto free_comm;
    }
    ret = mpi_emul_create(&pc->emul, pc->comm, &pc->tab, TAG_CTRL, TAG_PUT_BASE, TAG_GET_BASE);
    if (ret != NA_SUCCESS) {
        if (pc->emul) {
            mpi_emul_close(pc->emul);
            hgx_mreqtab_destroy(&pc->tab, 100);
            mpi_emul_free(pc->emul);
        }
        goto free_comm;
    }
    na_class->plugin_class = pc;
    HGX_LOG_DEBUG(MPI, "mpi+static rank %d of %d, tag_ub %d, max NA tag %u", pc->rank, pc->size,
        *tag_ub, pc->max_tag);
    return NA_SUCCESS;

free_comm:
    MPI_Comm_free(&pc->comm);
free_pc:
    pthread_mutex_destroy(&pc->lock);
    free(pc);
undo_init:
    if (we_init) {
        pthread_mutex_lock(&na_mpi_global_lock);
        if (--na_mpi_init_refs == 0)
            MPI_Finalize();
        pthread_mutex_unlock(&na_mpi_global_lock);
    }
    return ret;
}

static na_return_t mpi_finalize(na_class_t *na_class)
{
    struct mpi_class *pc = PC(na_class);
    pthread_mutex_lock(&pc->lock);
    struct mpi_emul_stats st;
    mpi_emul_get_stats(pc->emul, &st);
    if (st.bad_packets || st.refused)
        HGX_LOG_DEBUG(MPI_EMUL, "%lu malformed packets, %lu refused requests, %lu late chunks dropped",
            st.bad_packets, st.refused, st.late_dropped);
    mpi_emul_close(pc->emul);
    hgx_mreqtab_destroy(&pc->tab, 1000);
    mpi_emul_free(pc->emul);
    int rc = MPI_Comm_free(&pc->comm);
    if (rc != MPI_SUCCESS)
        log_mpi("MPI_Comm_free", rc);
    pthread_mutex_unlock(&pc->lock);
    pthread_mutex_destroy(&pc->lock);
    bool we_init = pc->we_init_mpi;
    free(pc);
    if (we_init) {
        pthread_mutex_lock(&na_mpi_global_lock);
        if (--na_mpi_init_refs == 0) {
            rc = MPI_Finalize();
            if (rc != MPI_SUCCESS)
                log_mpi("MPI_Finalize", rc);
        }
        pthread_mutex_unlock(&na_mpi_global_lock);
    }
    return NA_SUCCESS;
}

static na_return_t mpi_context_create(na_class_t *na_class, na_context_t *context, uint8_t id)
{
    (void)na_class, (void)id;
    context->plugin_context = NULL; /* all contexts share the class's MPI state */
    return NA_SUCCESS;
}

static na_return_t mpi_context_destroy(na_class_t *na_class, na_context_t *context)
{
    (void)na_class, (void)context;
    return NA_SUCCESS;
}

/*------------------------------------------------------------ addresses */

static na_return_t addr_new(na_class_t *na_class, int rank, na_addr_t **addr_p)
{
    struct mpi_addr *a = calloc(1, sizeof(*a));
    if (!a)
        return NA_NOMEM;
    na_addr_init(na_class, &a->head);
    a->rank = rank;
    *addr_p = &a->head;
    return NA_SUCCESS;
}

static na_return_t mpi_addr_lookup(na_class_t *na_class, const char *name, na_addr_t **addr_p)
{
    struct mpi_class *pc = PC(na_class);
    const char *p = name;
    if (strncmp(p, "static://", 9) != 0) {
        HGX_LOG_ERROR(MPI, "address \"%s\" is not of the form mpi+static://RANK", name);
        return strstr(p, "://") && strncmp(p, "dynamic://", 10) == 0 ? NA_PROTONOSUPPORT
                                                                    : NA_INVALID_ARG;
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
        HGX_LOG_ERROR(MPI, "address \"%s\": rank %ld is not below the job size %d", name, rank,
            pc->size);
        return NA_ADDRNOTAVAIL;
    }
    return addr_new(na_class, (int)rank, addr_p);
}

static void mpi_addr_destroy(na_class_t *na_class, na_addr_t *addr)
{
    (void)na_class;
    free(addr);
}

static na_return_t mpi_addr_self(na_class_t *na_class, na_addr_t **addr_p)
{
    return addr_new(na_class, PC(na_class)->rank, addr_p);
}

static bool mpi_addr_cmp(na_class_t *na_class, na_addr_t *a1, na_addr_t *a2)
{
    (void)na_class;
    return ((struct mpi_addr *)a1)->rank == ((struct mpi_addr *)a2)->rank;
}

static bool mpi_addr_is_self(na_class_t *na_class, na_addr_t *addr)
{
    return ((struct mpi_addr *)addr)->rank == PC(na_class)->rank;
}

static na_return_t mpi_addr_to_string(na_class_t *na_class, char *buf, size_t *buf_size, na_addr_t *addr)
{
    (void)na_class;
    int n = snprintf(buf, *buf_size, "mpi+static://%d", ((struct mpi_addr *)addr)->rank);
    if (n < 0 || (size_t)n >= *buf_size)
        return NA_OVERFLOW;
    return NA_SUCCESS;
}

static size_t mpi_addr_get_serialize_size(na_class_t *na_class, na_addr_t *addr)
{
    (void)na_class, (void)addr;
    return sizeof(int32_t);
}

static na_return_t mpi_addr_serialize(na_class_t *na_class, void *buf, size_t buf_size, na_addr_t *addr)
{
    (void)na_class, (void)buf_size;
    int32_t r = ((struct mpi_addr *)addr)->rank;
    memcpy(buf, &r, sizeof(r));
    return NA_SUCCESS;
}

static na_return_t mpi_addr_deserialize(na_class_t *na_class, na_addr_t **addr_p, const void *buf,
    size_t buf_size)
{
    int32_t r;
    if (buf_size < sizeof(r))
        return NA_INVALID_ARG;
    memcpy(&r, buf, sizeof(r));
    if (r < 0 || r >= PC(na_class)->size) {
        HGX_LOG_ERROR(MPI, "serialized address names rank %d, job size is %d", (int)r,
            PC(na_class)->size);
        return NA_INVALID_ARG;
    }
    return addr_new(na_class, r, addr_p);
}

/*------------------------------------------------------------ messages */

static size_t mpi_max_unexp(const na_class_t *c)
{
    return PC(c)->max_unexp;
}

static size_t mpi_max_exp(const na_class_t *c)
{
    return PC(c)->max_exp;
}

static na_tag_t mpi_max_tag(const na_class_t *c)
{
    return PC(c)->max_tag;
}

static void send_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    na_op_id_t *op = obj;
    struct mpi_op *mo = na_op_plugin(op);
    struct mpi_class *pc = PC(mo->na_class);
    free(mo->bounce);
    mo->bounce = NULL;
    int cancelled = 0;
    if (err == MPI_SUCCESS)
        MPI_Test_cancelled(st, &cancelled);
    if (err != MPI_SUCCESS && err != MPI_ERR_REQUEST)
        log_mpi("message send", err);
    op_done(pc, op, cancelled || err == MPI_ERR_REQUEST ? NA_CANCELED : na_from_mpi(err));
}

static na_return_t post_send(na_class_t *na_class, na_op_id_t *op, const void *buf, size_t size,
    int dest, int tag, void *bounce)
{
    struct mpi_class *pc = PC(na_class);
    struct mpi_op *mo = na_op_plugin(op);
    memset(mo, 0, sizeof(*mo));
    mo->na_class = na_class;
    mo->bounce = bounce;
    pthread_mutex_lock(&pc->lock);
    int rc = MPI_Isend(buf, (int)size, MPI_BYTE, dest, tag, pc->comm, &mo->req);
    if (rc == MPI_SUCCESS && hgx_mreqtab_add(&pc->tab, mo->req, send_done, op, 0) != 0) {
        MPI_Cancel(&mo->req);
        MPI_Wait(&mo->req, MPI_STATUS_IGNORE);
        rc = MPI_ERR_NO_MEM;
    }
    pthread_mutex_unlock(&pc->lock);
    if (rc != MPI_SUCCESS) {
        log_mpi("MPI_Isend", rc);
        free(bounce);
        mo->bounce = NULL;
        return na_from_mpi(rc);
    }
    return NA_SUCCESS;
}

static na_return_t mpi_send_unexpected(na_class_t *na_class, na_context_t *context, na_op_id_t *op,
    const void *buf, size_t buf_size, void *plugin_data, na_addr_t *dest_addr, uint8_t dest_id,
    na_tag_t tag)
{
    (void)context, (void)plugin_data, (void)dest_id;
    unsigned char *b = malloc(UNEXP_HDR_SIZE + buf_size);
    if (!b)
        return NA_NOMEM;
    uint32_t hdr[2] = {UNEXP_MAGIC, tag};
    memcpy(b, hdr, sizeof(hdr));
    memcpy(b + UNEXP_HDR_SIZE, buf, buf_size);
    return post_send(na_class, op, b, UNEXP_HDR_SIZE + buf_size,
        ((struct mpi_addr *)dest_addr)->rank, TAG_UNEXP, b);
}

static na_return_t mpi_send_expected(na_class_t *na_class, na_context_t *context, na_op_id_t *op,
    const void *buf, size_t buf_size, void *plugin_data, na_addr_t *dest_addr, uint8_t dest_id,
    na_tag_t tag)
{
    (void)context, (void)plugin_data, (void)dest_id;
    return post_send(na_class, op, buf, buf_size, ((struct mpi_addr *)dest_addr)->rank,
        TAG_EXP_BASE + (int)tag, NULL);
}

static na_return_t mpi_recv_unexpected(na_class_t *na_class, na_context_t *context, na_op_id_t *op,
    void *buf, size_t buf_size, void *plugin_data)
{
    (void)context, (void)plugin_data;
    struct mpi_class *pc = PC(na_class);
    struct mpi_op *mo = na_op_plugin(op);
    memset(mo, 0, sizeof(*mo));
    mo->na_class = na_class;
    mo->buf = buf;
    mo->buf_size = buf_size;
    mo->in_uq = true;
    pthread_mutex_lock(&pc->lock);
    if (pc->uq_tail)
        pc->uq_tail->next = mo;
    else
        pc->uq_head = mo;
    pc->uq_tail = mo;
    pthread_mutex_unlock(&pc->lock);
    return NA_SUCCESS;
}

static void unexp_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    na_op_id_t *op = obj;
    struct mpi_op *mo = na_op_plugin(op);
    struct mpi_class *pc = PC(mo->na_class);
    na_return_t ret = NA_SUCCESS;
    int count = 0;
    uint32_t hdr[2] = {0, 0};

    if (err != MPI_SUCCESS) {
        ret = err == MPI_ERR_REQUEST ? NA_CANCELED : na_from_mpi(err);
    } else {
        MPI_Get_count(st, MPI_BYTE, &count);
        if (count >= UNEXP_HDR_SIZE)
            memcpy(hdr, mo->bounce, sizeof(hdr));
        if (count < UNEXP_HDR_SIZE || hdr[0] != UNEXP_MAGIC) {
            HGX_LOG_ERROR(MPI, "dropped a malformed unexpected message (%d bytes) from rank %d",
                count, st->MPI_SOURCE);
            ret = NA_PROTOCOL_ERROR;
        } else if ((size_t)count - UNEXP_HDR_SIZE > mo->buf_size) {
            HGX_LOG_ERROR(MPI, "unexpected message of %zu bytes from rank %d does not fit the "
                               "%zu-byte receive buffer",
                (size_t)count - UNEXP_HDR_SIZE, st->MPI_SOURCE, mo->buf_size);
            ret = NA_MSGSIZE;
        } else {
            memcpy(mo->buf, (char *)mo->bounce + UNEXP_HDR_SIZE, (size_t)count - UNEXP_HDR_SIZE);
            ret = addr_new(mo->na_class, st->MPI_SOURCE, &op->info.info.recv_unexpected.source);
            op->info.info.recv_unexpected.actual_buf_size = (size_t)count - UNEXP_HDR_SIZE;
            op->info.info.recv_unexpected.tag = hdr[1];
        }
    }
    free(mo->bounce);
    mo->bounce = NULL;
    op_done(pc, op, ret);
}

/* Hand unexpected messages MPI holds to posted NA receives. Lock held. */
static int match_unexpected(struct mpi_class *pc)
{
    while (pc->uq_head) {
        int flag = 0, count = 0;
        MPI_Message msg;
        MPI_Status st;
        int rc = MPI_Improbe(MPI_ANY_SOURCE, TAG_UNEXP, pc->comm, &flag, &msg, &st);
        if (rc != MPI_SUCCESS)
            return rc;
        if (!flag)
            break;
        struct mpi_op *mo = pc->uq_head;
        pc->uq_head = mo->next;
        if (!pc->uq_head)
            pc->uq_tail = NULL;
        mo->in_uq = false;
        mo->next = NULL;
        na_op_id_t *op = na_op_from_plugin(mo);
        MPI_Get_count(&st, MPI_BYTE, &count);
        mo->bounce = malloc(count > 0 ? (size_t)count : 1);
        if (!mo->bounce) {
            char dummy[1];
            MPI_Mrecv(dummy, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE); /* truncates, drops it */
            op_done(pc, op, NA_NOMEM);
            continue;
        }
        rc = MPI_Imrecv(mo->bounce, count, MPI_BYTE, &msg, &mo->req);
        if (rc == MPI_SUCCESS && hgx_mreqtab_add(&pc->tab, mo->req, unexp_done, op, 0) != 0) {
            rc = MPI_Wait(&mo->req, &st);
            unexp_done(op, 0, rc, &st);
            continue;
        }
        if (rc != MPI_SUCCESS) {
            log_mpi("MPI_Imrecv", rc);
            free(mo->bounce);
            mo->bounce = NULL;
            op_done(pc, op, na_from_mpi(rc));
        }
    }
    return MPI_SUCCESS;
}

static void recv_exp_done(void *obj, uintptr_t aux, int err, const MPI_Status *st)
{
    (void)aux;
    na_op_id_t *op = obj;
    struct mpi_op *mo = na_op_plugin(op);
    struct mpi_class *pc = PC(mo->na_class);
    int cancelled = 0, count = 0;
    na_return_t ret;
    if (err == MPI_ERR_REQUEST) {
        ret = NA_CANCELED;
    } else if (err != MPI_SUCCESS) {
        ret = na_from_mpi(err);
        if (ret == NA_MSGSIZE)
            HGX_LOG_ERROR(MPI, "expected message from rank %d larger than the %zu-byte buffer",
                st->MPI_SOURCE, mo->buf_size);
        else
            log_mpi("expected receive", err);
    } else {
        MPI_Test_cancelled(st, &cancelled);
        if (cancelled) {
            ret = NA_CANCELED;
        } else {
            MPI_Get_count(st, MPI_BYTE, &count);
            op->info.info.recv_expected.actual_buf_size = (size_t)count;
            ret = NA_SUCCESS;
        }
    }
    op_done(pc, op, ret);
}

/*
 * Expected receives are matched with MPI_Improbe + MPI_Imrecv from poll, not
 * posted with MPI_Irecv: the size is checked before receiving, so an oversized
 * message is reported NA_MSGSIZE without MPI raising MPI_ERR_TRUNCATE (which
 * MPICH raises on MPI_COMM_WORLD from MPI_Test, aborting the job).
 */
static na_return_t mpi_recv_expected(na_class_t *na_class, na_context_t *context, na_op_id_t *op,
    void *buf, size_t buf_size, void *plugin_data, na_addr_t *source_addr, uint8_t source_id,
    na_tag_t tag)
{
    (void)context, (void)plugin_data, (void)source_id;
    struct mpi_class *pc = PC(na_class);
    struct mpi_op *mo = na_op_plugin(op);
    if (buf_size > INT_MAX)
        return NA_MSGSIZE;
    memset(mo, 0, sizeof(*mo));
    mo->na_class = na_class;
    mo->buf = buf;
    mo->buf_size = buf_size;
    mo->src = ((struct mpi_addr *)source_addr)->rank;
    mo->tag = TAG_EXP_BASE + (int)tag;
    mo->in_eq = true;
    pthread_mutex_lock(&pc->lock);
    /* append: posting order is matching order, as for MPI receives */
    struct mpi_op **pp = &pc->eq_head;
    while (*pp)
        pp = &(*pp)->next;
    *pp = mo;
    pthread_mutex_unlock(&pc->lock);
    return NA_SUCCESS;
}

static int match_expected(struct mpi_class *pc)
{
    struct mpi_op **pp = &pc->eq_head;
    while (*pp) {
        struct mpi_op *mo = *pp;
        int flag = 0, count = 0;
        MPI_Message msg;
        MPI_Status st;
        int rc = MPI_Improbe(mo->src, mo->tag, pc->comm, &flag, &msg, &st);
        if (rc != MPI_SUCCESS)
            return rc;
        if (!flag) {
            pp = &mo->next;
            continue;
        }
        *pp = mo->next;
        mo->next = NULL;
        mo->in_eq = false;
        na_op_id_t *op = na_op_from_plugin(mo);
        MPI_Get_count(&st, MPI_BYTE, &count);
        if ((size_t)count > mo->buf_size) {
            void *scratch = malloc((size_t)count);
            rc = scratch ? MPI_Mrecv(scratch, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE)
                         : MPI_Mrecv(NULL, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
            free(scratch);
            HGX_LOG_ERROR(MPI, "expected message of %d bytes from rank %d larger than the "
                               "%zu-byte buffer: dropped",
                count, mo->src, mo->buf_size);
            op_done(pc, op, NA_MSGSIZE);
            continue;
        }
        rc = MPI_Imrecv(mo->buf, count, MPI_BYTE, &msg, &mo->req);
        if (rc == MPI_SUCCESS && hgx_mreqtab_add(&pc->tab, mo->req, recv_exp_done, op, 0) != 0) {
            rc = MPI_Wait(&mo->req, &st);
            recv_exp_done(op, 0, rc, &st);
            continue;
        }
        if (rc != MPI_SUCCESS) {
            log_mpi("MPI_Imrecv", rc);
            op_done(pc, op, na_from_mpi(rc));
        }
    }
    return MPI_SUCCESS;
}

/*------------------------------------------------------------ memory */

static na_return_t mem_new(na_class_t *na_class, struct na_segment *segs, size_t n,
    unsigned long flags, na_mem_handle_t **mem_handle_p)
{
    struct mpi_mem *m = calloc(1, sizeof(*m));
    if (!m)
        return NA_NOMEM;
    size_t total = 0;
    if (n == 1) {
        m->one = segs[0];
        m->em.segs = &m->one;
    } else {
        m->em.segs = malloc(sizeof(*segs) * n);
        if (!m->em.segs) {
            free(m);
            return NA_NOMEM;
        }
        memcpy(m->em.segs, segs, sizeof(*segs) * n);
    }
    for (size_t i = 0; i < n; i++)
        total += segs[i].len;
    m->em.nseg = n;
    m->em.len = total;
    m->em.flags = flags;
    m->em.owner = PC(na_class)->rank;
    m->head.len = total;
    m->head.flags = flags;
    *mem_handle_p = &m->head;
    return NA_SUCCESS;
}

static na_return_t mpi_mem_handle_create(na_class_t *na_class, void *buf, size_t buf_size,
    unsigned long flags, na_mem_handle_t **mem_handle_p)
{
    struct na_segment s = {buf, buf_size};
    return mem_new(na_class, &s, 1, flags, mem_handle_p);
}

static na_return_t mpi_mem_handle_create_segments(na_class_t *na_class, struct na_segment *segments,
    size_t segment_count, unsigned long flags, na_mem_handle_t **mem_handle_p)
{
    for (size_t i = 0; i < segment_count; i++)
        if (segments[i].len > INT_MAX) {
            HGX_LOG_ERROR(MPI, "segment %zu is larger than INT_MAX bytes", i);
            return NA_INVALID_ARG;
        }
    return mem_new(na_class, segments, segment_count, flags, mem_handle_p);
}

static void mpi_mem_handle_free(na_class_t *na_class, na_mem_handle_t *mh)
{
    (void)na_class;
    struct mpi_mem *m = (struct mpi_mem *)mh;
    if (m->em.segs && m->em.segs != &m->one)
        free(m->em.segs);
    free(m);
}

static size_t mpi_mem_max_segments(const na_class_t *na_class)
{
    (void)na_class;
    return 65536;
}

static na_return_t mpi_mem_register(na_class_t *na_class, na_mem_handle_t *mh)
{
    struct mpi_class *pc = PC(na_class);
    pthread_mutex_lock(&pc->lock);
    na_return_t ret = mpi_emul_mem_register(pc->emul, &((struct mpi_mem *)mh)->em);
    pthread_mutex_unlock(&pc->lock);
    return ret;
}

static na_return_t mpi_mem_deregister(na_class_t *na_class, na_mem_handle_t *mh)
{
    struct mpi_class *pc = PC(na_class);
    pthread_mutex_lock(&pc->lock);
    mpi_emul_mem_deregister(pc->emul, &((struct mpi_mem *)mh)->em);
    pthread_mutex_unlock(&pc->lock);
    return NA_SUCCESS;
}

static size_t mpi_mem_serialize_size(na_class_t *na_class, na_mem_handle_t *mh)
{
    (void)na_class, (void)mh;
    return sizeof(struct mpi_emul_mem_wire);
}

static na_return_t mpi_mem_serialize(na_class_t *na_class, void *buf, size_t buf_size,
    na_mem_handle_t *mh)
{
    (void)na_class, (void)buf_size;
    struct mpi_emul_mem_wire w;
    mpi_emul_mem_serialize(&((struct mpi_mem *)mh)->em, &w);
    memcpy(buf, &w, sizeof(w));
    return NA_SUCCESS;
}

static na_return_t mpi_mem_deserialize(na_class_t *na_class, na_mem_handle_t **mh_p, const void *buf,
    size_t buf_size)
{
    struct mpi_mem *m = calloc(1, sizeof(*m));
    if (!m)
        return NA_NOMEM;
    na_return_t ret = mpi_emul_mem_deserialize(&m->em, buf, buf_size, PC(na_class)->size);
    if (ret != NA_SUCCESS) {
        free(m);
        return ret;
    }
    m->head.len = m->em.len;
    m->head.flags = m->em.flags;
    *mh_p = &m->head;
    return NA_SUCCESS;
}

/*------------------------------------------------------------ put / get */

static void rma_done(void *arg, na_return_t ret)
{
    na_op_id_t *op = arg;
    struct mpi_op *mo = na_op_plugin(op);
    mo->oreq = NULL;
    op_done(PC(mo->na_class), op, ret);
}

static na_return_t rma(bool put, na_class_t *na_class, na_op_id_t *op, na_mem_handle_t *local,
    na_offset_t local_offset, na_mem_handle_t *remote, na_offset_t remote_offset, size_t size,
    na_addr_t *remote_addr)
{
    struct mpi_class *pc = PC(na_class);
    struct mpi_op *mo = na_op_plugin(op);
    struct mpi_mem *rm = (struct mpi_mem *)remote;
    int rank = ((struct mpi_addr *)remote_addr)->rank;
    if (!rm->head.remote && rm->em.id != 0)
        rm->em.owner = pc->rank; /* a local handle used as the remote one (self transfer) */
    if (rm->em.owner != rank) {
        HGX_LOG_ERROR(MPI_EMUL, "remote memory handle belongs to rank %d, not to target rank %d",
            rm->em.owner, rank);
        return NA_INVALID_ARG;
    }
    memset(mo, 0, sizeof(*mo));
    mo->na_class = na_class;
    pthread_mutex_lock(&pc->lock);
    struct mpi_emul_oreq *o = NULL;
    na_return_t ret = mpi_emul_xfer(pc->emul, put, &((struct mpi_mem *)local)->em, local_offset,
        &rm->em, remote_offset, size, rma_done, op, &o);
    if (ret == NA_SUCCESS)
        mo->oreq = o;
    pthread_mutex_unlock(&pc->lock);
    return ret;
}

static na_return_t mpi_put(na_class_t *na_class, na_context_t *context, na_op_id_t *op,
    na_mem_handle_t *local, na_offset_t local_offset, na_mem_handle_t *remote,
    na_offset_t remote_offset, size_t size, na_addr_t *remote_addr, uint8_t remote_id)
{
    (void)context, (void)remote_id;
    return rma(true, na_class, op, local, local_offset, remote, remote_offset, size, remote_addr);
}

static na_return_t mpi_get(na_class_t *na_class, na_context_t *context, na_op_id_t *op,
    na_mem_handle_t *local, na_offset_t local_offset, na_mem_handle_t *remote,
    na_offset_t remote_offset, size_t size, na_addr_t *remote_addr, uint8_t remote_id)
{
    (void)context, (void)remote_id;
    return rma(false, na_class, op, local, local_offset, remote, remote_offset, size, remote_addr);
}

/*------------------------------------------------------------ progress */

static na_return_t poll_locked(struct mpi_class *pc)
{
    for (int round = 0; round < 16; round++) {
        int rc = match_unexpected(pc);
        if (rc == MPI_SUCCESS)
            rc = match_expected(pc);
        if (rc != MPI_SUCCESS) {
            log_mpi("MPI_Improbe", rc);
            return NA_PROTOCOL_ERROR;
        }
        int ndone = 0;
        rc = hgx_mreqtab_poll(&pc->tab, &ndone);
        if (rc != MPI_SUCCESS) {
            log_mpi("MPI_Testsome", rc);
            return NA_PROTOCOL_ERROR;
        }
        /* put/get emulation: control packets (cancels first), cancel timers */
        ndone += mpi_emul_progress(pc->emul);
        if (ndone == 0)
            break;
    }
    return NA_SUCCESS;
}

static na_return_t mpi_poll(na_class_t *na_class, na_context_t *context, unsigned int *count_p)
{
    (void)context;
    struct mpi_class *pc = PC(na_class);
    pthread_mutex_lock(&pc->lock);
    unsigned long before = pc->ncompleted;
    na_return_t ret = poll_locked(pc);
    unsigned long n = pc->ncompleted - before;
    pthread_mutex_unlock(&pc->lock);
    if (count_p)
        *count_p = (unsigned int)n;
    return ret != NA_SUCCESS ? ret : n ? NA_SUCCESS : NA_TIMEOUT;
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/*
 * MPI offers no wait object (no fd, no blocking "wait for anything" across
 * arbitrary requests and probes), so this is NOT a true block: it polls for
 * ~500 us (yielding the CPU between polls), then sleeps with exponential
 * backoff from 20 us up to 1 ms between polls. Idle cost is one poll per millisecond; added latency after an idle
 * period is at most ~1 ms.
 */
static na_return_t mpi_poll_wait(na_class_t *na_class, na_context_t *context, unsigned int timeout_ms)
{
    uint64_t start = now_us(), deadline = start + (uint64_t)timeout_ms * 1000u;
    long sleep_ns = 20000;
    for (;;) {
        unsigned int n = 0;
        na_return_t ret = mpi_poll(na_class, context, &n);
        if (ret != NA_SUCCESS && ret != NA_TIMEOUT)
            return ret;
        if (n > 0 || atomic_load(&context->cq_count) > 0)
            return NA_SUCCESS;
        uint64_t t = now_us();
        if (t >= deadline)
            return NA_TIMEOUT;
        if (t - start < 500) {
            sched_yield();
            continue;
        }
        long max_ns = (long)(deadline - t) * 1000;
        struct timespec ts = {0, sleep_ns < max_ns ? sleep_ns : max_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 1000000)
            sleep_ns = sleep_ns * 2 > 1000000 ? 1000000 : sleep_ns * 2;
    }
}

static na_return_t mpi_cancel(na_class_t *na_class, na_context_t *context, na_op_id_t *op)
{
    (void)context;
    struct mpi_class *pc = PC(na_class);
    struct mpi_op *mo = na_op_plugin(op);
    pthread_mutex_lock(&pc->lock);
    if (atomic_load(&op->state) != NA_OP_CANCELING) {
        pthread_mutex_unlock(&pc->lock); /* completed meanwhile */
        return NA_SUCCESS;
    }
    switch (op->info.type) {
    case NA_CB_RECV_UNEXPECTED:
        if (mo->in_uq) {
            struct mpi_op **pp = &pc->uq_head, *prev = NULL;
            while (*pp && *pp != mo)
                prev = *pp, pp = &(*pp)->next;
            if (*pp) {
                *pp = mo->next;
                if (pc->uq_tail == mo)
                    pc->uq_tail = prev;
            }
            mo->in_uq = false;
            op_done(pc, op, NA_CANCELED);
        } /* else: already matched, its local Imrecv completes soon */
        break;
    case NA_CB_RECV_EXPECTED:
        if (mo->in_eq) {
            struct mpi_op **pp = &pc->eq_head;
            while (*pp && *pp != mo)
                pp = &(*pp)->next;
            if (*pp)
                *pp = mo->next;
            mo->in_eq = false;
            op_done(pc, op, NA_CANCELED);
        } /* else: matched, its local Imrecv completes soon */
        break;
    case NA_CB_SEND_EXPECTED:
    case NA_CB_SEND_UNEXPECTED: {
        /* MPI_Cancel on a copy of the handle; the table sees it complete and
         * MPI_Test_cancelled decides between NA_CANCELED and the real result
         * (sends that MPI cannot cancel complete normally). */
        MPI_Request r = mo->req;
        int rc = MPI_Cancel(&r);
        if (rc != MPI_SUCCESS)
            log_mpi("MPI_Cancel", rc);
        break;
    }
    case NA_CB_PUT:
    case NA_CB_GET:
        mpi_emul_cancel(pc->emul, mo->oreq);
        break;
    default:
        break;
    }
    pthread_mutex_unlock(&pc->lock);
    return NA_SUCCESS;
}

const struct na_ops na_mpi_ops = {
    .class_name = "mpi",
    .op_size = sizeof(struct mpi_op),
    .check_protocol = mpi_check_protocol,
    .initialize = mpi_initialize,
    .finalize = mpi_finalize,
    .cleanup = NULL,
    .context_create = mpi_context_create,
    .context_destroy = mpi_context_destroy,
    .addr_lookup = mpi_addr_lookup,
    .addr_destroy = mpi_addr_destroy,
    .addr_set_remove = NULL,
    .addr_self = mpi_addr_self,
    .addr_cmp = mpi_addr_cmp,
    .addr_is_self = mpi_addr_is_self,
    .addr_to_string = mpi_addr_to_string,
    .addr_get_serialize_size = mpi_addr_get_serialize_size,
    .addr_serialize = mpi_addr_serialize,
    .addr_deserialize = mpi_addr_deserialize,
    .msg_get_max_unexpected_size = mpi_max_unexp,
    .msg_get_max_expected_size = mpi_max_exp,
    .msg_get_unexpected_header_size = NULL,
    .msg_get_expected_header_size = NULL,
    .msg_get_max_tag = mpi_max_tag,
    .msg_send_unexpected = mpi_send_unexpected,
    .msg_recv_unexpected = mpi_recv_unexpected,
    .msg_send_expected = mpi_send_expected,
    .msg_recv_expected = mpi_recv_expected,
    .mem_handle_create = mpi_mem_handle_create,
    .mem_handle_create_segments = mpi_mem_handle_create_segments,
    .mem_handle_free = mpi_mem_handle_free,
    .mem_handle_get_max_segments = mpi_mem_max_segments,
    .mem_register = mpi_mem_register,
    .mem_deregister = mpi_mem_deregister,
    .mem_handle_get_serialize_size = mpi_mem_serialize_size,
    .mem_handle_serialize = mpi_mem_serialize,
    .mem_handle_deserialize = mpi_mem_deserialize,
    .put = mpi_put,
    .get = mpi_get,
    .poll_get_fd = NULL,
    .poll_try_wait = NULL,
    .poll = mpi_poll,
    .poll_wait = mpi_poll_wait,
    .cancel = mpi_cancel,
};
