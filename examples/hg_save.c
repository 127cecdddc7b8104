/*
 * hg_save: copy a file to a server with a "save" RPC and a bulk pull.
 *
 * One-line demo from the build tree (forks a server and a client on ofi+tcp,
 * saves a 3 MiB temporary file and checks the copy byte for byte):
 *     ./examples/hg_save
 *
 * Or by hand, in two shells:
 *     ./examples/hg_save server OUTDIR [INFO]          # prints its address
 *     ./examples/hg_save client ofi+tcp://127.0.0.1:PORT FILE
 *     ./examples/hg_save stop   ofi+tcp://127.0.0.1:PORT
 *
 * The client exposes the file's bytes read-only with HG_Bulk_create and sends
 * {name, size, bulk}; the server pulls the bytes with HG_Bulk_transfer
 * (HG_BULK_PULL), writes OUTDIR/name and answers with the byte count and a
 * 64-bit FNV-1a hash of what it wrote, which the client checks.
 */
#define _POSIX_C_SOURCE 200809L

#include <mercury.h>
#include <mercury_bulk.h>
#include <mercury_macros.h>
#include <mercury_proc_bulk.h>
#include <mercury_proc_string.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

MERCURY_GEN_PROC(save_in_t,
                 ((hg_const_string_t)(name))((uint64_t)(size))((hg_bulk_t)(bulk)))
MERCURY_GEN_PROC(save_out_t, ((int32_t)(err))((uint64_t)(written))((uint64_t)(hash)))

#define CALL_TIMEOUT_MS 30000              /* a client gives up after this long */
#define MAX_FILE_SIZE (1024ull << 20)      /* the server refuses larger files */
#define DEMO_FILE_SIZE ((3u << 20) + 4321) /* bytes in the demo's temp file */

static uint64_t fnv1a64(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static hg_return_t progress_until(hg_context_t *ctx, const int *flag,
                                  unsigned int timeout_ms)
{
    uint64_t deadline = now_ms() + timeout_ms;
    while (!*flag) {
        unsigned int n = 0;
        hg_return_t ret;
        do {
            ret = HG_Trigger(ctx, 0, 16, &n);
        } while (ret == HG_SUCCESS && n > 0 && !*flag);
        if (*flag)
            break;
        if (now_ms() >= deadline)
            return HG_TIMEOUT;
        ret = HG_Progress(ctx, 100);
        if (ret != HG_SUCCESS && ret != HG_TIMEOUT)
            return ret;
    }
    return HG_SUCCESS;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Read a whole regular file into a malloc'ed buffer (at least 1 byte). */
static unsigned char *read_file(const char *path, size_t *size)
{
    unsigned char *buf = NULL;
    struct stat st;
    size_t got = 0;
    int fd = open(path, O_RDONLY);

    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "hg_save: cannot read %s: %s\n", path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "hg_save: %s is not a regular file\n", path);
        goto fail;
    }
    buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
    if (!buf)
        goto fail;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "hg_save: short read on %s\n", path);
            goto fail;
        }
        got += (size_t)n;
    }
    close(fd);
    *size = got;
    return buf;
fail:
    free(buf);
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* ------------------------------------------------------------ server side */

static struct {
    const char *outdir;
    int stop;
    int busy; /* saves and responses still in flight */
    unsigned long saved;
} server;

/* One save in progress: lives from the handler to the respond callback. */
struct save_op {
    hg_handle_t handle;
    save_in_t in;
    int have_input;
    unsigned char *buf;
    hg_bulk_t local;
    save_out_t out;
};

static void save_op_free(struct save_op *op)
{
    if (op->local != HG_BULK_NULL)
        HG_Bulk_free(op->local);
    if (op->have_input)
        HG_Free_input(op->handle, &op->in);
    HG_Destroy(op->handle);
    free(op->buf);
    free(op);
    server.busy--;
}

static hg_return_t save_responded(const struct hg_cb_info *info)
{
    if (info->ret != HG_SUCCESS)
        fprintf(stderr, "hg_save server: response failed: %s\n",
                HG_Error_to_string(info->ret));
    save_op_free(info->arg);
    return HG_SUCCESS;
}

