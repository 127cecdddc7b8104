/*
 * util_prog.c -- a program written against Mercury's utility headers only
 * (mercury_util.h, threads, mutex, condition, thread pool, time, atomics,
 * list, queue, log outlets, poll sets, memory helpers), as Mercury's test
 * harness uses them. Built in the tree by
 * make check and against an installed hgx by check-installed.sh. Exit 0 when
 * every check holds.
 */
#include "mercury_atomic.h"
#include "mercury_list.h"
#include "mercury_log.h"
#include "mercury_mem.h"
#include "mercury_param.h"
#include "mercury_poll.h"
#include "mercury_queue.h"
#include "mercury_thread.h"
#include "mercury_thread_condition.h"
#include "mercury_thread_mutex.h"
#include "mercury_thread_pool.h"
#include "mercury_time.h"
#include "mercury_util.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NWORK 64
#define NTHREADS 4
#define NINCR 10000

#include "compat_check.h"

static hg_atomic_int32_t counter;
static hg_thread_mutex_t mu = HG_THREAD_MUTEX_INITIALIZER;
static hg_thread_cond_t cond;
static int done_work;

static HG_THREAD_RETURN_TYPE incr_many(void *arg)
{
    (void)arg;
    for (int i = 0; i < NINCR; i++)
        hg_atomic_incr32(&counter);
    return NULL;
}

static HG_THREAD_RETURN_TYPE work_fn(void *arg)
{
    int *slot = arg;
    *slot = 1;
    hg_thread_mutex_lock(&mu);
    done_work++;
    hg_thread_cond_signal(&cond);
    hg_thread_mutex_unlock(&mu);
    return NULL;
}

static void check_threads_atomics(void)
{
    hg_thread_t t[NTHREADS];
    hg_atomic_init32(&counter, 0);
    for (int i = 0; i < NTHREADS; i++)
        CHECK(hg_thread_create(&t[i], incr_many, NULL) == HG_UTIL_SUCCESS);
    for (int i = 0; i < NTHREADS; i++)
        CHECK(hg_thread_join(t[i]) == HG_UTIL_SUCCESS);
    CHECK(hg_atomic_get32(&counter) == NTHREADS * NINCR);
    CHECK(hg_atomic_cas32(&counter, NTHREADS * NINCR, 5));
    CHECK(!hg_atomic_cas32(&counter, 0, 6) && hg_atomic_get32(&counter) == 5);
    CHECK(hg_atomic_decr32(&counter) == 4 && hg_atomic_or32(&counter, 3) == 4);
    CHECK(hg_atomic_get32(&counter) == 7);
    hg_atomic_int64_t big;
    hg_atomic_init64(&big, INT64_C(1) << 40);
    CHECK(hg_atomic_incr64(&big) == (INT64_C(1) << 40) + 1);
    CHECK(hg_thread_equal(hg_thread_self(), hg_thread_self()));
}

static void check_pool(void)
{
    hg_thread_pool_t *pool = NULL;
    struct hg_thread_work w[NWORK];
    int slots[NWORK] = {0};
    CHECK(hg_thread_cond_init(&cond) == HG_UTIL_SUCCESS);
    CHECK(hg_thread_pool_init(0, &pool) == HG_UTIL_FAIL);
    CHECK(hg_thread_pool_init(NTHREADS, &pool) == HG_UTIL_SUCCESS && pool);
    CHECK(hg_thread_pool_post(pool, NULL) == HG_UTIL_FAIL);
    for (int i = 0; i < NWORK; i++) {
        w[i].func = work_fn;
        w[i].args = &slots[i];
        CHECK(hg_thread_pool_post(pool, &w[i]) == HG_UTIL_SUCCESS);
    }
    hg_thread_mutex_lock(&mu);
    while (done_work < NWORK)
        if (hg_thread_cond_timedwait(&cond, &mu, 5000) != HG_UTIL_SUCCESS)
            break;
    CHECK(done_work == NWORK);
    /* nobody signals now: a short timed wait must time out */
    CHECK(hg_thread_cond_timedwait(&cond, &mu, 20) == HG_UTIL_FAIL);
    hg_thread_mutex_unlock(&mu);
    int all = 1;
    for (int i = 0; i < NWORK; i++)
        all &= slots[i];
    CHECK(all);
    CHECK(hg_thread_pool_destroy(pool) == HG_UTIL_SUCCESS);
    CHECK(hg_thread_cond_destroy(&cond) == HG_UTIL_SUCCESS);
}

