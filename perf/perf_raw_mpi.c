/*
 * perf_raw_mpi.c -- MPI start-up for hgx-perf (rank 0 server, ranks 1..N the
 * clients), the out-of-band channels over MPI_COMM_WORLD (a channel's rfd is
 * its peer's rank), the clients' barrier, and the raw MPI baseline:
 * MPI_Isend/MPI_Irecv on a private communicator, completions via MPI_Testsome.
 * Bulk has no RMA here: pull is a request answered with the data, push is
 * the data answered with an empty ack (what an MPI-only transport must do).
 * Push data travels on a second communicator: MPI_ANY_TAG cannot exclude a
 * tag, and the server's wildcard receives (posted first, PERF_RAW_MSG_MAX
 * bytes) would otherwise match the data before its own receive is posted.
 */
#include "config.h"
#include "perf_raw.h"

#ifdef HGX_HAVE_MPI
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static MPI_Comm clients_comm = MPI_COMM_NULL; /* ranks 1..N */

static int mpi_oob_send(struct perf_oob *o, const void *buf, size_t len)
{
    return MPI_Send(buf, (int)len, MPI_BYTE, o->rfd, 77, MPI_COMM_WORLD) == MPI_SUCCESS
               ? 0
               : -1;
}

static int mpi_oob_recv(struct perf_oob *o, void *buf, size_t len)
{
    return MPI_Recv(buf, (int)len, MPI_BYTE, o->rfd, 77, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE) == MPI_SUCCESS
               ? 0
               : -1;
}

int perf_mpi_clients_barrier(void)
{
    return clients_comm == MPI_COMM_NULL || MPI_Barrier(clients_comm) == MPI_SUCCESS ? 0
                                                                                     : -1;
}

int perf_mpi_send_to(int rank, const void *buf, size_t len)
{
    return MPI_Send(buf, (int)len, MPI_BYTE, rank, 78, MPI_COMM_WORLD) == MPI_SUCCESS
               ? 0
               : -1;
}

int perf_mpi_recv_from(int rank, void *buf, size_t len)
{
    return MPI_Recv(buf, (int)len, MPI_BYTE, rank, 78, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE) == MPI_SUCCESS
               ? 0
               : -1;
}

int perf_mpi_init(int *argc, char ***argv, int *rank, int *size)
{
    int provided;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return -1;
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    if (MPI_Comm_split(MPI_COMM_WORLD, *rank ? 1 : MPI_UNDEFINED, *rank, &clients_comm) !=
        MPI_SUCCESS)
        return -1;
    return 0;
}

void perf_mpi_oob(struct perf_oob *oob, int peer_rank)
{
    oob->send = mpi_oob_send;
    oob->recv = mpi_oob_recv;
    oob->rfd = peer_rank;
}

void perf_mpi_finalize(void)
{
    if (clients_comm != MPI_COMM_NULL)
        MPI_Comm_free(&clients_comm);
    MPI_Finalize();
}

struct mpi_raw {
    MPI_Comm comm, data; /* data: push payloads, out of reach of wildcard receives */
    MPI_Request req[PERF_RAW_NSLOTS];
    int idx[PERF_RAW_NSLOTS];
    MPI_Status st[PERF_RAW_NSLOTS];
    int lo, hi; /* slots that may be active: [lo, hi) and the send range */
    int slo, shi;
    char *msg, *big;
    size_t big_size;
    int server;   /* clients are ranks 1..N, peer index + 1; a client's server is 0 */
    int nclients; /* a server of one client receives from rank 1 only, as before */
};

/* MPI tags are ints: the client index travels as the source rank instead of
 * the tag's client bits (perf_raw.h), and is put back on receipt. */
static int mpi_tag(uint64_t tag)
{
    return (int)(tag & 0xffffffffu);
}

static void widen(struct mpi_raw *m, int slot)
{
    if (slot >= PERF_RAW_SEND_BASE) {
        if (slot < m->slo)
            m->slo = slot;
        if (slot + 1 > m->shi)
            m->shi = slot + 1;
    } else {
        if (slot < m->lo)
            m->lo = slot;
        if (slot + 1 > m->hi)
            m->hi = slot + 1;
    }
}

static MPI_Comm comm_of(const struct mpi_raw *m, uint64_t tag)
{
    return tag >> 16 == RAW_CMD_PUSHDATA ? m->data : m->comm;
}

static int mpi_send(void *t, int peer, int slot, const void *buf, size_t len,
                    uint64_t tag)
{
    struct mpi_raw *m = t;
    widen(m, slot);
    return MPI_Isend(buf, (int)len, MPI_BYTE, m->server ? peer + 1 : 0, mpi_tag(tag),
                     comm_of(m, tag), &m->req[slot]) == MPI_SUCCESS
               ? 0
               : -1;
}

static int mpi_recv(void *t, int slot, void *buf, size_t len, uint64_t tag, int any)
{
    struct mpi_raw *m = t;
    widen(m, slot);
    /* A server's exact receives (push data) are from its one bw client. */
    int source = !m->server ? 0 : any && m->nclients > 1 ? MPI_ANY_SOURCE : 1;
    return MPI_Irecv(buf, (int)len, MPI_BYTE, source, any ? MPI_ANY_TAG : mpi_tag(tag),
                     any ? m->comm : comm_of(m, tag), &m->req[slot]) == MPI_SUCCESS
               ? 0
               : -1;
}

