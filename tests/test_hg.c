/*
 * test_hg.c -- HG RPC and bulk layers over a real transport ($HGX_TEST_INFO,
 * default "ofi+tcp"), with the server in a forked child process. The child is
 * forked before any HG/NA initialization, sends its address through a pipe
 * and serves until it receives the "hgt_shutdown" RPC.
 */
#include "mercury.h"
#include "mercury_hash_string.h"
#include "mercury_bulk.h"
#include "mercury_macros.h"
#include "mercury_proc_string.h"
#include "mercury_request.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hgx_test_hooks.h"
#include "test_common.h"
#include "test_hg_done.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BIG_SIZE ((uint64_t)1 << 20)
#define BULK_SIZE ((size_t)3 * 1024 * 1024 + 777)
#define EXPOSE_SIZE ((size_t)64 * 1024 * 1024)
#define IN_FLIGHT 1000
#define WAIT_MS 20000

MERCURY_GEN_PROC(sum_in_t, ((int32_t)(a))((uint64_t)(b))((hg_string_t)(name))(
                               (hg_bool_t)(flag))((int8_t)(c))((uint16_t)(d)))
MERCURY_GEN_PROC(sum_out_t, ((int64_t)(sum))((hg_string_t)(echo)))
MERCURY_GEN_PROC(bulk_in_t,
                 ((hg_bulk_t)(bulk))((uint32_t)(op))((uint64_t)(size))((uint32_t)(seed)))
MERCURY_GEN_PROC(status_out_t, ((int32_t)(ok))((uint64_t)(count)))
MERCURY_GEN_PROC(expose_out_t, ((hg_bulk_t)(bulk)))

/* A large byte array with a seed, encoded by hand. */
typedef struct {
    uint64_t len;
    uint32_t seed;
    unsigned char *data;
} blob_t;

static hg_return_t hg_proc_blob_t(hg_proc_t proc, void *data)
{
    blob_t *b = data;
    hg_return_t ret = hg_proc_uint64_t(proc, &b->len);

    if (ret == HG_SUCCESS)
        ret = hg_proc_uint32_t(proc, &b->seed);
    if (ret != HG_SUCCESS)
        return ret;
    switch (hg_proc_get_op(proc)) {
    case HG_DECODE:
        if (b->len > 64 * BIG_SIZE)
            return HG_OVERFLOW;
        b->data = malloc(b->len ? b->len : 1);
        if (!b->data)
            return HG_NOMEM;
        /* fall through */
    case HG_ENCODE:
        return hg_proc_bytes(proc, b->data, b->len);
    case HG_FREE:
        free(b->data);
        b->data = NULL;
        return HG_SUCCESS;
    }
    return HG_INVALID_ARG;
}

static void fill(void *buf, size_t len, uint32_t seed)
{
    unsigned char *p = buf;
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)((i * 131u + seed * 7u + (i >> 11)) & 0xff);
}

static bool check(const void *buf, size_t len, uint32_t seed)
{
    const unsigned char *p = buf;
    for (size_t i = 0; i < len; i++)
        if (p[i] != (unsigned char)((i * 131u + seed * 7u + (i >> 11)) & 0xff))
            return false;
    return true;
}

/* ------------------------------------------------------------------------- */
/* RPC handlers (server child, and the client for forward-to-self)           */
/* ------------------------------------------------------------------------- */

static int server_shutdown;
static uint64_t noresp_count;
static void *expose_buf;
static hg_bulk_t expose_bulk;

static hg_return_t sum_cb(hg_handle_t handle)
{
    sum_in_t in;
    sum_out_t out;
    char echo[128];

    if (HG_Get_input(handle, &in) != HG_SUCCESS)
        return HG_Destroy(handle), HG_PROTOCOL_ERROR;
    out.sum = (int64_t)in.a + (int64_t)in.b + in.c + in.d + (in.flag ? 1000 : 0);
    snprintf(echo, sizeof(echo), "hello %s", in.name ? in.name : "(null)");
    out.echo = echo;
    HG_Respond(handle, NULL, NULL, &out);
    HG_Free_input(handle, &in);
    return HG_Destroy(handle);
}

static hg_return_t big_cb(hg_handle_t handle)
{
    blob_t in, out = {0};

    if (HG_Get_input(handle, &in) != HG_SUCCESS)
        return HG_Destroy(handle), HG_PROTOCOL_ERROR;
    out.len = check(in.data, in.len, in.seed) ? in.len : 0;
    out.seed = in.seed + 1;
    out.data = malloc(out.len ? out.len : 1);
    fill(out.data, out.len, out.seed);
    HG_Respond(handle, NULL, NULL, &out);
    free(out.data);
    HG_Free_input(handle, &in);
    return HG_Destroy(handle);
}

static hg_return_t noresp_cb(hg_handle_t handle)
{
    noresp_count++;
    /* A no-op for a response-disabled RPC, but its callback still runs. */
    HG_Respond(handle, NULL, NULL, NULL);
    return HG_Destroy(handle);
}

static hg_return_t count_cb(hg_handle_t handle)
{
    status_out_t out = {.ok = 1, .count = noresp_count};
    HG_Respond(handle, NULL, NULL, &out);
    return HG_Destroy(handle);
}

/* hgt_once deregisters itself: a second request must find it gone although
 * the target caches the registration of its last request. hgt_rearm
 * registers hgt_once again. */
static hg_return_t once_cb(hg_handle_t handle);

static hg_return_t rearm_cb(hg_handle_t handle)
{
    status_out_t out = {.ok = 1, .count = 0};
    MERCURY_REGISTER(HG_Get_info(handle)->hg_class, "hgt_once", void, status_out_t,
                     once_cb);
    HG_Respond(handle, NULL, NULL, &out);
    return HG_Destroy(handle);
}

static hg_return_t once_cb(hg_handle_t handle)
{
    status_out_t out = {.ok = 1, .count = 0};
    HG_Deregister(HG_Get_info(handle)->hg_class, HG_Get_info(handle)->id);
    HG_Respond(handle, NULL, NULL, &out);
    return HG_Destroy(handle);
}

/* Server side of a bulk test: 3 uneven local segments. */
struct bulk_job {
    hg_handle_t handle;
    bulk_in_t in;
    void *bufs[3];
    hg_bulk_t local;
};

