/*
 * mercury_prog: a Mercury-style client/server written only against the public
 * Mercury 2.4 headers, to check that an installed hgx builds and runs it as
 * Mercury would (tests/compat/check-installed.sh builds it with pkg-config and
 * with CMake's find_package(mercury)).
 *
 *     mercury_prog [INFO]          fork a server and a client (default ofi+tcp)
 *     mercury_prog server INFO     serve until a client finishes, print address
 *     mercury_prog client ADDR     run the client against ADDR
 *
 * The client sends {tag, bulk over an array of N uint32}; the server pulls the
 * array with HG_Bulk_transfer, sums it and answers {sum, tag echoed}.
 *
 * Before that, the client checks the patterns Margo relies on with an RPC to
 * itself: a handle created with id 0 and given its RPC by HG_Reset (Margo's
 * handle cache), MARGO_REGISTER's BOOST_PP_CAT, data attached with
 * HG_Register_data and found in the handler with HG_Registered_data, a handler
 * that serializes the bulk handle it decoded (to pass it on), the respond
 * callback running before the forward completes, HG_Set_log_subsys("hg,na")
 * keeping bulk errors (bulk is under hg), and the program's own log outlets
 * selected and silenced by name through HG_Set_log_subsys, as Mercury's test
 * harness sets them up.
 */
#define _POSIX_C_SOURCE 200809L

#include <mercury.h>
#include <mercury_bulk.h>
#include <mercury_macros.h>
#include <mercury_proc_bulk.h>
#include <mercury_proc_string.h>
#include <mercury_log.h>
#include <mercury_util.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

MERCURY_GEN_PROC(sum_in_t, ((hg_string_t)(tag))((uint32_t)(count))((hg_bulk_t)(bulk)))
MERCURY_GEN_PROC(sum_out_t, ((hg_string_t)(tag))((uint64_t)(sum)))

/* As Margo's MARGO_REGISTER: BOOST_PP_CAT comes with mercury_macros.h. */
#define PROG_REGISTER(cls, name, in_t, out_t, cb)                                        \
    HG_Register_name(cls, name, BOOST_PP_CAT(hg_proc_, in_t),                            \
                     BOOST_PP_CAT(hg_proc_, out_t), cb)

/* The program's log outlets, as Mercury's harness declares hg_test: prog_test
 * (prog_test_log_outlet_g) and its subsystem cli (prog_test_cli_log_outlet_g). */
HG_LOG_DECL_REGISTER(prog_test);
HG_LOG_SUBSYS_DECL_REGISTER(cli, prog_test);

#define COUNT 100000u
#define LOOPS 3000 /* 100 ms progress slices: at most ~5 minutes */

static int g_done; /* server: a client has said it is finished */
static int g_pending;

struct sum_op {
    hg_handle_t handle;
    sum_in_t in;
    uint32_t *buf;
    hg_bulk_t local;
};

static hg_return_t sum_responded(const struct hg_cb_info *info)
{
    struct sum_op *op = info->arg;
    HG_Bulk_free(op->local);
    HG_Free_input(op->handle, &op->in);
    HG_Destroy(op->handle);
    free(op->buf);
    free(op);
    g_pending--;
    return HG_SUCCESS;
}

static hg_return_t sum_pulled(const struct hg_cb_info *info)
{
    struct sum_op *op = info->arg;
    sum_out_t out = {op->in.tag, 0};
    if (info->ret == HG_SUCCESS)
        for (uint32_t i = 0; i < op->in.count; i++)
            out.sum += op->buf[i];
    else
        out.sum = UINT64_MAX;
    if (HG_Respond(op->handle, sum_responded, op, &out) != HG_SUCCESS) {
        struct hg_cb_info fake = {.arg = op};
        sum_responded(&fake);
    }
    return HG_SUCCESS;
}

