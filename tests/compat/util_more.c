/*
 * util_more.c -- a program written against the rest of Mercury's utility
 * headers that Mercury 2.4.1's own test programs use: dynamic loading, event
 * objects, atomic queues, hash tables, memory pools, spin locks, the list and
 * queue declaration macros, time stamps and huge pages; and two headers
 * Mercury programs outside its tests use, the string hash and reader-writer
 * locks. Built in the tree by
 * make check and against an installed hgx by check-installed.sh. Exit 0 when
 * every check holds.
 */
#include "mercury_atomic.h"
#include "mercury_atomic_queue.h"
#include "mercury_dl.h"
#include "mercury_event.h"
#include "mercury_hash_string.h"
#include "mercury_hash_table.h"
#include "mercury_list.h"
#include "mercury_mem.h"
#include "mercury_mem_pool.h"
#include "mercury_poll.h"
#include "mercury_queue.h"
#include "mercury_thread.h"
#include "mercury_thread_rwlock.h"
#include "mercury_thread_spin.h"
#include "mercury_time.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- HG_LIST_HEAD_DECL/INIT/INSERT_AFTER/BEFORE, HG_QUEUE_HEAD_DECL/INIT/REMOVE */
struct lelem {
    int v;
    HG_LIST_ENTRY(lelem) link;
};
HG_LIST_HEAD_DECL(lhead, lelem);
struct qelem {
    int v;
    HG_QUEUE_ENTRY(qelem) link;
};
HG_QUEUE_HEAD_DECL(qhead, qelem);

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

    HG_QUEUE_HEAD_INIT(qhead, queue);
    struct qelem q[3] = {{.v = 1}, {.v = 2}, {.v = 3}};
    struct qelem *qi;
    CHECK(HG_QUEUE_IS_EMPTY(&queue));
    HG_QUEUE_POP_HEAD(&queue, link); /* empty: nothing */
    CHECK(HG_QUEUE_IS_EMPTY(&queue));
    for (int i = 0; i < 3; i++)
        HG_QUEUE_PUSH_TAIL(&queue, &q[i], link);
    HG_QUEUE_REMOVE(&queue, &q[2], qelem, link); /* the tail: 1 2 */
    HG_QUEUE_PUSH_TAIL(&queue, &q[2], link);     /* 1 2 3 */
    HG_QUEUE_REMOVE(&queue, &q[1], qelem, link); /* 1 3 */
    order = 0;
    HG_QUEUE_FOREACH(qi, &queue, link)
    order = order * 10 + qi->v;
    CHECK(order == 13);
    HG_QUEUE_POP_HEAD(&queue, link);
    CHECK(HG_QUEUE_FIRST(&queue) == &q[2]);
    HG_QUEUE_POP_HEAD(&queue, link);
    CHECK(HG_QUEUE_IS_EMPTY(&queue));
    HG_QUEUE_PUSH_TAIL(&queue, &q[0], link); /* the tail was reset */
    CHECK(HG_QUEUE_FIRST(&queue) == &q[0] && HG_QUEUE_NEXT(&q[0], link) == NULL);
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

int main(void)
{
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
