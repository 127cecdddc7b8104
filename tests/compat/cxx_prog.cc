/*
 * cxx_prog.cc -- a C++ program written against Mercury 2.4's headers, as
 * Thallium and the Mochi services built on it are: every header it includes
 * must compile as C++ (C++11 to C++20), declare its functions with C linkage,
 * and expand its macros (MERCURY_GEN_PROC, HG_INIT_INFO_INITIALIZER, the
 * list and queue macros) into valid C++.
 *
 *     cxx_prog [INFO]      default ofi+tcp://127.0.0.1
 *
 * A server class (listening on INFO, progressed by an hg_thread) and a client
 * class in this process: the client sends {tag, bulk over N uint32, N}; the
 * server pulls the array with HG_Bulk_transfer, sums it and answers {tag,
 * sum}. The RPC runs once through HG_Forward and a callback, once as an hgx
 * request (hgx_iforward + hgx_wait). The utility headers are used on the side:
 * atomics, the atomic queue, lists, queues, reader-writer locks, mutexes, the
 * thread pool, CPU affinity, event objects in a poll set, log outlets, the string hash,
 * string objects, time, debug logs (static, allocated and an outlet's), byte
 * order, compiler attributes and lock annotations. Built and run by check-installed.sh
 * against an installed hgx (pkg-config and CMake). Exit 0 when every check holds.
 */
#include <hgx.h>
#include <mercury.h>
#include <mercury_bulk.h>
#include <mercury_core_types.h>
#include <mercury_macros.h>
#include <mercury_proc_bulk.h>
#include <mercury_proc_string.h>
#include <mercury_request.h>
#include <mercury_string_object.h>
#include <na.h>

#include <mercury_atomic.h>
#include <mercury_atomic_queue.h>
#include <mercury_byteswap.h>
#include <mercury_compiler_attributes.h>
#include <mercury_dlog.h>
#include <mercury_event.h>
#include <mercury_hash_string.h>
#include <mercury_hash_table.h>
#include <mercury_inet.h>
#include <mercury_list.h>
#include <mercury_log.h>
#include <mercury_mem_pool.h>
#include <mercury_poll.h>
#include <mercury_queue.h>
#include <mercury_thread.h>
#include <mercury_thread_mutex.h>
#include <mercury_thread_pool.h>
#include <mercury_thread_annotation.h>
#include <mercury_thread_rwlock.h>
#include <mercury_time.h>
#include <mercury_util.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "compat_check.h"

MERCURY_GEN_PROC(sum_in_t,
                 ((hg_const_string_t)(tag))((hg_bulk_t)(bulk))((uint32_t)(count)))
MERCURY_GEN_PROC(sum_out_t, ((hg_const_string_t)(tag))((uint64_t)(sum)))

/* A log outlet of the program's own, under Mercury's root outlet, and a
 * subsystem of it (at namespace scope: the macros end with a declaration of
 * external linkage, as Mercury's). */
HG_LOG_DECL_REGISTER(cxx_prog);
HG_LOG_SUBSYS_DECL_REGISTER(cxx_sub, cxx_prog);

/* One with a debug log: the positional initializers must be valid C++. */
HG_LOG_DEBUG_DECL_LE(cxx_dbg, 16);
HG_LOG_DEBUG_DECL_DLOG(cxx_dbg) = HG_LOG_DLOG_INITIALIZER(cxx_dbg, 16);
HG_LOG_DLOG_DECL_REGISTER(cxx_dbg);

