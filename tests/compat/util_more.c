/*
 * util_more.c -- a program written against the rest of Mercury's utility
 * headers that Mercury 2.4.1's own test programs use: dynamic loading, event
 * objects, atomic queues, hash tables, memory pools, spin locks, the list
 * declaration macros, <sys/queue.h>'s queues through mercury_queue.h, time
 * stamps and huge pages; two headers
 * Mercury programs outside its tests use, the string hash and reader-writer
 * locks; and the rest of what Mercury's utility library installs: byte
 * swapping, 64-bit network order, compiler attributes, lock annotations and
 * debug logs, alone and under a log outlet. Built in the tree by make check
 * and against an installed hgx by check-installed.sh. Exit 0 when every check
 * holds; a compiler that rejects an attribute or warns where one should
 * silence it (-Wall -Wextra -Werror) fails the build.
 */
#include "mercury_atomic.h"
#include "mercury_atomic_queue.h"
#include "mercury_byteswap.h"
#include "mercury_compiler_attributes.h"
#include "mercury_dl.h"
#include "mercury_dlog.h"
#include "mercury_event.h"
#include "mercury_hash_string.h"
#include "mercury_hash_table.h"
#include "mercury_inet.h"
#include "mercury_list.h"
#include "mercury_log.h"
#include "mercury_mem.h"
#include "mercury_mem_pool.h"
#include "mercury_poll.h"
#include "mercury_queue.h"
#include "mercury_thread.h"
#include "mercury_thread_rwlock.h"
#include "mercury_thread_annotation.h"
#include "mercury_thread_spin.h"
#include "mercury_time.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat_check.h"

/* ---- mercury_dl.h */
static void check_dl(void)
{
    HG_DL_HANDLE h = hg_dl_open("libm.so.6");
    CHECK(h != NULL);
    if (h) {
        double (*cos_fn)(double);
        void *sym = hg_dl_sym(h, "cos");
        CHECK(sym != NULL);
        memcpy(&cos_fn, &sym, sizeof(sym));
        if (sym)
            CHECK(cos_fn(0.0) == 1.0);
        char path[4096];
        CHECK(sym && hg_dl_get_path(sym, path, sizeof(path)) == HG_UTIL_SUCCESS);
        CHECK(sym && strstr(path, "libm") != NULL);
        CHECK(sym && hg_dl_get_path(sym, path, 4) == HG_UTIL_FAIL); /* too small */
        CHECK(hg_dl_sym(h, "hgx_no_such_symbol") == NULL);
        CHECK(hg_dl_error() != NULL);
        CHECK(hg_dl_close(h) == 0);
    }
    CHECK(hg_dl_open("libhgx-no-such-library.so") == NULL);
    const char *err = hg_dl_error();
    CHECK(err != NULL && strstr(err, "libhgx-no-such-library") != NULL);
    CHECK(hg_dl_error() == NULL); /* read once */
}

/* ---- mercury_event.h, through a poll set */
static void check_event(void)
{
    int fd = hg_event_create();
    bool signaled = true;
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    hg_poll_set_t *ps = hg_poll_create();
    struct hg_poll_event ev = {.events = HG_POLLIN, .data.ptr = NULL};
    struct hg_poll_event out[2];
    unsigned int n = 9;
    CHECK(ps && hg_poll_add(ps, fd, &ev) == HG_UTIL_SUCCESS);
    CHECK(hg_event_get(fd, &signaled) == HG_UTIL_SUCCESS && !signaled);
    CHECK(hg_poll_wait(ps, 0, 2, out, &n) == HG_UTIL_SUCCESS && n == 0);
    /* Two settings: two gets find it set, the third does not. */
    CHECK(hg_event_set(fd) == HG_UTIL_SUCCESS);
    CHECK(hg_event_set(fd) == HG_UTIL_SUCCESS);
    CHECK(hg_poll_wait(ps, 100, 2, out, &n) == HG_UTIL_SUCCESS && n == 1);
    CHECK(hg_event_get(fd, &signaled) == HG_UTIL_SUCCESS && signaled);
    CHECK(hg_poll_wait(ps, 0, 2, out, &n) == HG_UTIL_SUCCESS && n == 1);
    CHECK(hg_event_get(fd, &signaled) == HG_UTIL_SUCCESS && signaled);
    CHECK(hg_event_get(fd, &signaled) == HG_UTIL_SUCCESS && !signaled);
    CHECK(hg_poll_wait(ps, 0, 2, out, &n) == HG_UTIL_SUCCESS && n == 0);
    CHECK(hg_poll_remove(ps, fd) == HG_UTIL_SUCCESS);
    CHECK(hg_poll_destroy(ps) == HG_UTIL_SUCCESS);
    CHECK(hg_event_destroy(fd) == HG_UTIL_SUCCESS);
    CHECK(hg_event_get(fd, &signaled) == HG_UTIL_FAIL); /* closed */
}

/* ---- mercury_atomic_queue.h */
#define AQ_PRODUCERS 4
#define AQ_CONSUMERS 2
#define AQ_PER_PRODUCER 20000
static struct hg_atomic_queue *aq;
static hg_atomic_int32_t aq_popped;
static hg_atomic_int64_t aq_sum;

static HG_THREAD_RETURN_TYPE aq_producer(void *arg)
{
    intptr_t base = (intptr_t)arg * AQ_PER_PRODUCER;
    for (intptr_t i = 1; i <= AQ_PER_PRODUCER; i++)
        while (hg_atomic_queue_push(aq, (void *)(base + i)) != HG_UTIL_SUCCESS)
            hg_thread_yield();
    return NULL;
}

static HG_THREAD_RETURN_TYPE aq_consumer(void *arg)
{
    (void)arg;
    while (hg_atomic_get32(&aq_popped) < AQ_PRODUCERS * AQ_PER_PRODUCER) {
        void *e = hg_atomic_queue_pop_mc(aq);
        if (e) {
            hg_atomic_incr32(&aq_popped);
            atomic_fetch_add(&aq_sum, (int64_t)(intptr_t)e);
        } else
            hg_thread_yield();
    }
    return NULL;
}

