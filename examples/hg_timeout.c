/*
 * hg_timeout: forward an RPC with a timeout, cancel it when the timeout
 * passes, then forward again on the same handle with a longer timeout
 * (the "Timeouts and Retries" pattern of Mercury's cancelation notes,
 * built on hg_request from mercury_request.h).
 *
 * One-line demo from the build tree (forks a server and a client on ofi+tcp):
 *     ./examples/hg_timeout
 *
 * Or by hand, in two shells:
 *     ./examples/hg_timeout server [INFO]                 # prints its address
 *     ./examples/hg_timeout client ofi+tcp://127.0.0.1:PORT
 *
 * The server's "slow" handler sleeps for the number of milliseconds it is
 * asked to, then answers with that number. The client asks for 2000 ms with a
 * 500 ms timeout (expects HG_CANCELED), then for 100 ms with a 5000 ms
 * timeout (expects the answer 100, not the late answer to the first call),
 * then stops the server.
 */
#define _POSIX_C_SOURCE 200809L

#include <mercury.h>
#include <mercury_macros.h>
#include <mercury_request.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

MERCURY_GEN_PROC(slow_in_t, ((uint32_t)(sleep_ms)))
MERCURY_GEN_PROC(slow_out_t, ((uint32_t)(slept_ms)))

#define SLOW_SLEEP_MS 2000u   /* first call: the server sleeps this long */
#define SHORT_TIMEOUT_MS 500u /* ... but the client waits only this long */
#define FAST_SLEEP_MS 100u    /* retry: a short sleep */
#define LONG_TIMEOUT_MS 5000u /* ... and a generous timeout */