static void save_respond(struct save_op *op, int32_t err)
{
    op->out.err = err;
    hg_return_t ret = HG_Respond(op->handle, save_responded, op, &op->out);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_save server: HG_Respond: %s\n", HG_Error_to_string(ret));
        save_op_free(op);
    }
}

/* Plain file names only: no directories, no "..", no hidden files. */
static int name_ok(const char *name)
{
    return name && name[0] != '\0' && name[0] != '.' && !strchr(name, '/') &&
           strlen(name) < 200;
}

static void save_write(struct save_op *op)
{
    char path[4096];
    size_t size = (size_t)op->in.size;
    int fd;

    snprintf(path, sizeof path, "%s/%s", server.outdir, op->in.name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write_all(fd, op->buf, size) != 0) {
        int err = errno ? errno : EIO;
        fprintf(stderr, "hg_save server: writing %s: %s\n", path, strerror(err));
        if (fd >= 0)
            close(fd);
        save_respond(op, err);
        return;
    }
    if (close(fd) != 0) {
        save_respond(op, errno);
        return;
    }
    op->out.written = size;
    op->out.hash = fnv1a64(op->buf, size);
    server.saved++;
    printf("hg_save server: wrote %zu bytes to %s\n", size, path);
    fflush(stdout);
    save_respond(op, 0);
}

static hg_return_t save_pulled(const struct hg_cb_info *info)
{
    struct save_op *op = info->arg;
    if (info->ret != HG_SUCCESS) {
        fprintf(stderr, "hg_save server: bulk pull failed: %s\n",
                HG_Error_to_string(info->ret));
        save_respond(op, EIO);
        return HG_SUCCESS;
    }
    save_write(op);
    return HG_SUCCESS;
}

static hg_return_t save_handler(hg_handle_t handle)
{
    struct save_op *op = calloc(1, sizeof *op);
    const struct hg_info *hi = HG_Get_info(handle);
    hg_return_t ret;

    if (!op) {
        HG_Destroy(handle);
        return HG_NOMEM;
    }
    server.busy++;
    op->handle = handle;
    ret = HG_Get_input(handle, &op->in);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_save server: bad input: %s\n", HG_Error_to_string(ret));
        save_respond(op, EPROTO);
        return HG_SUCCESS;
    }
    op->have_input = 1;
    if (!name_ok(op->in.name)) {
        fprintf(stderr, "hg_save server: refusing file name \"%s\"\n",
                op->in.name ? op->in.name : "");
        save_respond(op, EINVAL);
        return HG_SUCCESS;
    }
    if (op->in.size > MAX_FILE_SIZE || op->in.size > HG_Bulk_get_size(op->in.bulk)) {
        fprintf(stderr, "hg_save server: bad size %llu\n",
                (unsigned long long)op->in.size);
        save_respond(op, EFBIG);
        return HG_SUCCESS;
    }
    op->buf = malloc(op->in.size ? (size_t)op->in.size : 1);
    if (!op->buf) {
        save_respond(op, ENOMEM);
        return HG_SUCCESS;
    }
    if (op->in.size == 0) { /* nothing to pull */
        save_write(op);
        return HG_SUCCESS;
    }

    void *ptr = op->buf;
    hg_size_t len = op->in.size;
    ret = HG_Bulk_create(hi->hg_class, 1, &ptr, &len, HG_BULK_WRITE_ONLY, &op->local);
    if (ret == HG_SUCCESS)
        ret =
            HG_Bulk_transfer(hi->context, save_pulled, op, HG_BULK_PULL, hi->addr,
                             op->in.bulk, 0, op->local, 0, op->in.size, HG_OP_ID_IGNORE);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_save server: bulk setup: %s\n", HG_Error_to_string(ret));
        save_respond(op, EIO);
    }
    return HG_SUCCESS;
}

static hg_return_t stop_responded(const struct hg_cb_info *info)
{
    server.busy--;
    HG_Destroy(info->info.respond.handle);
    return HG_SUCCESS;
}

static hg_return_t stop_handler(hg_handle_t handle)
{
    server.stop = 1;
    server.busy++;
    if (HG_Respond(handle, stop_responded, NULL, NULL) != HG_SUCCESS) {
        server.busy--;
        HG_Destroy(handle);
    }
    return HG_SUCCESS;
}