static void check_atomic_queue(void)
{
    int v[5] = {1, 2, 3, 4, 5};
    struct hg_atomic_queue *q = hg_atomic_queue_alloc(4);
    CHECK(q != NULL);
    if (!q)
        return;
    CHECK(hg_atomic_queue_is_empty(q) && hg_atomic_queue_count(q) == 0);
    CHECK(hg_atomic_queue_pop_sc(q) == NULL && hg_atomic_queue_pop_mc(q) == NULL);
    for (int i = 0; i < 4; i++)
        CHECK(hg_atomic_queue_push(q, &v[i]) == HG_UTIL_SUCCESS);
    CHECK(hg_atomic_queue_push(q, &v[4]) == HG_UTIL_FAIL); /* full */
    CHECK(!hg_atomic_queue_is_empty(q) && hg_atomic_queue_count(q) == 4);
    CHECK(hg_atomic_queue_pop_sc(q) == &v[0]);
    CHECK(hg_atomic_queue_pop_mc(q) == &v[1]);
    CHECK(hg_atomic_queue_count(q) == 2);
    CHECK(hg_atomic_queue_push(q, &v[4]) == HG_UTIL_SUCCESS); /* wraps around */
    CHECK(hg_atomic_queue_pop_mc(q) == &v[2]);
    CHECK(hg_atomic_queue_pop_sc(q) == &v[3]);
    CHECK(hg_atomic_queue_pop_sc(q) == &v[4]);
    CHECK(hg_atomic_queue_pop_mc(q) == NULL && hg_atomic_queue_is_empty(q));
    hg_atomic_queue_free(q);

    /* Several producers and consumers: every entry comes out exactly once. */
    hg_thread_t t[AQ_PRODUCERS + AQ_CONSUMERS];
    aq = hg_atomic_queue_alloc(64);
    CHECK(aq != NULL);
    if (!aq)
        return;
    hg_atomic_init32(&aq_popped, 0);
    hg_atomic_init64(&aq_sum, 0);
    for (intptr_t i = 0; i < AQ_PRODUCERS; i++)
        CHECK(hg_thread_create(&t[i], aq_producer, (void *)i) == HG_UTIL_SUCCESS);
    for (int i = 0; i < AQ_CONSUMERS; i++)
        CHECK(hg_thread_create(&t[AQ_PRODUCERS + i], aq_consumer, NULL) ==
              HG_UTIL_SUCCESS);
    for (int i = 0; i < AQ_PRODUCERS + AQ_CONSUMERS; i++)
        hg_thread_join(t[i]);
    int64_t total = (int64_t)AQ_PRODUCERS * AQ_PER_PRODUCER;
    CHECK(hg_atomic_get32(&aq_popped) == total);
    CHECK(hg_atomic_get64(&aq_sum) == total * (total + 1) / 2);
    CHECK(hg_atomic_queue_is_empty(aq));
    hg_atomic_queue_free(aq);
}

/* ---- mercury_hash_table.h */
static int keys_freed, values_freed;

static unsigned int int_hash(hg_hash_table_key_t k)
{
    return (unsigned int)*(int *)k;
}
static int int_equal(hg_hash_table_key_t a, hg_hash_table_key_t b)
{
    return *(int *)a == *(int *)b;
}
static void key_free(hg_hash_table_key_t k)
{
    keys_freed++;
    free(k);
}
static void value_free(hg_hash_table_value_t v)
{
    values_freed++;
    free(v);
}
static int *new_int(int v)
{
    int *p = malloc(sizeof(*p));
    if (!p)
        abort();
    *p = v;
    return p;
}

static void check_hash_table(void)
{
    enum { N = 200 };
    hg_hash_table_t *t = hg_hash_table_new(int_hash, int_equal);
    CHECK(t != NULL);
    if (!t)
        return;
    hg_hash_table_register_free_functions(t, key_free, value_free);
    for (int i = 0; i < N; i++)
        CHECK(hg_hash_table_insert(t, new_int(i), new_int(i * 10)) == 1);
    CHECK(hg_hash_table_num_entries(t) == N);
    int k = 7;
    CHECK(*(int *)hg_hash_table_lookup(t, &k) == 70);
    /* An equal key replaces the entry: the old key and value are freed. */
    CHECK(hg_hash_table_insert(t, new_int(7), new_int(-7)) == 1);
    CHECK(keys_freed == 1 && values_freed == 1);
    CHECK(hg_hash_table_num_entries(t) == N);
    CHECK(*(int *)hg_hash_table_lookup(t, &k) == -7);
    k = N + 1;
    CHECK(hg_hash_table_lookup(t, &k) == HG_HASH_TABLE_NULL);
    CHECK(hg_hash_table_remove(t, &k) == 0);
    k = 3;
    CHECK(hg_hash_table_remove(t, &k) == 1);
    CHECK(keys_freed == 2 && values_freed == 2);
    CHECK(hg_hash_table_remove(t, &k) == 0);
    CHECK(hg_hash_table_lookup(t, &k) == HG_HASH_TABLE_NULL);
    CHECK(hg_hash_table_num_entries(t) == N - 1);

    /* Every value once: sum of i*10 without 30, with -7 for 7's 70. */
    hg_hash_table_iter_t it;
    long sum = 0;
    unsigned int seen = 0;
    hg_hash_table_iterate(t, &it);
    while (hg_hash_table_iter_has_more(&it)) {
        int *v = hg_hash_table_iter_next(&it);
        CHECK(v != NULL);
        if (v)
            sum += *v;
        seen++;
    }
    CHECK(hg_hash_table_iter_next(&it) == HG_HASH_TABLE_NULL);
    CHECK(seen == N - 1);
    CHECK(sum == 10L * (N - 1) * N / 2 - 30 - 70 - 7);
    hg_hash_table_free(t);
    CHECK(keys_freed == N + 1 && values_freed == N + 1);

    /* An empty table iterates over nothing. */
    t = hg_hash_table_new(int_hash, int_equal);
    CHECK(t != NULL);
    if (t) {
        hg_hash_table_iterate(t, &it);
        CHECK(!hg_hash_table_iter_has_more(&it));
        hg_hash_table_free(t);
    }
}

/* ---- mercury_mem_pool.h */
#define POOL_CHUNK 64
#define POOL_COUNT 2
struct reg_state {
    int registered, deregistered;
    unsigned long last_flags;
    size_t last_len;
    int ids[8];
};

static int pool_register(const void *buf, size_t len, unsigned long flags, void **handle,
                         void *arg)
{
    struct reg_state *st = arg;
    (void)buf;
    if (st->registered >= 8)
        return HG_UTIL_FAIL;
    st->last_flags = flags;
    st->last_len = len;
    st->ids[st->registered] = st->registered + 1;
    *handle = &st->ids[st->registered++];
    return HG_UTIL_SUCCESS;
}

static int pool_deregister(void *handle, void *arg)
{
    struct reg_state *st = arg;
    (void)handle;
    st->deregistered++;
    return HG_UTIL_SUCCESS;
}

static struct hg_mem_pool *shared_pool;