static void sleep_ms(unsigned int ms)
{
    struct timespec ts = {(time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ------------------------------------------------------------ server side */

static struct {
    int stop;
    int responses_pending;
} server;

static hg_return_t respond_done(const struct hg_cb_info *info)
{
    /* A response to a call the client already canceled may still succeed
     * locally or fail; either way the handle is ours to release. */
    server.responses_pending--;
    HG_Destroy(info->info.respond.handle);
    return HG_SUCCESS;
}

static hg_return_t slow_handler(hg_handle_t handle)
{
    slow_in_t in;
    slow_out_t out;
    hg_return_t ret = HG_Get_input(handle, &in);

    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_timeout server: bad input: %s\n", HG_Error_to_string(ret));
        HG_Destroy(handle);
        return ret;
    }
    unsigned int ms = in.sleep_ms > 10000u ? 10000u : in.sleep_ms;
    HG_Free_input(handle, &in);
    printf("hg_timeout server: sleeping %u ms\n", ms);
    fflush(stdout);
    sleep_ms(ms); /* deliberately blocks: this is the slow service */
    out.slept_ms = ms;
    server.responses_pending++;
    ret = HG_Respond(handle, respond_done, NULL, &out);
    if (ret != HG_SUCCESS) {
        server.responses_pending--;
        HG_Destroy(handle);
    }
    return HG_SUCCESS;
}

static hg_return_t stop_handler(hg_handle_t handle)
{
    server.stop = 1;
    server.responses_pending++;
    if (HG_Respond(handle, respond_done, NULL, NULL) != HG_SUCCESS) {
        server.responses_pending--;
        HG_Destroy(handle);
    }
    return HG_SUCCESS;
}

static int run_server(const char *info, int addr_fd)
{
    hg_class_t *cls = NULL;
    hg_context_t *ctx = NULL;
    hg_addr_t self = HG_ADDR_NULL;
    char addr_str[256];
    hg_size_t addr_len = sizeof addr_str;
    int rc = 1;

    memset(&server, 0, sizeof server);
    cls = HG_Init(info, HG_TRUE);
    if (!cls) {
        fprintf(stderr, "hg_timeout server: HG_Init(\"%s\") failed\n", info);
        goto out;
    }
    ctx = HG_Context_create(cls);
    if (!ctx) {
        fprintf(stderr, "hg_timeout server: HG_Context_create failed\n");
        goto out;
    }
    if (MERCURY_REGISTER(cls, "slow", slow_in_t, slow_out_t, slow_handler) == 0 ||
        HG_Register_name(cls, "stop", NULL, NULL, stop_handler) == 0) {
        fprintf(stderr, "hg_timeout server: RPC registration failed\n");
        goto out;
    }
    if (HG_Addr_self(cls, &self) != HG_SUCCESS ||
        HG_Addr_to_string(cls, addr_str, &addr_len, self) != HG_SUCCESS) {
        fprintf(stderr, "hg_timeout server: cannot get own address\n");
        goto out;
    }
    if (addr_fd >= 0) {
        size_t len = strlen(addr_str) + 1;
        if (write(addr_fd, addr_str, len) != (ssize_t)len) {
            perror("hg_timeout server: write address");
            goto out;
        }
        close(addr_fd);
        addr_fd = -1;
    } else {
        printf("hg_timeout server listening at %s\n", addr_str);
        fflush(stdout);
    }

    while (!server.stop || server.responses_pending > 0) {
        unsigned int n = 0;
        hg_return_t ret = HG_Progress(ctx, 100);
        if (ret != HG_SUCCESS && ret != HG_TIMEOUT) {
            fprintf(stderr, "hg_timeout server: HG_Progress: %s\n",
                    HG_Error_to_string(ret));
            goto out;
        }
        do {
            ret = HG_Trigger(ctx, 0, 16, &n);
        } while (ret == HG_SUCCESS && n > 0);
    }
    printf("hg_timeout server: exiting\n");
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

/* hg_request drives HG progress through these two hooks (arg: the context). */
static int request_progress(unsigned int timeout, void *arg)
{
    hg_return_t ret = HG_Progress(arg, timeout);
    return ret == HG_SUCCESS || ret == HG_TIMEOUT ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

static int request_trigger(unsigned int timeout, unsigned int *flag, void *arg)
{
    unsigned int n = 0;
    hg_return_t ret = HG_Trigger(arg, timeout, 1, &n);
    *flag = n > 0;
    return ret == HG_SUCCESS || ret == HG_TIMEOUT ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

struct forward_result {
    hg_request_t *request;
    hg_return_t ret;
};

static hg_return_t forward_cb(const struct hg_cb_info *info)
{
    struct forward_result *res = info->arg;
    res->ret = info->ret;
    if (info->ret == HG_CANCELED)
        printf("hg_timeout client: forward callback: HG_CANCELED\n");
    else if (info->ret == HG_SUCCESS)
        printf("hg_timeout client: forward callback: HG_SUCCESS\n");
    else
        printf("hg_timeout client: forward callback: %s\n",
               HG_Error_to_string(info->ret));
    hg_request_complete(res->request);
    return HG_SUCCESS;
}

/*
 * Forward {sleep} on handle and wait up to timeout_ms; on timeout cancel and
 * wait for the canceled callback. *ret_p gets the callback's return code.
 */
static int forward_with_timeout(hg_request_class_t *rc_class, hg_handle_t handle,
                                uint32_t sleep, unsigned int timeout_ms,
                                hg_return_t *ret_p)
{
    struct forward_result res = {NULL, HG_OTHER_ERROR};
    slow_in_t in = {.sleep_ms = sleep};
    unsigned int completed = 0;
    hg_return_t ret;

    res.request = hg_request_create(rc_class);
    if (!res.request) {
        fprintf(stderr, "hg_timeout client: hg_request_create failed\n");
        return -1;
    }
    printf("hg_timeout client: forward (server sleeps %u ms, timeout %u ms)\n", sleep,
           timeout_ms);
    ret = HG_Forward(handle, forward_cb, &res, &in);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_timeout client: HG_Forward: %s\n", HG_Error_to_string(ret));
        hg_request_destroy(res.request);
        return -1;
    }
    hg_request_wait(res.request, timeout_ms, &completed);
    if (!completed) {
        printf("hg_timeout client: no answer after %u ms, HG_Cancel\n", timeout_ms);
        ret = HG_Cancel(handle);
        if (ret != HG_SUCCESS)
            fprintf(stderr, "hg_timeout client: HG_Cancel: %s\n",
                    HG_Error_to_string(ret));
        /* Cancelation is local: its callback must come promptly. */
        hg_request_wait(res.request, 5000, &completed);
    }
    hg_request_destroy(res.request);
    if (!completed) {
        fprintf(stderr, "hg_timeout client: the forward never completed\n");
        return -1; /* the callback may still reference res: do not return normally */
    }
    *ret_p = res.ret;
    return 0;
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

static int run_client(const char *addr_str)
{
    hg_class_t *cls = NULL;
    hg_context_t *ctx = NULL;
    hg_request_class_t *rc_class = NULL;
    hg_addr_t addr = HG_ADDR_NULL;
    hg_handle_t handle = HG_HANDLE_NULL;
    hg_id_t slow_id, stop_id;
    hg_return_t ret, cb_ret = HG_OTHER_ERROR;
    char info[64];
    int rc = 1;

    if (info_from_addr(addr_str, info, sizeof info) != 0) {
        fprintf(stderr, "hg_timeout client: bad address \"%s\"\n", addr_str);
        return 1;
    }
    cls = HG_Init(info, HG_FALSE);
    if (!cls) {
        fprintf(stderr, "hg_timeout client: HG_Init(\"%s\") failed\n", info);
        goto out;
    }
    ctx = HG_Context_create(cls);
    if (!ctx) {
        fprintf(stderr, "hg_timeout client: HG_Context_create failed\n");
        goto out;
    }
    rc_class = hg_request_init(request_progress, request_trigger, ctx);
    if (!rc_class) {
        fprintf(stderr, "hg_timeout client: hg_request_init failed\n");
        goto out;
    }
    slow_id = MERCURY_REGISTER(cls, "slow", slow_in_t, slow_out_t, NULL);
    stop_id = HG_Register_name(cls, "stop", NULL, NULL, NULL);
    if (slow_id == 0 || stop_id == 0) {
        fprintf(stderr, "hg_timeout client: RPC registration failed\n");
        goto out;
    }
    ret = HG_Addr_lookup2(cls, addr_str, &addr);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_timeout client: lookup of %s: %s\n", addr_str,
                HG_Error_to_string(ret));
        goto out;
    }
    ret = HG_Create(ctx, addr, slow_id, &handle);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_timeout client: HG_Create: %s\n", HG_Error_to_string(ret));
        goto out;
    }

    /* 1. Too slow: must be canceled. */
    if (forward_with_timeout(rc_class, handle, SLOW_SLEEP_MS, SHORT_TIMEOUT_MS,
                             &cb_ret) != 0)
        goto out;
    if (cb_ret != HG_CANCELED) {
        fprintf(stderr, "hg_timeout client: expected HG_CANCELED, got %s\n",
                HG_Error_to_string(cb_ret));
        goto out;
    }
    printf("hg_timeout client: first call was canceled, as expected\n");

    /* 2. Retry on the same handle with a longer timeout: must succeed. */
    if (forward_with_timeout(rc_class, handle, FAST_SLEEP_MS, LONG_TIMEOUT_MS, &cb_ret) !=
        0)
        goto out;
    if (cb_ret != HG_SUCCESS) {
        fprintf(stderr, "hg_timeout client: retry failed: %s\n",
                HG_Error_to_string(cb_ret));
        goto out;
    }
    slow_out_t out;
    ret = HG_Get_output(handle, &out);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_timeout client: HG_Get_output: %s\n",
                HG_Error_to_string(ret));
        goto out;
    }
    uint32_t slept = out.slept_ms;
    HG_Free_output(handle, &out);
    if (slept != FAST_SLEEP_MS) {
        fprintf(stderr, "hg_timeout client: got the answer to the wrong call (%u ms)\n",
                slept);
        goto out;
    }
    printf("hg_timeout client: retry succeeded (server slept %u ms)\n", slept);

    /* 3. Stop the server (same handle, reset to the stop RPC). */
    ret = HG_Reset(handle, addr, stop_id);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "hg_timeout client: HG_Reset: %s\n", HG_Error_to_string(ret));
        goto out;
    }
    {
        struct forward_result res = {hg_request_create(rc_class), HG_OTHER_ERROR};
        unsigned int completed = 0;
        if (!res.request)
            goto out;
        ret = HG_Forward(handle, forward_cb, &res, NULL);
        if (ret == HG_SUCCESS)
            hg_request_wait(res.request, LONG_TIMEOUT_MS, &completed);
        hg_request_destroy(res.request);
        if (ret != HG_SUCCESS || !completed || res.ret != HG_SUCCESS) {
            fprintf(stderr, "hg_timeout client: stop RPC failed\n");
            goto out;
        }
    }
    rc = 0;