static int run_server(const char *outdir, const char *info, int addr_fd)
{
    hg_class_t *cls = NULL;
    hg_context_t *ctx = NULL;
    hg_addr_t self = HG_ADDR_NULL;
    char addr_str[256];
    hg_size_t addr_len = sizeof addr_str;
    struct stat st;
    int rc = 1;

    memset(&server, 0, sizeof server);
    server.outdir = outdir;
    if (stat(outdir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "hg_save server: %s is not a directory\n", outdir);
        goto out;
    }
    cls = HG_Init(info, HG_TRUE);
    if (!cls) {
        fprintf(stderr, "hg_save server: HG_Init(\"%s\") failed\n", info);
        goto out;
    }
    ctx = HG_Context_create(cls);
    if (!ctx) {
        fprintf(stderr, "hg_save server: HG_Context_create failed\n");
        goto out;
    }
    if (MERCURY_REGISTER(cls, "save", save_in_t, save_out_t, save_handler) == 0 ||
        HG_Register_name(cls, "stop", NULL, NULL, stop_handler) == 0) {
        fprintf(stderr, "hg_save server: RPC registration failed\n");
        goto out;
    }
    if (HG_Addr_self(cls, &self) != HG_SUCCESS ||
        HG_Addr_to_string(cls, addr_str, &addr_len, self) != HG_SUCCESS) {
        fprintf(stderr, "hg_save server: cannot get own address\n");
        goto out;
    }
    if (addr_fd >= 0) {
        size_t len = strlen(addr_str) + 1;
        if (write(addr_fd, addr_str, len) != (ssize_t)len) {
            perror("hg_save server: write address");
            goto out;
        }
        close(addr_fd);
        addr_fd = -1;
    } else {
        printf("hg_save server listening at %s, saving into %s\n", addr_str, outdir);
        fflush(stdout);
    }

    while (!server.stop || server.busy > 0) {
        unsigned int n = 0;
        hg_return_t ret = HG_Progress(ctx, 100);
        if (ret != HG_SUCCESS && ret != HG_TIMEOUT) {
            fprintf(stderr, "hg_save server: HG_Progress: %s\n", HG_Error_to_string(ret));
            goto out;
        }
        do {
            ret = HG_Trigger(ctx, 0, 16, &n);
        } while (ret == HG_SUCCESS && n > 0);
    }
    printf("hg_save server: saved %lu file(s), exiting\n", server.saved);
    fflush(stdout);
    rc = 0;
out:
    if (addr_fd >= 0)
        close(addr_fd);
    if (self != HG_ADDR_NULL)
        HG_Addr_free(cls, self);
    if (ctx)
        HG_Context_destroy(ctx);
    if (cls)
        HG_Finalize(cls);
    return rc;
}

/* ------------------------------------------------------------ client side */

struct call {
    int done;
    hg_return_t ret;
};

static hg_return_t forward_done(const struct hg_cb_info *info)
{
    struct call *call = info->arg;
    call->ret = info->ret;
    call->done = 1;
    return HG_SUCCESS;
}

static int info_from_addr(const char *addr, char *info, size_t size)
{
    const char *sep = strstr(addr, "://");
    size_t len = sep ? (size_t)(sep - addr) : strlen(addr);
    /* A server on loopback: the client binds loopback too (a plain string
     * would take a routable interface). */
    if (sep && (strncmp(sep + 3, "127.", 4) == 0 || strncmp(sep + 3, "[::1]", 5) == 0))
        len = (size_t)(strrchr(addr, ':') - addr);
    if (len == 0 || len >= size)
        return -1;
    memcpy(info, addr, len);
    info[len] = '\0';
    return 0;
}

