/*
 * mercury_dlog.c -- Mercury's debug logs (mercury_dlog.h): a ring of records
 * and a list of named counters per log, each log guarded by its own mutex.
 *
 * The records sit in the array given by the program (or allocated by
 * hg_dlog_alloc); lefree is the slot the next record takes and leadds how
 * many records the log holds, so the oldest is leadds slots behind lefree.
 */
#include "mercury_dlog.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The log's name follows the magic text in dlog_magic, without a terminating
 * NUL when it fills the array: print at most this many characters of it. */
#define HG_DLOG_NAME_MAX ((int)(HG_DLOG_MAGICLEN - sizeof(HG_DLOG_STDMAGIC) + 1))

static const char *hg_dlog_name(const struct hg_dlog *d)
{
    return d->dlog_magic + sizeof(HG_DLOG_STDMAGIC) - 1;
}

/* Take d's mutex; with trylock, give up (and say so) if another thread holds
 * it, as a crashing program must not wait. */
static bool hg_dlog_lock(struct hg_dlog *d, int trylock)
{
    if (!trylock) {
        hg_thread_mutex_lock(&d->dlock);
        return true;
    }
    if (hg_thread_mutex_try_lock(&d->dlock) == HG_UTIL_SUCCESS)
        return true;
    fprintf(stderr, "hg_dlog: debug log %.*s is locked, not dumped\n", HG_DLOG_NAME_MAX,
            hg_dlog_name(d));
    return false;
}

/* Index of the oldest record; d->leadds > 0. */
static unsigned int hg_dlog_oldest(const struct hg_dlog *d)
{
    return (d->lefree + d->lesize - d->leadds) % d->lesize;
}

struct hg_dlog *hg_dlog_alloc(char *name, unsigned int lesize, int leloop)
{
    struct hg_dlog *d = calloc(1, sizeof(*d));
    struct hg_dlog_entry *le = calloc(lesize ? lesize : 1, sizeof(*le));
    if (!d || !le || hg_thread_mutex_init(&d->dlock) != HG_UTIL_SUCCESS) {
        free(d);
        free(le);
        return NULL;
    }
    snprintf(d->dlog_magic, sizeof(d->dlog_magic), "%s%s", HG_DLOG_STDMAGIC,
             name ? name : "");
    HG_LIST_INIT(&d->cnts32);
    HG_LIST_INIT(&d->cnts64);
    d->le = le;
    d->lesize = lesize;
    d->leloop = leloop;
    d->mallocd = 1;
    return d;
}

void hg_dlog_free(struct hg_dlog *d)
{
    if (!d)
        return;
    while (!HG_LIST_IS_EMPTY(&d->cnts32)) {
        struct hg_dlog_dcount32 *c = HG_LIST_FIRST(&d->cnts32);
        HG_LIST_REMOVE(c, l);
        free(c);
    }
    while (!HG_LIST_IS_EMPTY(&d->cnts64)) {
        struct hg_dlog_dcount64 *c = HG_LIST_FIRST(&d->cnts64);
        HG_LIST_REMOVE(c, l);
        free(c);
    }
    if (d->mallocd) {
        hg_thread_mutex_destroy(&d->dlock);
        free(d->le);
        free(d);
    }
}

/* Point *ptr at the counter of one width named cname in dlog, made if missing
 * and appended, so that dumps list the counters in the order they were made.
 * Called with the log's mutex held. */