namespace
{

const uint32_t kCount = 4096;

/* Server side: the state of one RPC while its pull runs. */
struct pull_op {
    hg_handle_t handle;
    sum_in_t in;
    std::vector<uint32_t> data;
    hg_bulk_t local;
};

hg_atomic_int32_t g_stop = HG_ATOMIC_VAR_INIT(0);
hg_atomic_int32_t g_answered = HG_ATOMIC_VAR_INIT(0);

hg_return_t sum_pulled(const struct hg_cb_info *info)
{
    pull_op *op = static_cast<pull_op *>(info->arg);
    sum_out_t out;
    out.tag = op->in.tag;
    out.sum = 0;
    if (info->ret == HG_SUCCESS)
        for (uint32_t v : op->data)
            out.sum += v;
    /* Counted before the answer leaves: the client may check the count as soon
     * as the answer arrives. */
    hg_atomic_incr32(&g_answered);
    hg_return_t ret = HG_Respond(op->handle, NULL, NULL, &out);
    CHECK(ret == HG_SUCCESS);
    HG_Bulk_free(op->local);
    HG_Free_input(op->handle, &op->in);
    HG_Destroy(op->handle);
    delete op;
    return HG_SUCCESS;
}

hg_return_t sum_rpc(hg_handle_t handle)
{
    pull_op *op = new pull_op();
    op->handle = handle;
    if (HG_Get_input(handle, &op->in) != HG_SUCCESS) {
        CHECK(!"HG_Get_input");
        HG_Destroy(handle);
        delete op;
        return HG_SUCCESS;
    }
    op->data.resize(op->in.count);
    void *ptr = op->data.data();
    hg_size_t size = op->data.size() * sizeof(uint32_t);
    const struct hg_info *hi = HG_Get_info(handle);
    CHECK(HG_Bulk_get_size(op->in.bulk) == size);
    CHECK(HG_Bulk_create(hi->hg_class, 1, &ptr, &size, HG_BULK_WRITE_ONLY, &op->local) ==
          HG_SUCCESS);
    CHECK(HG_Bulk_transfer(hi->context, sum_pulled, op, HG_BULK_PULL, hi->addr,
                           op->in.bulk, 0, op->local, 0, size,
                           HG_OP_ID_IGNORE) == HG_SUCCESS);
    return HG_SUCCESS;
}

HG_THREAD_RETURN_TYPE serve(void *arg)
{
    hg_context_t *ctx = static_cast<hg_context_t *>(arg);
    while (!hg_atomic_get32(&g_stop)) {
        unsigned int n = 0;
        HG_Trigger(ctx, 0, 16, &n);
        HG_Progress(ctx, 50);
    }
    return NULL;
}

struct fwd_state {
    bool done;
    hg_return_t ret;
};

hg_return_t forwarded(const struct hg_cb_info *info)
{
    fwd_state *st = static_cast<fwd_state *>(info->arg);
    st->ret = info->ret;
    st->done = true;
    return HG_SUCCESS;
}

/* Send the array under tag, through HG_Forward or an hgx request; the sum. */
uint64_t send_sum(hg_context_t *ctx, hg_addr_t server, hg_id_t id, const std::string &tag,
                  std::vector<uint32_t> &data, bool as_request)
{
    hg_class_t *cls = HG_Context_get_class(ctx);
    void *ptr = data.data();
    hg_size_t size = data.size() * sizeof(uint32_t);
    hg_bulk_t bulk = HG_BULK_NULL;
    hg_handle_t h = HG_HANDLE_NULL;
    CHECK(HG_Bulk_create(cls, 1, &ptr, &size, HG_BULK_READ_ONLY, &bulk) == HG_SUCCESS);
    CHECK(HG_Create(ctx, server, id, &h) == HG_SUCCESS);
    sum_in_t in;
    in.tag = tag.c_str();
    in.bulk = bulk;
    in.count = static_cast<uint32_t>(data.size());
    if (as_request) {
        hgx_request_t req;
        hgx_status_t status;
        CHECK(hgx_iforward(h, &in, &req) == HG_SUCCESS);
        CHECK(hgx_wait(&req, &status) == HG_SUCCESS);
    } else {
        fwd_state st = {false, HG_SUCCESS};
        CHECK(HG_Forward(h, forwarded, &st, &in) == HG_SUCCESS);
        hg_time_t start, now;
        hg_time_get_current(&start);
        while (!st.done) {
            unsigned int n = 0;
            HG_Progress(ctx, 10);
            HG_Trigger(ctx, 0, 1, &n);
            hg_time_get_current(&now);
            if (hg_time_to_double(hg_time_subtract(now, start)) > 10.0)
                break;
        }
        CHECK(st.done && st.ret == HG_SUCCESS);
    }
    sum_out_t out;
    uint64_t sum = 0;
    if (HG_Get_output(h, &out) == HG_SUCCESS) {
        CHECK(tag == out.tag);
        sum = out.sum;
        HG_Free_output(h, &out);
    } else {
        CHECK(!"HG_Get_output");
    }
    HG_Destroy(h);
    HG_Bulk_free(bulk);
    return sum;
}

hg_thread_mutex_t g_mutex = HG_THREAD_MUTEX_INITIALIZER;

HG_THREAD_RETURN_TYPE pool_work(void *arg)
{
    hg_thread_mutex_lock(&g_mutex);
    ++*static_cast<int *>(arg);
    hg_thread_mutex_unlock(&g_mutex);
    return NULL;
}

/* A thread pool, an event object seen through a poll set, a log line. */
void check_util_threads(void)
{
    hg_thread_pool_t *pool = NULL;
    int done = 0;
    struct hg_thread_work work[4];
    CHECK(hg_thread_pool_init(2, &pool) == HG_UTIL_SUCCESS);
    for (int i = 0; i < 4; i++) {
        work[i].func = pool_work;
        work[i].args = &done;
        CHECK(hg_thread_pool_post(pool, &work[i]) == HG_UTIL_SUCCESS);
    }
    CHECK(hg_thread_pool_destroy(pool) == HG_UTIL_SUCCESS); /* runs what was posted */
    CHECK(done == 4);

    hg_poll_set_t *set = hg_poll_create();
    int fd = hg_event_create();
    struct hg_poll_event ev, out[1];
    unsigned int n = 0;
    ev.events = HG_POLLIN;
    ev.data.u64 = 42;
    CHECK(set && fd >= 0 && hg_poll_add(set, fd, &ev) == HG_UTIL_SUCCESS);
    CHECK(hg_event_set(fd) == HG_UTIL_SUCCESS);
    CHECK(hg_poll_wait(set, 1000, 1, out, &n) == HG_UTIL_SUCCESS && n == 1 &&
          out[0].data.u64 == 42);
    hg_poll_remove(set, fd);
    hg_event_destroy(fd);
    hg_poll_destroy(set);
    HG_LOG_WRITE(cxx_prog, HG_LOG_LEVEL_DEBUG, "util checks done (%d)", done);
    HG_LOG_SUBSYS_WRITE(cxx_sub, cxx_prog, HG_LOG_LEVEL_DEBUG, "from the subsystem");
    HG_LOG_WRITE_DEBUG_EXT(cxx_prog, "extended", "%d checks\n", done);
    CHECK(HG_LOG_OUTLET(cxx_prog_cxx_sub).parent == &HG_LOG_OUTLET(cxx_prog));
    CHECK(HG_LOG_OUTLET(cxx_prog_cxx_sub).registered);
    CHECK(std::strcmp(hg_log_level_to_string(HG_LOG_LEVEL_WARNING), "warning") == 0);

    /* Pin the calling thread to one CPU it may use (CPU 0 when allowed), read
     * the set back, then restore it. */
    hg_cpu_set_t orig, one, back;
    CPU_ZERO(&orig);
    CHECK(hg_thread_getaffinity(hg_thread_self(), &orig) == HG_UTIL_SUCCESS);
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &orig))
        cpu++;
    CHECK(cpu < CPU_SETSIZE);
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    CHECK(hg_thread_setaffinity(hg_thread_self(), &one) == HG_UTIL_SUCCESS);
    CPU_ZERO(&back);
    CHECK(hg_thread_getaffinity(hg_thread_self(), &back) == HG_UTIL_SUCCESS);
    CHECK(CPU_ISSET(cpu, &back) && CPU_COUNT(&back) == 1);
    CHECK(hg_thread_setaffinity(hg_thread_self(), &orig) == HG_UTIL_SUCCESS);
}