static hg_return_t bulk_done_cb(const struct hg_cb_info *info)
{
    struct bulk_job *job = info->arg;
    status_out_t out = {.ok = info->ret == HG_SUCCESS, .count = 0};

    if (out.ok && job->in.op == HG_BULK_PULL) {
        /* Reassemble and verify the pulled bytes. */
        unsigned char *all = malloc(job->in.size);
        size_t off = 0;
        void *ptrs[3];
        hg_size_t sizes[3];
        uint32_t n = 0;
        HG_Bulk_access(job->local, 0, job->in.size, HG_BULK_READ_ONLY, 3, ptrs, sizes,
                       &n);
        for (uint32_t i = 0; i < n; i++) {
            memcpy(all + off, ptrs[i], sizes[i]);
            off += sizes[i];
        }
        out.ok = off == job->in.size && check(all, off, job->in.seed);
        free(all);
    }
    HG_Respond(job->handle, NULL, NULL, &out);
    HG_Bulk_free(job->local);
    HG_Free_input(job->handle, &job->in);
    HG_Destroy(job->handle);
    free(job);
    return HG_SUCCESS;
}

static hg_return_t bulk_cb(hg_handle_t handle)
{
    struct bulk_job *job = calloc(1, sizeof(*job));
    const struct hg_info *info = HG_Get_info(handle);

    job->handle = handle;
    HG_Get_input(handle, &job->in);
    hg_size_t sizes[3] = {job->in.size / 3, 1, job->in.size - job->in.size / 3 - 1};
    HG_Bulk_create(info->hg_class, 3, NULL, sizes, HG_BULK_READWRITE, &job->local);
    if (job->in.op == HG_BULK_PUSH) {
        void *ptrs[3];
        uint32_t n = 0;
        unsigned char *all = malloc(job->in.size);
        fill(all, job->in.size, job->in.seed);
        HG_Bulk_access(job->local, 0, job->in.size, HG_BULK_READWRITE, 3, ptrs, sizes,
                       &n);
        for (uint32_t i = 0, off = 0; i < n; off += (uint32_t)sizes[i], i++)
            memcpy(ptrs[i], all + off, sizes[i]);
        free(all);
    }
    return HG_Bulk_transfer(info->context, bulk_done_cb, job, (hg_bulk_op_t)job->in.op,
                            info->addr, job->in.bulk, 0, job->local, 0, job->in.size,
                            HG_OP_ID_IGNORE);
}

static hg_return_t expose_cb(hg_handle_t handle)
{
    expose_out_t out = {.bulk = expose_bulk};
    HG_Respond(handle, NULL, NULL, &out);
    return HG_Destroy(handle);
}

static hg_return_t sleep_cb(hg_handle_t handle)
{
    /* Block without progress, like a stuck server. */
    sleep(2);
    sum_out_t out = {.sum = 2, .echo = "slept"};
    HG_Respond(handle, NULL, NULL, &out);
    return HG_Destroy(handle);
}

static hg_return_t corrupt_cb(hg_handle_t handle)
{
    sum_out_t out = {.sum = 0, .echo = "corrupt"};
    hgx_test_corrupt_next_header(HG_Get_info(handle)->hg_class);
    HG_Respond(handle, NULL, NULL, &out);
    return HG_Destroy(handle);
}

static hg_return_t shutdown_cb(hg_handle_t handle)
{
    status_out_t out = {.ok = 1, .count = 0};
    server_shutdown = 1;
    HG_Respond(handle, NULL, NULL, &out);
    return HG_Destroy(handle);
}

struct rpc_ids {
    hg_id_t sum, big, noresp, count, bulk, expose, sleep, corrupt, shutdown, once, rearm;
};

static struct rpc_ids register_all(hg_class_t *cls, bool server)
{
    struct rpc_ids ids;
    ids.sum = MERCURY_REGISTER(cls, "hgt_sum", sum_in_t, sum_out_t, sum_cb);
    ids.big = MERCURY_REGISTER(cls, "hgt_big", blob_t, blob_t, big_cb);
    ids.noresp = MERCURY_REGISTER(cls, "hgt_noresp", void, void, noresp_cb);
    HG_Registered_disable_response(cls, ids.noresp, HG_TRUE);
    ids.count = MERCURY_REGISTER(cls, "hgt_count", void, status_out_t, count_cb);
    ids.bulk = MERCURY_REGISTER(cls, "hgt_bulk", bulk_in_t, status_out_t, bulk_cb);
    ids.expose = MERCURY_REGISTER(cls, "hgt_expose", void, expose_out_t, expose_cb);
    ids.sleep =
        MERCURY_REGISTER(cls, "hgt_sleep", void, sum_out_t, server ? sleep_cb : NULL);
    ids.corrupt = MERCURY_REGISTER(cls, "hgt_corrupt", void, sum_out_t, corrupt_cb);
    ids.shutdown = MERCURY_REGISTER(cls, "hgt_shutdown", void, status_out_t, shutdown_cb);
    ids.once = MERCURY_REGISTER(cls, "hgt_once", void, status_out_t, once_cb);
    ids.rearm = MERCURY_REGISTER(cls, "hgt_rearm", void, status_out_t, rearm_cb);
    return ids;
}

static struct {
    const char *info;
    pid_t server_pid;
    hg_class_t *cls;
    hg_context_t *ctx;
    hg_addr_t server;
    struct rpc_ids ids;
    uint8_t thread_mode; /* 0, or NA_THREAD_MODE_SINGLE (no locks) */
} g;

static hg_class_t *init_class(const char *info, bool listen)
{
    struct hg_init_info init = HG_INIT_INFO_INITIALIZER;
    init.checksum_level = HG_CHECKSUM_RPC_PAYLOAD;
    init.na_init_info.thread_mode = g.thread_mode;
    return HG_Init_opt(info, listen, &init);
}

static int server_main(const char *info, int fd)
{
    hg_class_t *cls = init_class(info, true);
    if (!cls)
        return 1;
    hg_context_t *ctx = HG_Context_create(cls);
    register_all(cls, true);
    hg_size_t size = EXPOSE_SIZE;
    expose_buf = calloc(1, EXPOSE_SIZE);
    HG_Bulk_create(cls, 1, &expose_buf, &size, HG_BULK_READWRITE, &expose_bulk);

    hg_addr_t self;
    char addr[256] = "";
    hg_size_t addr_size = sizeof(addr);
    HG_Addr_self(cls, &self);
    HG_Addr_to_string(cls, addr, &addr_size, self);
    HG_Addr_free(cls, self);
    if (write(fd, addr, sizeof(addr)) != (ssize_t)sizeof(addr))
        return 1;
    close(fd);

    while (!server_shutdown) {
        unsigned int n;
        HG_Progress(ctx, 100);
        do
            n = 0, HG_Trigger(ctx, 0, 64, &n);
        while (n);
    }
    /* Let the last response go out. */
    for (int i = 0; i < 20; i++) {
        unsigned int n = 0;
        HG_Progress(ctx, 10);
        HG_Trigger(ctx, 0, 64, &n);
    }
    HG_Bulk_free(expose_bulk);
    free(expose_buf);
    int rc =
        HG_Context_destroy(ctx) == HG_SUCCESS && HG_Finalize(cls) == HG_SUCCESS ? 0 : 2;
    return rc;
}

