/*
 * hgx_mpi_job.c -- the hgx demo job: an MPI application that uses Mercury RPCs
 * as MPI-style requests.
 *
 *   mpirun -np 3 ./hgx_mpi_job        (rank 0 serves, the others are clients)
 *
 * The application owns MPI (MPI_Init_thread with MPI_THREAD_MULTIPLE) and
 * hands MPI_COMM_WORLD to hgx_init_mpi("mpi+static"); the server's address is
 * "mpi+static://0". Each client
 *   1. issues several "add" RPCs with hgx_iforward and completes them with
 *      hgx_waitall,
 *   2. pulls a region the server exposes with hgx_ibulk_transfer (twice),
 *   3. calls a slow RPC with a 100 ms deadline (hgx_request_set_timeout):
 *      it completes with HG_TIMEOUT and the cancelled flag,
 *   4. cancels a slow RPC with hgx_cancel and checks hgx_test_cancelled,
 *   5. waits on an hgx RPC, an hgx bulk pull and its own MPI_Irecv/MPI_Isend
 *      in one MPI_Waitall, through hgx_request_to_mpi.
 * Every step prints one line "[rank N] what: result". Exit status 0 when all
 * steps on all ranks succeeded.
 */
#include <hgx.h>
#include <hgx_mpi.h>
#include <mercury.h>
#include <mercury_bulk.h>
#include <mercury_macros.h>
#include <mercury_proc_bulk.h>

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

MERCURY_GEN_PROC(add_in_t, ((int32_t)(a))((int32_t)(b)))
MERCURY_GEN_PROC(add_out_t, ((int32_t)(sum)))
MERCURY_GEN_PROC(slow_in_t, ((uint32_t)(ms)))
MERCURY_GEN_PROC(expose_in_t, ((uint64_t)(size))((uint32_t)(seed)))
MERCURY_GEN_PROC(expose_out_t, ((hg_bulk_t)(bulk)))

#define TAG_ECHO 1 /* app traffic: client sends an int, server returns it + 1 */
#define TAG_ECHO_BACK 2
#define TAG_DONE 3
#define REGION_SIZE ((size_t)256 * 1024)
#define SLOW_MS 5000u /* longer than the job: its callers give up first */
#define MAX_PARKED 32
#define MAX_REGIONS 32

static int rank, nprocs, errors;
static hg_class_t *cls;
static hg_context_t *ctx;
static hg_id_t add_id, slow_id, expose_id;