static void check_time(void)
{
    hg_time_t t0, t1, d = hg_time_from_ms(30);
    CHECK(hg_time_get_current(&t0) == HG_UTIL_SUCCESS);
    CHECK(hg_time_sleep(d) == HG_UTIL_SUCCESS);
    CHECK(hg_time_get_current(&t1) == HG_UTIL_SUCCESS);
    CHECK(hg_time_less(t0, t1) && hg_time_diff(t1, t0) >= 0.029);
    CHECK(hg_time_to_ms(hg_time_subtract(t1, t0)) >= 29);
    CHECK(hg_time_to_ms(hg_time_add(d, hg_time_from_ms(1990))) == 2020);
    CHECK(hg_time_to_ms(hg_time_from_double(1.5)) == 1500);
}

struct item {
    int v;
    HG_LIST_ENTRY(item) link;
    STAILQ_ENTRY(item) qlink;
};

static void check_list_queue(void)
{
    struct item it[3] = {{.v = 1}, {.v = 2}, {.v = 3}}, *e;
    HG_LIST_HEAD(item) l = HG_LIST_HEAD_INITIALIZER(l);
    STAILQ_HEAD(, item) q;
    STAILQ_INIT(&q);
    int sum = 0, order = 0;
    for (int i = 0; i < 3; i++) {
        HG_LIST_INSERT_HEAD(&l, &it[i], link);
        STAILQ_INSERT_TAIL(&q, &it[i], qlink);
    }
    HG_LIST_REMOVE(&it[1], link);
    HG_LIST_FOREACH(e, &l, link)
    sum += e->v;
    CHECK(sum == 4 && HG_LIST_FIRST(&l) == &it[2]);
    STAILQ_FOREACH(e, &q, qlink)
    order = order * 10 + e->v;
    CHECK(order == 123);
    STAILQ_REMOVE_HEAD(&q, qlink);
    CHECK(STAILQ_FIRST(&q) == &it[1]);
    STAILQ_REMOVE_HEAD(&q, qlink);
    STAILQ_REMOVE_HEAD(&q, qlink);
    CHECK(STAILQ_EMPTY(&q));
}

/* Outlets declared as Mercury's test harness declares its own: a hidden
 * extern declaration (in its header), then the definition of the top outlet
 * (util_test_log_outlet_g); its subsystems are util_test_util_child_log_outlet_g
 * and util_test_util_off_log_outlet_g. */
extern HG_UTIL_PRIVATE HG_LOG_OUTLET_DECL(util_test);
HG_LOG_DECL_REGISTER(util_test);
HG_LOG_SUBSYS_DECL_REGISTER(util_child, util_test);
HG_LOG_SUBSYS_DECL_STATE_REGISTER(util_off, util_test, HG_LOG_OFF);

/* Lines written to stream so far, and whether one holds text; later lines
 * are appended. */
static int lines_in(FILE *stream, const char *text, int *found)
{
    char line[512];
    int n = 0;
    fflush(stream);
    rewind(stream);
    *found = 0;
    while (fgets(line, sizeof(line), stream)) {
        n++;
        *found |= strstr(line, text) != NULL;
    }
    fseek(stream, 0, SEEK_END);
    return n;
}