/* ------------------------------------------------------------------------- */
/* Client                                                                    */
/* ------------------------------------------------------------------------- */

/* Progress and trigger ctx until *calls reaches want or timeout. */
static void run_ctx_until(hg_context_t *ctx, const int *calls, int want,
                          unsigned int timeout_ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (*calls < want) {
        unsigned int n = 0;
        HG_Progress(ctx, 50);
        HG_Trigger(ctx, 0, 1024, &n);
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >
            timeout_ms)
            break;
    }
}

static void run_until(const int *calls, int want, unsigned int timeout_ms)
{
    run_ctx_until(g.ctx, calls, want, timeout_ms);
}

static hg_return_t forward_wait(hg_handle_t h, void *in, struct test_hg_done *st)
{
    *st = (struct test_hg_done){0, HG_OTHER_ERROR};
    hg_return_t ret = HG_Forward(h, test_hg_done_cb, st, in);
    if (ret != HG_SUCCESS)
        return ret;
    run_until(&st->calls, 1, WAIT_MS);
    return st->calls == 1 ? st->ret : HG_TIMEOUT;
}

static int group_setup(void **state)
{
    (void)state;
    g.cls = init_class(g.info, false);
    if (!g.cls)
        return -1;
    g.ctx = HG_Context_create(g.cls);
    g.ids = register_all(g.cls, false);
    return g.ctx ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    hg_handle_t h;
    struct test_hg_done st;
    HG_Create(g.ctx, g.server, g.ids.shutdown, &h);
    forward_wait(h, NULL, &st);
    HG_Destroy(h);
    HG_Addr_free(g.cls, g.server);
    int rc = HG_Context_destroy(g.ctx) == HG_SUCCESS && HG_Finalize(g.cls) == HG_SUCCESS
                 ? 0
                 : -1;
    int status = 0;
    waitpid(g.server_pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "server exited abnormally (status %d)\n", status);
        rc = -1;
    }
    return rc;
}

static void test_sum(void **state)
{
    (void)state;
    hg_handle_t h;
    struct test_hg_done st;
    sum_in_t in = {
        .a = -5, .b = 1ull << 40, .name = "world", .flag = HG_TRUE, .c = -3, .d = 60000};
    sum_out_t out;

    assert_int_equal(HG_Create(g.ctx, g.server, g.ids.sum, &h), HG_SUCCESS);
    for (int i = 0; i < 3; i++) { /* the handle is reusable */
        assert_int_equal(forward_wait(h, &in, &st), HG_SUCCESS);
        assert_int_equal(st.calls, 1);
        assert_int_equal(HG_Get_output(h, &out), HG_SUCCESS);
        assert_int_equal(out.sum, -5 + (int64_t)(1ull << 40) - 3 + 60000 + 1000);
        assert_string_equal(out.echo, "hello world");
        assert_int_equal(HG_Free_output(h, &out), HG_SUCCESS);
    }
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
}

/* Mercury 2.4.1 / Margo's handle cache: create with id 0, set it with HG_Reset. */
static void test_create_id0_reset(void **state)
{
    (void)state;
    hg_handle_t h;
    struct test_hg_done st;
    sum_in_t in = {.a = 1, .b = 2, .name = "pool", .flag = HG_FALSE, .c = 3, .d = 4};
    sum_out_t out;

    assert_int_equal(HG_Create(g.ctx, HG_ADDR_NULL, 0, &h), HG_SUCCESS);
    assert_int_equal(HG_Get_info(h)->id, 0);
    assert_null(HG_Get_info(h)->addr);
    assert_int_equal(HG_Forward(h, test_hg_done_cb, &st, &in),
                     HG_INVALID_ARG); /* no address */
    assert_int_equal(HG_Reset(h, g.server, 0), HG_SUCCESS);
    assert_int_equal(HG_Get_info(h)->id, 0);
    assert_int_equal(HG_Forward(h, test_hg_done_cb, &st, &in),
                     HG_INVALID_ARG); /* no RPC id */
    /* HG_ADDR_NULL keeps the address, an unknown id is refused and changes nothing. */
    assert_int_equal(HG_Reset(h, HG_ADDR_NULL, 12345), HG_NOENTRY);
    assert_int_equal(HG_Get_info(h)->id, 0);
    assert_int_equal(HG_Reset(h, HG_ADDR_NULL, g.ids.sum), HG_SUCCESS);
    assert_int_equal(HG_Get_info(h)->id, g.ids.sum);
    assert_true(HG_Addr_cmp(g.cls, HG_Get_info(h)->addr, g.server));
    for (int i = 0; i < 2; i++) { /* the second time, id 0 keeps the RPC */
        assert_int_equal(forward_wait(h, &in, &st), HG_SUCCESS);
        assert_int_equal(HG_Get_output(h, &out), HG_SUCCESS);
        assert_int_equal(out.sum, 1 + 2 + 3 + 4);
        assert_int_equal(HG_Free_output(h, &out), HG_SUCCESS);
        assert_int_equal(HG_Reset(h, HG_ADDR_NULL, 0), HG_SUCCESS);
        assert_int_equal(HG_Get_info(h)->id, g.ids.sum);
    }
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
}

static void test_no_response(void **state)
{
    (void)state;
    hg_handle_t h;
    struct test_hg_done st;
    status_out_t out;

    assert_int_equal(HG_Create(g.ctx, g.server, g.ids.noresp, &h), HG_SUCCESS);
    for (int i = 0; i < 5; i++)
        assert_int_equal(forward_wait(h, NULL, &st), HG_SUCCESS);
    HG_Destroy(h);
    /* The target counted them (no response is waited for, so poll). */
    for (int tries = 0; tries < 50; tries++) {
        HG_Create(g.ctx, g.server, g.ids.count, &h);
        assert_int_equal(forward_wait(h, NULL, &st), HG_SUCCESS);
        HG_Get_output(h, &out);
        HG_Free_output(h, &out);
        HG_Destroy(h);
        if (out.count >= 5)
            break;
    }
    assert_int_equal(out.count, 5);
}

/* A request for an RPC the target deregistered meanwhile is answered
 * HG_NOENTRY, also right after a request of the same RPC; once registered
 * again, it runs. */
