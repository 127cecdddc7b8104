/*
 * mercury_log.c -- Mercury's log outlets (mercury_log.h) for programs written
 * against Mercury's utility library, and HG_Util_set_log_level.
 *
 * The registered outlets sit in one list (a sys/queue STAILQ), the root
 * outlet first. An outlet's level is recomputed whenever the global level,
 * the subsystem list, a subsystem level or the set of outlets changes, so
 * HG_LOG_WRITE only reads one field. The list follows HG_LOG_SUBSYS's rules
 * (as hgx's own logs): a name selects the outlet of that name and the
 * outlets below it; once any name is selected, outlets not selected are
 * silent; "~name" silences a subtree. Names are the outlets' own (a
 * subsystem declared with HG_LOG_SUBSYS_DECL_REGISTER(sub, parent) is
 * "sub"). The environment (HG_LOG_LEVEL, default error, and HG_LOG_SUBSYS)
 * sets the starting values.
 *
 * Debug logs (mercury_dlog.c) defer output, as Mercury's min_debug level
 * means: HG_LOG_WRITE records debug calls in the outlet's debug log, and an
 * error written to the outlet prints that record after the error line, then
 * empties it. An outlet without a debug log shares its parent's; at
 * deregistration an outlet frees the debug log it owns, after printing its
 * counters when it logs at min_debug or more.
 */
#include "mercury_log.h"
#include "mercury_util.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Subsystems given their own level by hg_log_set_subsys_level. */
#define HG_LOG_SUBSYS_LEVELS_MAX 16
#define HG_LOG_NAME_MAX 64

HG_LOG_OUTLET_DECL(HG_LOG_OUTLET_ROOT_NAME) =
    HG_LOG_OUTLET_INITIALIZER(HG_LOG_OUTLET_ROOT_NAME, HG_LOG_PASS, NULL, NULL);

/* Names and short names of the levels, in enum order. */
#define X(level, name, short_name, stream) name,
static const char *const hg_log_level_names[] = {HG_LOG_LEVELS};
#undef X
#define X(level, name, short_name, stream) short_name,
static const char *const hg_log_level_short_names[] = {HG_LOG_LEVELS};
#undef X

static pthread_mutex_t hg_log_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t hg_log_once = PTHREAD_ONCE_INIT;
static STAILQ_HEAD(hg_log_outlet_list, hg_log_outlet)
    hg_log_outlets = STAILQ_HEAD_INITIALIZER(hg_log_outlets);
static enum hg_log_level hg_log_level_g = HG_LOG_LEVEL_ERROR;
static char hg_log_subsys_g[256];
static struct {
    char name[HG_LOG_NAME_MAX];
    enum hg_log_level level;
} hg_log_subsys_levels[HG_LOG_SUBSYS_LEVELS_MAX];
static int hg_log_subsys_level_count;
static hg_log_func_t hg_log_func;
static FILE *hg_log_streams[HG_LOG_LEVEL_MAX];

/* True if outlet o is named name or lies below an outlet of that name. */
static bool hg_log_under(const struct hg_log_outlet *o, const char *name)
{
    for (; o; o = o->parent)
        if (strcmp(o->name, name) == 0)
            return true;
    return false;
}

/* Whether the subsystem list silences outlet o. */
static bool hg_log_muted(const struct hg_log_outlet *o)
{
    char buf[sizeof(hg_log_subsys_g)];
    bool muted = false;
    memcpy(buf, hg_log_subsys_g, sizeof(buf));
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save))
        if (tok[0] != '~' && strcmp(tok, "all") != 0)
            muted = true;
    memcpy(buf, hg_log_subsys_g, sizeof(buf));
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        bool off = tok[0] == '~';
        const char *name = off ? tok + 1 : tok;
        if (strcmp(name, "all") == 0 || hg_log_under(o, name))
            muted = off;
    }
    return muted;
}

/* The level outlet o logs at; called with hg_log_mutex held. */
static enum hg_log_level hg_log_level_of(const struct hg_log_outlet *o)
{
    if (o->state == HG_LOG_OFF || hg_log_muted(o))
        return HG_LOG_LEVEL_NONE;
    /* The nearest subsystem with a level of its own decides, else the global one. */
    for (const struct hg_log_outlet *p = o; p; p = p->parent)
        for (int i = hg_log_subsys_level_count - 1; i >= 0; i--)
            if (strcmp(hg_log_subsys_levels[i].name, p->name) == 0)
                return hg_log_subsys_levels[i].level;
    return hg_log_level_g;
}

