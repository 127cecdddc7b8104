/*
 * test_mpi_dynamic.c -- NA over mpi+dynamic (MPI_Open_port / accept / connect).
 * Driven by test_mpi_dynamic.sh; each role is its own mpirun job:
 *   test_mpi_dynamic server ADDRFILE NCLIENTS   listen, write the address, serve NCLIENTS
 *   test_mpi_dynamic client ADDR ID             connect, messages + put/get, verified
 *   test_mpi_dynamic retry-client ADDR ID       a lookup that gives up, then a client
 *   test_mpi_dynamic bogus                      lookup of a dead port fails, bounded
 *   test_mpi_dynamic unsupported                (MPICH) init and lookup fail clearly
 * Roles prefixed "single-" start MPI with plain MPI_Init (as Mercury's test
 * harness starts a client), a thread level below MPI_THREAD_MULTIPLE:
 *   test_mpi_dynamic single-client ADDR ID      as client, connecting inline
 *   test_mpi_dynamic single-server              a listening init is refused
 * Prints cmocka-style result lines; exit 0 when all passed.
 */
#include "hgx_emul.h"
#include "mpitest_na.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUF_SIZE ((size_t)HGX_EMUL_CHUNK + 4321) /* per client, > 1 emulation chunk */
#define MAX_CLIENTS 4

enum { CMD_HELLO = 1, CMD_CHECK, CMD_BYE };

static int failures, passes;
static const char *role = "?";
static na_class_t *cls;
static na_context_t *ctx;

static void result(const char *name, int ok, const char *why)
{
    if (ok)
        passes++;
    else
        failures++;
    printf("[ %s ] %s: %s%s%s%s\n", ok ? "      OK" : " FAILED ", role, name,
           ok ? "" : " (", ok ? "" : (why ? why : ""), ok ? "" : ")");
    fflush(stdout);
}

static int wait_for(struct done *d, double timeout_s)
{
    return mpitest_wait(cls, ctx, d, timeout_s);
}

static void fill(unsigned char *b, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(i * 31u + (unsigned)seed * 7u + 1u);
}

/* message layout: cmd (1 byte), client id (1 byte), payload */

/*------------------------------------------------------------------ server */

static int server(const char *addrfile, int nclients)
{
    unsigned char *mem = calloc(MAX_CLIENTS, BUF_SIZE);
    na_mem_handle_t *h = NULL;
    NA_Mem_handle_create(cls, mem, MAX_CLIENTS * BUF_SIZE, NA_MEM_READWRITE, &h);
    result("register memory", NA_Mem_register(cls, h, NA_MEM_TYPE_HOST, 0) == NA_SUCCESS,
           "");
    unsigned char hbuf[128];
    size_t hlen = NA_Mem_handle_get_serialize_size(cls, h);
    NA_Mem_handle_serialize(cls, hbuf, sizeof(hbuf), h);

    na_addr_t *self = NULL;
    char addr[8192];
    size_t n = sizeof(addr);
    NA_Addr_self(cls, &self);
    na_return_t r = NA_Addr_to_string(cls, addr, &n, self);
    result("self address is mpi+dynamic://...",
           r == NA_SUCCESS && strncmp(addr, "mpi+dynamic://", 14) == 0 &&
               !strchr(addr + 14, ':'),
           addr);
    NA_Addr_free(cls, self);
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", addrfile);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%s\n", addr) < 0 || fclose(f) != 0 ||
        rename(tmp, addrfile) != 0) {
        result("write address file", 0, addrfile);
        return 1;
    }
    printf("server address: %s\n", addr);
    fflush(stdout);

    size_t max = NA_Msg_get_max_unexpected_size(cls);
    unsigned char *in = malloc(max), *out = malloc(max);
    na_op_id_t *rop = NA_Op_create(cls, 0), *sop = NA_Op_create(cls, 0);
    int byes = 0, hellos = 0, checks_ok = 0;
    while (byes < nclients) {
        struct done d = {0}, s = {0};
        NA_Msg_recv_unexpected(cls, ctx, mpitest_cb, &d, in, max, NULL, rop);
        if (!wait_for(&d, 120) || d.ret != NA_SUCCESS || d.size < 2) {
            result("receive a client command", 0,
                   d.flag ? NA_Error_to_string(d.ret) : "timeout");
            break;
        }
        int id = in[1];
        size_t olen = 1;
        out[0] = 0;
        if (in[0] == CMD_HELLO && id < MAX_CLIENTS) {
            /* echo the payload reversed, then our memory handle */
            size_t pl = d.size - 2;
            for (size_t i = 0; i < pl; i++)
                out[1 + i] = in[2 + pl - 1 - i];
            memcpy(out + 1 + pl, hbuf, hlen);
            olen = 1 + pl + hlen;
            out[0] = 1;
            hellos++;
        } else if (in[0] == CMD_CHECK && id < MAX_CLIENTS) {
            /* the client put pattern seed 100+id into its slice */
            unsigned char *exp = malloc(BUF_SIZE);
            fill(exp, BUF_SIZE, 100 + id);
            out[0] = memcmp(exp, mem + (size_t)id * BUF_SIZE, BUF_SIZE) == 0;
            checks_ok += out[0];
            free(exp);
            /* overwrite with seed 200+id for the client's get */
            fill(mem + (size_t)id * BUF_SIZE, BUF_SIZE, 200 + id);
        } else if (in[0] == CMD_BYE) {
            byes++;
            out[0] = 1;
        }
        NA_Msg_send_expected(cls, ctx, mpitest_cb, &s, out, olen, NULL, d.src, 0, d.tag,
                             sop);
        int ok = wait_for(&s, 30) && s.ret == NA_SUCCESS;
        if (!ok)
            result("reply to the unexpected source", 0, NA_Error_to_string(s.ret));
        NA_Addr_free(cls, d.src);
    }
    result("served every client (hello, put checked, bye)",
           hellos == nclients && checks_ok == nclients && byes == nclients, "");
    NA_Op_destroy(cls, rop);
    NA_Op_destroy(cls, sop);
    NA_Mem_deregister(cls, h);
    NA_Mem_handle_free(cls, h);
    free(in);
    free(out);
    free(mem);
    return 0;
}