static HG_THREAD_RETURN_TYPE pool_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 2000; i++) {
        void *h = NULL;
        char *p = hg_mem_pool_alloc(shared_pool, POOL_CHUNK, &h);
        if (!p || !h)
            return (void *)1;
        memset(p, i & 0xff, POOL_CHUNK);
        for (int j = 0; j < POOL_CHUNK; j++)
            if (p[j] != (char)(i & 0xff))
                return (void *)1; /* someone else holds this chunk */
        hg_mem_pool_free(shared_pool, p, h);
    }
    return NULL;
}

static void check_mem_pool(void)
{
    struct reg_state st = {0};
    struct hg_mem_pool *pool = hg_mem_pool_create(
        POOL_CHUNK, POOL_COUNT, 1, pool_register, 0x5, pool_deregister, &st);
    CHECK(pool != NULL);
    if (!pool)
        return;
    CHECK(st.registered == 1 && st.last_flags == 0x5 &&
          st.last_len == POOL_CHUNK * POOL_COUNT);
    void *h[3] = {NULL, NULL, NULL};
    char *c[3];
    CHECK(hg_mem_pool_alloc(pool, POOL_CHUNK + 1, &h[0]) == NULL); /* too big */
    CHECK(hg_mem_pool_alloc(pool, 1, NULL) == NULL);               /* handle required */
    c[0] = hg_mem_pool_alloc(pool, POOL_CHUNK, &h[0]);
    c[1] = hg_mem_pool_alloc(pool, 1, &h[1]);
    CHECK(c[0] && c[1] && c[0] != c[1] && h[0] == &st.ids[0] && h[1] == &st.ids[0]);
    CHECK(st.registered == 1);
    /* The block is used up: the pool grows by a registered block. */
    c[2] = hg_mem_pool_alloc(pool, POOL_CHUNK, &h[2]);
    CHECK(c[2] && st.registered == 2 && h[2] == &st.ids[1]);
    for (int i = 0; i < 3; i++) {
        size_t off = c[i] ? hg_mem_pool_chunk_offset(pool, c[i], h[i]) : 1;
        CHECK(off % POOL_CHUNK == 0 && off < POOL_CHUNK * POOL_COUNT);
        if (c[i])
            memset(c[i], 0xa5, POOL_CHUNK);
    }
    /* One chunk free in each block: two more allocations reuse them, no growth. */
    hg_mem_pool_free(pool, c[1], h[1]);
    void *h2 = NULL, *h3 = NULL;
    char *d2 = hg_mem_pool_alloc(pool, 8, &h2), *d3 = hg_mem_pool_alloc(pool, 8, &h3);
    CHECK(d2 && d3 && d2 != d3 && (d2 == c[1] || d3 == c[1]));
    CHECK((d2 == c[1] ? h2 : h3) == h[1]);
    CHECK(st.registered == 2);
    hg_mem_pool_free(pool, c[0], h[0]);
    hg_mem_pool_free(pool, c[2], h[2]);
    hg_mem_pool_free(pool, d2, h2);
    hg_mem_pool_free(pool, d3, h3);
    hg_mem_pool_destroy(pool);
    CHECK(st.deregistered == 2);

    /* Without registration, shared by threads: no chunk is handed out twice. */
    struct reg_state st2 = {0};
    shared_pool = hg_mem_pool_create(POOL_CHUNK, POOL_COUNT, 1, pool_register, 0,
                                     pool_deregister, &st2);
    CHECK(shared_pool != NULL);
    if (!shared_pool)
        return;
    hg_thread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK(hg_thread_create(&t[i], pool_worker, NULL) == HG_UTIL_SUCCESS);
    for (int i = 0; i < 4; i++) {
        void *ret = (void *)1;
        CHECK(pthread_join(t[i], &ret) == 0 && ret == NULL);
    }
    CHECK(st2.registered >= 1 && st2.registered <= 2);
    hg_mem_pool_destroy(shared_pool);
    CHECK(st2.deregistered == st2.registered);

    pool = hg_mem_pool_create(16, 4, 0, NULL, 0, NULL, NULL);
    CHECK(pool != NULL);
    if (pool) {
        void *p = hg_mem_pool_alloc(pool, 16, NULL);
        CHECK(p != NULL);
        hg_mem_pool_free(pool, p, NULL);
        hg_mem_pool_destroy(pool);
    }
}

/* ---- mercury_thread_spin.h */
static hg_thread_spin_t spin;
static long spin_count;

static HG_THREAD_RETURN_TYPE spin_incr(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100000; i++) {
        if (hg_thread_spin_try_lock(&spin) != HG_UTIL_SUCCESS)
            hg_thread_spin_lock(&spin);
        spin_count++;
        hg_thread_spin_unlock(&spin);
    }
    return NULL;
}

static void check_spin(void)
{
    CHECK(hg_thread_spin_init(&spin) == HG_UTIL_SUCCESS);
    CHECK(hg_thread_spin_try_lock(&spin) == HG_UTIL_SUCCESS);
    CHECK(hg_thread_spin_try_lock(&spin) == HG_UTIL_FAIL); /* held */
    hg_thread_spin_unlock(&spin);
    CHECK(hg_thread_spin_try_lock(&spin) == HG_UTIL_SUCCESS);
    hg_thread_spin_unlock(&spin);
    hg_thread_t t[3];
    for (int i = 0; i < 3; i++)
        CHECK(hg_thread_create(&t[i], spin_incr, NULL) == HG_UTIL_SUCCESS);
    for (int i = 0; i < 3; i++)
        hg_thread_join(t[i]);
    CHECK(spin_count == 300000);
    CHECK(hg_thread_spin_destroy(&spin) == HG_UTIL_SUCCESS);
}

/* ---- reader-writer locks: readers share, a writer excludes */
static void check_rwlock(void)
{
    hg_thread_rwlock_t rw;
    CHECK(hg_thread_rwlock_init(&rw) == HG_UTIL_SUCCESS);
    hg_thread_rwlock_rdlock(&rw);
    CHECK(hg_thread_rwlock_try_rdlock(&rw) == HG_UTIL_SUCCESS); /* a second reader */
    CHECK(hg_thread_rwlock_try_wrlock(&rw) == HG_UTIL_FAIL);
    hg_thread_rwlock_release_rdlock(&rw);
    hg_thread_rwlock_release_rdlock(&rw);
    CHECK(hg_thread_rwlock_try_wrlock(&rw) == HG_UTIL_SUCCESS);
    CHECK(hg_thread_rwlock_try_rdlock(&rw) == HG_UTIL_FAIL);
    hg_thread_rwlock_release_wrlock(&rw);
    hg_thread_rwlock_wrlock(&rw);
    hg_thread_rwlock_release_wrlock(&rw);
    CHECK(hg_thread_rwlock_destroy(&rw) == HG_UTIL_SUCCESS);
}