static void test_registry_change(void **state)
{
    (void)state;
    hg_handle_t once, rearm;
    struct test_hg_done st;

    assert_int_equal(HG_Create(g.ctx, g.server, g.ids.once, &once), HG_SUCCESS);
    assert_int_equal(HG_Create(g.ctx, g.server, g.ids.rearm, &rearm), HG_SUCCESS);
    for (int round = 0; round < 3; round++) {
        assert_int_equal(forward_wait(once, NULL, &st), HG_SUCCESS);
        assert_int_equal(forward_wait(once, NULL, &st), HG_NOENTRY);
        assert_int_equal(forward_wait(once, NULL, &st), HG_NOENTRY);
        assert_int_equal(forward_wait(rearm, NULL, &st), HG_SUCCESS);
    }
    HG_Destroy(once);
    HG_Destroy(rearm);
}

static void test_big(void **state)
{
    (void)state;
    hg_handle_t h;
    struct test_hg_done st;
    blob_t in = {.len = BIG_SIZE, .seed = 42}, out;

    assert_true(HG_Class_get_input_eager_size(g.cls) < BIG_SIZE);
    in.data = malloc(in.len);
    fill(in.data, in.len, in.seed);
    assert_int_equal(HG_Create(g.ctx, g.server, g.ids.big, &h), HG_SUCCESS);
    assert_int_equal(forward_wait(h, &in, &st), HG_SUCCESS);
    assert_int_equal(HG_Get_output(h, &out), HG_SUCCESS);
    assert_int_equal(out.len, BIG_SIZE);
    assert_int_equal(out.seed, 43);
    assert_true(check(out.data, out.len, out.seed));
    HG_Free_output(h, &out);
    HG_Destroy(h);
    free(in.data);
}

/* A bulk handle of 1024 segments, as Mercury's own bulk test makes: every
 * transport takes that many (the rest of the buffer goes in the last). */
#define BULK_SEGMENTS_MANY 1024
/* Each plugin's limit (docs/mercury-compat.md): 65536, but 1024 on ofi+shm. */
#define BULK_SEGMENTS_MAX 65536

static bool bulk_max_is_many(void)
{
#ifdef NA_HAS_UCX
    bool sm_on_ofi = false; /* na+sm is served by ucx+shm */
#else
    bool sm_on_ofi = true;
#endif
    return strncmp(g.info, "ofi+shm", 7) == 0 ||
           (strncmp(g.info, "na+sm", 5) == 0 && sm_on_ofi);
}

static hg_return_t bulk_segments(unsigned char *buf, uint32_t n, hg_bulk_t *bulk)
{
    void **ptrs = malloc(n * sizeof(*ptrs));
    hg_size_t *sizes = malloc(n * sizeof(*sizes));
    size_t each = BULK_SIZE / n;

    for (size_t i = 0; i < n; i++) {
        ptrs[i] = buf + i * each;
        sizes[i] = i + 1 < n ? each : BULK_SIZE - i * each;
    }
    hg_return_t ret = HG_Bulk_create(g.cls, n, ptrs, sizes, HG_BULK_READWRITE, bulk);
    free(ptrs);
    free(sizes);
    return ret;
}

static hg_bulk_t bulk_many(unsigned char *buf, uint32_t n)
{
    hg_bulk_t bulk;
    assert_int_equal(bulk_segments(buf, n, &bulk), HG_SUCCESS);
    assert_int_equal(HG_Bulk_get_segment_count(bulk), n);
    return bulk;
}

/* segments: 1, 4, or more in even slices (bulk_many) */
static void run_bulk(hg_bulk_op_t op, int segments)
{
    hg_handle_t h;
    struct test_hg_done st;
    status_out_t out;
    unsigned char *buf = malloc(BULK_SIZE);
    hg_bulk_t bulk;
    uint32_t seed = 7 + op * 2 + (uint32_t)segments;

    if (op == HG_BULK_PULL)
        fill(buf, BULK_SIZE, seed);
    else
        memset(buf, 0, BULK_SIZE);
    if (segments > 4) {
        bulk = bulk_many(buf, (uint32_t)segments);
    } else if (segments == 4) {
        void *ptrs[4] = {buf, buf + 1000, buf + 1001, buf + 500000};
        hg_size_t sizes[4] = {1000, 1, 500000 - 1001, BULK_SIZE - 500000};
        assert_int_equal(HG_Bulk_create(g.cls, 4, ptrs, sizes, HG_BULK_READWRITE, &bulk),
                         HG_SUCCESS);
        assert_int_equal(HG_Bulk_get_segment_count(bulk), 4);
    } else {
        void *ptr = buf;
        hg_size_t size = BULK_SIZE;
        assert_int_equal(
            HG_Bulk_create(g.cls, 1, &ptr, &size,
                           op == HG_BULK_PULL ? HG_BULK_READ_ONLY : HG_BULK_WRITE_ONLY,
                           &bulk),
            HG_SUCCESS);
    }
    assert_int_equal(HG_Bulk_get_size(bulk), BULK_SIZE);
    bulk_in_t in = {.bulk = bulk, .op = op, .size = BULK_SIZE, .seed = seed};
    assert_int_equal(HG_Create(g.ctx, g.server, g.ids.bulk, &h), HG_SUCCESS);
    assert_int_equal(forward_wait(h, &in, &st), HG_SUCCESS);
    assert_int_equal(HG_Get_output(h, &out), HG_SUCCESS);
    assert_int_equal(out.ok, 1);
    if (op == HG_BULK_PUSH)
        assert_true(check(buf, BULK_SIZE, seed));
    HG_Free_output(h, &out);
    HG_Destroy(h);
    HG_Bulk_free(bulk);
    free(buf);
}

static void test_bulk_pull(void **state)
{
    (void)state;
    run_bulk(HG_BULK_PULL, 1);
}
static void test_bulk_push(void **state)
{
    (void)state;
    run_bulk(HG_BULK_PUSH, 1);
}
static void test_bulk_pull_segmented(void **state)
{
    (void)state;
    run_bulk(HG_BULK_PULL, 4);
}
static void test_bulk_push_segmented(void **state)
{
    (void)state;
    run_bulk(HG_BULK_PUSH, 4);
}
static void test_bulk_pull_many_segments(void **state)
{
    (void)state;
    run_bulk(HG_BULK_PULL, BULK_SEGMENTS_MANY);
}
static void test_bulk_push_many_segments(void **state)
{
    (void)state;
    run_bulk(HG_BULK_PUSH, BULK_SEGMENTS_MANY);
}

/* Four pushes of BULK_SEGMENTS_MANY segments at once: the server's puts
 * fill the provider's queue and wait their turn (over ofi+shm, each small put
 * also waits for the client's progress); all must complete. */
#define BULK_CONCURRENT 4