static void hg_log_update_locked(void)
{
    struct hg_log_outlet *o;
    HG_LOG_OUTLET(HG_LOG_OUTLET_ROOT_NAME).level =
        hg_log_level_of(&HG_LOG_OUTLET(HG_LOG_OUTLET_ROOT_NAME));
    STAILQ_FOREACH(o, &hg_log_outlets, entry)
    o->level = hg_log_level_of(o);
}

static void hg_log_init(void)
{
    const char *level = getenv("HG_LOG_LEVEL");
    const char *subsys = getenv("HG_LOG_SUBSYS");
    if (level)
        hg_log_level_g = hg_log_name_to_level(level);
    if (subsys)
        snprintf(hg_log_subsys_g, sizeof(hg_log_subsys_g), "%s", subsys);
    hg_log_update_locked();
}

/* Run stmt with the outlets initialized and locked, then refresh their levels. */
#define HG_LOG_LOCKED(stmt)                                                              \
    do {                                                                                 \
        pthread_mutex_lock(&hg_log_mutex);                                               \
        pthread_once(&hg_log_once, hg_log_init);                                         \
        stmt;                                                                            \
        hg_log_update_locked();                                                          \
        pthread_mutex_unlock(&hg_log_mutex);                                             \
    } while (0)

/* The root outlet is registered before main(), even if no outlet registers,
 * and deregistered at exit, after the program's outlets. */
static void hg_log_boot(void) HG_ATTR_CONSTRUCTOR;
static void hg_log_boot(void)
{
    hg_log_outlet_register(&HG_LOG_OUTLET(HG_LOG_OUTLET_ROOT_NAME));
}
static void hg_log_shutdown(void) HG_ATTR_DESTRUCTOR;
static void hg_log_shutdown(void)
{
    hg_log_outlet_deregister(&HG_LOG_OUTLET(HG_LOG_OUTLET_ROOT_NAME));
}

enum hg_log_level hg_log_name_to_level(const char *log_level)
{
    if (!log_level)
        return HG_LOG_LEVEL_NONE;
    for (int i = HG_LOG_LEVEL_NONE + 1; i < HG_LOG_LEVEL_MAX; i++)
        if (strcasecmp(log_level, hg_log_level_names[i]) == 0 ||
            strcasecmp(log_level, hg_log_level_short_names[i]) == 0)
            return (enum hg_log_level)i;
    return HG_LOG_LEVEL_NONE; /* "none", or a name of no level */
}

const char *hg_log_level_to_string(enum hg_log_level level)
{
    if ((int)level < HG_LOG_LEVEL_NONE || level >= HG_LOG_LEVEL_MAX)
        return "";
    return hg_log_level_names[level];
}

void hg_log_set_level(enum hg_log_level log_level)
{
    if (log_level >= HG_LOG_LEVEL_MAX)
        log_level = HG_LOG_LEVEL_DEBUG;
    HG_LOG_LOCKED(hg_log_level_g = log_level);
}

enum hg_log_level hg_log_get_level(void)
{
    enum hg_log_level level;
    HG_LOG_LOCKED(level = hg_log_level_g);
    return level;
}

void HG_Util_set_log_level(const char *log_level)
{
    hg_log_set_level(hg_log_name_to_level(log_level));
}

void hg_log_set_subsys(const char *log_subsys)
{
    HG_LOG_LOCKED(snprintf(hg_log_subsys_g, sizeof(hg_log_subsys_g), "%s",
                           log_subsys ? log_subsys : ""));
}

const char *hg_log_get_subsys(void)
{
    HG_LOG_LOCKED((void)0);
    return hg_log_subsys_g;
}

static void hg_log_subsys_level_put(const char *subsys, enum hg_log_level level)
{
    int i = 0;
    while (i < hg_log_subsys_level_count &&
           strcmp(hg_log_subsys_levels[i].name, subsys) != 0)
        i++;
    if (i == HG_LOG_SUBSYS_LEVELS_MAX)
        return; /* table full: the subsystem keeps the global level */
    snprintf(hg_log_subsys_levels[i].name, HG_LOG_NAME_MAX, "%s", subsys);
    hg_log_subsys_levels[i].level = level;
    if (i == hg_log_subsys_level_count)
        hg_log_subsys_level_count++;
}

void hg_log_set_subsys_level(const char *subsys, enum hg_log_level log_level)
{
    if (!subsys || log_level >= HG_LOG_LEVEL_MAX)
        return;
    HG_LOG_LOCKED(hg_log_subsys_level_put(subsys, log_level));
}

void hg_log_outlet_register(struct hg_log_outlet *outlet)
{
    if (!outlet)
        return;
    HG_LOG_LOCKED({
        if (!outlet->registered) {
            STAILQ_INSERT_TAIL(&hg_log_outlets, outlet, entry);
            outlet->registered = true;
        }
        if (!outlet->debug_log && outlet->parent)
            outlet->debug_log = outlet->parent->debug_log;
    });
}

