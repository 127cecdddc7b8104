/*
 * hg_hello: the smallest Mercury RPC program, written against the public
 * Mercury headers only.
 *
 * One-line demo from the build tree (forks a server and a client on ofi+tcp):
 *     ./examples/hg_hello
 *
 * Or by hand, in two shells:
 *     ./examples/hg_hello server ofi+tcp 3     # prints its address, serves 3 calls
 *     ./examples/hg_hello client ofi+tcp://127.0.0.1:PORT Alice
 *     ./examples/hg_hello stop   ofi+tcp://127.0.0.1:PORT
 *
 * The server answers "hello" RPCs with a greeting and exits after N calls
 * (0 = no limit, the default) or when a "stop" RPC arrives.
 */
#define _POSIX_C_SOURCE 200809L

#include <mercury.h>
#include <mercury_macros.h>
#include <mercury_proc_string.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

MERCURY_GEN_PROC(hello_in_t, ((hg_const_string_t)(name)))
MERCURY_GEN_PROC(hello_out_t, ((hg_const_string_t)(greeting))((uint32_t)(count)))

#define CALL_TIMEOUT_MS 10000 /* a client gives up on a call after this long */

struct server_state {
    unsigned long served;    /* hello calls answered */
    unsigned long max_calls; /* stop after this many (0: no limit) */
    int stop;                /* set by the stop RPC or the call limit */
    int responses_pending;   /* HG_Respond calls whose callback has not run */
};

static struct server_state server;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Progress and trigger until *flag is set or timeout_ms passes. */
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

/* ------------------------------------------------------------ server side */

static hg_return_t respond_done(const struct hg_cb_info *info)
{
    if (info->ret != HG_SUCCESS)
        fprintf(stderr, "hg_hello server: response failed: %s\n",
                HG_Error_to_string(info->ret));
    server.responses_pending--;
    HG_Destroy(info->info.respond.handle);
    return HG_SUCCESS;
}

static hg_return_t hello_handler(hg_handle_t handle)
{
    hello_in_t in;
    hello_out_t out;
    char greeting[256];
    hg_return_t ret = HG_Get_input(handle, &in);

    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_hello server: bad input: %s\n", HG_Error_to_string(ret));
        HG_Destroy(handle);
        return ret;
    }
    server.served++;
    snprintf(greeting, sizeof greeting, "Hello, %s!", in.name ? in.name : "(nobody)");
    printf("hg_hello server: call %lu from \"%s\"\n", server.served,
           in.name ? in.name : "");
    fflush(stdout);
    HG_Free_input(handle, &in);

    out.greeting = greeting; /* encoded by HG_Respond before it returns */
    out.count = (uint32_t)server.served;
    server.responses_pending++;
    ret = HG_Respond(handle, respond_done, NULL, &out);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_hello server: HG_Respond: %s\n", HG_Error_to_string(ret));
        server.responses_pending--;
        HG_Destroy(handle);
    }
    if (server.max_calls && server.served >= server.max_calls)
        server.stop = 1;
    return ret;
}

static hg_return_t stop_handler(hg_handle_t handle)
{
    printf("hg_hello server: stop requested\n");
    fflush(stdout);
    server.stop = 1;
    server.responses_pending++;
    hg_return_t ret = HG_Respond(handle, respond_done, NULL, NULL);
    if (ret != HG_SUCCESS) {
        server.responses_pending--;
        HG_Destroy(handle);
    }
    return ret;
}

/* Serve until stopped. The listening address goes to addr_fd when >= 0
 * (fork demo), else to stdout. */