static int testsome(struct mpi_raw *m, int lo, int hi, struct raw_completion *out,
                    int max, int *k)
{
    int outcount = 0;
    if (hi <= lo)
        return 0;
    if (MPI_Testsome(hi - lo, m->req + lo, &outcount, m->idx, m->st) != MPI_SUCCESS)
        return -1;
    if (outcount == MPI_UNDEFINED)
        return 0;
    for (int i = 0; i < outcount && *k < max; i++) {
        int slot = lo + m->idx[i], flag = 0, cnt = 0;
        MPI_Test_cancelled(&m->st[i], &flag);
        if (flag) {
            out[(*k)++] = (struct raw_completion){.slot = slot, .ev = RAW_EV_CANCELLED};
            continue;
        }
        MPI_Get_count(&m->st[i], MPI_BYTE, &cnt);
        out[(*k)++] = (struct raw_completion){
            .slot = slot,
            .ev = slot >= PERF_RAW_SEND_BASE ? RAW_EV_SEND : RAW_EV_RECV,
            .tag = (uint64_t)(unsigned)m->st[i].MPI_TAG |
                   (m->server && m->st[i].MPI_SOURCE > 0
                        ? (uint64_t)(m->st[i].MPI_SOURCE - 1) << RAW_TAG_CLIENT_SHIFT
                        : 0),
            .len = (size_t)cnt};
    }
    return 0;
}

/* Narrow [*lo, *hi) to the slots still holding a request, so MPI_Testsome
 * scans the requests in flight, not every slot used so far. */
static void trim(const struct mpi_raw *m, int *lo, int *hi)
{
    while (*lo < *hi && m->req[*lo] == MPI_REQUEST_NULL)
        (*lo)++;
    while (*hi > *lo && m->req[*hi - 1] == MPI_REQUEST_NULL)
        (*hi)--;
}

static int mpi_poll(void *t, struct raw_completion *out, int max)
{
    struct mpi_raw *m = t;
    int k = 0;
    trim(m, &m->lo, &m->hi);
    trim(m, &m->slo, &m->shi);
    /* chunks no larger than the room left, as Testsome may complete them all */
    for (int lo = m->lo; lo < m->hi && k < max;) {
        int n = m->hi - lo < max - k ? m->hi - lo : max - k;
        if (testsome(m, lo, lo + n, out, max, &k))
            return -1;
        lo += n;
    }
    for (int lo = m->slo; lo < m->shi && k < max;) {
        int n = m->shi - lo < max - k ? m->shi - lo : max - k;
        if (testsome(m, lo, lo + n, out, max, &k))
            return -1;
        lo += n;
    }
    return k;
}

static int mpi_cancel(void *t, int slot)
{
    struct mpi_raw *m = t;
    if (m->req[slot] != MPI_REQUEST_NULL)
        MPI_Cancel(&m->req[slot]);
    return 0;
}

int perf_raw_mpi_run(const struct perf_config *cfg, struct perf_oob *oob,
                     struct perf_results *res)
{
    struct mpi_raw *m = calloc(1, sizeof(*m));
    if (!m)
        return -1;
    for (int i = 0; i < PERF_RAW_NSLOTS; i++)
        m->req[i] = MPI_REQUEST_NULL;
    m->lo = PERF_RAW_SEND_BASE;
    m->slo = PERF_RAW_NSLOTS;
    m->server = cfg->server;
    m->nclients = cfg->clients;
    m->big_size = perf_raw_big_size(cfg);
    m->msg = calloc(PERF_RAW_SRV_RECVS + 2, PERF_RAW_MSG_MAX);
    m->big = malloc(m->big_size);
    int ret = -1;
    if (m->msg && m->big && MPI_Comm_dup(MPI_COMM_WORLD, &m->comm) == MPI_SUCCESS &&
        MPI_Comm_dup(MPI_COMM_WORLD, &m->data) == MPI_SUCCESS) {
        memset(m->big, cfg->server ? 0x5a : 0xa5, m->big_size);
        struct raw_transport rt = {.t = m,
                                   .msg = m->msg,
                                   .big = m->big,
                                   .big_size = m->big_size,
                                   .send = mpi_send,
                                   .recv = mpi_recv,
                                   .poll = mpi_poll,
                                   .cancel = mpi_cancel,
                                   .rma = NULL};
        ret = perf_raw_drive(cfg, &rt, res);
        perf_oob_barrier(cfg, oob);
        MPI_Comm_free(&m->data);
        MPI_Comm_free(&m->comm);
    }
    free(m->msg);
    free(m->big);
    free(m);
    return ret;
}
#else
int perf_raw_mpi_run(const struct perf_config *cfg, struct perf_oob *oob,
                     struct perf_results *res)
{
    (void)cfg, (void)oob, (void)res;
    return -1;
}
int perf_mpi_init(int *argc, char ***argv, int *rank, int *size)
{
    (void)argc, (void)argv, (void)rank, (void)size;
    return -1;
}
void perf_mpi_oob(struct perf_oob *oob, int peer_rank)
{
    (void)oob, (void)peer_rank;
}
void perf_mpi_finalize(void) {}
int perf_mpi_clients_barrier(void)
{
    return 0;
}
int perf_mpi_send_to(int rank, const void *buf, size_t len)
{
    (void)rank, (void)buf, (void)len;
    return -1;
}
int perf_mpi_recv_from(int rank, void *buf, size_t len)
{
    (void)rank, (void)buf, (void)len;
    return -1;
}
#endif