static hg_return_t sum_rpc(hg_handle_t handle)
{
    const struct hg_info *hi = HG_Get_info(handle);
    struct sum_op *op = calloc(1, sizeof *op);
    if (!op || HG_Get_input(handle, &op->in) != HG_SUCCESS) {
        fprintf(stderr, "mercury_prog server: bad request\n");
        free(op);
        HG_Destroy(handle);
        return HG_SUCCESS;
    }
    if (op->in.count > (1u << 24) ||
        (hg_size_t)op->in.count * sizeof(uint32_t) > HG_Bulk_get_size(op->in.bulk)) {
        fprintf(stderr, "mercury_prog server: bad size\n");
        HG_Free_input(handle, &op->in);
        free(op);
        HG_Destroy(handle);
        return HG_SUCCESS;
    }
    g_pending++;
    op->handle = handle;
    op->buf = calloc(op->in.count ? op->in.count : 1, sizeof(uint32_t));
    void *ptr = op->buf;
    hg_size_t len = (hg_size_t)(op->in.count ? op->in.count : 1) * sizeof(uint32_t);
    if (!op->buf ||
        HG_Bulk_create(hi->hg_class, 1, &ptr, &len, HG_BULK_WRITE_ONLY, &op->local) !=
            HG_SUCCESS ||
        HG_Bulk_transfer(hi->context, sum_pulled, op, HG_BULK_PULL, hi->addr, op->in.bulk,
                         0, op->local, 0, (hg_size_t)op->in.count * sizeof(uint32_t),
                         HG_OP_ID_IGNORE) != HG_SUCCESS) {
        struct hg_cb_info fake = {.arg = op, .ret = HG_OTHER_ERROR};
        sum_pulled(&fake);
    }
    return HG_SUCCESS;
}

static hg_return_t done_responded(const struct hg_cb_info *info)
{
    HG_Destroy(info->info.respond.handle);
    g_pending--;
    return HG_SUCCESS;
}

static hg_return_t done_rpc(hg_handle_t handle)
{
    g_done = 1;
    g_pending++;
    if (HG_Respond(handle, done_responded, NULL, NULL) != HG_SUCCESS) {
        HG_Destroy(handle);
        g_pending--;
    }
    return HG_SUCCESS;
}

static void progress_once(hg_context_t *ctx)
{
    unsigned int n;
    HG_Progress(ctx, 100);
    do
        n = 0;
    while (HG_Trigger(ctx, 0, 16, &n) == HG_SUCCESS && n > 0);
}

static int server(const char *info, int fd)
{
    int rc = 1;
    hg_class_t *cls = HG_Init(info, HG_TRUE);
    hg_context_t *ctx = cls ? HG_Context_create(cls) : NULL;
    hg_addr_t self = HG_ADDR_NULL;
    char addr[256];
    hg_size_t addr_len = sizeof addr;

    if (!ctx) {
        fprintf(stderr, "mercury_prog server: cannot initialize %s\n", info);
        goto out;
    }
    PROG_REGISTER(cls, "compat_sum", sum_in_t, sum_out_t, sum_rpc);
    HG_Register_name(cls, "compat_done", NULL, NULL, done_rpc);
    if (HG_Addr_self(cls, &self) != HG_SUCCESS ||
        HG_Addr_to_string(cls, addr, &addr_len, self) != HG_SUCCESS)
        goto out;
    if (fd >= 0) {
        if (write(fd, addr, strlen(addr) + 1) < 0)
            goto out;
        close(fd);
        fd = -1;
    } else {
        printf("mercury_prog server at %s\n", addr);
        fflush(stdout);
    }
    for (int i = 0; i < LOOPS && (!g_done || g_pending > 0); i++)
        progress_once(ctx);
    rc = g_done && g_pending == 0 ? 0 : 1;
out:
    if (fd >= 0)
        close(fd);
    if (self != HG_ADDR_NULL)
        HG_Addr_free(cls, self);
    if (ctx)
        HG_Context_destroy(ctx);
    if (cls)
        HG_Finalize(cls);
    return rc;
}

static hg_return_t forwarded(const struct hg_cb_info *info)
{
    *(hg_return_t *)info->arg = info->ret;
    return HG_SUCCESS;
}

static hg_return_t forward_wait(hg_context_t *ctx, hg_handle_t h, void *in)
{
    hg_return_t cb_ret = HG_TIMEOUT; /* stays HG_TIMEOUT until the callback runs */
    hg_return_t ret = HG_Forward(h, forwarded, &cb_ret, in);
    if (ret != HG_SUCCESS)
        return ret;
    for (int i = 0; i < LOOPS && cb_ret == HG_TIMEOUT; i++)
        progress_once(ctx);
    if (cb_ret == HG_TIMEOUT) {
        HG_Cancel(h);
        for (int i = 0; i < 50 && cb_ret == HG_TIMEOUT; i++)
            progress_once(ctx);
    }
    return cb_ret;
}