static void test_bulk_push_concurrent(void **state)
{
    (void)state;
    unsigned char *bufs[BULK_CONCURRENT];
    hg_bulk_t bulks[BULK_CONCURRENT];
    hg_handle_t hs[BULK_CONCURRENT];
    struct test_hg_done st[BULK_CONCURRENT];

    for (int i = 0; i < BULK_CONCURRENT; i++) {
        uint32_t seed = 91 + (uint32_t)i;
        bufs[i] = calloc(1, BULK_SIZE);
        bulks[i] = bulk_many(bufs[i], BULK_SEGMENTS_MANY);
        bulk_in_t in = {
            .bulk = bulks[i], .op = HG_BULK_PUSH, .size = BULK_SIZE, .seed = seed};
        assert_int_equal(HG_Create(g.ctx, g.server, g.ids.bulk, &hs[i]), HG_SUCCESS);
        st[i] = (struct test_hg_done){0, HG_OTHER_ERROR};
        assert_int_equal(HG_Forward(hs[i], test_hg_done_cb, &st[i], &in), HG_SUCCESS);
    }
    for (int i = 0; i < BULK_CONCURRENT; i++) {
        status_out_t out;
        run_until(&st[i].calls, 1, WAIT_MS);
        assert_int_equal(st[i].calls, 1);
        assert_int_equal(st[i].ret, HG_SUCCESS);
        assert_int_equal(HG_Get_output(hs[i], &out), HG_SUCCESS);
        assert_int_equal(out.ok, 1);
        assert_true(check(bufs[i], BULK_SIZE, 91 + (uint32_t)i));
        HG_Free_output(hs[i], &out);
        HG_Destroy(hs[i]);
        HG_Bulk_free(bulks[i]);
        free(bufs[i]);
    }
}

/* At the plugin's limit both ways; one more segment is refused. Where the
 * limit is BULK_SEGMENTS_MANY (ofi+shm), BULK_SEGMENTS_MAX is that refusal. */
static void test_bulk_max_segments(void **state)
{
    (void)state;
    unsigned char *buf = malloc(BULK_SIZE);
    hg_bulk_t bulk = HG_BULK_NULL;
    uint32_t max = bulk_max_is_many() ? BULK_SEGMENTS_MANY : BULK_SEGMENTS_MAX;

    if (max == BULK_SEGMENTS_MAX) {
        run_bulk(HG_BULK_PULL, BULK_SEGMENTS_MAX);
        run_bulk(HG_BULK_PUSH, BULK_SEGMENTS_MAX);
    }
    assert_int_equal(bulk_segments(buf, max + 1, &bulk), HG_INVALID_ARG);
    assert_ptr_equal(bulk, HG_BULK_NULL);
    free(buf);
}

static void test_bulk_serialize_untrusted(void **state)
{
    (void)state;
    char buf[1] = {0};
    void *ptr = buf;
    hg_size_t size = 1;
    hg_bulk_t bulk, copy;
    unsigned char desc[512];

    assert_int_equal(HG_Bulk_create(g.cls, 1, &ptr, &size, HG_BULK_READ_ONLY, &bulk),
                     HG_SUCCESS);
    hg_size_t len = HG_Bulk_get_serialize_size(bulk, 0);
    assert_true(len <= sizeof(desc));
    assert_int_equal(HG_Bulk_serialize(desc, len, 0, bulk), HG_SUCCESS);
    assert_int_equal(HG_Bulk_serialize(desc, len - 1, 0, bulk), HG_OVERFLOW);
    assert_int_equal(HG_Bulk_deserialize(g.cls, &copy, desc, len), HG_SUCCESS);
    assert_int_equal(HG_Bulk_get_size(copy), 1);
    HG_Bulk_free(copy);
    /* Truncations and flipped bytes are refused or accepted, never a crash. */
    for (hg_size_t cut = 0; cut < len; cut++)
        if (HG_Bulk_deserialize(g.cls, &copy, desc, cut) == HG_SUCCESS)
            HG_Bulk_free(copy);
    /* Magic, version, flags, reserved bytes and the NA size are checked. */
    static const int checked[] = {0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15};
    for (size_t k = 0; k < sizeof(checked) / sizeof(checked[0]); k++) {
        int i = checked[k];
        desc[i] ^= 0xff;
        assert_int_not_equal(HG_Bulk_deserialize(g.cls, &copy, desc, len), HG_SUCCESS);
        desc[i] ^= 0xff;
    }
    HG_Bulk_free(bulk);
}

/* Transfer size bytes at offset between the remote handle and a local buffer. */
static hg_return_t transfer_wait(hg_class_t *cls, hg_context_t *ctx, hg_bulk_op_t op,
                                 hg_addr_t addr, hg_bulk_t remote, hg_size_t offset,
                                 void *buf, hg_size_t size)
{
    hg_bulk_t local;
    struct test_hg_done st = {0, HG_OTHER_ERROR};
    hg_return_t ret = HG_Bulk_create(cls, 1, &buf, &size, HG_BULK_READWRITE, &local);
    if (ret == HG_SUCCESS)
        ret = HG_Bulk_transfer(ctx, test_hg_done_cb, &st, op, addr, remote, offset, local,
                               0, size, NULL);
    if (ret == HG_SUCCESS) {
        run_ctx_until(ctx, &st.calls, 1, WAIT_MS);
        ret = st.calls == 1 ? st.ret : HG_TIMEOUT;
    }
    HG_Bulk_free(local);
    return ret;
}

