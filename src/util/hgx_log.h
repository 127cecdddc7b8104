/*
 * hgx_log.h -- the one log macro family of the project (private).
 *
 * Level and subsystems come from the environment, read once:
 *   HG_LOG_LEVEL  = none | error | warning | min_debug | debug   (default: error)
 *   HG_LOG_SUBSYS = comma list of subsystems, "all" (default), and "~name" to mute one,
 *                   e.g. "all,~ofi" or "na,hg"; applied left to right.
 * Subsystems form Mercury's tree: na > each plugin's (ofi, ucx, mpi > mpi_emul);
 * hg > bulk, proc, req. A name stands for its subtree ("hg" is rpc, bulk and proc).
 * The plugins' subsystems come from configure (HGX_LOG_PLUGIN_SUBSYS, declared by
 * each plugin's section with HGX_NA_PLUGIN_LOG), so adding one edits no source.
 */
#ifndef HGX_LOG_H
#define HGX_LOG_H

#include "config.h"

#include <stdbool.h>
#include <stdio.h>

enum hgx_log_level {
    HGX_LOG_NONE,
    HGX_LOG_ERROR,
    HGX_LOG_WARNING,
    HGX_LOG_MIN_DEBUG,
    HGX_LOG_DEBUG,
};

/* The core's subsystems as X(ID, "name", PARENT); a root's parent is NONE. */
#define HGX_LOG_CORE_SUBSYS                                                              \
    X(NA, "na", NONE)                                                                    \
    X(HG, "hg", NONE) X(BULK, "bulk", HG) X(PROC, "proc", HG) X(REQ, "req", HG)

enum hgx_log_subsys {
    HGX_SUBSYS_NONE = -1,
#define X(id, name, parent) HGX_SUBSYS_##id,
    HGX_LOG_CORE_SUBSYS HGX_LOG_PLUGIN_SUBSYS
#undef X
        HGX_SUBSYS_MAX
};

bool hgx_log_enabled(enum hgx_log_subsys subsys, enum hgx_log_level level);
/* Write one line if subsys logs at level. Cold and out of line: a hot
 * function that may log an error then keeps its fast path free of the
 * level check and of the registers the call needs. */
void hgx_log_write(enum hgx_log_subsys subsys, enum hgx_log_level level, const char *file,
                   int line, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 6, 7), cold, noinline));
/* Write one line whatever the level (diagnostics asked for explicitly). */
void hgx_log_print(enum hgx_log_subsys subsys, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Mercury's HG_Set_log_func: the function that writes every line (NULL: fprintf). */
void hgx_log_set_func(int (*fn)(FILE *stream, const char *format, ...));
/* Mercury's HG_Set_log_stream: where lines of level ("error", "warning",
 * "debug") go (NULL: stderr). */
void hgx_log_set_stream(const char *level, FILE *stream);
/* Set the level of subsystem name and its subtree ("" or "all" for every one). */
void hgx_log_set_level(const char *name, const char *level);
/* Parse an HG_LOG_SUBSYS-style list and apply it. */
void hgx_log_set_subsys(const char *list);

#define HGX_LOG(subsys, level, ...)                                                      \
    do {                                                                                 \
        if (hgx_log_enabled(HGX_SUBSYS_##subsys, HGX_LOG_##level))                       \
            hgx_log_write(HGX_SUBSYS_##subsys, HGX_LOG_##level, __FILE__, __LINE__,      \
                          __func__, __VA_ARGS__);                                        \
    } while (0)

/* Errors and warnings are rare: hgx_log_write checks the level itself.
 * Debug lines are frequent: checked here, so their arguments cost nothing
 * when off. */
#define HGX_LOG_ERROR(subsys, ...)                                                       \
    hgx_log_write(HGX_SUBSYS_##subsys, HGX_LOG_ERROR, __FILE__, __LINE__, __func__,      \
                  __VA_ARGS__)
#define HGX_LOG_WARNING(subsys, ...)                                                     \
    hgx_log_write(HGX_SUBSYS_##subsys, HGX_LOG_WARNING, __FILE__, __LINE__, __func__,    \
                  __VA_ARGS__)
#define HGX_LOG_DEBUG(subsys, ...) HGX_LOG(subsys, DEBUG, __VA_ARGS__)

/* Check cond; on failure log, set ret and jump to label. */
#define HGX_CHECK(subsys, cond, label, ret, val, ...)                                    \
    do {                                                                                 \
        if (__builtin_expect(!!(cond), 0)) {                                             \
            HGX_LOG_ERROR(subsys, __VA_ARGS__);                                          \
            ret = (val);                                                                 \
            goto label;                                                                  \
        }                                                                                \
    } while (0)

#endif /* HGX_LOG_H */