/* ---- the string hash: djb2, as Mercury's */
static void check_hash_string(void)
{
    CHECK(hg_hash_string("") == 5381u);
    CHECK(hg_hash_string("hello") == 261238937u);
    CHECK(hg_hash_string("a") == 5381u * 33u + 'a');
}

/* ---- HG_LIST_HEAD_DECL/INIT/INSERT_AFTER/BEFORE; mercury_queue.h's STAILQ and TAILQ */
struct lelem {
    int v;
    HG_LIST_ENTRY(lelem) link;
};
HG_LIST_HEAD_DECL(lhead, lelem);
struct qelem {
    int v;
    STAILQ_ENTRY(qelem) link;
    TAILQ_ENTRY(qelem) tlink;
};
STAILQ_HEAD(qhead, qelem);
TAILQ_HEAD(thead, qelem);

static void check_list_queue(void)
{
    HG_LIST_HEAD_INIT(lhead, list);
    struct lelem e[4] = {{.v = 1}, {.v = 2}, {.v = 3}, {.v = 4}};
    struct lelem *it;
    int order = 0;
    CHECK(HG_LIST_IS_EMPTY(&list));
    HG_LIST_INSERT_HEAD(&list, &e[0], link);
    HG_LIST_INSERT_AFTER(&e[0], &e[2], link);  /* 1 3 */
    HG_LIST_INSERT_AFTER(&e[2], &e[3], link);  /* 1 3 4 */
    HG_LIST_INSERT_BEFORE(&e[2], &e[1], link); /* 1 2 3 4 */
    HG_LIST_FOREACH(it, &list, link)
    order = order * 10 + it->v;
    CHECK(order == 1234);
    HG_LIST_REMOVE(&e[0], link);
    HG_LIST_REMOVE(&e[2], link);
    order = 0;
    HG_LIST_FOREACH(it, &list, link)
    order = order * 10 + it->v;
    CHECK(order == 24 && HG_LIST_FIRST(&list) == &e[1]);
    HG_LIST_INSERT_BEFORE(&e[1], &e[0], link); /* before the head */
    CHECK(HG_LIST_FIRST(&list) == &e[0] && HG_LIST_NEXT(&e[0], link) == &e[1]);
    HG_LIST_REMOVE(&e[0], link);
    HG_LIST_REMOVE(&e[1], link);
    HG_LIST_REMOVE(&e[3], link);
    CHECK(HG_LIST_IS_EMPTY(&list));

    /* A singly linked tail queue, as na_perf keeps its requests. */
    struct qhead queue = STAILQ_HEAD_INITIALIZER(queue);
    struct qelem q[3] = {{.v = 1}, {.v = 2}, {.v = 3}};
    struct qelem *qi;
    CHECK(STAILQ_EMPTY(&queue) && STAILQ_FIRST(&queue) == NULL);
    for (int i = 0; i < 3; i++)
        STAILQ_INSERT_TAIL(&queue, &q[i], link);
    STAILQ_REMOVE(&queue, &q[2], qelem, link); /* the tail: 1 2 */
    STAILQ_INSERT_TAIL(&queue, &q[2], link);   /* 1 2 3 */
    STAILQ_REMOVE(&queue, &q[1], qelem, link); /* 1 3 */
    order = 0;
    STAILQ_FOREACH(qi, &queue, link)
    order = order * 10 + qi->v;
    CHECK(order == 13);
    STAILQ_REMOVE_HEAD(&queue, link);
    CHECK(STAILQ_FIRST(&queue) == &q[2]);
    STAILQ_INSERT_HEAD(&queue, &q[1], link); /* 2 3 */
    CHECK(STAILQ_FIRST(&queue) == &q[1] && STAILQ_NEXT(&q[1], link) == &q[2]);
    STAILQ_REMOVE_HEAD(&queue, link);
    STAILQ_REMOVE_HEAD(&queue, link);
    CHECK(STAILQ_EMPTY(&queue));
    STAILQ_INSERT_TAIL(&queue, &q[0], link); /* the tail was reset */
    CHECK(STAILQ_FIRST(&queue) == &q[0] && STAILQ_NEXT(&q[0], link) == NULL);
    STAILQ_INIT(&queue);
    CHECK(STAILQ_EMPTY(&queue));

    /* A doubly linked tail queue, walked both ways. */
    struct thead tq;
    TAILQ_INIT(&tq);
    for (int i = 0; i < 3; i++)
        TAILQ_INSERT_TAIL(&tq, &q[i], tlink);
    TAILQ_REMOVE(&tq, &q[1], tlink);
    order = 0;
    TAILQ_FOREACH_REVERSE(qi, &tq, thead, tlink)
    order = order * 10 + qi->v;
    CHECK(order == 31 && TAILQ_LAST(&tq, thead) == &q[2]);
    TAILQ_INSERT_AFTER(&tq, &q[0], &q[1], tlink);
    order = 0;
    TAILQ_FOREACH(qi, &tq, tlink)
    order = order * 10 + qi->v;
    CHECK(order == 123);
}

/* ---- hg_time_stamp */
static void check_time_stamp(void)
{
    char year[16], first[128];
    time_t now = time(NULL);
    struct tm tm;
    const char *s = hg_time_stamp();
    CHECK(s != NULL && strlen(s) > 10);
    if (!s)
        return;
    snprintf(first, sizeof(first), "%s", s);
    CHECK(localtime_r(&now, &tm) != NULL);
    snprintf(year, sizeof(year), " %d ", tm.tm_year + 1900);
    CHECK(strstr(s, year) != NULL);
    /* Later stamps never go back: same text within the second, or a new one. */
    hg_time_t t0, t1;
    hg_time_get_current(&t0);
    const char *s2 = hg_time_stamp();
    hg_time_get_current(&t1);
    CHECK(s2 != NULL && !hg_time_less(t1, t0));
    printf("time stamp: %s\n", first);
}

/* ---- huge pages */
static long meminfo_field(const char *name)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(name);
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, name, n) == 0 && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static void check_hugepages(void)
{
    long hp = hg_mem_get_hugepage_size();
    long page = hg_mem_get_page_size();
    CHECK(hp >= 0);
    CHECK(hp == 0 || (hp >= page && hp % page == 0));
    CHECK(hp ==
          (meminfo_field("Hugepagesize") > 0 ? meminfo_field("Hugepagesize") * 1024 : 0));
    if (hp <= 0) {
        printf("huge pages: size unknown, not allocated\n");
        return;
    }
    char *p = hg_mem_huge_alloc((size_t)hp);
    if (!p) {
        long free_pages = meminfo_field("HugePages_Free");
        printf("huge pages: %ld kB pages, %ld free: allocation %s\n", hp / 1024,
               free_pages,
               free_pages > 0 ? "FAILED" : "failed, as expected with none free");
        CHECK(free_pages <= 0);
        return;
    }
    memset(p, 0x5a, (size_t)hp);
    CHECK(p[hp - 1] == 0x5a);
    CHECK(hg_mem_huge_free(p, (size_t)hp) == HG_UTIL_SUCCESS);
    printf("huge pages: one %ld kB page allocated and freed\n", hp / 1024);
}