/* A handle decoded from a peer is passed on (re-serialized) to a third party. */
static void test_bulk_pass_on(void **state)
{
    (void)state;
    hg_handle_t h;
    struct test_hg_done st;
    expose_out_t out;
    unsigned char desc1[512], desc2[512];
    char addr[256];
    hg_size_t addr_size = sizeof(addr);
    hg_bulk_t copy, third;
    hg_addr_t server2;
    enum { LEN = 4096, OFF = 12345 };
    unsigned char pattern[LEN], back[LEN];

    assert_int_equal(HG_Create(g.ctx, g.server, g.ids.expose, &h), HG_SUCCESS);
    assert_int_equal(forward_wait(h, NULL, &st), HG_SUCCESS);
    assert_int_equal(HG_Get_output(h, &out), HG_SUCCESS);
    hg_size_t len = HG_Bulk_get_serialize_size(out.bulk, 0);
    assert_true(len > 0 && len <= sizeof(desc1));
    assert_int_equal(HG_Bulk_serialize(desc1, len, 0, out.bulk), HG_SUCCESS);
    assert_int_equal(HG_Bulk_serialize(desc1, len - 1, 0, out.bulk), HG_OVERFLOW);
    assert_int_equal(HG_Bulk_deserialize(g.cls, &copy, desc1, len), HG_SUCCESS);
    assert_int_equal(HG_Bulk_get_serialize_size(copy, 0), len);
    assert_int_equal(HG_Bulk_serialize(desc2, len, 0, copy), HG_SUCCESS);
    assert_memory_equal(desc1, desc2, len);
    HG_Bulk_free(copy);

    /* The third party: another class, which only ever sees desc2. */
    hg_class_t *cls2 = init_class(g.info, false);
    assert_non_null(cls2);
    hg_context_t *ctx2 = HG_Context_create(cls2);
    assert_non_null(ctx2);
    assert_int_equal(HG_Addr_to_string(g.cls, addr, &addr_size, g.server), HG_SUCCESS);
    assert_int_equal(HG_Addr_lookup2(cls2, addr, &server2), HG_SUCCESS);
    assert_int_equal(HG_Bulk_deserialize(cls2, &third, desc2, len), HG_SUCCESS);
    assert_int_equal(HG_Bulk_get_size(third), EXPOSE_SIZE);
    test_fill(pattern, LEN, 27);
    assert_int_equal(
        transfer_wait(cls2, ctx2, HG_BULK_PUSH, server2, third, OFF, pattern, LEN),
        HG_SUCCESS);
    /* The first holder reads what the third party wrote into the owner's memory. */
    memset(back, 0, LEN);
    assert_int_equal(
        transfer_wait(g.cls, g.ctx, HG_BULK_PULL, g.server, out.bulk, OFF, back, LEN),
        HG_SUCCESS);
    assert_memory_equal(back, pattern, LEN);
    /* Bounds are still those of the owner's region. */
    assert_int_equal(transfer_wait(cls2, ctx2, HG_BULK_PULL, server2, third,
                                   EXPOSE_SIZE - LEN + 1, back, LEN),
                     HG_INVALID_ARG);

    HG_Bulk_free(third);
    HG_Addr_free(cls2, server2);
    assert_int_equal(HG_Context_destroy(ctx2), HG_SUCCESS);
    assert_int_equal(HG_Finalize(cls2), HG_SUCCESS);
    HG_Free_output(h, &out);
    HG_Destroy(h);
}

static void test_forward_self(void **state)
{
    (void)state;
    hg_addr_t self;
    hg_handle_t h;
    struct test_hg_done st;
    sum_in_t in = {.a = 1, .b = 2, .name = "self", .flag = HG_FALSE, .c = 3, .d = 4};
    sum_out_t out;

    assert_int_equal(HG_Addr_self(g.cls, &self), HG_SUCCESS);
    assert_int_equal(HG_Create(g.ctx, self, g.ids.sum, &h), HG_SUCCESS);
    assert_int_equal(forward_wait(h, &in, &st), HG_SUCCESS);
    assert_int_equal(HG_Get_output(h, &out), HG_SUCCESS);
    assert_int_equal(out.sum, 10);
    assert_string_equal(out.echo, "hello self");
    HG_Free_output(h, &out);
    HG_Destroy(h);

    /* Bulk transfer to self is a copy that honors permissions. */
    char src[100], dst[100] = {0};
    void *ps = src, *pd = dst;
    hg_size_t n = sizeof(src);
    hg_bulk_t bs, bd;
    fill(src, sizeof(src), 3);
    HG_Bulk_create(g.cls, 1, &ps, &n, HG_BULK_READ_ONLY, &bs);
    HG_Bulk_create(g.cls, 1, &pd, &n, HG_BULK_READWRITE, &bd);
    st = (struct test_hg_done){0, HG_OTHER_ERROR};
    assert_int_equal(HG_Bulk_transfer(g.ctx, test_hg_done_cb, &st, HG_BULK_PULL, self, bs,
                                      0, bd, 0, n, NULL),
                     HG_SUCCESS);
    run_until(&st.calls, 1, WAIT_MS);
    assert_int_equal(st.ret, HG_SUCCESS);
    assert_true(check(dst, sizeof(dst), 3));
    st = (struct test_hg_done){0, HG_OTHER_ERROR};
    assert_int_equal(HG_Bulk_transfer(g.ctx, test_hg_done_cb, &st, HG_BULK_PUSH, self, bs,
                                      0, bd, 0, n, NULL),
                     HG_PERMISSION);
    HG_Bulk_free(bs);
    HG_Bulk_free(bd);
    HG_Addr_free(g.cls, self);
}

static void test_cancel_forward(void **state)
{
    (void)state;
    hg_handle_t h;
    struct test_hg_done st = {0, HG_OTHER_ERROR};
    sum_in_t in = {.a = 1, .b = 1, .name = "again", .flag = HG_FALSE, .c = 0, .d = 0};
    sum_out_t out;

    assert_int_equal(HG_Create(g.ctx, g.server, g.ids.sleep, &h), HG_SUCCESS);
    assert_int_equal(HG_Forward(h, test_hg_done_cb, &st, NULL), HG_SUCCESS);
    for (int i = 0; i < 4; i++) /* the request leaves; the server now sleeps */
        HG_Progress(g.ctx, 50);
    assert_int_equal(st.calls, 0);
    assert_int_equal(HG_Cancel(h), HG_SUCCESS);
    run_until(&st.calls, 1, WAIT_MS);
    assert_int_equal(st.calls, 1);
    assert_int_equal(st.ret, HG_CANCELED);
    run_until(&st.calls, 2, 300); /* no second callback */
    assert_int_equal(st.calls, 1);

    /* The same handle works again (the stale response must not match). */
    assert_int_equal(HG_Reset(h, g.server, g.ids.sum), HG_SUCCESS);
    assert_int_equal(forward_wait(h, &in, &st), HG_SUCCESS);
    assert_int_equal(HG_Get_output(h, &out), HG_SUCCESS);
    assert_int_equal(out.sum, 2);
    HG_Free_output(h, &out);
    HG_Destroy(h);
}

static void test_destroy_pending(void **state)
{
    (void)state;
    hg_handle_t h;
    struct test_hg_done st = {0, HG_OTHER_ERROR};
    sum_in_t in = {.a = 1, .b = 1, .name = "x", .flag = HG_FALSE, .c = 0, .d = 0};

    /* Destroy right after forward: the handle lives until the callback ran. */
    assert_int_equal(HG_Create(g.ctx, g.server, g.ids.sum, &h), HG_SUCCESS);
    assert_int_equal(HG_Forward(h, test_hg_done_cb, &st, &in), HG_SUCCESS);
    assert_int_equal(HG_Destroy(h), HG_SUCCESS);
    run_until(&st.calls, 1, WAIT_MS);
    assert_int_equal(st.calls, 1);
    assert_int_equal(st.ret, HG_SUCCESS);
}