/* One line per step: "[rank N] what: OK|FAILED detail". */
static void step(int ok, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    printf("[rank %d] %s: %s\n", rank, msg, ok ? "OK" : "FAILED");
    fflush(stdout);
    if (!ok)
        errors++;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned char pattern(size_t i, uint32_t seed)
{
    return (unsigned char)(i * 17u + seed);
}

/* ------------------------------------------------------------------ server */

static struct {
    hg_handle_t h;
    double due;
} parked[MAX_PARKED];
static int n_parked;
static void *regions[MAX_REGIONS];
static hg_bulk_t region_bulks[MAX_REGIONS];
static int n_regions;

static hg_return_t add_handler(hg_handle_t h)
{
    add_in_t in;
    add_out_t out = {0};
    if (HG_Get_input(h, &in) == HG_SUCCESS) {
        out.sum = in.a + in.b;
        HG_Free_input(h, &in);
    }
    HG_Respond(h, NULL, NULL, &out);
    return HG_Destroy(h);
}

/* A slow service: the answer is sent in.ms later, without blocking. */
static hg_return_t slow_handler(hg_handle_t h)
{
    slow_in_t in = {0};
    HG_Get_input(h, &in);
    HG_Free_input(h, &in);
    if (n_parked == MAX_PARKED) {
        add_out_t out = {-1};
        HG_Respond(h, NULL, NULL, &out);
        return HG_Destroy(h);
    }
    parked[n_parked].h = h;
    parked[n_parked++].due = now_s() + in.ms / 1000.0;
    return HG_SUCCESS;
}

static hg_return_t expose_handler(hg_handle_t h)
{
    expose_in_t in;
    expose_out_t out = {HG_BULK_NULL};
    if (HG_Get_input(h, &in) == HG_SUCCESS) {
        unsigned char *buf = n_regions < MAX_REGIONS ? malloc((size_t)in.size) : NULL;
        if (buf) {
            for (size_t i = 0; i < (size_t)in.size; i++)
                buf[i] = pattern(i, in.seed);
            void *ptr = buf;
            hg_size_t size = in.size;
            if (HG_Bulk_create(cls, 1, &ptr, &size, HG_BULK_READ_ONLY, &out.bulk) ==
                HG_SUCCESS) {
                regions[n_regions] = buf;
                region_bulks[n_regions++] = out.bulk;
            } else {
                free(buf);
            }
        }
        HG_Free_input(h, &in);
    }
    HG_Respond(h, NULL, NULL, &out);
    return HG_Destroy(h);
}

/* Answer the parked calls whose time came; at the end (drop) release the
 * rest unanswered: their callers timed out or cancelled, and an answer that
 * nobody receives would stay unmatched in MPI. */
static int answer_parked(int drop)
{
    int n = 0;
    for (int i = 0; i < n_parked;) {
        if (!drop && parked[i].due > now_s()) {
            i++;
            continue;
        }
        add_out_t out = {1};
        hgx_request_t r;
        if (!drop && hgx_irespond(parked[i].h, &out, &r) == HG_SUCCESS)
            hgx_wait(&r, HGX_STATUS_IGNORE);
        HG_Destroy(parked[i].h);
        parked[i] = parked[--n_parked];
        n++;
    }
    return n;
}

static void server(void)
{
    int clients_left = nprocs - 1, flag;
    long echoes = 0;
    MPI_Status st;
    step(1, "server listening at mpi+static://0 for %d client(s)", clients_left);
    while (clients_left > 0) {
        unsigned int n;
        HG_Progress(ctx, 5);
        HG_Trigger(ctx, 0, UINT32_MAX, &n);
        answer_parked(0);
        /* the application's own MPI traffic, next to the RPCs */
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_ECHO, MPI_COMM_WORLD, &flag, &st);
        if (flag) {
            int v;
            MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, TAG_ECHO, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            v++;
            MPI_Send(&v, 1, MPI_INT, st.MPI_SOURCE, TAG_ECHO_BACK, MPI_COMM_WORLD);
            echoes++;
        }
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_DONE, MPI_COMM_WORLD, &flag, &st);
        if (flag) {
            MPI_Recv(NULL, 0, MPI_INT, st.MPI_SOURCE, TAG_DONE, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            clients_left--;
        }
    }
    int dropped = answer_parked(1);
    for (int i = 0; i < n_regions; i++) {
        HG_Bulk_free(region_bulks[i]);
        free(regions[i]);
    }
    step(1,
         "server done: exposed %d region(s), answered %ld MPI echo(es), dropped %d "
         "abandoned slow call(s)",
         n_regions, echoes, dropped);
}

/* ------------------------------------------------------------------ client */

static hg_addr_t srv;

/* Ask the server to expose a region; the bulk handle stays valid after h. */
static hg_bulk_t get_region(uint32_t seed)
{
    expose_in_t in = {REGION_SIZE, seed};
    expose_out_t out;
    hg_handle_t h;
    hgx_request_t r;
    hgx_status_t st;
    hg_bulk_t b = HG_BULK_NULL;
    if (HG_Create(ctx, srv, expose_id, &h) != HG_SUCCESS)
        return HG_BULK_NULL;
    if (hgx_iforward(h, &in, &r) == HG_SUCCESS && hgx_wait(&r, &st) == HG_SUCCESS &&
        st.error == HG_SUCCESS && HG_Get_output(h, &out) == HG_SUCCESS) {
        b = out.bulk;
        HG_Bulk_ref_incr(b);
        HG_Free_output(h, &out);
    }
    HG_Destroy(h);
    return b;
}

static int region_ok(const unsigned char *buf, uint32_t seed)
{
    for (size_t i = 0; i < REGION_SIZE; i++)
        if (buf[i] != pattern(i, seed))
            return 0;
    return 1;
}

static void client_rpcs(void)
{
    enum { N = 4 };
    hg_handle_t h[N];
    add_in_t in[N];
    hgx_request_t r[N];
    hgx_status_t st[N];
    int ok = 1;
    for (int i = 0; i < N; i++) {
        in[i].a = rank;
        in[i].b = 10 * i;
        ok &= HG_Create(ctx, srv, add_id, &h[i]) == HG_SUCCESS &&
              hgx_iforward(h[i], &in[i], &r[i]) == HG_SUCCESS;
    }
    ok &= hgx_waitall(N, r, st) == HG_SUCCESS;
    char sums[64] = "";
    for (int i = 0; i < N; i++) {
        add_out_t out;
        if (ok && st[i].error == HG_SUCCESS && HG_Get_output(h[i], &out) == HG_SUCCESS) {
            ok &= out.sum == in[i].a + in[i].b;
            snprintf(sums + strlen(sums), sizeof(sums) - strlen(sums), "%s%d",
                     i ? "," : "", out.sum);
            HG_Free_output(h[i], &out);
        } else {
            ok = 0;
        }
        HG_Destroy(h[i]);
    }
    step(ok, "%d add RPCs (hgx_iforward + hgx_waitall) -> sums %s", N, sums);
}