out:
    if (handle != HG_HANDLE_NULL)
        HG_Destroy(handle);
    if (addr != HG_ADDR_NULL)
        HG_Addr_free(cls, addr);
    if (rc_class)
        hg_request_finalize(rc_class, NULL);
    if (ctx)
        HG_Context_destroy(ctx);
    if (cls)
        HG_Finalize(cls);
    fflush(stdout);
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
    char addr[256];
    int fds[2], status = 0, rc;
    pid_t pid;

    if (pipe(fds) != 0) {
        perror("hg_timeout: pipe");
        return 1;
    }
    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        perror("hg_timeout: fork");
        return 1;
    }
    if (pid == 0) {
        close(fds[0]);
        _exit(run_server("ofi+tcp://127.0.0.1", fds[1]));
    }
    close(fds[1]);
    rc = read_address(fds[0], addr, sizeof addr);
    close(fds[0]);
    if (rc != 0) {
        fprintf(stderr, "hg_timeout: server did not start\n");
        waitpid(pid, &status, 0);
        return 1;
    }
    printf("hg_timeout: server (pid %ld) listening at %s\n", (long)pid, addr);
    fflush(stdout);
    rc = run_client(addr);
    if (rc != 0)
        kill(pid, SIGTERM); /* the client could not stop it */
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "hg_timeout: server exited abnormally\n");
        rc = 1;
    }
    printf("hg_timeout: %s\n", rc == 0 ? "OK" : "FAILED");
    return rc;
}

int main(int argc, char *argv[])
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep server and client lines in order */
    if (argc == 1)
        return run_demo();
    if (strcmp(argv[1], "server") == 0 && argc <= 3)
        return run_server(argc == 3 ? argv[2] : "ofi+tcp", -1);
    if (strcmp(argv[1], "client") == 0 && argc == 3)
        return run_client(argv[2]);
    fprintf(stderr,
            "usage: %s                   fork a server and a client on ofi+tcp\n"
            "       %s server [INFO]     serve (default ofi+tcp) until a stop RPC\n"
            "       %s client ADDR       timeout, cancel and retry against ADDR\n",
            argv[0], argv[0], argv[0]);
    return 2;
}