#define HG_DLOG_MKCOUNT(bits, dlog, ptr, cname, cdescr)                                  \
    do {                                                                                 \
        struct hg_dlog_dcount##bits *c, *last = NULL;                                    \
        HG_LIST_FOREACH(c, &(dlog)->cnts##bits, l)                                       \
        {                                                                                \
            if (strcmp(c->name, cname) == 0)                                             \
                break;                                                                   \
            last = c;                                                                    \
        }                                                                                \
        if (!c) {                                                                        \
            c = malloc(sizeof(*c));                                                      \
            if (!c) {                                                                    \
                fprintf(stderr, "hg_dlog: no memory for counter %s\n", cname);           \
                abort();                                                                 \
            }                                                                            \
            c->name = cname;                                                             \
            c->descr = cdescr;                                                           \
            hg_atomic_init##bits(&c->c, 0);                                              \
            if (last)                                                                    \
                HG_LIST_INSERT_AFTER(last, c, l);                                        \
            else                                                                         \
                HG_LIST_INSERT_HEAD(&(dlog)->cnts##bits, c, l);                          \
        }                                                                                \
        *(ptr) = &c->c;                                                                  \
    } while (0)

void hg_dlog_mkcount32(struct hg_dlog *d, hg_atomic_int32_t **cptr, const char *name,
                       const char *descr)
{
    hg_thread_mutex_lock(&d->dlock);
    if (*cptr == NULL)
        HG_DLOG_MKCOUNT(32, d, cptr, name, descr);
    hg_thread_mutex_unlock(&d->dlock);
}

void hg_dlog_mkcount64(struct hg_dlog *d, hg_atomic_int64_t **cptr, const char *name,
                       const char *descr)
{
    hg_thread_mutex_lock(&d->dlock);
    if (*cptr == NULL)
        HG_DLOG_MKCOUNT(64, d, cptr, name, descr);
    hg_thread_mutex_unlock(&d->dlock);
}

unsigned int hg_dlog_addlog(struct hg_dlog *d, const char *file, unsigned int line,
                            const char *func, const char *msg, const void *data)
{
    unsigned int added = 0;
    hg_thread_mutex_lock(&d->dlock);
    if (!d->lestop && d->lesize > 0 && (d->leloop || d->leadds < d->lesize)) {
        struct hg_dlog_entry *e = &d->le[d->lefree];
        e->file = file;
        e->line = line;
        e->func = func;
        e->msg = msg;
        e->data = data;
        hg_time_get_current(&e->time);
        d->lefree = (d->lefree + 1) % d->lesize;
        if (d->leadds < d->lesize)
            d->leadds++;
        added = 1;
    }
    hg_thread_mutex_unlock(&d->dlock);
    return added;
}

void hg_dlog_setlogstop(struct hg_dlog *d, int stop)
{
    hg_thread_mutex_lock(&d->dlock);
    d->lestop = stop;
    hg_thread_mutex_unlock(&d->dlock);
}

void hg_dlog_resetlog(struct hg_dlog *d)
{
    hg_thread_mutex_lock(&d->dlock);
    d->lefree = 0;
    d->leadds = 0;
    hg_thread_mutex_unlock(&d->dlock);
}

/* Print d's counters; called with its mutex held. */
static void hg_dlog_print_counters(struct hg_dlog *d,
                                   int (*log_func)(FILE *, const char *, ...),
                                   FILE *stream)
{
    struct hg_dlog_dcount32 *c32;
    struct hg_dlog_dcount64 *c64;
    HG_LIST_FOREACH(c32, &d->cnts32, l)
    {
        log_func(stream, "# counter %s = %" PRId32 " (%s)\n", c32->name,
                 hg_atomic_get32(&c32->c), c32->descr ? c32->descr : "");
    }
    HG_LIST_FOREACH(c64, &d->cnts64, l)
    {
        log_func(stream, "# counter %s = %" PRId64 " (%s)\n", c64->name,
                 hg_atomic_get64(&c64->c), c64->descr ? c64->descr : "");
    }
}

static bool hg_dlog_has_counters(const struct hg_dlog *d)
{
    return !HG_LIST_IS_EMPTY(&d->cnts32) || !HG_LIST_IS_EMPTY(&d->cnts64);
}

void hg_dlog_dump(struct hg_dlog *d, int (*log_func)(FILE *, const char *, ...),
                  FILE *stream, int trylock)
{
    if (!log_func)
        log_func = fprintf;
    if (!hg_dlog_lock(d, trylock))
        return;
    if (d->leadds > 0 || hg_dlog_has_counters(d)) {
        log_func(stream, "# debug log %.*s: %u record(s)\n", HG_DLOG_NAME_MAX,
                 hg_dlog_name(d), d->leadds);
        hg_dlog_print_counters(d, log_func, stream);
        for (unsigned int n = 0, i = d->leadds ? hg_dlog_oldest(d) : 0; n < d->leadds;
             n++, i = (i + 1) % d->lesize) {
            const struct hg_dlog_entry *e = &d->le[i];
            log_func(stream, "# [%.6f] %s:%u %s()%s%s\n", hg_time_to_double(e->time),
                     e->file ? e->file : "?", e->line, e->func ? e->func : "?",
                     e->msg ? ": " : "", e->msg ? e->msg : "");
        }
    }
    hg_thread_mutex_unlock(&d->dlock);
}

void hg_dlog_dump_counters(struct hg_dlog *d, int (*log_func)(FILE *, const char *, ...),
                           FILE *stream, int trylock)
{
    if (!log_func)
        log_func = fprintf;
    if (!hg_dlog_lock(d, trylock))
        return;
    if (hg_dlog_has_counters(d)) {
        log_func(stream, "# debug log %.*s: counters\n", HG_DLOG_NAME_MAX,
                 hg_dlog_name(d));
        hg_dlog_print_counters(d, log_func, stream);
    }
    hg_thread_mutex_unlock(&d->dlock);
}

void hg_dlog_dump_file(struct hg_dlog *d, const char *base, int addpid, int trylock)
{
    char path[4096];
    int pid = (int)getpid();
    int len = addpid ? snprintf(path, sizeof(path), "%s-%d.log", base, pid)
                     : snprintf(path, sizeof(path), "%s.log", base);
    if (len < 0 || (size_t)len >= sizeof(path)) {
        fprintf(stderr, "hg_dlog: file name too long: %s\n", base);
        return;
    }
    FILE *fp = fopen(path, "w");
    if (!fp) {
        perror(path);
        return;
    }
    if (!hg_dlog_lock(d, trylock)) {
        fclose(fp);
        return;
    }
    /* One item a line, space separated, so that logs of several processes
     * can be merged and sorted by time. */
    fprintf(fp, "# debug log %.*s of process %d\n", HG_DLOG_NAME_MAX, hg_dlog_name(d),
            pid);
    struct hg_dlog_dcount32 *c32;
    struct hg_dlog_dcount64 *c64;
    HG_LIST_FOREACH(c32, &d->cnts32, l)
    {
        fprintf(fp, "counter %s %d %" PRId32 " # %s\n", c32->name, pid,
                hg_atomic_get32(&c32->c), c32->descr ? c32->descr : "");
    }
    HG_LIST_FOREACH(c64, &d->cnts64, l)
    {
        fprintf(fp, "counter %s %d %" PRId64 " # %s\n", c64->name, pid,
                hg_atomic_get64(&c64->c), c64->descr ? c64->descr : "");
    }
    fprintf(fp, "# %u record(s): time pid file line function message data\n", d->leadds);
    for (unsigned int n = 0, i = d->leadds ? hg_dlog_oldest(d) : 0; n < d->leadds;
         n++, i = (i + 1) % d->lesize) {
        const struct hg_dlog_entry *e = &d->le[i];
        fprintf(fp, "%.6f %d %s %u %s %s %p\n", hg_time_to_double(e->time), pid,
                e->file ? e->file : "?", e->line, e->func ? e->func : "?",
                e->msg ? e->msg : "-", e->data);
    }
    hg_thread_mutex_unlock(&d->dlock);
    fclose(fp);
}