static void client_bulk(uint32_t seed)
{
    unsigned char *buf = calloc(1, REGION_SIZE);
    hg_bulk_t remote = get_region(seed), local = HG_BULK_NULL;
    hgx_request_t r;
    hgx_status_t st = {.error = HG_OTHER_ERROR};
    hg_size_t count = 0;
    void *ptr = buf;
    hg_size_t size = REGION_SIZE;
    int ok =
        buf && remote &&
        HG_Bulk_create(cls, 1, &ptr, &size, HG_BULK_WRITE_ONLY, &local) == HG_SUCCESS &&
        hgx_ibulk_transfer(ctx, HG_BULK_PULL, srv, remote, 0, local, 0, REGION_SIZE,
                           &r) == HG_SUCCESS &&
        hgx_wait(&r, &st) == HG_SUCCESS && st.error == HG_SUCCESS;
    hgx_get_count(&st, &count);
    ok = ok && count == REGION_SIZE && region_ok(buf, seed);
    step(ok, "bulk pull of %zu bytes (hgx_ibulk_transfer) -> %llu bytes, %s", REGION_SIZE,
         (unsigned long long)count, ok ? "data verified" : "data wrong");
    if (local)
        HG_Bulk_free(local);
    if (remote)
        HG_Bulk_free(remote);
    free(buf);
}

static void client_deadline(void)
{
    slow_in_t in = {SLOW_MS};
    hg_handle_t h;
    hgx_request_t r;
    hgx_status_t st = {.error = HG_OTHER_ERROR};
    int cancelled = 0;
    double t0 = now_s();
    int ok = HG_Create(ctx, srv, slow_id, &h) == HG_SUCCESS;
    ok = ok && hgx_iforward(h, &in, &r) == HG_SUCCESS &&
         hgx_request_set_timeout(r, 100) == HG_SUCCESS && hgx_wait(&r, &st) == HG_SUCCESS;
    hgx_test_cancelled(&st, &cancelled);
    ok = ok && st.error == HG_TIMEOUT && cancelled;
    step(ok, "slow RPC (%u ms) with a 100 ms deadline -> %s after %.0f ms, cancelled=%d",
         SLOW_MS, HG_Error_to_string(st.error), (now_s() - t0) * 1e3, cancelled);
    if (h)
        HG_Destroy(h);
}

static void client_cancel(void)
{
    slow_in_t in = {SLOW_MS};
    hg_handle_t h;
    hgx_request_t r;
    hgx_status_t st = {.error = HG_OTHER_ERROR};
    int cancelled = 0;
    int ok = HG_Create(ctx, srv, slow_id, &h) == HG_SUCCESS;
    ok = ok && hgx_iforward(h, &in, &r) == HG_SUCCESS && hgx_cancel(&r) == HG_SUCCESS &&
         hgx_wait(&r, &st) == HG_SUCCESS;
    hgx_test_cancelled(&st, &cancelled);
    ok = ok && cancelled;
    step(ok, "slow RPC cancelled with hgx_cancel -> %s, hgx_test_cancelled=%d",
         HG_Error_to_string(st.error), cancelled);
    if (h)
        HG_Destroy(h);
}