/*------------------------------------------------------------------ client */

static na_return_t rpc(na_addr_t *srv, const unsigned char *msg, size_t len,
                       unsigned char *reply, size_t rsize, size_t *rlen, na_tag_t tag)
{
    struct done s = {0}, r = {0};
    na_op_id_t *sop = NA_Op_create(cls, 0), *rop = NA_Op_create(cls, 0);
    na_return_t ret = NA_Msg_recv_expected(cls, ctx, mpitest_cb, &r, reply, rsize, NULL,
                                           srv, 0, tag, rop);
    if (ret == NA_SUCCESS)
        ret = NA_Msg_send_unexpected(cls, ctx, mpitest_cb, &s, msg, len, NULL, srv, 0,
                                     tag, sop);
    if (ret == NA_SUCCESS)
        ret = !wait_for(&s, 30) ? NA_TIMEOUT : s.ret;
    if (ret == NA_SUCCESS)
        ret = !wait_for(&r, 30) ? NA_TIMEOUT : r.ret;
    if (rlen)
        *rlen = r.size;
    NA_Op_destroy(cls, sop);
    NA_Op_destroy(cls, rop);
    return ret;
}

static na_return_t rma(int put, na_mem_handle_t *l, na_mem_handle_t *rem, size_t off,
                       na_addr_t *srv)
{
    struct done d = {0};
    na_op_id_t *op = NA_Op_create(cls, 0);
    na_return_t ret =
        put ? NA_Put(cls, ctx, mpitest_cb, &d, l, 0, rem, off, BUF_SIZE, srv, 0, op)
            : NA_Get(cls, ctx, mpitest_cb, &d, l, 0, rem, off, BUF_SIZE, srv, 0, op);
    if (ret == NA_SUCCESS)
        ret = !wait_for(&d, 60) ? NA_TIMEOUT : d.ret;
    NA_Op_destroy(cls, op);
    return ret;
}