/* Debug logs, byte order, attributes and annotations from C++. */
struct HG_LOCK_CAPABILITY("mutex") cxx_lock {
    hg_thread_mutex_t m;
};
void cxx_lock_take(cxx_lock *l) HG_LOCK_ACQUIRE(l) HG_LOCK_NO_THREAD_SAFETY_ANALYSIS;
void cxx_lock_take(cxx_lock *l)
{
    hg_thread_mutex_lock(&l->m);
}
void cxx_lock_give(cxx_lock *l) HG_LOCK_RELEASE(l) HG_LOCK_NO_THREAD_SAFETY_ANALYSIS;
void cxx_lock_give(cxx_lock *l)
{
    hg_thread_mutex_unlock(&l->m);
}

struct aligned_block {
    char c;
} HG_ATTR_ALIGNED(64);

int cxx_fall(int x) HG_ATTR_WARN_UNUSED_RESULT;
int cxx_fall(int x)
{
    int n = 0;
    switch (x) {
    case 1:
        n++;
        HG_ATTR_FALLTHROUGH;
    case 0:
        n++;
        break;
    default:
        break;
    }
    return n;
}

hg_dlog_entry g_cxx_le[4];
hg_dlog g_cxx_dlog = HG_DLOG_INITIALIZER("cxx", g_cxx_le, 4, 0);