/* ---- mercury_byteswap.h, mercury_inet.h */
static void check_byteswap_inet(void)
{
    CHECK(bswap_16(0x1234) == 0x3412);
    CHECK(bswap_32(0x12345678u) == 0x78563412u);
    CHECK(bswap_64(0x0102030405060708ull) == 0x0807060504030201ull);
    CHECK(bswap_64(bswap_64(0xfedcba9876543210ull)) == 0xfedcba9876543210ull);

    /* Network order is big-endian: the most significant byte comes first. */
    uint64_t host = 0x0102030405060708ull, net = htonll(host);
    unsigned char b[8];
    memcpy(b, &net, sizeof(b));
    CHECK(b[0] == 0x01 && b[3] == 0x04 && b[7] == 0x08);
    CHECK(ntohll(net) == host);
    /* The same order as the 32-bit calls of <arpa/inet.h>. */
    uint32_t net32 = htonl(0x01020304u);
    CHECK(memcmp(&net32, b, sizeof(net32)) == 0);
    CHECK(ntohl(net32) == 0x01020304u);
}

/* ---- mercury_compiler_attributes.h: most checks are the build itself (with
 * -Wall -Wextra -Werror an unused function or variable, an unmarked
 * fall-through or a bad format attribute fails it). */
struct aligned64 {
    char c;
} HG_ATTR_ALIGNED(64);

static char aligned_buf[3] HG_ATTR_ALIGNED(64);
static int ctor_order[2], ctor_count;

static void ctor_second(void) HG_ATTR_CONSTRUCTOR_PRIORITY(202);
static void ctor_second(void)
{
    if (ctor_count < 2)
        ctor_order[ctor_count++] = 202;
}

static void ctor_first(void) HG_ATTR_CONSTRUCTOR_PRIORITY(201);
static void ctor_first(void)
{
    if (ctor_count < 2)
        ctor_order[ctor_count++] = 201;
}

static int ctor_plain_ran;
static void ctor_plain(void) HG_ATTR_CONSTRUCTOR;
static void ctor_plain(void)
{
    ctor_plain_ran = 1;
}

static void dtor_plain(void) HG_ATTR_DESTRUCTOR;
static void dtor_plain(void)
{
    fflush(stdout);
}

/* Never called: without the attribute, -Wunused-function fails the build. */
static int never_called(void) HG_ATTR_UNUSED;
static int never_called(void)
{
    return 1;
}

HG_ATTR_ABI_EXPORT int util_more_exported(void);
HG_ATTR_ABI_EXPORT int util_more_exported(void)
{
    return 2;
}
HG_ATTR_ABI_HIDDEN int util_more_hidden(void);
HG_ATTR_ABI_HIDDEN int util_more_hidden(void)
{
    return 3;
}

static int must_use(int x) HG_ATTR_WARN_UNUSED_RESULT;
static int must_use(int x)
{
    return x + 1;
}

static int format_into(char *buf, size_t size, const char *fmt, ...)
    HG_ATTR_FORMAT(printf, 3, 4);
static int format_into(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return n;
}