static int client(const char *addr, int id)
{
    na_addr_t *srv = NULL;
    double t0 = mpitest_now();
    na_return_t r = NA_Addr_lookup(cls, addr, &srv);
    char why[256];
    snprintf(why, sizeof(why), "%s after %.1f s", NA_Error_to_string(r),
             mpitest_now() - t0);
    result("NA_Addr_lookup connects", r == NA_SUCCESS, why);
    if (r != NA_SUCCESS)
        return 1;
    result("server address is not self", !NA_Addr_is_self(cls, srv), "");

    size_t max = NA_Msg_get_max_unexpected_size(cls);
    unsigned char *msg = malloc(max), *reply = malloc(max);
    size_t pl = 1000 + (size_t)id, rlen = 0;
    msg[0] = CMD_HELLO;
    msg[1] = (unsigned char)id;
    fill(msg + 2, pl, id);
    r = rpc(srv, msg, 2 + pl, reply, max, &rlen, 11);
    int ok = r == NA_SUCCESS && reply[0] == 1 && rlen > 1 + pl;
    for (size_t i = 0; ok && i < pl; i++)
        ok = reply[1 + i] == msg[2 + pl - 1 - i];
    result("unexpected message -> expected reply, data verified", ok,
           NA_Error_to_string(r));
    na_mem_handle_t *rem = NULL;
    if (!ok || NA_Mem_handle_deserialize(cls, &rem, reply + 1 + pl, rlen - 1 - pl) !=
                   NA_SUCCESS) {
        result("deserialize the server's memory handle", 0, "");
        return 1;
    }

    unsigned char *src = malloc(BUF_SIZE), *back = malloc(BUF_SIZE),
                  *exp = malloc(BUF_SIZE);
    fill(src, BUF_SIZE, 100 + id);
    na_mem_handle_t *ls, *lb;
    NA_Mem_handle_create(cls, src, BUF_SIZE, NA_MEM_READWRITE, &ls);
    NA_Mem_handle_create(cls, back, BUF_SIZE, NA_MEM_READWRITE, &lb);
    NA_Mem_register(cls, ls, NA_MEM_TYPE_HOST, 0);
    NA_Mem_register(cls, lb, NA_MEM_TYPE_HOST, 0);
    r = rma(1, ls, rem, (size_t)id * BUF_SIZE, srv);
    result("NA_Put of 1 chunk+4321 B across the intercommunicator", r == NA_SUCCESS,
           NA_Error_to_string(r));
    msg[0] = CMD_CHECK;
    r = rpc(srv, msg, 2, reply, max, NULL, 12);
    result("server verified the put data", r == NA_SUCCESS && reply[0] == 1,
           NA_Error_to_string(r));
    memset(back, 0, BUF_SIZE);
    r = rma(0, lb, rem, (size_t)id * BUF_SIZE, srv);
    fill(exp, BUF_SIZE, 200 + id);
    result("NA_Get of 1 chunk+4321 B across the intercommunicator, data verified",
           r == NA_SUCCESS && memcmp(exp, back, BUF_SIZE) == 0, NA_Error_to_string(r));

    msg[0] = CMD_BYE;
    r = rpc(srv, msg, 2, reply, max, NULL, 13);
    result("bye", r == NA_SUCCESS && reply[0] == 1, NA_Error_to_string(r));
    NA_Mem_deregister(cls, ls);
    NA_Mem_deregister(cls, lb);
    NA_Mem_handle_free(cls, ls);
    NA_Mem_handle_free(cls, lb);
    NA_Mem_handle_free(cls, rem);
    NA_Addr_free(cls, srv);
    free(src);
    free(back);
    free(exp);
    free(msg);
    free(reply);
    return 0;
}

/* A lookup that gives up (HGX_MPI_CONNECT_TIMEOUT_MS=1) while its connect
 * still runs, then a retry: the abandoned connection must be closed, not left
 * for the server to pair with, and the retry must work as a fresh client. */
static int retry_client(const char *addr, int id)
{
    na_addr_t *srv = NULL;
    setenv("HGX_MPI_CONNECT_TIMEOUT_MS", "1", 1);
    na_return_t r = NA_Addr_lookup(cls, addr, &srv);
    unsetenv("HGX_MPI_CONNECT_TIMEOUT_MS");
    result("lookup bounded at 1 ms gives up with NA_ADDRNOTAVAIL", r == NA_ADDRNOTAVAIL,
           NA_Error_to_string(r));
    if (r == NA_SUCCESS)
        NA_Addr_free(cls, srv);
    return client(addr, id);
}

static int bogus(void)
{
    na_addr_t *a = NULL;
    double t0 = mpitest_now();
    na_return_t r = NA_Addr_lookup(cls, "mpi+dynamic://not%20a%20port", &a);
    double t = mpitest_now() - t0;
    char why[128];
    snprintf(why, sizeof(why), "%s after %.1f s", NA_Error_to_string(r), t);
    result("lookup of an unknown service name fails, bounded",
           r == NA_ADDRNOTAVAIL && t < 30, why);
    r = NA_Addr_lookup(cls, "mpi+dynamic://bad%zzescape", &a);
    result("malformed %-escape refused", r == NA_INVALID_ARG, NA_Error_to_string(r));
    return 0;
}