/* ---- Margo's patterns, over an RPC to the process itself */
MERCURY_GEN_PROC(echo_in_t, ((hg_bulk_t)(bulk)))
MERCURY_GEN_PROC(echo_out_t, ((uint64_t)(size))((uint8_t)(passed_on)))

struct echo_state {
    char order[8]; /* 'R' respond callback ran, 'F' forward completed */
    int n;
    hg_return_t forward_ret;
};

static void echo_mark(struct echo_state *st, char c)
{
    if (st->n < (int)sizeof st->order - 1)
        st->order[st->n++] = c;
}

static hg_return_t echo_responded(const struct hg_cb_info *info)
{
    echo_mark(info->arg, 'R');
    HG_Destroy(info->info.respond.handle);
    return HG_SUCCESS;
}

/* Serialize the bulk handle decoded from the input, as a handler passing it on
 * to a third process does, and read it back. */
static int echo_pass_on(hg_class_t *cls, hg_bulk_t bulk)
{
    hg_size_t len = HG_Bulk_get_serialize_size(bulk, 0);
    char *buf = len ? malloc(len) : NULL;
    hg_bulk_t copy = HG_BULK_NULL;
    int ok = buf && HG_Bulk_serialize(buf, len, 0, bulk) == HG_SUCCESS &&
             HG_Bulk_deserialize(cls, &copy, buf, len) == HG_SUCCESS &&
             HG_Bulk_get_size(copy) == HG_Bulk_get_size(bulk);
    if (copy != HG_BULK_NULL)
        HG_Bulk_free(copy);
    free(buf);
    return ok;
}

static hg_return_t echo_rpc(hg_handle_t handle)
{
    const struct hg_info *hi = HG_Get_info(handle);
    struct echo_state *st = HG_Registered_data(hi->hg_class, hi->id);
    echo_in_t in;
    echo_out_t out = {0, 0};
    if (!st || HG_Get_input(handle, &in) != HG_SUCCESS) {
        HG_Destroy(handle);
        return HG_SUCCESS;
    }
    out.size = HG_Bulk_get_size(in.bulk);
    out.passed_on = (uint8_t)echo_pass_on(hi->hg_class, in.bulk);
    HG_Free_input(handle, &in);
    if (HG_Respond(handle, echo_responded, st, &out) != HG_SUCCESS)
        HG_Destroy(handle);
    return HG_SUCCESS;
}

static hg_return_t echo_forwarded(const struct hg_cb_info *info)
{
    struct echo_state *st = info->arg;
    st->forward_ret = info->ret;
    echo_mark(st, 'F');
    return HG_SUCCESS;
}

/* HG_Set_log_subsys("hg,na") must keep bulk errors: a malformed descriptor
 * is logged to the error stream. */
static int log_subsys_keeps_bulk(hg_class_t *cls)
{
    FILE *err = tmpfile();
    char junk[64], line[256];
    hg_bulk_t b = HG_BULK_NULL;
    int lines = 0;
    if (!err)
        return 0;
    memset(junk, 0x5a, sizeof junk);
    HG_Set_log_stream("error", err);
    HG_Set_log_level("error");
    HG_Set_log_subsys("hg,na");
    int refused = HG_Bulk_deserialize(cls, &b, junk, sizeof junk) != HG_SUCCESS;
    HG_Set_log_subsys("all");
    HG_Set_log_stream("error", NULL);
    rewind(err);
    while (fgets(line, sizeof line, err))
        lines++;
    fclose(err);
    if (b != HG_BULK_NULL)
        HG_Bulk_free(b);
    return refused && lines > 0;
}

/* Mercury's harness setup (HG_Test_init without HG_LOG_SUBSYS): warnings of hg
 * and of its own outlet; HG_Set_log_subsys silences an outlet by its name. */