void hg_log_set_func(hg_log_func_t log_func)
{
    HG_LOG_LOCKED(hg_log_func = log_func);
}

hg_log_func_t hg_log_get_func(void)
{
    hg_log_func_t fn;
    HG_LOG_LOCKED(fn = hg_log_func);
    return fn ? fn : fprintf;
}

static void hg_log_stream_put(enum hg_log_level level, FILE *stream)
{
    HG_LOG_LOCKED(hg_log_streams[level] = stream);
}

/* The stream of lines of a level: min_debug records go with debug lines. */
static FILE *hg_log_stream_get(enum hg_log_level level)
{
    FILE *stream;
    if (level == HG_LOG_LEVEL_MIN_DEBUG)
        level = HG_LOG_LEVEL_DEBUG;
    HG_LOG_LOCKED(stream = hg_log_streams[level]);
    if (stream)
        return stream;
    return level == HG_LOG_LEVEL_ERROR ? stderr : stdout;
}

void hg_log_set_stream_error(FILE *stream)
{
    hg_log_stream_put(HG_LOG_LEVEL_ERROR, stream);
}
FILE *hg_log_get_stream_error(void)
{
    return hg_log_stream_get(HG_LOG_LEVEL_ERROR);
}
void hg_log_set_stream_warning(FILE *stream)
{
    hg_log_stream_put(HG_LOG_LEVEL_WARNING, stream);
}
FILE *hg_log_get_stream_warning(void)
{
    return hg_log_stream_get(HG_LOG_LEVEL_WARNING);
}
void hg_log_set_stream_debug(FILE *stream)
{
    hg_log_stream_put(HG_LOG_LEVEL_DEBUG, stream);
}
FILE *hg_log_get_stream_debug(void)
{
    return hg_log_stream_get(HG_LOG_LEVEL_DEBUG);
}

void hg_log_dump_counters(struct hg_log_outlet *outlet)
{
    if (!outlet || !outlet->debug_log || outlet->level < HG_LOG_LEVEL_MIN_DEBUG ||
        outlet->level >= HG_LOG_LEVEL_MAX)
        return;
    hg_dlog_dump_counters(outlet->debug_log, hg_log_get_func(),
                          hg_log_stream_get(outlet->level), 0);
}

void hg_log_outlet_deregister(struct hg_log_outlet *outlet)
{
    bool was_registered = false;
    if (!outlet)
        return;
    HG_LOG_LOCKED({
        if (outlet->registered) {
            STAILQ_REMOVE(&hg_log_outlets, outlet, hg_log_outlet, entry);
            outlet->registered = false;
            was_registered = true;
        }
    });
    /* A debug log the outlet owns (not one taken from its parent). */
    if (was_registered && outlet->debug_log &&
        !(outlet->parent && outlet->parent->debug_log == outlet->debug_log)) {
        hg_log_dump_counters(outlet);
        hg_dlog_free(outlet->debug_log);
    }
}

void hg_log_write(struct hg_log_outlet *outlet, enum hg_log_level log_level,
                  const char *module, const char *file, unsigned int line,
                  const char *func, bool no_return, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    hg_log_vwrite(outlet, log_level, module, file, line, func, no_return, format, ap);
    va_end(ap);
}

void hg_log_vwrite(struct hg_log_outlet *outlet, enum hg_log_level log_level,
                   const char *module, const char *file, unsigned int line,
                   const char *func, bool no_return, const char *format, va_list ap)
{
    if (!outlet || !format || log_level <= HG_LOG_LEVEL_NONE ||
        log_level >= HG_LOG_LEVEL_MAX)
        return;
    FILE *stream = hg_log_stream_get(log_level);
    hg_log_func_t fn = hg_log_get_func();
    char msg[1024];
    vsnprintf(msg, sizeof(msg), format, ap);
    const char *base = file ? strrchr(file, '/') : NULL;
    base = base ? base + 1 : (file ? file : "?");
    fn(stream, "[%s] %s %s%s%s:%u %s(): %s%s", outlet->name,
       hg_log_level_names[log_level], module ? module : "", module ? ":" : "", base, line,
       func ? func : "?", msg, no_return ? "" : "\n");
    /* What led to the error, then a fresh record for the next one. */
    if (log_level == HG_LOG_LEVEL_ERROR && outlet->debug_log &&
        outlet->level >= HG_LOG_LEVEL_MIN_DEBUG) {
        hg_dlog_dump(outlet->debug_log, fn, stream, 0);
        hg_dlog_resetlog(outlet->debug_log);
    }
}
