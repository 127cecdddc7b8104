/*
 * hgx_log.c -- level/subsystem filtering and output for HGX_LOG.
 */
#include "hgx_log.h"
#include "hgx_param.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const hgx_log_subsys_names[HGX_SUBSYS_MAX] = {
#define X(id, name, parent) [HGX_SUBSYS_##id] = name,
    HGX_LOG_CORE_SUBSYS HGX_LOG_PLUGIN_SUBSYS
#undef X
};
/* The subsystem tree, as Mercury's: "na" covers the plugins (and the MPI
 * plugin its one-sided emulation), "hg" covers rpc, bulk and proc (and hgx's
 * requests). Naming a subsystem names its descendants too. */
static const int hgx_log_subsys_parent[HGX_SUBSYS_MAX] = {
#define X(id, name, parent) [HGX_SUBSYS_##id] = HGX_SUBSYS_##parent,
    HGX_LOG_CORE_SUBSYS HGX_LOG_PLUGIN_SUBSYS
#undef X
};
static const char *const hgx_log_level_names[] = {"none", "error", "warning", "min_debug",
                                                  "debug"};

static enum hgx_log_level hgx_log_levels[HGX_SUBSYS_MAX];
static bool hgx_log_muted[HGX_SUBSYS_MAX];
static pthread_once_t hgx_log_once = PTHREAD_ONCE_INIT;

static int hgx_log_level_parse(const char *s)
{
    for (int i = 0; i < (int)(sizeof(hgx_log_level_names) / sizeof(*hgx_log_level_names));
         i++)
        if (strcmp(s, hgx_log_level_names[i]) == 0)
            return i;
    return -1;
}

/* True if subsystem i is name ("all" or "" for every one) or below it. */
static bool hgx_log_under(int i, const char *name)
{
    if (name[0] == '\0' || strcmp(name, "all") == 0)
        return true;
    for (; i >= 0; i = hgx_log_subsys_parent[i])
        if (strcmp(hgx_log_subsys_names[i], name) == 0)
            return true;
    return false;
}

static void hgx_log_apply_level(const char *name, enum hgx_log_level level)
{
    for (int i = 0; i < HGX_SUBSYS_MAX; i++)
        if (hgx_log_under(i, name))
            hgx_log_levels[i] = level;
}

static void hgx_log_apply_subsys(const char *list)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", list);
    bool any_positive = false;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save))
        if (tok[0] != '~' && strcmp(tok, "all") != 0)
            any_positive = true;
    /* A positive list ("na,hg") selects only those; "all" or only "~x" keeps the rest. */
    for (int i = 0; i < HGX_SUBSYS_MAX; i++)
        hgx_log_muted[i] = any_positive;
    snprintf(buf, sizeof(buf), "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        bool mute = tok[0] == '~';
        const char *name = mute ? tok + 1 : tok;
        for (int i = 0; i < HGX_SUBSYS_MAX; i++)
            if (name[0] != '\0' && hgx_log_under(i, name))
                hgx_log_muted[i] = mute;
    }
}

static void hgx_log_init(void)
{
    int l = hgx_log_level_parse(hgx_param_get_string(&hgx_param_log_level));
    hgx_log_apply_level("", l >= 0 ? (enum hgx_log_level)l : HGX_LOG_ERROR);
    hgx_log_apply_subsys(hgx_param_get_string(&hgx_param_log_subsys));
}

bool hgx_log_enabled(enum hgx_log_subsys subsys, enum hgx_log_level level)
{
    pthread_once(&hgx_log_once, hgx_log_init);
    return !hgx_log_muted[subsys] && level <= hgx_log_levels[subsys];
}

/* Set by HG_Set_log_func / HG_Set_log_stream; read without a lock (set
 * once, before the logging they change, as in Mercury). */
static int (*hgx_log_func)(FILE *stream, const char *format, ...);
static FILE *hgx_log_streams[HGX_LOG_DEBUG + 1];

static void hgx_log_emit(enum hgx_log_subsys subsys, enum hgx_log_level level,
                         const char *where, const char *msg)
{
    FILE *stream = hgx_log_streams[level] ? hgx_log_streams[level] : stderr;
    int (*fn)(FILE *, const char *, ...) = hgx_log_func ? hgx_log_func : fprintf;
    fn(stream, "# [hgx:%s:%s] %s%s\n", hgx_log_subsys_names[subsys],
       hgx_log_level_names[level], where, msg);
}

void hgx_log_write(enum hgx_log_subsys subsys, enum hgx_log_level level, const char *file,
                   int line, const char *func, const char *fmt, ...)
{
    if (!hgx_log_enabled(subsys, level))
        return;
    char msg[1024], where[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const char *base = strrchr(file, '/');
    snprintf(where, sizeof(where), "%s:%d %s(): ", base ? base + 1 : file, line, func);
    hgx_log_emit(subsys, level, where, msg);
}

void hgx_log_print(enum hgx_log_subsys subsys, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    hgx_log_emit(subsys, HGX_LOG_DEBUG, "", msg);
}

void hgx_log_set_func(int (*fn)(FILE *stream, const char *format, ...))
{
    hgx_log_func = fn;
}

void hgx_log_set_stream(const char *level, FILE *stream)
{
    int l = hgx_log_level_parse(level);
    if (l <= HGX_LOG_NONE) {
        HGX_LOG_ERROR(HG, "unknown log level \"%s\" (error, warning, debug)", level);
        return;
    }
    hgx_log_streams[l] = stream;
    /* "debug" covers both debug levels. */
    if (l == HGX_LOG_DEBUG)
        hgx_log_streams[HGX_LOG_MIN_DEBUG] = stream;
}

void hgx_log_set_level(const char *name, const char *level)
{
    pthread_once(&hgx_log_once, hgx_log_init);
    int l = level ? hgx_log_level_parse(level) : -1;
    if (l < 0) {
        HGX_LOG_ERROR(NA,
                      "unknown log level \"%s\" (none, error, warning, min_debug, debug)",
                      level ? level : "(null)");
        return;
    }
    hgx_log_apply_level(name, (enum hgx_log_level)l);
}

void hgx_log_set_subsys(const char *list)
{
    pthread_once(&hgx_log_once, hgx_log_init);
    if (list)
        hgx_log_apply_subsys(list);
}