static int harness_log_outlets(void)
{
    FILE *err = tmpfile();
    char text[1024];
    size_t n;
    if (!err)
        return 0;
    hg_log_set_stream_error(err);
    HG_Set_log_level("warning");
    HG_Set_log_subsys("hg,prog_test");
    HG_Util_set_log_level("warning");
    HG_LOG_SUBSYS_WRITE(cli, prog_test, HG_LOG_LEVEL_ERROR, "client error %d", 1);
    HG_Set_log_subsys("hg,prog_test,~cli");
    HG_LOG_SUBSYS_WRITE(cli, prog_test, HG_LOG_LEVEL_ERROR, "silenced");
    HG_LOG_WRITE(prog_test, HG_LOG_LEVEL_ERROR, "harness error %d", 2);
    HG_Set_log_subsys("all");
    HG_Set_log_level("error");
    HG_Util_set_log_level("error");
    hg_log_set_stream_error(NULL);
    rewind(err);
    n = fread(text, 1, sizeof text - 1, err);
    text[n] = '\0';
    fclose(err);
    return strstr(text, "[cli] error") && strstr(text, "client error 1") &&
           !strstr(text, "silenced") && strstr(text, "[prog_test] error") &&
           strstr(text, "harness error 2");
}

static int margo_patterns(hg_class_t *cls, hg_context_t *ctx)
{
    static struct echo_state st;
    static char data[4096];
    void *ptr = data;
    hg_size_t len = sizeof data;
    hg_addr_t self = HG_ADDR_NULL;
    hg_handle_t h = HG_HANDLE_NULL;
    hg_bulk_t bulk = HG_BULK_NULL;
    echo_out_t out;
    int ok = 0, got_output = 0;

    st.forward_ret = HG_TIMEOUT; /* until the forward callback runs */
    hg_id_t id = PROG_REGISTER(cls, "compat_echo", echo_in_t, echo_out_t, echo_rpc);
    if (HG_Register_data(cls, id, &st, NULL) != HG_SUCCESS ||
        HG_Registered_data(cls, id) != &st || HG_Addr_self(cls, &self) != HG_SUCCESS ||
        HG_Create(ctx, HG_ADDR_NULL, 0, &h) != HG_SUCCESS ||
        HG_Reset(h, self, id) != HG_SUCCESS ||
        HG_Bulk_create(cls, 1, &ptr, &len, HG_BULK_READ_ONLY, &bulk) != HG_SUCCESS) {
        fprintf(stderr, "mercury_prog: self RPC setup failed\n");
        goto out;
    }
    echo_in_t in = {.bulk = bulk};
    if (HG_Forward(h, echo_forwarded, &st, &in) != HG_SUCCESS)
        goto out;
    for (int i = 0; i < LOOPS && st.forward_ret == HG_TIMEOUT; i++)
        progress_once(ctx);
    got_output = st.forward_ret == HG_SUCCESS && HG_Get_output(h, &out) == HG_SUCCESS;
    ok = got_output && out.size == sizeof data && out.passed_on &&
         strcmp(st.order, "RF") == 0;
    printf("mercury_prog self RPC: id 0 + HG_Reset, registered data, bulk passed on %s, "
           "order %s: %s\n",
           got_output && out.passed_on ? "yes" : "no", st.order, ok ? "ok" : "WRONG");
    if (got_output)
        HG_Free_output(h, &out);
    int log_ok = log_subsys_keeps_bulk(cls);
    printf("mercury_prog HG_Set_log_subsys(\"hg,na\") keeps bulk errors: %s\n",
           log_ok ? "ok" : "WRONG");
    ok = ok && log_ok;
    int outlets_ok = harness_log_outlets();
    printf("mercury_prog HG_Set_log_subsys(\"hg,prog_test,~cli\") on the program's "
           "outlets: %s\n",
           outlets_ok ? "ok" : "WRONG");
    ok = ok && outlets_ok;
out:
    if (bulk != HG_BULK_NULL)
        HG_Bulk_free(bulk);
    if (h != HG_HANDLE_NULL)
        HG_Destroy(h);
    if (self != HG_ADDR_NULL)
        HG_Addr_free(cls, self);
    return ok;
}