static void check_log(void)
{
    FILE *err = tmpfile(), *out = tmpfile();
    int found;
    CHECK(err && out);
    if (!err || !out)
        return;
    hg_log_set_stream_error(err);
    hg_log_set_stream_warning(out);
    hg_log_set_stream_debug(out);
    CHECK(hg_log_get_stream_error() == err && hg_log_get_stream_debug() == out);
    CHECK(hg_log_name_to_level("warning") == HG_LOG_LEVEL_WARNING);
    CHECK(hg_log_name_to_level("debug") == HG_LOG_LEVEL_DEBUG);
    CHECK(hg_log_name_to_level("bogus") == HG_LOG_LEVEL_NONE);

    /* The harness's setup: warnings and errors of every outlet. */
    HG_Util_set_log_level("warning");
    CHECK(hg_log_get_level() == HG_LOG_LEVEL_WARNING);
    CHECK(HG_LOG_OUTLET(util_test).level == HG_LOG_LEVEL_WARNING);
    HG_LOG_WRITE(util_test, HG_LOG_LEVEL_ERROR, "error %d", 42);
    HG_LOG_SUBSYS_WRITE(util_child, util_test, HG_LOG_LEVEL_WARNING, "child warning");
    HG_LOG_SUBSYS_WRITE(util_child, util_test, HG_LOG_LEVEL_DEBUG, "debug hidden");
    HG_LOG_SUBSYS_WRITE(util_off, util_test, HG_LOG_LEVEL_ERROR, "off outlet");
    CHECK(lines_in(err, "[util_test] error", &found) == 1 && found);
    CHECK(lines_in(err, "error 42", &found) == 1 && found);
    CHECK(lines_in(out, "[util_child] warning", &found) == 1 && found);

    /* A subsystem list: only util_child's subtree; then all but util_child. */
    hg_log_set_subsys("util_child");
    CHECK(strcmp(hg_log_get_subsys(), "util_child") == 0);
    CHECK(HG_LOG_OUTLET(util_test).level == HG_LOG_LEVEL_NONE);
    CHECK(HG_LOG_OUTLET(util_test_util_child).level == HG_LOG_LEVEL_WARNING);
    hg_log_set_subsys("~util_child");
    CHECK(HG_LOG_OUTLET(util_test).level == HG_LOG_LEVEL_WARNING);
    CHECK(HG_LOG_OUTLET(util_test_util_child).level == HG_LOG_LEVEL_NONE);
    hg_log_set_subsys("");

    /* A level of its own for one subtree; the rest keeps the global one. */
    hg_log_set_subsys_level("util_child", HG_LOG_LEVEL_DEBUG);
    CHECK(HG_LOG_OUTLET(util_test_util_child).level == HG_LOG_LEVEL_DEBUG);
    CHECK(HG_LOG_OUTLET(util_test).level == HG_LOG_LEVEL_WARNING);
    /* At debug level: a debug line with the header, the text as given, "---". */
    HG_LOG_SUBSYS_WRITE_DEBUG_EXT(util_child, util_test, "debug shown", "ext %d\n", 7);
    CHECK(lines_in(out, "[util_child] debug", &found) == 4 && found);
    CHECK(lines_in(out, "debug shown", &found) == 4 && found);
    CHECK(lines_in(out, "ext 7", &found) == 4 && found);
    CHECK(lines_in(out, "---", &found) == 4 && found);
    /* Below debug level, nothing. */
    HG_LOG_WRITE_DEBUG_EXT(util_test, "not shown", "ext %d\n", 8);
    CHECK(lines_in(out, "not shown", &found) == 4 && !found);
    CHECK(HG_LOG_OUTLET(util_test_util_off).level == HG_LOG_LEVEL_NONE);

    HG_Util_set_log_level("none");
    HG_LOG_WRITE(util_test, HG_LOG_LEVEL_ERROR, "silenced");
    CHECK(lines_in(err, "silenced", &found) == 1 && !found);

    hg_log_set_stream_error(NULL);
    hg_log_set_stream_warning(NULL);
    hg_log_set_stream_debug(NULL);
    CHECK(hg_log_get_stream_error() == stderr && hg_log_get_stream_warning() == stdout);
    fclose(err);
    fclose(out);
}