/* Save path on the server at addr_str, or stop the server when path is NULL. */
static int run_client(const char *addr_str, const char *path)
{
    hg_class_t *cls = NULL;
    hg_context_t *ctx = NULL;
    hg_addr_t addr = HG_ADDR_NULL;
    hg_handle_t handle = HG_HANDLE_NULL;
    hg_bulk_t bulk = HG_BULK_NULL;
    unsigned char *data = NULL;
    size_t size = 0;
    hg_id_t save_id, stop_id;
    struct call call = {0, HG_SUCCESS};
    char info[64];
    hg_return_t ret;
    int rc = 1;

    if (info_from_addr(addr_str, info, sizeof info) != 0) {
        fprintf(stderr, "hg_save client: bad address \"%s\"\n", addr_str);
        return 1;
    }
    if (path && !(data = read_file(path, &size)))
        return 1;
    cls = HG_Init(info, HG_FALSE);
    if (!cls) {
        fprintf(stderr, "hg_save client: HG_Init(\"%s\") failed\n", info);
        goto out;
    }
    ctx = HG_Context_create(cls);
    if (!ctx) {
        fprintf(stderr, "hg_save client: HG_Context_create failed\n");
        goto out;
    }
    save_id = MERCURY_REGISTER(cls, "save", save_in_t, save_out_t, NULL);
    stop_id = HG_Register_name(cls, "stop", NULL, NULL, NULL);
    if (save_id == 0 || stop_id == 0) {
        fprintf(stderr, "hg_save client: RPC registration failed\n");
        goto out;
    }
    ret = HG_Addr_lookup2(cls, addr_str, &addr);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_save client: lookup of %s: %s\n", addr_str,
                HG_Error_to_string(ret));
        goto out;
    }
    ret = HG_Create(ctx, addr, path ? save_id : stop_id, &handle);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_save client: HG_Create: %s\n", HG_Error_to_string(ret));
        goto out;
    }

    if (path) {
        const char *base = strrchr(path, '/');
        void *ptr = data;
        hg_size_t len = size ? size : 1; /* an empty file still gets a 1-byte region */
        save_in_t in;

        ret = HG_Bulk_create(cls, 1, &ptr, &len, HG_BULK_READ_ONLY, &bulk);
        if (ret != HG_SUCCESS) {
            fprintf(stderr, "hg_save client: HG_Bulk_create: %s\n",
                    HG_Error_to_string(ret));
            goto out;
        }
        in.name = base ? base + 1 : path;
        in.size = size;
        in.bulk = bulk;
        ret = HG_Forward(handle, forward_done, &call, &in);
    } else {
        ret = HG_Forward(handle, forward_done, &call, NULL);
    }
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_save client: HG_Forward: %s\n", HG_Error_to_string(ret));
        goto out;
    }
    ret = progress_until(ctx, &call.done, CALL_TIMEOUT_MS);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_save client: no answer: %s\n", HG_Error_to_string(ret));
        HG_Cancel(handle);
        progress_until(ctx, &call.done, 1000);
        goto out;
    }
    if (call.ret != HG_SUCCESS) {
        fprintf(stderr, "hg_save client: call failed: %s\n",
                HG_Error_to_string(call.ret));
        goto out;
    }
    if (!path) {
        printf("hg_save client: server stopped\n");
        rc = 0;
        goto out;
    }

    save_out_t out;
    ret = HG_Get_output(handle, &out);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_save client: HG_Get_output: %s\n", HG_Error_to_string(ret));
        goto out;
    }
    uint64_t hash = fnv1a64(data, size);
    if (out.err != 0)
        fprintf(stderr, "hg_save client: server error: %s\n", strerror(out.err));
    else if (out.written != size || out.hash != hash)
        fprintf(stderr,
                "hg_save client: MISMATCH: sent %zu bytes hash %016llx, server wrote "
                "%llu hash %016llx\n",
                size, (unsigned long long)hash, (unsigned long long)out.written,
                (unsigned long long)out.hash);
    else {
        printf("hg_save client: saved %s: %llu bytes, hash %016llx matches\n", path,
               (unsigned long long)out.written, (unsigned long long)out.hash);
        rc = 0;
    }
    HG_Free_output(handle, &out);
out:
    if (handle != HG_HANDLE_NULL)
        HG_Destroy(handle);
    if (bulk != HG_BULK_NULL)
        HG_Bulk_free(bulk);
    if (addr != HG_ADDR_NULL)
        HG_Addr_free(cls, addr);
    if (ctx)
        HG_Context_destroy(ctx);
    if (cls)
        HG_Finalize(cls);
    free(data);
    return rc;
}