static int client(const char *addr_str)
{
    char info[64];
    const char *sep = strstr(addr_str, "://");
    size_t info_len = sep ? (size_t)(sep - addr_str) : strlen(addr_str);
    /* A server on loopback: bind loopback too, not a routable interface. */
    if (sep && (strncmp(sep + 3, "127.", 4) == 0 || strncmp(sep + 3, "[::1]", 5) == 0))
        info_len = (size_t)(strrchr(addr_str, ':') - addr_str);
    hg_class_t *cls = NULL;
    hg_context_t *ctx = NULL;
    hg_addr_t addr = HG_ADDR_NULL;
    hg_handle_t h = HG_HANDLE_NULL;
    hg_bulk_t bulk = HG_BULK_NULL;
    uint32_t *data = NULL;
    uint64_t expect = 0;
    hg_id_t sum_id, done_id;
    int rc = 1;

    if (info_len == 0 || info_len >= sizeof info)
        return 1;
    memcpy(info, addr_str, info_len);
    info[info_len] = '\0';
    cls = HG_Init(info, HG_FALSE);
    ctx = cls ? HG_Context_create(cls) : NULL;
    data = malloc(COUNT * sizeof *data);
    if (!ctx || !data) {
        fprintf(stderr, "mercury_prog client: cannot initialize %s\n", info);
        goto out;
    }
    if (!margo_patterns(cls, ctx))
        goto out;
    sum_id = MERCURY_REGISTER(cls, "compat_sum", sum_in_t, sum_out_t, NULL);
    done_id = HG_Register_name(cls, "compat_done", NULL, NULL, NULL);
    if (HG_Addr_lookup2(cls, addr_str, &addr) != HG_SUCCESS ||
        HG_Create(ctx, addr, sum_id, &h) != HG_SUCCESS) {
        fprintf(stderr, "mercury_prog client: cannot reach %s\n", addr_str);
        goto out;
    }
    for (uint32_t i = 0; i < COUNT; i++)
        expect += data[i] = i * 7u + 3u;
    void *ptr = data;
    hg_size_t len = COUNT * sizeof *data;
    if (HG_Bulk_create(cls, 1, &ptr, &len, HG_BULK_READ_ONLY, &bulk) != HG_SUCCESS)
        goto out;

    sum_in_t in = {.tag = (hg_string_t) "compat-check", .count = COUNT, .bulk = bulk};
    hg_return_t ret = forward_wait(ctx, h, &in);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "mercury_prog client: forward: %s\n", HG_Error_to_string(ret));
        goto out;
    }
    sum_out_t out;
    if (HG_Get_output(h, &out) != HG_SUCCESS)
        goto out;
    int ok = out.sum == expect && out.tag && strcmp(out.tag, "compat-check") == 0;
    printf("mercury_prog client: sum %llu (expected %llu), tag \"%s\": %s\n",
           (unsigned long long)out.sum, (unsigned long long)expect,
           out.tag ? out.tag : "", ok ? "ok" : "WRONG");
    HG_Free_output(h, &out);

    if (HG_Reset(h, addr, done_id) != HG_SUCCESS ||
        forward_wait(ctx, h, NULL) != HG_SUCCESS) {
        fprintf(stderr, "mercury_prog client: done RPC failed\n");
        goto out;
    }
    rc = ok ? 0 : 1;
out:
    if (bulk != HG_BULK_NULL)
        HG_Bulk_free(bulk);
    if (h != HG_HANDLE_NULL)
        HG_Destroy(h);
    if (addr != HG_ADDR_NULL)
        HG_Addr_free(cls, addr);
    if (ctx)
        HG_Context_destroy(ctx);
    if (cls)
        HG_Finalize(cls);
    free(data);
    return rc;
}

int main(int argc, char *argv[])
{
    if (argc == 3 && strcmp(argv[1], "server") == 0)
        return server(argv[2], -1);
    if (argc == 3 && strcmp(argv[1], "client") == 0)
        return client(argv[2]);
    if (argc > 2) {
        fprintf(stderr, "usage: %s [INFO] | server INFO | client ADDR\n", argv[0]);
        return 2;
    }

    const char *info = argc == 2 ? argv[1] : "ofi+tcp://127.0.0.1";
    char addr[256];
    size_t got = 0;
    int fds[2], status = 0, rc = 1;
    if (pipe(fds) != 0)
        return 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        close(fds[0]);
        _exit(server(info, fds[1]));
    }
    close(fds[1]);
    for (;;) {
        ssize_t n = read(fds[0], addr + got, sizeof addr - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        if (memchr(addr, '\0', got) || got == sizeof addr)
            break;
    }
    close(fds[0]);
    if (got > 0 && memchr(addr, '\0', got))
        rc = client(addr);
    else
        fprintf(stderr, "mercury_prog: server did not start on %s\n", info);
    if (rc != 0)
        kill(pid, SIGTERM);
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        rc = 1;
    printf("mercury_prog (%s): %s\n", info, rc == 0 ? "PASS" : "FAIL");
    return rc;
}
