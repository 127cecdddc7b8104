/*
 * test_na_mpi_compat.c -- Mercury's na_mpi.h over hgx, run as
 * `mpirun -np 3 ./test_na_mpi_compat`, with only the public headers:
 * - the Mercury test-harness pattern: MPI_COMM_WORLD split into a server
 *   side (rank 0) and a client side, NA_MPI_Set_init_intra_comm(side),
 *   mpi+static; the server's NA_MPI_Get_port_name goes to the clients, which
 *   look it up and exchange messages with it across the split;
 * - an intra comm spanning MPI_COMM_WORLD in another rank order is used as it
 *   is; MPI_COMM_NULL restores MPI_COMM_WORLD; an intercommunicator is
 *   refused;
 * - NA_MPI_Get_port_name of NULL, of a non-listening mpi+dynamic class and of
 *   a listening one (Open MPI); under MPICH (MPI_FLAVOR=mpich), which has no
 *   MPI_Open_port, mpi+dynamic must fail to initialize (the wrapper checks
 *   the log line).
 */
#include "mpitest_na.h"
#include "na_mpi.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 4096

static int rank, nprocs, failures, passes;

static void result(const char *name, int ok, const char *why)
{
    mpitest_result(rank, &passes, &failures, name, ok, why);
}

/* Progress until d completes (10 s at most); 0 on timeout. */
static int wait_for(na_class_t *cls, na_context_t *ctx, struct done *d)
{
    return mpitest_wait(cls, ctx, d, 10.0);
}

/* NA_MPI_Get_port_name(cls) equals NA_Addr_to_string(NA_Addr_self). */
static int port_is_self(na_class_t *cls, const char *port)
{
    char s[NAME_MAX_LEN];
    size_t n = sizeof(s);
    na_addr_t *self = NULL;
    int ok = port && NA_Addr_self(cls, &self) == NA_SUCCESS &&
             NA_Addr_to_string(cls, s, &n, self) == NA_SUCCESS && strcmp(s, port) == 0;
    if (self)
        NA_Addr_free(cls, self);
    return ok;
}

/* Rank 0 serves the clients' messages; each client looks up the server by
 * its port name, sends "hello R" (tag R) and expects it back. */
static void split_exchange(na_class_t *cls, char *port)
{
    na_context_t *ctx = NA_Context_create(cls);
    na_op_id_t *op = NA_Op_create(cls, 0), *op2 = NA_Op_create(cls, 0);
    char in[256], out[256];
    MPI_Bcast(port, NAME_MAX_LEN, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        int served = 0;
        for (int i = 1; i < nprocs; i++) {
            struct done r = {0}, s = {0};
            if (NA_Msg_recv_unexpected(cls, ctx, mpitest_cb, &r, in, sizeof(in), NULL,
                                       op) != NA_SUCCESS ||
                !wait_for(cls, ctx, &r) || r.ret != NA_SUCCESS)
                break;
            snprintf(out, sizeof(out), "hello %u", (unsigned)r.tag);
            if (r.size == strlen(out) + 1 && memcmp(in, out, r.size) == 0 &&
                NA_Msg_send_expected(cls, ctx, mpitest_cb, &s, in, r.size, NULL, r.src, 0,
                                     r.tag, op2) == NA_SUCCESS &&
                wait_for(cls, ctx, &s) && s.ret == NA_SUCCESS)
                served++;
            NA_Addr_free(cls, r.src);
        }
        result("server answers every client across the split", served == nprocs - 1,
               "a message was lost or wrong");
    } else {
        na_addr_t *srv = NULL;
        struct done r = {0}, s = {0};
        snprintf(out, sizeof(out), "hello %d", rank);
        int ok = NA_Addr_lookup(cls, port, &srv) == NA_SUCCESS &&
                 NA_Msg_recv_expected(cls, ctx, mpitest_cb, &r, in, sizeof(in), NULL, srv,
                                      0, (na_tag_t)rank, op2) == NA_SUCCESS &&
                 NA_Msg_send_unexpected(cls, ctx, mpitest_cb, &s, out, strlen(out) + 1,
                                        NULL, srv, 0, (na_tag_t)rank, op) == NA_SUCCESS &&
                 wait_for(cls, ctx, &s) && s.ret == NA_SUCCESS &&
                 wait_for(cls, ctx, &r) && r.ret == NA_SUCCESS && strcmp(in, out) == 0;
        result("client reaches the server by its port name", ok, port);
        if (srv)
            NA_Addr_free(cls, srv);
    }
    NA_Op_destroy(cls, op);
    NA_Op_destroy(cls, op2);
    NA_Context_destroy(cls, ctx);
}