/* ------------------------------------------------------------ fork demo */

static int read_address(int fd, char *buf, size_t size)
{
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        if (memchr(buf, '\0', got))
            return 0;
    }
    return -1;
}

static int files_equal(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    unsigned char *da = read_file(a, &na), *db = read_file(b, &nb);
    int eq = da && db && na == nb && memcmp(da, db, na) == 0;
    free(da);
    free(db);
    return eq;
}

static int run_demo(void)
{
    char dir[] = "/tmp/hg_save.XXXXXX";
    char src[64], outdir[64], copy[96], addr[256];
    unsigned char *data = NULL;
    int fds[2] = {-1, -1}, status = 0, rc = 1, fd;
    pid_t pid = -1;

    if (!mkdtemp(dir)) {
        perror("hg_save: mkdtemp");
        return 1;
    }
    snprintf(src, sizeof src, "%s/demo.bin", dir);
    snprintf(outdir, sizeof outdir, "%s/out", dir);
    snprintf(copy, sizeof copy, "%s/demo.bin", outdir);
    if (mkdir(outdir, 0755) != 0) {
        perror("hg_save: mkdir");
        goto out;
    }
    /* A reproducible pseudo-random file with a size that is not a round number. */
    data = malloc(DEMO_FILE_SIZE);
    if (!data)
        goto out;
    uint32_t x = 12345;
    for (size_t i = 0; i < DEMO_FILE_SIZE; i++) {
        x = x * 1103515245u + 12345u;
        data[i] = (unsigned char)(x >> 16);
    }
    fd = open(src, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write_all(fd, data, DEMO_FILE_SIZE) != 0 || close(fd) != 0) {
        perror("hg_save: writing the demo file");
        goto out;
    }

    if (pipe(fds) != 0) {
        perror("hg_save: pipe");
        goto out;
    }
    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        perror("hg_save: fork");
        goto out;
    }
    if (pid == 0) {
        close(fds[0]);
        _exit(run_server(outdir, "ofi+tcp://127.0.0.1", fds[1]));
    }
    close(fds[1]);
    fds[1] = -1;
    if (read_address(fds[0], addr, sizeof addr) != 0) {
        fprintf(stderr, "hg_save: server did not start\n");
        goto out;
    }
    printf("hg_save: server (pid %ld) listening at %s\n", (long)pid, addr);
    fflush(stdout);

    int client_rc = run_client(addr, src);
    int stop_rc = run_client(addr, NULL);
    if (client_rc == 0 && stop_rc == 0) {
        if (files_equal(src, copy)) {
            printf("hg_save: %s and %s are identical (%u bytes)\n", src, copy,
                   DEMO_FILE_SIZE);
            rc = 0;
        } else {
            fprintf(stderr, "hg_save: the copy differs from the original\n");
        }
    }
out:
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    if (pid > 0) {
        if (rc != 0)
            kill(pid, SIGTERM);
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            fprintf(stderr, "hg_save: server exited abnormally\n");
            rc = 1;
        }
    }
    unlink(copy);
    unlink(src);
    rmdir(outdir);
    rmdir(dir);
    free(data);
    printf("hg_save: %s\n", rc == 0 ? "OK" : "FAILED");
    return rc;
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s                          fork a server and a client on ofi+tcp, "
            "save a temp file\n"
            "       %s server OUTDIR [INFO]     serve (default ofi+tcp), saving files "
            "into OUTDIR\n"
            "       %s client ADDR FILE         save FILE on the server at ADDR\n"
            "       %s stop ADDR                ask the server at ADDR to exit\n",
            prog, prog, prog, prog);
}

int main(int argc, char *argv[])
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep server and client lines in order */
    if (argc == 1)
        return run_demo();
    if (strcmp(argv[1], "server") == 0 && (argc == 3 || argc == 4))
        return run_server(argv[2], argc == 4 ? argv[3] : "ofi+tcp", -1);
    if (strcmp(argv[1], "client") == 0 && argc == 4)
        return run_client(argv[2], argv[3]);
    if (strcmp(argv[1], "stop") == 0 && argc == 3)
        return run_client(argv[2], NULL);
    usage(argv[0]);
    return 2;
}