static int run_server(const char *info, unsigned long max_calls, int addr_fd)
{
    hg_class_t *cls = NULL;
    hg_context_t *ctx = NULL;
    hg_addr_t self = HG_ADDR_NULL;
    char addr_str[256];
    hg_size_t addr_len = sizeof addr_str;
    int rc = 1;

    memset(&server, 0, sizeof server);
    server.max_calls = max_calls;

    cls = HG_Init(info, HG_TRUE);
    if (!cls) {
        fprintf(stderr, "hg_hello server: HG_Init(\"%s\") failed\n", info);
        goto out;
    }
    ctx = HG_Context_create(cls);
    if (!ctx) {
        fprintf(stderr, "hg_hello server: HG_Context_create failed\n");
        goto out;
    }
    if (MERCURY_REGISTER(cls, "hello", hello_in_t, hello_out_t, hello_handler) == 0 ||
        HG_Register_name(cls, "stop", NULL, NULL, stop_handler) == 0) {
        fprintf(stderr, "hg_hello server: RPC registration failed\n");
        goto out;
    }
    if (HG_Addr_self(cls, &self) != HG_SUCCESS ||
        HG_Addr_to_string(cls, addr_str, &addr_len, self) != HG_SUCCESS) {
        fprintf(stderr, "hg_hello server: cannot get own address\n");
        goto out;
    }
    if (addr_fd >= 0) {
        size_t len = strlen(addr_str) + 1;
        if (write(addr_fd, addr_str, len) != (ssize_t)len) {
            perror("hg_hello server: write address");
            goto out;
        }
        close(addr_fd);
        addr_fd = -1;
    } else {
        printf("hg_hello server listening at %s\n", addr_str);
        fflush(stdout);
    }

    while (!server.stop || server.responses_pending > 0) {
        unsigned int n = 0;
        hg_return_t ret = HG_Progress(ctx, 100);
        if (ret != HG_SUCCESS && ret != HG_TIMEOUT) {
            fprintf(stderr, "hg_hello server: HG_Progress: %s\n",
                    HG_Error_to_string(ret));
            goto out;
        }
        do {
            ret = HG_Trigger(ctx, 0, 16, &n);
        } while (ret == HG_SUCCESS && n > 0);
    }
    printf("hg_hello server: served %lu call(s), exiting\n", server.served);
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

/* "ofi+tcp://1.2.3.4:5" -> "ofi+tcp": the client's info string ("ofi+tcp://127.0.0.1"
 * for a server on loopback). */
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

/* Send one hello (name != NULL) or a stop (name == NULL) to addr_str. */
static int run_client(const char *addr_str, const char *name)
{
    hg_class_t *cls = NULL;
    hg_context_t *ctx = NULL;
    hg_addr_t addr = HG_ADDR_NULL;
    hg_handle_t handle = HG_HANDLE_NULL;
    hg_id_t hello_id, stop_id;
    struct call call = {0, HG_SUCCESS};
    char info[64];
    hg_return_t ret;
    int rc = 1;

    if (info_from_addr(addr_str, info, sizeof info) != 0) {
        fprintf(stderr, "hg_hello client: bad address \"%s\"\n", addr_str);
        return 1;
    }
    cls = HG_Init(info, HG_FALSE);
    if (!cls) {
        fprintf(stderr, "hg_hello client: HG_Init(\"%s\") failed\n", info);
        goto out;
    }
    ctx = HG_Context_create(cls);
    if (!ctx) {
        fprintf(stderr, "hg_hello client: HG_Context_create failed\n");
        goto out;
    }
    hello_id = MERCURY_REGISTER(cls, "hello", hello_in_t, hello_out_t, NULL);
    stop_id = HG_Register_name(cls, "stop", NULL, NULL, NULL);
    if (hello_id == 0 || stop_id == 0) {
        fprintf(stderr, "hg_hello client: RPC registration failed\n");
        goto out;
    }
    ret = HG_Addr_lookup2(cls, addr_str, &addr);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_hello client: lookup of %s: %s\n", addr_str,
                HG_Error_to_string(ret));
        goto out;
    }
    ret = HG_Create(ctx, addr, name ? hello_id : stop_id, &handle);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_hello client: HG_Create: %s\n", HG_Error_to_string(ret));
        goto out;
    }

    if (name) {
        hello_in_t in = {.name = name};
        ret = HG_Forward(handle, forward_done, &call, &in);
    } else {
        ret = HG_Forward(handle, forward_done, &call, NULL);
    }
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_hello client: HG_Forward: %s\n", HG_Error_to_string(ret));
        goto out;
    }
    ret = progress_until(ctx, &call.done, CALL_TIMEOUT_MS);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_hello client: no answer: %s\n", HG_Error_to_string(ret));
        HG_Cancel(handle);
        progress_until(ctx, &call.done, 1000);
        goto out;
    }
    if (call.ret != HG_SUCCESS) {
        fprintf(stderr, "hg_hello client: call failed: %s\n",
                HG_Error_to_string(call.ret));
        goto out;
    }

    if (name) {
        hello_out_t out;
        ret = HG_Get_output(handle, &out);
        if (ret != HG_SUCCESS) {
            fprintf(stderr, "hg_hello client: HG_Get_output: %s\n",
                    HG_Error_to_string(ret));
            goto out;
        }
        printf("hg_hello client: server says \"%s\" (call %u)\n",
               out.greeting ? out.greeting : "", out.count);
        HG_Free_output(handle, &out);
    } else {
        printf("hg_hello client: server stopped\n");
    }
    rc = 0;