static void client_mpi_waitall(void)
{
    const uint32_t seed = (uint32_t)rank + 50u;
    unsigned char *buf = calloc(1, REGION_SIZE);
    hg_bulk_t remote = get_region(seed), local = HG_BULK_NULL;
    hg_handle_t h = HG_HANDLE_NULL;
    add_in_t in = {rank, 1000};
    add_out_t out = {0};
    hgx_request_t r;
    MPI_Request mr[4] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL,
                         MPI_REQUEST_NULL};
    MPI_Status ms[4];
    int send = 40 + rank, back = 0, bytes = -1, c1 = 1, c2 = 1;
    void *ptr = buf;
    hg_size_t size = REGION_SIZE;

    int ok =
        buf && remote &&
        HG_Bulk_create(cls, 1, &ptr, &size, HG_BULK_WRITE_ONLY, &local) == HG_SUCCESS &&
        HG_Create(ctx, srv, add_id, &h) == HG_SUCCESS;
    ok = ok && MPI_Irecv(&back, 1, MPI_INT, 0, TAG_ECHO_BACK, MPI_COMM_WORLD, &mr[0]) ==
                   MPI_SUCCESS;
    ok = ok && hgx_iforward(h, &in, &r) == HG_SUCCESS &&
         hgx_request_to_mpi(r, &mr[1]) == HG_SUCCESS;
    ok = ok &&
         hgx_ibulk_transfer(ctx, HG_BULK_PULL, srv, remote, 0, local, 0, REGION_SIZE,
                            &r) == HG_SUCCESS &&
         hgx_request_to_mpi(r, &mr[2]) == HG_SUCCESS;
    ok = ok &&
         MPI_Isend(&send, 1, MPI_INT, 0, TAG_ECHO, MPI_COMM_WORLD, &mr[3]) == MPI_SUCCESS;
    if (ok) {
        ok = MPI_Waitall(4, mr, ms) == MPI_SUCCESS;
    } else {
        for (int i = 0; i < 4; i++) /* do not leave the posted ones behind */
            if (mr[i] != MPI_REQUEST_NULL) {
                MPI_Cancel(&mr[i]);
                MPI_Wait(&mr[i], MPI_STATUS_IGNORE);
            }
    }
    ok = ok && HG_Get_output(h, &out) == HG_SUCCESS;
    if (ok)
        HG_Free_output(h, &out);
    ok = ok && MPI_Get_count(&ms[2], MPI_BYTE, &bytes) == MPI_SUCCESS &&
         MPI_Test_cancelled(&ms[1], &c1) == MPI_SUCCESS &&
         MPI_Test_cancelled(&ms[2], &c2) == MPI_SUCCESS;
    ok = ok && back == send + 1 && out.sum == rank + 1000 && bytes == (int)REGION_SIZE &&
         !c1 && !c2 && region_ok(buf, seed);
    step(
        ok,
        "MPI_Waitall over MPI_Irecv + hgx RPC + hgx bulk pull + MPI_Isend "
        "(hgx_request_to_mpi) -> echo %d, sum %d, %d bytes from rank %d, cancelled %d/%d",
        back, out.sum, bytes, ok ? ms[1].MPI_SOURCE : -1, c1, c2);
    if (h)
        HG_Destroy(h);
    if (local)
        HG_Bulk_free(local);
    if (remote)
        HG_Bulk_free(remote);
    free(buf);
}

static void client(void)
{
    int ok = HG_Addr_lookup2(cls, "mpi+static://0", &srv) == HG_SUCCESS;
    step(ok, "looked up the server at mpi+static://0");
    if (ok) {
        client_rpcs();
        client_bulk((uint32_t)rank);
        client_bulk((uint32_t)rank + 100u);
        client_deadline();
        client_cancel();
        client_mpi_waitall();
        HG_Addr_free(cls, srv);
    }
    /* the finalize hook for the progress thread of hgx_request_to_mpi */
    step(hgx_mpi_progress_stop(ctx) == HG_SUCCESS, "stopped the hgx progress thread");
    MPI_Send(NULL, 0, MPI_INT, 0, TAG_DONE, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs < 2 || provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            fprintf(stderr,
                    "hgx_mpi_job: needs >= 2 ranks and MPI_THREAD_MULTIPLE "
                    "(got %d ranks, thread level %d)\n",
                    nprocs, provided);
        MPI_Finalize();
        return 1;
    }

    cls = hgx_init_mpi(MPI_COMM_WORLD, "mpi+static", rank == 0 ? HG_TRUE : HG_FALSE);
    ctx = cls ? HG_Context_create(cls) : NULL;
    step(ctx != NULL, "hgx_init_mpi(MPI_COMM_WORLD, \"mpi+static\", %s)",
         rank == 0 ? "listen" : "client");
    if (!ctx)
        MPI_Abort(MPI_COMM_WORLD, 1);
    add_id = MERCURY_REGISTER(cls, "job_add", add_in_t, add_out_t,
                              rank == 0 ? add_handler : NULL);
    slow_id = MERCURY_REGISTER(cls, "job_slow", slow_in_t, add_out_t,
                               rank == 0 ? slow_handler : NULL);
    expose_id = MERCURY_REGISTER(cls, "job_expose", expose_in_t, expose_out_t,
                                 rank == 0 ? expose_handler : NULL);

    if (rank == 0)
        server();
    else
        client();

    MPI_Barrier(MPI_COMM_WORLD);
    HG_Context_destroy(ctx);
    HG_Finalize(cls);
    int total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("[rank 0] job %s (%d failed step(s) over %d ranks)\n",
               total ? "FAILED" : "succeeded", total, nprocs);
    MPI_Finalize();
    return total ? 1 : 0;
}