static void test_cancel_bulk(void **state)
{
    (void)state;
    hg_handle_t h;
    struct test_hg_done st;
    expose_out_t out;
    void *buf = malloc(EXPOSE_SIZE);
    hg_size_t size = EXPOSE_SIZE;
    hg_bulk_t local;
    hg_op_id_t op = HG_OP_ID_NULL;

    assert_int_equal(HG_Create(g.ctx, g.server, g.ids.expose, &h), HG_SUCCESS);
    assert_int_equal(forward_wait(h, NULL, &st), HG_SUCCESS);
    assert_int_equal(HG_Get_output(h, &out), HG_SUCCESS);
    assert_int_equal(HG_Bulk_get_size(out.bulk), EXPOSE_SIZE);
    assert_int_equal(HG_Bulk_create(g.cls, 1, &buf, &size, HG_BULK_WRITE_ONLY, &local),
                     HG_SUCCESS);
    memset(buf, 0xaa, EXPOSE_SIZE);
    st = (struct test_hg_done){0, HG_OTHER_ERROR};
    assert_int_equal(HG_Bulk_transfer(g.ctx, test_hg_done_cb, &st, HG_BULK_PULL, g.server,
                                      out.bulk, 0, local, 0, EXPOSE_SIZE, &op),
                     HG_SUCCESS);
    assert_int_equal(HG_Bulk_cancel(op), HG_SUCCESS);
    run_until(&st.calls, 1, WAIT_MS);
    assert_int_equal(st.calls, 1);
    /* Either the cancel won and nothing was written, or the transfer had
     * already moved data and then completes in full: never both. */
    if (st.ret == HG_CANCELED) {
        for (size_t i = 0; i < EXPOSE_SIZE; i++)
            if (((unsigned char *)buf)[i] != 0xaa)
                fail_msg("cancelled pull wrote byte %zu", i);
    } else {
        assert_int_equal(st.ret, HG_SUCCESS);
    }
    print_message("# %s: cancelled 64 MiB pull -> %s\n", g.info,
                  HG_Error_to_string(st.ret));
    run_until(&st.calls, 2, 200);
    assert_int_equal(st.calls, 1);

    /* Out of bounds is refused locally. */
    assert_int_equal(HG_Bulk_transfer(g.ctx, test_hg_done_cb, &st, HG_BULK_PULL, g.server,
                                      out.bulk, 1, local, 0, EXPOSE_SIZE, NULL),
                     HG_INVALID_ARG);
    HG_Bulk_free(local);
    HG_Free_output(h, &out);
    HG_Destroy(h);
    free(buf);
}

static void test_checksum_error(void **state)
{
    (void)state;
    hg_handle_t h;
    struct test_hg_done st;

    assert_int_equal(HG_Create(g.ctx, g.server, g.ids.corrupt, &h), HG_SUCCESS);
    assert_int_equal(forward_wait(h, NULL, &st), HG_CHECKSUM_ERROR);
    assert_int_equal(st.calls, 1);
    HG_Destroy(h);
}

static void test_finalize_busy(void **state)
{
    (void)state;
    hg_handle_t h;

    assert_int_equal(HG_Create(g.ctx, g.server, g.ids.sum, &h), HG_SUCCESS);
    /* The context is alive (a forgotten idle handle alone would not stop
     * HG_Context_destroy: test_hg_forgotten). */
    assert_int_equal(HG_Finalize(g.cls), HG_BUSY);
    HG_Destroy(h);
}

static void test_many_in_flight(void **state)
{
    (void)state;
    static hg_handle_t h[IN_FLIGHT];
    static struct test_hg_done st[IN_FLIGHT];
    static sum_in_t in[IN_FLIGHT];
    int done = 0;
    const int n = IN_FLIGHT;

    for (int i = 0; i < n; i++) {
        in[i] = (sum_in_t){.a = i, .b = 0, .name = "n", .flag = HG_FALSE, .c = 0, .d = 0};
        st[i] = (struct test_hg_done){0, HG_OTHER_ERROR};
        assert_int_equal(HG_Create(g.ctx, g.server, g.ids.sum, &h[i]), HG_SUCCESS);
        assert_int_equal(HG_Forward(h[i], test_hg_done_cb, &st[i], &in[i]), HG_SUCCESS);
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (done < n) {
        unsigned int count = 0;
        HG_Progress(g.ctx, 50);
        HG_Trigger(g.ctx, 0, IN_FLIGHT, &count);
        done = 0;
        for (int i = 0; i < n; i++)
            done += st[i].calls;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 60)
            break;
    }
    assert_int_equal(done, n);
    for (int i = 0; i < n; i++) {
        sum_out_t out;
        assert_int_equal(st[i].ret, HG_SUCCESS);
        assert_int_equal(HG_Get_output(h[i], &out), HG_SUCCESS);
        assert_int_equal(out.sum, i);
        HG_Free_output(h[i], &out);
        HG_Destroy(h[i]);
    }
}

static hg_return_t req_forward_cb(const struct hg_cb_info *info)
{
    hg_request_t *request = info->arg;
    *(hg_return_t *)hg_request_get_data(request) = info->ret;
    hg_request_complete(request);
    return HG_SUCCESS;
}

static void test_request_timeout(void **state)
{
    (void)state;
    hg_request_class_t *rc = test_hg_request_class(g.ctx);
    hg_handle_t h;
    unsigned int completed = 0;
    hg_return_t cb_ret = HG_OTHER_ERROR;

    assert_non_null(rc);
    /* As in the seed example: wait with a timeout, cancel, wait again. */
    HG_Create(g.ctx, g.server, g.ids.sleep, &h);
    hg_request_t *request = hg_request_create(rc);
    hg_request_set_data(request, &cb_ret);
    assert_int_equal(HG_Forward(h, req_forward_cb, request, NULL), HG_SUCCESS);
    hg_request_wait(request, 300, &completed);
    assert_false(completed);
    HG_Cancel(h);
    hg_request_wait(request, 5000, &completed);
    assert_true(completed);
    assert_int_equal(cb_ret, HG_CANCELED);
    hg_request_destroy(request);
    HG_Destroy(h);

    /* And one that completes in time (after the server woke up). */
    sum_in_t in = {.a = 20, .b = 22, .name = "req", .flag = HG_FALSE, .c = 0, .d = 0};
    HG_Create(g.ctx, g.server, g.ids.sum, &h);
    request = hg_request_create(rc);
    hg_request_set_data(request, &cb_ret);
    assert_int_equal(HG_Forward(h, req_forward_cb, request, &in), HG_SUCCESS);
    hg_request_wait(request, WAIT_MS, &completed);
    assert_true(completed);
    assert_int_equal(cb_ret, HG_SUCCESS);
    hg_request_destroy(request);
    HG_Destroy(h);
    /* A zero timeout still progresses: polling with it completes a forward. */
    HG_Create(g.ctx, g.server, g.ids.sum, &h);
    request = hg_request_create(rc);
    hg_request_set_data(request, &cb_ret);
    cb_ret = HG_OTHER_ERROR;
    assert_int_equal(HG_Forward(h, req_forward_cb, request, &in), HG_SUCCESS);
    completed = 0;
    for (int i = 0; i < 2000000 && !completed; i++)
        assert_int_equal(hg_request_wait(request, 0, &completed), HG_UTIL_SUCCESS);
    assert_true(completed);
    assert_int_equal(cb_ret, HG_SUCCESS);
    hg_request_reset(request);
    assert_int_equal(hg_request_wait(request, 0, &completed), HG_UTIL_SUCCESS);
    assert_false(completed);
    hg_request_destroy(request);
    HG_Destroy(h);
    void *arg = NULL;
    hg_request_finalize(rc, &arg);
    assert_ptr_equal(arg, g.ctx);
    hg_request_finalize(NULL, NULL);
}