static void test_split(void)
{
    MPI_Comm side;
    char port[NAME_MAX_LEN] = "";
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 1 : 2, rank, &side);
    result("NA_MPI_Set_init_intra_comm", NA_MPI_Set_init_intra_comm(side) == NA_SUCCESS,
           NULL);
    na_class_t *cls = NA_Initialize("mpi+static", rank == 0);
    result("mpi+static on a split intra comm", cls != NULL, "NA_Initialize failed");
    if (!cls)
        MPI_Abort(MPI_COMM_WORLD, 1);
    const char *p = NA_MPI_Get_port_name(cls);
    result("port name is the self address", port_is_self(cls, p), p ? p : "NULL");
    snprintf(port, sizeof(port), "%s", p ? p : "");
    split_exchange(cls, port);
    NA_Finalize(cls);
    MPI_Comm_free(&side);
}

/* An intra comm with every rank, in reversed order: addresses are its ranks. */
static void test_whole_and_default(void)
{
    MPI_Comm rev;
    char want[64];
    MPI_Comm_split(MPI_COMM_WORLD, 0, nprocs - 1 - rank, &rev);
    NA_MPI_Set_init_intra_comm(rev);
    na_class_t *cls = NA_Initialize("mpi+static", false);
    snprintf(want, sizeof(want), "mpi+static://%d", nprocs - 1 - rank);
    const char *p = cls ? NA_MPI_Get_port_name(cls) : NULL;
    result("an intra comm spanning MPI_COMM_WORLD is used as it is",
           p && strcmp(p, want) == 0, p ? p : "NULL");
    if (cls)
        NA_Finalize(cls);
    MPI_Comm_free(&rev);

    NA_MPI_Set_init_intra_comm(MPI_COMM_NULL);
    cls = NA_Initialize("mpi+static", false);
    snprintf(want, sizeof(want), "mpi+static://%d", rank);
    p = cls ? NA_MPI_Get_port_name(cls) : NULL;
    result("MPI_COMM_NULL restores MPI_COMM_WORLD", p && strcmp(p, want) == 0,
           p ? p : "NULL");
    if (cls)
        NA_Finalize(cls);
}

static void test_refusals(void)
{
    MPI_Comm side, inter;
    int server = rank == 0;
    MPI_Comm_split(MPI_COMM_WORLD, server ? 1 : 2, rank, &side);
    MPI_Intercomm_create(side, 0, MPI_COMM_WORLD, server ? 1 : 0, 7, &inter);
    NA_MPI_Set_init_intra_comm(inter);
    na_class_t *cls = NA_Initialize("mpi+static", false);
    result("an intercommunicator is refused", cls == NULL, "NA_Initialize succeeded");
    if (cls)
        NA_Finalize(cls);
    NA_MPI_Set_init_intra_comm(MPI_COMM_NULL);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&side);
    result("NA_MPI_Get_port_name(NULL) is NULL", NA_MPI_Get_port_name(NULL) == NULL,
           NULL);
}

/* Rank 0 only: mpi+dynamic classes (no collective). */
static void test_dynamic(int mpich)
{
    na_class_t *srv = NA_Initialize("mpi+dynamic", true);
    if (mpich) {
        result("MPICH: mpi+dynamic (no MPI_Open_port) fails to initialize", srv == NULL,
               "NA_Initialize succeeded");
        if (srv)
            NA_Finalize(srv);
        return;
    }
    const char *p = srv ? NA_MPI_Get_port_name(srv) : NULL;
    result("mpi+dynamic listener: port name is its mpi+dynamic:// address",
           p && strncmp(p, "mpi+dynamic://", 14) == 0 && strlen(p) > 14 &&
               port_is_self(srv, p),
           p ? p : "NULL");
    na_class_t *cli = NA_Initialize("mpi+dynamic", false);
    result("mpi+dynamic client has no port name", cli && !NA_MPI_Get_port_name(cli),
           cli ? "a name was returned" : "NA_Initialize failed");
    if (cli)
        NA_Finalize(cli);
    if (srv)
        NA_Finalize(srv);
}

int main(int argc, char **argv)
{
    const char *flavor = getenv("MPI_FLAVOR");
    mpitest_init(&argc, &argv, &rank, &nprocs);
    if (nprocs < 2)
        return mpitest_skip(rank, "test_na_mpi_compat needs at least 2 processes");
    test_split();
    test_whole_and_default();
    test_refusals();
    if (rank == 0)
        test_dynamic(flavor && strcmp(flavor, "mpich") == 0);
    int fails = 0;
    MPI_Allreduce(&failures, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("[==========] %d failures over %d ranks\n%s\n", fails, nprocs,
               fails ? "[  FAILED  ] test_na_mpi_compat"
                     : "[  PASSED  ] test_na_mpi_compat");
    MPI_Finalize();
    return fails ? 1 : 0;
}