void check_util_dlog(void)
{
    char name[] = "cxxheap";
    hg_dlog *d = hg_dlog_alloc(name, 3, 1);
    CHECK(d != NULL);
    if (d) {
        for (int i = 0; i < 5; i++)
            CHECK(hg_dlog_addlog(d, __FILE__, __LINE__, __func__, "cxx", NULL) == 1);
        CHECK(d->leadds == 3);
        hg_atomic_int32_t *c = NULL;
        hg_dlog_mkcount32(d, &c, "cxx_count", "from C++");
        CHECK(c != NULL && hg_atomic_incr32(c) == 1);
        hg_dlog_free(d);
    }
    for (int i = 0; i < 4; i++)
        CHECK(hg_dlog_addlog(&g_cxx_dlog, __FILE__, __LINE__, __func__, NULL, NULL) == 1);
    CHECK(hg_dlog_addlog(&g_cxx_dlog, __FILE__, __LINE__, __func__, NULL, NULL) == 0);

    hg_log_set_subsys_level("cxx_dbg", HG_LOG_LEVEL_MIN_DEBUG);
    HG_LOG_WRITE(cxx_dbg, HG_LOG_LEVEL_DEBUG, "kept in the debug log (%d)", 1);
    CHECK(HG_LOG_DEBUG_DLOG(cxx_dbg).leadds == 1);
    hg_log_set_subsys_level("cxx_dbg", HG_LOG_LEVEL_ERROR);

    uint64_t net = htonll(UINT64_C(0x0102030405060708));
    unsigned char b[8];
    std::memcpy(b, &net, sizeof(b));
    CHECK(b[0] == 1 && b[7] == 8 && ntohll(net) == UINT64_C(0x0102030405060708));
    CHECK(bswap_32(0x11223344u) == 0x44332211u);

    CHECK(alignof(aligned_block) == 64);
    CHECK(cxx_fall(1) == 2);
    cxx_lock l;
    CHECK(hg_thread_mutex_init(&l.m) == HG_UTIL_SUCCESS);
    cxx_lock_take(&l);
    cxx_lock_give(&l);
    hg_thread_mutex_destroy(&l.m);
}

/* The utility headers as C++ programs use them. */
struct item {
    int value;
    HG_LIST_ENTRY(item) link;
    STAILQ_ENTRY(item) qlink;
};