static void test_misc_api(void **state)
{
    (void)state;
    unsigned int major, minor, patch;
    hg_bool_t flag = HG_FALSE;
    hg_id_t id = 0;
    char name[256];
    hg_size_t size = sizeof(name);

    HG_Version_get(&major, &minor, &patch);
    assert_int_equal(major, 2);
    assert_string_equal(HG_Error_to_string(HG_CANCELED), "HG_CANCELED");
    assert_non_null(HG_Class_get_name(g.cls));
    assert_false(HG_Class_is_listening(g.cls));
    assert_true(HG_Class_get_output_eager_size(g.cls) > 0);
    assert_ptr_equal(HG_Context_get_class(g.ctx), g.cls);
    assert_int_equal(HG_Registered_name(g.cls, "hgt_sum", &id, &flag), HG_SUCCESS);
    assert_true(flag);
    assert_int_equal(id, g.ids.sum);
    /* Names map to ids as in Mercury: djb2, the hash of mercury_hash_string.h. */
    assert_int_equal(id, hg_hash_string("hgt_sum"));
    assert_int_equal(hg_hash_string("hello"), 261238937u);
    assert_int_equal(HG_Registered_name(g.cls, "nope", &id, &flag), HG_SUCCESS);
    assert_false(flag);
    HG_Registered_disabled_response(g.cls, g.ids.noresp, &flag);
    assert_true(flag);
    int data = 5;
    assert_int_equal(HG_Register_data(g.cls, g.ids.sum, &data, NULL), HG_SUCCESS);
    assert_ptr_equal(HG_Registered_data(g.cls, g.ids.sum), &data);
    assert_int_equal(HG_Addr_to_string(g.cls, name, &size, g.server), HG_SUCCESS);
    hg_addr_t again;
    assert_int_equal(HG_Addr_lookup2(g.cls, name, &again), HG_SUCCESS);
    assert_true(HG_Addr_cmp(g.cls, again, g.server));
    HG_Addr_free(g.cls, again);
    hg_handle_t h;
    HG_Create(g.ctx, g.server, g.ids.sum, &h);
    HG_Ref_incr(h);
    assert_int_equal(HG_Ref_get(h), 2);
    HG_Destroy(h);
    assert_int_equal(HG_Get_info(h)->id, g.ids.sum);
    HG_Destroy(h);
    /* Unknown ids are refused at create (0 is allowed: test_create_id0_reset). */
    assert_int_equal(HG_Create(g.ctx, g.server, 12345, &h), HG_NOENTRY);
    /* Thread modes other than the NA_THREAD_MODE_SINGLE bits are refused. */
    struct hg_init_info bad = HG_INIT_INFO_INITIALIZER;
    bad.na_init_info.thread_mode = 0x04;
    assert_null(HG_Init_opt(g.info, HG_FALSE, &bad));
}

int main(void)
{
    const char *const *transports;
    size_t n = test_transports_mercury(&transports);
    int failed = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_misc_api),
        cmocka_unit_test(test_sum),
        cmocka_unit_test(test_create_id0_reset),
        cmocka_unit_test(test_no_response),
        cmocka_unit_test(test_registry_change),
        cmocka_unit_test(test_big),
        cmocka_unit_test(test_bulk_pull),
        cmocka_unit_test(test_bulk_push),
        cmocka_unit_test(test_bulk_pull_segmented),
        cmocka_unit_test(test_bulk_push_segmented),
        cmocka_unit_test(test_bulk_pull_many_segments),
        cmocka_unit_test(test_bulk_push_many_segments),
        cmocka_unit_test(test_bulk_max_segments),
        cmocka_unit_test(test_bulk_push_concurrent),
        cmocka_unit_test(test_bulk_serialize_untrusted),
        cmocka_unit_test(test_bulk_pass_on),
        cmocka_unit_test(test_forward_self),
        cmocka_unit_test(test_destroy_pending),
        cmocka_unit_test(test_cancel_forward),
        cmocka_unit_test(test_cancel_bulk),
        cmocka_unit_test(test_checksum_error),
        cmocka_unit_test(test_finalize_busy),
        cmocka_unit_test(test_many_in_flight),
        cmocka_unit_test(test_request_timeout),
    };

    /* Every transport twice: thread-safe (the default), then with
     * NA_THREAD_MODE_SINGLE on both sides, where NA and HG take no locks. */
    for (size_t k = 0; k < 2 * n; k++) {
        struct test_server srv;
        char name[64];
        g.info = transports[k / 2];
        g.thread_mode = k % 2 ? NA_THREAD_MODE_SINGLE : 0;
        g.cls = NULL;
        snprintf(name, sizeof(name), "hg/%s%s", g.info, g.thread_mode ? "/single" : "");
        test_group_banner(name);
        /* The server is forked before any HG/NA initialization here. */
        if (!test_server_start(&srv, g.info, server_main)) {
            fprintf(stderr, "# server for %s did not start\n", g.info);
            failed++;
            continue;
        }
        g.server_pid = srv.pid;
        if (group_setup(NULL) != 0 ||
            HG_Addr_lookup2(g.cls, srv.addr, &g.server) != HG_SUCCESS) {
            fprintf(stderr, "# client init / lookup of %s failed\n", srv.addr);
            test_server_wait(&srv, 0);
            failed++;
            continue;
        }
        failed += _cmocka_run_group_tests(name, tests, sizeof(tests) / sizeof(*tests),
                                          NULL, group_teardown);
    }
    return failed ? 1 : 0;
}