/* A poll set over a pipe, as the NA tests wait on NA_Poll_get_fd(). */
static void check_poll(void)
{
    int fds[2];
    static int tag;
    struct hg_poll_event ev = {.events = HG_POLLIN, .data.ptr = &tag}, got[4];
    unsigned int n = 99;
    hg_poll_set_t *set = hg_poll_create();
    CHECK(set && hg_poll_get_fd(set) >= 0 && pipe(fds) == 0);
    if (!set)
        return;
    CHECK(hg_poll_add(set, fds[0], &ev) == HG_UTIL_SUCCESS);
    CHECK(hg_poll_add(set, fds[0], &ev) == HG_UTIL_FAIL); /* already there */
    CHECK(hg_poll_wait(set, 10, 4, got, &n) == HG_UTIL_SUCCESS && n == 0);
    CHECK(write(fds[1], "x", 1) == 1);
    CHECK(hg_poll_wait(set, 1000, 4, got, &n) == HG_UTIL_SUCCESS && n == 1);
    CHECK(n == 1 && (got[0].events & HG_POLLIN) && got[0].data.ptr == &tag);
    ev.events = HG_POLLOUT;
    CHECK(hg_poll_mod(set, fds[0], &ev) == HG_UTIL_SUCCESS);
    CHECK(hg_poll_wait(set, 10, 4, got, &n) == HG_UTIL_SUCCESS && n == 0);
    CHECK(hg_poll_remove(set, fds[0]) == HG_UTIL_SUCCESS);
    CHECK(hg_poll_remove(set, fds[0]) == HG_UTIL_FAIL);
    CHECK(hg_poll_destroy(set) == HG_UTIL_SUCCESS);
    close(fds[0]);
    close(fds[1]);
}

static void check_mem(void)
{
    long page = hg_mem_get_page_size();
    CHECK(page >= 4096 && powerof2(page));
    CHECK(MAX(3, 7) == 7 && MIN(3, 7) == 3 && !powerof2(12));
    char *a = hg_mem_aligned_alloc((size_t)page, 3 * (size_t)page);
    CHECK(a && (uintptr_t)a % (uintptr_t)page == 0);
    if (a)
        memset(a, 1, 3 * (size_t)page);
    hg_mem_aligned_free(a);
    char *h = hg_mem_header_alloc(24, 64, 1000);
    CHECK(h && (uintptr_t)h % 64 == 0);
    if (h)
        memset(h - 24, 2, 24 + 1000); /* the header is ours to write too */
    hg_mem_header_free(24, 64, h);
    char name[64];
    snprintf(name, sizeof name, "/hgx-util-prog-%ld", (long)getpid());
    int *w = hg_mem_shm_map(name, 4096, true), *r = hg_mem_shm_map(name, 4096, false);
    CHECK(w && r && w != r);
    if (w && r) {
        w[10] = 12345;
        CHECK(r[10] == 12345); /* two mappings of one object */
        CHECK(hg_mem_shm_unmap(NULL, r, 4096) == HG_UTIL_SUCCESS);
        CHECK(hg_mem_shm_unmap(name, w, 4096) == HG_UTIL_SUCCESS);
        CHECK(hg_mem_shm_map(name, 4096, false) == NULL); /* removed */
    }
}

int main(void)
{
    CHECK(HG_UTIL_VERSION_MAJOR == 4 && HG_UTIL_SUCCESS == 0 && HG_UTIL_FAIL == -1);
    check_threads_atomics();
    check_pool();
    check_time();
    check_list_queue();
    check_log();
    check_poll();
    check_mem();
    printf("%s: mercury_util headers, log outlets, poll sets, memory (%d failures)\n",
           failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
