/*
 * mpi_dynamic_service.c -- a service reached across separate mpirun jobs
 * (mpi+dynamic: MPI_Open_port / MPI_Comm_accept / MPI_Comm_connect).
 *
 *   mpi_dynamic_service server [N]        listen, print the address, answer N
 *                                          requests (default 1), then exit
 *   mpi_dynamic_service client ADDR TEXT  send TEXT, print the server's reply
 *
 * ADDR is the printed "mpi+dynamic://PORT" or "mpi+dynamic://hgx" (the service
 * name published with an ompi-server; HGX_MPI_SERVICE changes it). Under Open
 * MPI, start the server with tools/ompi-dynamic-run.sh, then run the client
 * with the same ompi-server:
 *   mpirun --ompi-server file:URIFILE -np 1 ./mpi_dynamic_service client ADDR hello
 */
#include "na.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static na_class_t *cls;
static na_context_t *ctx;

struct done {
    volatile int flag;
    na_return_t ret;
    size_t size;
    na_addr_t *src;
    na_tag_t tag;
};

static void cb(const struct na_cb_info *info)
{
    struct done *d = info->arg;
    d->ret = info->ret;
    if (info->type == NA_CB_RECV_UNEXPECTED) {
        d->size = info->info.recv_unexpected.actual_buf_size;
        d->src = info->info.recv_unexpected.source;
        d->tag = info->info.recv_unexpected.tag;
    } else if (info->type == NA_CB_RECV_EXPECTED) {
        d->size = info->info.recv_expected.actual_buf_size;
    }
    d->flag = 1;
}

static na_return_t wait_for(struct done *d)
{
    while (!d->flag) {
        NA_Progress(cls, ctx, 100);
        NA_Trigger(ctx, 16, NULL);
    }
    return d->ret;
}

static int serve(int n)
{
    na_addr_t *self;
    char addr[4096];
    size_t len = sizeof(addr);
    NA_Addr_self(cls, &self);
    NA_Addr_to_string(cls, addr, &len, self);
    NA_Addr_free(cls, self);
    printf("%s\n", addr);
    fflush(stdout);
    size_t max = NA_Msg_get_max_unexpected_size(cls);
    char *in = malloc(max), *out = malloc(max);
    na_op_id_t *rop = NA_Op_create(cls, 0), *sop = NA_Op_create(cls, 0);
    for (int i = 0; i < n; i++) {
        struct done r = {0}, s = {0};
        NA_Msg_recv_unexpected(cls, ctx, cb, &r, in, max, NULL, rop);
        if (wait_for(&r) != NA_SUCCESS)
            break;
        for (size_t k = 0; k < r.size; k++) /* the service: upper-case the text */
            out[k] = (char)toupper((unsigned char)in[k]);
        NA_Msg_send_expected(cls, ctx, cb, &s, out, r.size, NULL, r.src, 0, r.tag, sop);
        wait_for(&s);
        NA_Addr_free(cls, r.src);
        fprintf(stderr, "served request %d (%zu bytes)\n", i + 1, r.size);
    }
    NA_Op_destroy(cls, rop);
    NA_Op_destroy(cls, sop);
    free(in);
    free(out);
    return 0;
}

static int ask(const char *addr, const char *text)
{
    na_addr_t *srv;
    na_return_t ret = NA_Addr_lookup(cls, addr, &srv);
    if (ret != NA_SUCCESS) {
        fprintf(stderr, "lookup of %s failed: %s\n", addr, NA_Error_to_string(ret));
        return 1;
    }
    size_t n = strlen(text) + 1, max = NA_Msg_get_max_unexpected_size(cls);
    if (n > max)
        n = max;
    char *reply = malloc(max);
    struct done s = {0}, r = {0};
    na_op_id_t *sop = NA_Op_create(cls, 0), *rop = NA_Op_create(cls, 0);
    NA_Msg_recv_expected(cls, ctx, cb, &r, reply, max, NULL, srv, 0, 1, rop);
    NA_Msg_send_unexpected(cls, ctx, cb, &s, text, n, NULL, srv, 0, 1, sop);
    wait_for(&s);
    ret = wait_for(&r);
    if (ret == NA_SUCCESS) {
        reply[r.size ? r.size - 1 : 0] = '\0';
        printf("%s\n", reply);
    }
    NA_Op_destroy(cls, sop);
    NA_Op_destroy(cls, rop);
    NA_Addr_free(cls, srv);
    free(reply);
    return ret == NA_SUCCESS ? 0 : 1;
}

int main(int argc, char **argv)
{
    int server = argc >= 2 && strcmp(argv[1], "server") == 0;
    if (!server && !(argc >= 4 && strcmp(argv[1], "client") == 0)) {
        fprintf(stderr, "usage: %s server [N] | client ADDR TEXT\n", argv[0]);
        return 2;
    }
    cls = NA_Initialize("mpi+dynamic", server); /* initializes and finalizes MPI */
    if (!cls)
        return 1; /* the log line says why (e.g. MPICH ch4:ucx has no MPI_Open_port) */
    ctx = NA_Context_create(cls);
    int rc = server ? serve(argc >= 3 ? atoi(argv[2]) : 1) : ask(argv[2], argv[3]);
    NA_Context_destroy(cls, ctx);
    NA_Finalize(cls);
    return rc;
}
