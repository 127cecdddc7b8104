/*
 * na_pingpong.c -- NA ping-pong between two processes on one machine.
 *
 *   na_pingpong [INFO] [ITERATIONS]      (default: ofi+tcp 2000)
 *
 * Forks a server that echoes unexpected messages back as expected messages,
 * then prints round-trip latency per message size and put bandwidth.
 */
#include <na.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct done {
    int count;
    na_return_t ret;
    size_t size;
    na_addr_t *source;
};

static void on_done(const struct na_cb_info *info)
{
    struct done *d = info->arg;
    d->count++;
    d->ret = info->ret;
    if (info->type == NA_CB_RECV_UNEXPECTED) {
        d->size = info->info.recv_unexpected.actual_buf_size;
        d->source = info->info.recv_unexpected.source;
    }
}

static int wait_done(na_class_t *cls, na_context_t *ctx, struct done *d, int n)
{
    while (d->count < n) {
        NA_Trigger(ctx, 16, NULL);
        if (d->count >= n)
            break;
        if (NA_Progress(cls, ctx, 10000) == NA_TIMEOUT && d->count < n)
            return -1;
    }
    return d->ret == NA_SUCCESS ? 0 : -1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Echo every unexpected message back to its sender; a 1-byte message ends it.
 * A 2-byte message asks for the serialized handle of a 4 MiB writable region. */
static int serve(const char *info, int pipe_fd)
{
    na_class_t *cls = NA_Initialize(info, true);
    if (!cls)
        return 1;
    na_context_t *ctx = NA_Context_create(cls);
    na_addr_t *self;
    char addr[256];
    size_t len = sizeof(addr);
    NA_Addr_self(cls, &self);
    NA_Addr_to_string(cls, addr, &len, self);
    NA_Addr_free(cls, self);
    if (write(pipe_fd, addr, sizeof(addr)) != (ssize_t)sizeof(addr))
        return 1;
    close(pipe_fd);

    size_t h = NA_Msg_get_unexpected_header_size(cls),
           max = NA_Msg_get_max_unexpected_size(cls);
    void *rdata, *sdata;
    char *rbuf = NA_Msg_buf_alloc(cls, max, NA_RECV, &rdata);
    char *sbuf = NA_Msg_buf_alloc(cls, max, NA_SEND, &sdata);
    size_t region_size = 4 << 20;
    char *region = malloc(region_size);
    na_mem_handle_t *mh;
    NA_Mem_handle_create(cls, region, region_size, NA_MEM_READWRITE, &mh);
    NA_Mem_register(cls, mh, NA_MEM_TYPE_HOST, 0);
    na_op_id_t *rop = NA_Op_create(cls, NA_OP_SINGLE),
               *sop = NA_Op_create(cls, NA_OP_SINGLE);
    for (;;) {
        struct done r = {0}, s = {0};
        NA_Msg_recv_unexpected(cls, ctx, on_done, &r, rbuf, max, rdata, rop);
        if (wait_done(cls, ctx, &r, 1) != 0)
            break;
        size_t payload = r.size - h;
        if (payload == 1) {
            NA_Addr_free(cls, r.source);
            break;
        }
        size_t out = payload;
        if (payload == 2) {
            out = NA_Mem_handle_get_serialize_size(cls, mh);
            NA_Mem_handle_serialize(cls, sbuf, out, mh);
        } else {
            memcpy(sbuf, rbuf + h, payload);
        }
        NA_Msg_send_expected(cls, ctx, on_done, &s, sbuf, out, sdata, r.source, 0, 1,
                             sop);
        wait_done(cls, ctx, &s, 1);
        NA_Addr_free(cls, r.source);
    }
    NA_Op_destroy(cls, rop);
    NA_Op_destroy(cls, sop);
    NA_Mem_deregister(cls, mh);
    NA_Mem_handle_free(cls, mh);
    free(region);
    NA_Msg_buf_free(cls, rbuf, rdata);
    NA_Msg_buf_free(cls, sbuf, sdata);
    NA_Context_destroy(cls, ctx);
    return NA_Finalize(cls) == NA_SUCCESS ? 0 : 1;
}

/* One round trip: unexpected send of len payload bytes, expected echo back. */
static int round_trip(na_class_t *cls, na_context_t *ctx, na_addr_t *srv, char *sbuf,
                      void *sdata, char *rbuf, void *rdata, size_t h, size_t len,
                      size_t rlen, na_op_id_t *sop, na_op_id_t *rop)
{
    struct done r = {0}, s = {0};
    NA_Msg_recv_expected(cls, ctx, on_done, &r, rbuf, rlen, rdata, srv, 0, 1, rop);
    NA_Msg_send_unexpected(cls, ctx, on_done, &s, sbuf, h + len, sdata, srv, 0, 0, sop);
    if (wait_done(cls, ctx, &s, 1) || wait_done(cls, ctx, &r, 1))
        return -1;
    return (int)r.size;
}

int main(int argc, char **argv)
{
    const char *info = argc > 1 ? argv[1] : "ofi+tcp://127.0.0.1";
    int iters = argc > 2 ? atoi(argv[2]) : 2000;
    int fds[2];
    char addr[256];

    if (pipe(fds) != 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        _exit(serve(info, fds[1]));
    }
    close(fds[1]);
    if (read(fds[0], addr, sizeof(addr)) != (ssize_t)sizeof(addr)) {
        fprintf(stderr, "server did not start on %s\n", info);
        return 1;
    }
    na_class_t *cls = NA_Initialize(info, false);
    na_context_t *ctx = cls ? NA_Context_create(cls) : NULL;
    na_addr_t *srv = NULL;
    if (!ctx || NA_Addr_lookup(cls, addr, &srv) != NA_SUCCESS) {
        fprintf(stderr, "cannot reach server %s\n", addr);
        return 1;
    }
    size_t h = NA_Msg_get_unexpected_header_size(cls),
           max = NA_Msg_get_max_unexpected_size(cls);
    size_t emax = NA_Msg_get_max_expected_size(cls);
    void *sdata, *rdata;
    char *sbuf = NA_Msg_buf_alloc(cls, max, NA_SEND, &sdata);
    char *rbuf = NA_Msg_buf_alloc(cls, emax, NA_RECV, &rdata);
    na_op_id_t *sop = NA_Op_create(cls, NA_OP_SINGLE),
               *rop = NA_Op_create(cls, NA_OP_SINGLE);
    NA_Msg_init_unexpected(cls, sbuf, max);
    memset(sbuf + h, 'x', max - h);

    printf("# NA ping-pong over %s, server %s, %d iterations per size\n", info, addr,
           iters);
    printf("%10s %14s %14s\n", "bytes", "round trip us", "msg/s");
    size_t top = max - h < emax ? max - h : emax;
    for (size_t len = 8; len <= top; len *= 2) {
        round_trip(cls, ctx, srv, sbuf, sdata, rbuf, rdata, h, len, emax, sop, rop);
        double t0 = now();
        for (int i = 0; i < iters; i++)
            if (round_trip(cls, ctx, srv, sbuf, sdata, rbuf, rdata, h, len, emax, sop,
                           rop) < 0) {
                fprintf(stderr, "round trip failed\n");
                return 1;
            }
        double dt = (now() - t0) / iters;
        printf("%10zu %14.2f %14.0f\n", len, dt * 1e6, 1.0 / dt);
        if (len < top && len * 2 > top)
            len = top / 2;
    }

    /* Ask for the server's region, then time puts into it. */
    int n = round_trip(cls, ctx, srv, sbuf, sdata, rbuf, rdata, h, 2, emax, sop, rop);
    na_mem_handle_t *remote = NULL, *local = NULL;
    size_t region = 4 << 20;
    char *data = malloc(region);
    memset(data, 'y', region);
    if (n <= 0 ||
        NA_Mem_handle_deserialize(cls, &remote, rbuf, (size_t)n) != NA_SUCCESS) {
        fprintf(stderr, "no remote region\n");
        return 1;
    }
    NA_Mem_handle_create(cls, data, region, NA_MEM_READWRITE, &local);
    NA_Mem_register(cls, local, NA_MEM_TYPE_HOST, 0);
    printf("%10s %14s %14s\n", "put bytes", "us per put", "MB/s");
    for (size_t len = 64 << 10; len <= region; len *= 4) {
        int reps = (int)((64 << 20) / len);
        double t0 = now();
        for (int i = 0; i < reps; i++) {
            struct done d = {0};
            NA_Put(cls, ctx, on_done, &d, local, 0, remote, 0, len, srv, 0, sop);
            if (wait_done(cls, ctx, &d, 1) != 0) {
                fprintf(stderr, "put failed: %s\n", NA_Error_to_string(d.ret));
                return 1;
            }
        }
        double dt = (now() - t0) / reps;
        printf("%10zu %14.1f %14.1f\n", len, dt * 1e6, len / dt / 1e6);
    }
    struct done q = {0};
    NA_Msg_send_unexpected(cls, ctx, on_done, &q, sbuf, h + 1, sdata, srv, 0, 0, sop);
    wait_done(cls, ctx, &q, 1);
    int status = 0;
    waitpid(pid, &status, 0);
    NA_Mem_deregister(cls, local);
    NA_Mem_handle_free(cls, local);
    NA_Mem_handle_free(cls, remote);
    free(data);
    NA_Op_destroy(cls, sop);
    NA_Op_destroy(cls, rop);
    NA_Msg_buf_free(cls, sbuf, sdata);
    NA_Msg_buf_free(cls, rbuf, rdata);
    NA_Addr_free(cls, srv);
    NA_Context_destroy(cls, ctx);
    NA_Finalize(cls);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