void check_util(void)
{
    hg_atomic_int64_t a64 = HG_ATOMIC_VAR_INIT(39);
    CHECK(hg_atomic_get64(&a64) == 39);
    hg_atomic_init64(&a64, 40);
    CHECK(hg_atomic_incr64(&a64) == 41);
    CHECK(hg_atomic_cas64(&a64, 41, 2) && hg_atomic_get64(&a64) == 2);

    struct hg_atomic_queue *q = hg_atomic_queue_alloc(8);
    int x = 7;
    CHECK(q && hg_atomic_queue_push(q, &x) == HG_UTIL_SUCCESS);
    CHECK(q && hg_atomic_queue_pop_mc(q) == &x && hg_atomic_queue_is_empty(q));
    hg_atomic_queue_free(q);

    HG_LIST_HEAD(item) list = HG_LIST_HEAD_INITIALIZER(list);
    STAILQ_HEAD(item_queue, item) queue = STAILQ_HEAD_INITIALIZER(queue);
    item items[3];
    for (int i = 0; i < 3; i++) {
        items[i].value = i;
        HG_LIST_INSERT_HEAD(&list, &items[i], link);
        STAILQ_INSERT_TAIL(&queue, &items[i], qlink);
    }
    int sum = 0;
    item *it;
    HG_LIST_FOREACH(it, &list, link)
    sum += it->value;
    CHECK(sum == 3 && HG_LIST_FIRST(&list)->value == 2);
    CHECK(STAILQ_FIRST(&queue)->value == 0);
    STAILQ_REMOVE_HEAD(&queue, qlink);
    CHECK(STAILQ_FIRST(&queue)->value == 1);
    STAILQ_REMOVE(&queue, &items[2], item, qlink);
    CHECK(STAILQ_NEXT(STAILQ_FIRST(&queue), qlink) == NULL);

    hg_string_object_t s;
    CHECK(hg_string_object_init_const_char(&s, "const", HG_FALSE) == HG_SUCCESS);
    hg_string_object_t copy;
    CHECK(hg_string_object_dup(s, &copy) == HG_SUCCESS &&
          std::strcmp(copy.data, "const") == 0);
    CHECK(copy.is_owned);
    hg_string_object_free(&copy);
    hg_string_object_free(&s);

    hg_thread_rwlock_t rw;
    CHECK(hg_thread_rwlock_init(&rw) == HG_UTIL_SUCCESS);
    hg_thread_rwlock_rdlock(&rw);
    CHECK(hg_thread_rwlock_try_wrlock(&rw) == HG_UTIL_FAIL);
    hg_thread_rwlock_release_rdlock(&rw);
    hg_thread_rwlock_destroy(&rw);
    CHECK(hg_hash_string("hello") == 261238937u);

    struct hg_init_info info = HG_INIT_INFO_INITIALIZER;
    CHECK(info.na_class == NULL && info.request_post_init == 0 && !info.auto_sm);
    CHECK(
        HG_VERSION_GE(HG_VERSION(HG_VERSION_MAJOR, HG_VERSION_MINOR), HG_VERSION(2, 4)));
}

} // namespace

int main(int argc, char *argv[])
{
    const char *info_string = argc > 1 ? argv[1] : "ofi+tcp://127.0.0.1";
    check_util();
    check_util_threads();
    check_util_dlog();

    hg_class_t *scls = HG_Init(info_string, HG_TRUE);
    hg_class_t *ccls = HG_Init(info_string, HG_FALSE);
    if (!scls || !ccls) {
        std::printf("FAILED: HG_Init(%s)\n", info_string);
        return 1;
    }
    hg_context_t *sctx = HG_Context_create(scls);
    hg_context_t *cctx = HG_Context_create(ccls);
    hg_id_t sid = MERCURY_REGISTER(scls, "cxx_sum", sum_in_t, sum_out_t, sum_rpc);
    hg_id_t cid = MERCURY_REGISTER(ccls, "cxx_sum", sum_in_t, sum_out_t, NULL);
    CHECK(sid == cid && sid == hg_hash_string("cxx_sum")); /* Mercury's name ids */

    hg_addr_t self = HG_ADDR_NULL, server = HG_ADDR_NULL;
    char name[256];
    hg_size_t name_size = sizeof(name);
    CHECK(HG_Addr_self(scls, &self) == HG_SUCCESS);
    CHECK(HG_Addr_to_string(scls, name, &name_size, self) == HG_SUCCESS);
    HG_Addr_free(scls, self);
    CHECK(HG_Addr_lookup2(ccls, name, &server) == HG_SUCCESS);

    hg_thread_t thread;
    CHECK(hg_thread_create(&thread, serve, sctx) == HG_UTIL_SUCCESS);

    std::vector<uint32_t> data(kCount);
    uint64_t expect = 0;
    for (uint32_t i = 0; i < kCount; i++) {
        data[i] = i * 3u + 1u;
        expect += data[i];
    }
    CHECK(send_sum(cctx, server, cid, "callback", data, false) == expect);
    CHECK(send_sum(cctx, server, cid, "request", data, true) == expect);
    CHECK(hg_atomic_get32(&g_answered) == 2);

    hg_atomic_set32(&g_stop, 1);
    hg_thread_join(thread);
    HG_Addr_free(ccls, server);
    CHECK(HG_Context_destroy(cctx) == HG_SUCCESS);
    CHECK(HG_Context_destroy(sctx) == HG_SUCCESS);
    CHECK(HG_Finalize(ccls) == HG_SUCCESS);
    CHECK(HG_Finalize(scls) == HG_SUCCESS);
    std::printf("cxx_prog (%s, C++ %ld): %s\n", info_string,
                static_cast<long>(__cplusplus), failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