out:
    if (handle != HG_HANDLE_NULL)
        HG_Destroy(handle);
    if (addr != HG_ADDR_NULL)
        HG_Addr_free(cls, addr);
    if (ctx)
        HG_Context_destroy(ctx);
    if (cls)
        HG_Finalize(cls);
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

static int run_demo(void)
{
    const char *info = "ofi+tcp://127.0.0.1"; /* the demo runs on this host */
    char addr[256];
    int fds[2], status = 0, rc;
    pid_t pid;

    if (pipe(fds) != 0) {
        perror("hg_hello: pipe");
        return 1;
    }
    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        perror("hg_hello: fork");
        return 1;
    }
    if (pid == 0) {
        close(fds[0]);
        _exit(run_server(info, 0, fds[1]));
    }
    close(fds[1]);
    rc = read_address(fds[0], addr, sizeof addr);
    close(fds[0]);
    if (rc != 0) {
        fprintf(stderr, "hg_hello: server did not start\n");
        waitpid(pid, &status, 0);
        return 1;
    }
    printf("hg_hello: server (pid %ld) listening at %s\n", (long)pid, addr);
    fflush(stdout);

    rc = run_client(addr, "world");
    if (run_client(addr, NULL) != 0)
        rc = 1;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "hg_hello: server exited abnormally\n");
        rc = 1;
    }
    printf("hg_hello: %s\n", rc == 0 ? "OK" : "FAILED");
    return rc;
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s                        fork a server and a client on ofi+tcp\n"
            "       %s server [INFO [N]]      serve (default ofi+tcp) until N calls or a "
            "stop\n"
            "       %s client ADDR [NAME]     say hello to the server at ADDR\n"
            "       %s stop ADDR              ask the server at ADDR to exit\n",
            prog, prog, prog, prog);
}

int main(int argc, char *argv[])
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep server and client lines in order */
    if (argc == 1)
        return run_demo();
    if (strcmp(argv[1], "server") == 0 && argc <= 4) {
        unsigned long n = 0;
        if (argc == 4) {
            char *end;
            n = strtoul(argv[3], &end, 10);
            if (*end != '\0') {
                usage(argv[0]);
                return 2;
            }
        }
        return run_server(argc >= 3 ? argv[2] : "ofi+tcp", n, -1);
    }
    if (strcmp(argv[1], "client") == 0 && (argc == 3 || argc == 4))
        return run_client(argv[2], argc == 4 ? argv[3] : "world");
    if (strcmp(argv[1], "stop") == 0 && argc == 3)
        return run_client(argv[2], NULL);
    usage(argv[0]);
    return 2;
}