/* The application's error handlers (fatal by default, never set here) must
 * be as they were: hgx may change them only around its own port and name
 * calls. */
static void check_app_errhandlers(void)
{
    MPI_Errhandler w = MPI_ERRHANDLER_NULL, s = MPI_ERRHANDLER_NULL;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &w);
    MPI_Comm_get_errhandler(MPI_COMM_SELF, &s);
    result("MPI_COMM_WORLD and MPI_COMM_SELF keep MPI_ERRORS_ARE_FATAL",
           w == MPI_ERRORS_ARE_FATAL && s == MPI_ERRORS_ARE_FATAL, "");
    MPI_Errhandler_free(&w);
    MPI_Errhandler_free(&s);
}

/* Start MPI for the role; returns the role without its "single-" prefix. */
static const char *init_mpi(int *argc, char ***argv)
{
    int provided = 0;
    if (strncmp(role, "single-", 7) != 0) {
        MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
        return role;
    }
    MPI_Init(argc, argv);
    MPI_Query_thread(&provided);
    char why[64];
    snprintf(why, sizeof(why), "level %d", provided);
    result("plain MPI_Init: thread level below MPI_THREAD_MULTIPLE",
           provided < MPI_THREAD_MULTIPLE, why);
    return role + 7;
}

/* Below MPI_THREAD_MULTIPLE a listener cannot run its acceptor thread. */
static int refused_listener(void)
{
    cls = NA_Initialize("mpi+dynamic", true);
    result("listening NA_Initialize(\"mpi+dynamic\") below MPI_THREAD_MULTIPLE fails",
           cls == NULL, "");
    if (cls)
        NA_Finalize(cls);
    check_app_errhandlers();
    MPI_Finalize();
    printf("[  PASSED  ] %d [  FAILED  ] %d (%s)\n", passes, failures, role);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: %s server FILE N | [single-]client ADDR ID | bogus | "
                "unsupported | single-server\n",
                argv[0]);
        return 2;
    }
    role = argv[1];
    const char *mode = init_mpi(&argc, &argv);
    if (strcmp(role, "single-server") == 0)
        return refused_listener();
    if (strcmp(role, "unsupported") == 0) {
        cls = NA_Initialize("mpi+dynamic", true);
        result("listening NA_Initialize(\"mpi+dynamic\") fails", cls == NULL, "");
        cls = NA_Initialize("mpi+dynamic", false);
        result("client NA_Initialize(\"mpi+dynamic\") fails", cls == NULL, "");
        cls = NA_Initialize("mpi+static", false);
        na_addr_t *a = NULL;
        na_return_t r =
            cls ? NA_Addr_lookup(cls, "mpi+dynamic://1.0%3A1", &a) : NA_SUCCESS;
        result("mpi+dynamic lookup fails with NA_PROTONOSUPPORT", r == NA_PROTONOSUPPORT,
               NA_Error_to_string(r));
        if (cls)
            NA_Finalize(cls);
        check_app_errhandlers();
        MPI_Finalize();
        printf("[  PASSED  ] %d [  FAILED  ] %d\n", passes, failures);
        return failures ? 1 : 0;
    }
    int listen = strcmp(role, "server") == 0;
    cls = NA_Initialize("mpi+dynamic", listen);
    result("NA_Initialize(\"mpi+dynamic\")", cls != NULL, "");
    if (!cls) {
        MPI_Finalize();
        return 1;
    }
    ctx = NA_Context_create(cls);
    if (listen && argc >= 4)
        server(argv[2], atoi(argv[3]));
    else if (strcmp(mode, "client") == 0 && argc >= 4)
        client(argv[2], atoi(argv[3]));
    else if (strcmp(role, "retry-client") == 0 && argc >= 4)
        retry_client(argv[2], atoi(argv[3]));
    else if (strcmp(role, "bogus") == 0)
        bogus();
    else
        result("arguments", 0, "bad role or arguments");
    check_app_errhandlers();
    NA_Context_destroy(cls, ctx);
    result("NA_Finalize", NA_Finalize(cls) == NA_SUCCESS, "");
    check_app_errhandlers();
    MPI_Finalize();
    printf("[  PASSED  ] %d [  FAILED  ] %d (%s)\n", passes, failures, role);
    return failures ? 1 : 0;
}