/* Counts the cases from x down to 0: each case falls through to the next. */
static int fall_through(int x)
{
    int n = 0;
    switch (x) {
    case 2:
        n++;
        HG_ATTR_FALLTHROUGH;
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

static void check_attributes(void)
{
    int unused_local HG_ATTR_UNUSED;
    char local_aligned[5] HG_ATTR_ALIGNED(64);
    char buf[32];
    CHECK(_Alignof(struct aligned64) == 64);
    CHECK((uintptr_t)aligned_buf % 64 == 0);
    CHECK((uintptr_t)local_aligned % 64 == 0);
    CHECK(ctor_plain_ran);
    CHECK(ctor_count == 2 && ctor_order[0] == 201 && ctor_order[1] == 202);
    CHECK(util_more_exported() == 2 && util_more_hidden() == 3);
    CHECK(must_use(1) == 2);
    CHECK(format_into(buf, sizeof(buf), "%s-%d", "fmt", 7) == 5 &&
          strcmp(buf, "fmt-7") == 0);
    CHECK(fall_through(2) == 3 && fall_through(1) == 2 && fall_through(0) == 1 &&
          fall_through(5) == 0);
    local_aligned[0] = 0;
    (void)local_aligned;
}

/* ---- mercury_thread_annotation.h: a lock type and its calls, annotated (clang
 * checks them with -Wthread-safety; elsewhere the annotations vanish). */
struct HG_LOCK_CAPABILITY("mutex") ann_lock {
    hg_thread_rwlock_t rw;
};

static void ann_lock_take(struct ann_lock *l) HG_LOCK_ACQUIRE(l);
static void ann_lock_give(struct ann_lock *l) HG_LOCK_RELEASE(l);
static void ann_lock_take_shared(struct ann_lock *l) HG_LOCK_ACQUIRE_SHARED(l);
static void ann_lock_give_shared(struct ann_lock *l) HG_LOCK_RELEASE_SHARED(l);
static int ann_lock_try(struct ann_lock *l) HG_LOCK_TRY_ACQUIRE(1, l);
static int ann_lock_try_shared(struct ann_lock *l) HG_LOCK_TRY_ACQUIRE_SHARED(1, l);

/* The bodies call unannotated POSIX locks: the analysis would not follow. */
static void ann_lock_take(struct ann_lock *l) HG_LOCK_NO_THREAD_SAFETY_ANALYSIS
{
    hg_thread_rwlock_wrlock(&l->rw);
}
static void ann_lock_give(struct ann_lock *l) HG_LOCK_NO_THREAD_SAFETY_ANALYSIS
{
    hg_thread_rwlock_release_wrlock(&l->rw);
}
static void ann_lock_take_shared(struct ann_lock *l) HG_LOCK_NO_THREAD_SAFETY_ANALYSIS
{
    hg_thread_rwlock_rdlock(&l->rw);
}
static void ann_lock_give_shared(struct ann_lock *l) HG_LOCK_NO_THREAD_SAFETY_ANALYSIS
{
    hg_thread_rwlock_release_rdlock(&l->rw);
}
static int ann_lock_try(struct ann_lock *l) HG_LOCK_NO_THREAD_SAFETY_ANALYSIS
{
    return hg_thread_rwlock_try_wrlock(&l->rw) == HG_UTIL_SUCCESS;
}
static int ann_lock_try_shared(struct ann_lock *l) HG_LOCK_NO_THREAD_SAFETY_ANALYSIS
{
    return hg_thread_rwlock_try_rdlock(&l->rw) == HG_UTIL_SUCCESS;
}

static void check_annotations(void)
{
    struct ann_lock l;
    CHECK(hg_thread_rwlock_init(&l.rw) == HG_UTIL_SUCCESS);
    ann_lock_take(&l);
    ann_lock_give(&l);
    ann_lock_take_shared(&l);
    ann_lock_give_shared(&l);
    if (ann_lock_try(&l)) {
        CHECK(hg_thread_rwlock_try_rdlock(&l.rw) == HG_UTIL_FAIL); /* held for writing */
        ann_lock_give(&l);
    } else {
        CHECK(!"try_acquire failed on a free lock");
    }
    if (ann_lock_try_shared(&l))
        ann_lock_give_shared(&l);
    else
        CHECK(!"try_acquire_shared failed on a free lock");
    hg_thread_rwlock_destroy(&l.rw);
}

/* ---- mercury_dlog.h */
static const char *const rec_names[10] = {"rec_0", "rec_1", "rec_2", "rec_3", "rec_4",
                                          "rec_5", "rec_6", "rec_7", "rec_8", "rec_9"};

static struct hg_dlog_entry fixed_le[4];
static struct hg_dlog fixed_dlog = HG_DLOG_INITIALIZER("fixed", fixed_le, 4, 0);
static struct hg_dlog_entry ring_le[4];
static struct hg_dlog ring_dlog = HG_DLOG_INITIALIZER("ring", ring_le, 4, 1);
/* Mercury's later form, which names the variable it defines. */
static struct hg_dlog_entry named_le[2];
static struct hg_dlog named_dlog =
    HG_DLOG_INITIALIZER("named", named_dlog, named_le, 2, 1);

/* The whole content of f, from its start, in a static buffer (NUL-terminated;
 * NULL if unreadable). */
static char *slurp(FILE *f)
{
    static char buf[16384];
    size_t n;
    if (!f || fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0)
        return NULL;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fseek(f, 0, SEEK_END); /* later writes append */
    return buf;
}

static int dump_calls;
static int counting_fprintf(FILE *stream, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    int n = vfprintf(stream, format, ap);
    va_end(ap);
    dump_calls++;
    return n;
}

/* Each name appears in text, in this order. */
static int in_order(const char *text, const char *const *names, int count)
{
    const char *at = text;
    for (int i = 0; i < count; i++) {
        at = at ? strstr(at, names[i]) : NULL;
        if (!at)
            return 0;
        at += strlen(names[i]);
    }
    return 1;
}

static void check_dlog_static(void)
{
    CHECK(memcmp(fixed_dlog.dlog_magic, HG_DLOG_STDMAGIC "fixed", 13) == 0);
    CHECK(fixed_dlog.lesize == 4 && !fixed_dlog.leloop && !fixed_dlog.mallocd);
    CHECK(memcmp(named_dlog.dlog_magic, HG_DLOG_STDMAGIC "named", 13) == 0);
    CHECK(named_dlog.le == named_le && named_dlog.lesize == 2 && named_dlog.leloop);
    for (int i = 0; i < 3; i++) /* looping: the third replaces the first */
        CHECK(hg_dlog_addlog(&named_dlog, __FILE__, __LINE__, rec_names[i], NULL, NULL) ==
              1);
    CHECK(named_dlog.leadds == 2 && strcmp(named_le[0].func, "rec_2") == 0);

    /* Not looping: four records, then refused. */
    for (int i = 0; i < 4; i++)
        CHECK(hg_dlog_addlog(&fixed_dlog, __FILE__, __LINE__, rec_names[i], NULL, NULL) ==
              1);
    CHECK(hg_dlog_addlog(&fixed_dlog, __FILE__, __LINE__, rec_names[4], NULL, NULL) == 0);
    CHECK(fixed_dlog.leadds == 4 && strcmp(fixed_le[3].func, "rec_3") == 0);
    CHECK(fixed_le[0].line > 0 && strcmp(fixed_le[0].file, __FILE__) == 0);

    /* Looping: ten records, the last four kept. */
    for (int i = 0; i < 10; i++)
        CHECK(hg_dlog_addlog(&ring_dlog, __FILE__, __LINE__, rec_names[i], "looped",
                             &ring_dlog) == 1);
    CHECK(ring_dlog.leadds == 4);
    CHECK(ring_le[1].data == &ring_dlog && strcmp(ring_le[1].msg, "looped") == 0);

    /* Counters: one per name, wherever it is asked for. */
    hg_atomic_int32_t *c32a = NULL, *c32b = NULL, *c32other = NULL;
    hg_atomic_int64_t *c64 = NULL, *c64again = NULL;
    hg_dlog_mkcount32(&ring_dlog, &c32a, "cnt_shared", "counted twice");
    hg_dlog_mkcount32(&ring_dlog, &c32b, "cnt_shared", "counted twice");
    hg_dlog_mkcount32(&ring_dlog, &c32other, "cnt_other", "another one");
    CHECK(c32a != NULL && c32a == c32b && c32other != NULL && c32other != c32a);
    hg_dlog_mkcount32(&ring_dlog, &c32other, "cnt_shared", "ignored: set already");
    CHECK(c32other != c32a);
    hg_dlog_mkcount64(&ring_dlog, &c64, "cnt_wide", "64 bits");
    hg_dlog_mkcount64(&ring_dlog, &c64again, "cnt_wide", "64 bits");
    CHECK(c64 != NULL && c64 == c64again);
    if (c32a && c32other && c64) {
        CHECK(hg_atomic_get32(c32a) == 0 && hg_atomic_get64(c64) == 0);
        hg_atomic_incr32(c32a);
        hg_atomic_incr32(c32b);
        hg_atomic_set32(c32other, 9);
        hg_atomic_set64(c64, INT64_C(1) << 40);
    }

    /* Dump: counters, then the records oldest first (6 to 9). */
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (f) {
        hg_dlog_dump(&ring_dlog, counting_fprintf, f, 0);
        const char *text = slurp(f);
        static const char *const kept[] = {"rec_6", "rec_7", "rec_8", "rec_9"};
        CHECK(text && strstr(text, "ring") != NULL);
        CHECK(text && in_order(text, kept, 4) && strstr(text, "rec_5") == NULL);
        CHECK(text && strstr(text, "cnt_shared") && strstr(text, "cnt_other") &&
              strstr(text, "cnt_wide"));
        CHECK(text && strstr(text, " 2 ") && strstr(text, " 9 ") &&
              strstr(text, "1099511627776"));
        CHECK(dump_calls > 4);
        fclose(f);
    }

    /* Stopped, it refuses records and keeps its own. */
    hg_dlog_setlogstop(&ring_dlog, 1);
    CHECK(hg_dlog_addlog(&ring_dlog, __FILE__, __LINE__, "stopped", NULL, NULL) == 0);
    CHECK(ring_dlog.leadds == 4);
    hg_dlog_setlogstop(&ring_dlog, 0);
    CHECK(hg_dlog_addlog(&ring_dlog, __FILE__, __LINE__, "resumed", NULL, NULL) == 1);

    /* Reset: no record left, the counters stay. */
    hg_dlog_resetlog(&ring_dlog);
    CHECK(ring_dlog.leadds == 0);
    f = tmpfile();
    if (f) {
        hg_dlog_dump(&ring_dlog, NULL, f, 1);
        const char *text = slurp(f);
        CHECK(text && strstr(text, "rec_") == NULL && strstr(text, "resumed") == NULL);
        CHECK(text && strstr(text, "cnt_shared") != NULL);
        fclose(f);
        f = tmpfile();
    }
    if (f) {
        hg_dlog_dump_counters(&ring_dlog, NULL, f, 0);
        const char *text = slurp(f);
        CHECK(text && strstr(text, "cnt_wide") && strstr(text, "1099511627776"));
        fclose(f);
    }
    /* The reset log takes records again, from an empty ring. */
    CHECK(hg_dlog_addlog(&ring_dlog, __FILE__, __LINE__, rec_names[0], NULL, NULL) == 1);
    CHECK(ring_dlog.leadds == 1);

    /* To a file: <base>-<pid>.log, or <base>.log. */
    char dir[] = "/tmp/hgx-dlog.XXXXXX", base[64], path[96];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(base, sizeof(base), "%s/dl", dir);
    snprintf(path, sizeof(path), "%s-%d.log", base, (int)getpid());
    hg_dlog_dump_file(&ring_dlog, base, 1, 0);
    f = fopen(path, "r");
    CHECK(f != NULL);
    if (f) {
        const char *text = slurp(f);
        CHECK(text && strstr(text, "rec_0") && strstr(text, "cnt_shared"));
        fclose(f);
    }
    CHECK(remove(path) == 0);
    snprintf(path, sizeof(path), "%s.log", base);
    hg_dlog_dump_file(&ring_dlog, base, 0, 1);
    CHECK(remove(path) == 0);
    CHECK(rmdir(dir) == 0);

    /* A static log's counters are freed; the log stays usable. */
    hg_dlog_free(&ring_dlog);
    hg_dlog_free(&fixed_dlog);
    CHECK(HG_LIST_IS_EMPTY(&ring_dlog.cnts32) && HG_LIST_IS_EMPTY(&ring_dlog.cnts64));
    CHECK(hg_dlog_addlog(&ring_dlog, __FILE__, __LINE__, rec_names[1], NULL, NULL) == 1);
}

static void check_dlog_heap(void)
{
    char name[] = "heap";
    struct hg_dlog *d = hg_dlog_alloc(name, 2, 0);
    CHECK(d != NULL);
    if (!d)
        return;
    CHECK(memcmp(d->dlog_magic, HG_DLOG_STDMAGIC "heap", 13) == 0);
    CHECK(d->mallocd && d->lesize == 2 && d->leadds == 0);
    CHECK(hg_dlog_addlog(d, __FILE__, __LINE__, __func__, "one", NULL) == 1);
    CHECK(hg_dlog_addlog(d, __FILE__, __LINE__, __func__, "two", NULL) == 1);
    CHECK(hg_dlog_addlog(d, __FILE__, __LINE__, __func__, "three", NULL) == 0);
    hg_atomic_int64_t *c = NULL;
    hg_dlog_mkcount64(d, &c, "heap_cnt", "freed with the log");
    CHECK(c != NULL);
    hg_dlog_free(d);

    /* A longer name is cut to what dlog_magic holds, NUL included. */
    char long_name[] = "a-rather-long-name";
    d = hg_dlog_alloc(long_name, 1, 1);
    CHECK(d && memcmp(d->dlog_magic, HG_DLOG_STDMAGIC "a-rathe", 16) == 0);
    hg_dlog_free(d);
}

/* ---- mercury_log.h: a top outlet with a debug log (variable um_dbg_log_outlet_g) */
HG_LOG_DEBUG_DECL_LE(um_dbg, 8);
HG_LOG_DEBUG_DECL_DLOG(um_dbg) = HG_LOG_DLOG_INITIALIZER(um_dbg, 8);
HG_LOG_DLOG_DECL_REGISTER(um_dbg);
/* A subsystem below it (um_dbg_um_child_log_outlet_g), without a log of its
 * own: it records in its parent's. */
HG_LOG_SUBSYS_DECL_REGISTER(um_child, um_dbg);
/* A subsystem of the root with a debug log of its own
 * (hg_all_um_sub_log_outlet_g). */
HG_LOG_DEBUG_DECL_LE(um_sub, 4);
HG_LOG_DEBUG_DECL_DLOG(um_sub) = HG_LOG_DLOG_INITIALIZER(um_sub, 4);
HG_LOG_SUBSYS_DLOG_DECL_REGISTER(um_sub, HG_LOG_OUTLET_ROOT_NAME);

static void check_dlog_outlet(void)
{
    struct hg_dlog *dlog = &HG_LOG_DEBUG_DLOG(um_dbg);
    FILE *dbg = tmpfile(), *err = tmpfile();
    CHECK(dbg && err);
    if (!dbg || !err)
        return;
    CHECK(HG_LOG_OUTLET(um_dbg).debug_log == dlog && HG_LOG_OUTLET(um_dbg).registered);
    CHECK(HG_LOG_OUTLET(um_dbg_um_child).debug_log == dlog);
    CHECK(strcmp(HG_LOG_OUTLET(um_dbg_um_child).name, "um_child") == 0);
    CHECK(HG_LOG_OUTLET(um_dbg_um_child).parent == &HG_LOG_OUTLET(um_dbg));
    CHECK(HG_LOG_OUTLET(hg_all_um_sub).debug_log == &HG_LOG_DEBUG_DLOG(um_sub));
    CHECK(HG_LOG_OUTLET(hg_all_um_sub).parent == &HG_LOG_OUTLET(HG_LOG_OUTLET_ROOT_NAME));
    CHECK(dlog->le == HG_LOG_DEBUG_LE(um_dbg) && dlog->lesize == 8 && dlog->leloop);
    CHECK(hg_log_get_func() != NULL);
    hg_log_set_func(counting_fprintf);
    CHECK(hg_log_get_func() == counting_fprintf);
    hg_log_set_func(NULL);
    CHECK(hg_log_get_func() != NULL && hg_log_get_func() != counting_fprintf);
    hg_log_set_stream_debug(dbg);
    hg_log_set_stream_warning(dbg);
    hg_log_set_stream_error(err);

    /* min_debug: debug calls are recorded, not printed. */
    hg_log_set_subsys_level("um_dbg", HG_LOG_LEVEL_MIN_DEBUG);
    CHECK(HG_LOG_OUTLET(um_dbg).level == HG_LOG_LEVEL_MIN_DEBUG);
    HG_LOG_WRITE(um_dbg, HG_LOG_LEVEL_DEBUG, "recorded, not printed (%d)", 1);
    HG_LOG_SUBSYS_WRITE(um_child, um_dbg, HG_LOG_LEVEL_DEBUG,
                        "recorded by the child (%d)", 2);
    CHECK(dlog->leadds == 2);
    CHECK(dlog->leadds >= 1 && strcmp(HG_LOG_DEBUG_LE(um_dbg)[0].func, __func__) == 0);
    const char *text = slurp(dbg);
    CHECK(text && strstr(text, "recorded") == NULL);
    HG_LOG_WRITE(um_dbg, HG_LOG_LEVEL_WARNING, "a warning is not a debug record");
    CHECK(dlog->leadds == 2);
    text = slurp(dbg);
    CHECK(text && strstr(text, "a warning is not a debug record") != NULL);

    hg_atomic_int32_t *errors_seen = NULL;
    hg_atomic_int64_t *bytes_seen = NULL;
    HG_LOG_ADD_COUNTER32(um_dbg, &errors_seen, "um_errors", "errors seen");
    HG_LOG_ADD_COUNTER64(um_dbg, &bytes_seen, "um_bytes", "bytes seen");
    CHECK(errors_seen != NULL && bytes_seen != NULL);
    if (errors_seen)
        hg_atomic_incr32(errors_seen);

    /* An error prints the record after its own line, then empties it. */
    HG_LOG_WRITE(um_dbg, HG_LOG_LEVEL_ERROR, "an error (%d)", 3);
    text = slurp(err);
    CHECK(text && strstr(text, "an error (3)") != NULL);
    CHECK(text && strstr(text, __func__) != NULL && strstr(text, "um_errors") != NULL);
    CHECK(dlog->leadds == 0);

    /* Below min_debug nothing is recorded; at debug, recorded and printed. */
    hg_log_set_subsys_level("um_dbg", HG_LOG_LEVEL_WARNING);
    HG_LOG_WRITE(um_dbg, HG_LOG_LEVEL_DEBUG, "not recorded");
    CHECK(dlog->leadds == 0);
    hg_log_set_subsys_level("um_dbg", HG_LOG_LEVEL_DEBUG);
    HG_LOG_WRITE(um_dbg, HG_LOG_LEVEL_DEBUG, "recorded and printed");
    CHECK(dlog->leadds == 1);
    text = slurp(dbg);
    CHECK(text && strstr(text, "recorded and printed") != NULL);

    /* hg_log_dump_counters prints the counters at min_debug and more only. */
    size_t mark = text ? strlen(text) : 0;
    hg_log_dump_counters(&HG_LOG_OUTLET(um_dbg));
    text = slurp(dbg);
    CHECK(text && strlen(text) > mark && strstr(text + mark, "um_errors") != NULL);
    mark = text ? strlen(text) : 0;
    hg_log_set_subsys_level("um_dbg", HG_LOG_LEVEL_WARNING);
    hg_log_dump_counters(&HG_LOG_OUTLET(um_dbg));
    text = slurp(dbg);
    CHECK(text && strlen(text) == mark);

    /* Deregistering an outlet that owns a debug log prints its counters (at
     * min_debug) and frees them; a child's shared log stays. Register again
     * to leave the program as it started. */
    hg_atomic_int32_t *sub_count = NULL;
    HG_LOG_ADD_COUNTER32(hg_all_um_sub, &sub_count, "um_sub_cnt",
                         "freed at deregistration");
    CHECK(sub_count != NULL && !HG_LIST_IS_EMPTY(&HG_LOG_DEBUG_DLOG(um_sub).cnts32));
    hg_log_set_subsys_level("um_sub", HG_LOG_LEVEL_MIN_DEBUG);
    hg_log_outlet_deregister(&HG_LOG_OUTLET(hg_all_um_sub));
    CHECK(!HG_LOG_OUTLET(hg_all_um_sub).registered);
    CHECK(HG_LIST_IS_EMPTY(&HG_LOG_DEBUG_DLOG(um_sub).cnts32));
    text = slurp(dbg);
    CHECK(text && strlen(text) > mark && strstr(text + mark, "um_sub_cnt") != NULL);
    hg_log_outlet_deregister(&HG_LOG_OUTLET(um_dbg_um_child));
    CHECK(!HG_LIST_IS_EMPTY(&dlog->cnts32)); /* the parent's log */
    hg_log_outlet_register(&HG_LOG_OUTLET(um_dbg_um_child));
    hg_log_outlet_register(&HG_LOG_OUTLET(hg_all_um_sub));
    hg_log_outlet_register(&HG_LOG_OUTLET(hg_all_um_sub)); /* twice: no change */
    CHECK(HG_LOG_OUTLET(um_dbg_um_child).registered &&
          HG_LOG_OUTLET(hg_all_um_sub).registered);
    CHECK(HG_LOG_OUTLET(hg_all_um_sub).level == HG_LOG_LEVEL_MIN_DEBUG);

    hg_log_set_subsys_level("um_sub", HG_LOG_LEVEL_ERROR);
    hg_log_set_subsys_level("um_dbg", HG_LOG_LEVEL_ERROR);
    hg_log_set_stream_debug(NULL);
    hg_log_set_stream_warning(NULL);
    hg_log_set_stream_error(NULL);
    fclose(dbg);
    fclose(err);
}

int main(void)
{
    check_byteswap_inet();
    check_attributes();
    check_annotations();
    check_dlog_static();
    check_dlog_heap();
    check_dlog_outlet();
    check_dl();
    check_event();
    check_atomic_queue();
    check_hash_table();
    check_mem_pool();
    check_spin();
    check_rwlock();
    check_hash_string();
    check_list_queue();
    check_time_stamp();
    check_hugepages();
    if (failures)
        printf("util_more: %d check(s) FAILED\n", failures);
    else
        printf("util_more: PASS\n");
    return failures ? 1 : 0;
}
