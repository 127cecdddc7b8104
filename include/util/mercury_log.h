/**
 * @file mercury_log.h
 * Mercury's log outlets: named log channels arranged in a tree under the
 * root outlet (HG_LOG_OUTLET_ROOT_NAME), each with a level, that a program
 * declares with HG_LOG_SUBSYS_DECL_REGISTER and writes to with HG_LOG_WRITE.
 * An outlet may have a debug log (mercury_dlog.h, declared with the
 * HG_LOG_DEBUG_* and HG_LOG_*_DLOG_* macros): at level min_debug its debug
 * calls are recorded there without being printed, and an error written to it
 * prints and empties that record. The calls are implemented in libhgx;
 * docs/mercury-compat.md says how the levels and the subsystem list apply.
 */
#ifndef MERCURY_LOG_H
#define MERCURY_LOG_H

#include "mercury_util_config.h"

#include "mercury_dlog.h"
#include "mercury_queue.h"

#include <stdio.h>

/** Paste two tokens after expanding them. */
#define HG_UTIL_CAT_(x, y) x##y
#define HG_UTIL_CAT(x, y) HG_UTIL_CAT_(x, y)
/** The text of a token, as a string. */
#define HG_UTIL_STRINGIFY_(x) #x
#define HG_UTIL_STRINGIFY(x) HG_UTIL_STRINGIFY_(x)
/** Run a function before main() (registers the outlets). */
#define HG_UTIL_CONSTRUCTOR HG_ATTR_CONSTRUCTOR

/** Levels, from quietest to most verbose. */
enum hg_log_level {
    HG_LOG_LEVEL_NONE,      /**< nothing */
    HG_LOG_LEVEL_ERROR,     /**< errors (to stderr) */
    HG_LOG_LEVEL_WARNING,   /**< and warnings (to stdout) */
    HG_LOG_LEVEL_MIN_DEBUG, /**< and minimal debug records */
    HG_LOG_LEVEL_DEBUG,     /**< and debug lines (to stdout) */
    HG_LOG_LEVEL_MAX        /**< number of levels */
};

/** How an outlet takes its level: from its parent, never, or always. */
enum hg_log_state { HG_LOG_PASS, HG_LOG_OFF, HG_LOG_ON };

/** A log outlet; declare with the macros below, never by hand. */
struct hg_log_outlet {
    const char *name;                    /**< subsystem name */
    enum hg_log_state state;             /**< PASS, OFF or ON */
    enum hg_log_level level;             /**< level in force (set by libhgx) */
    struct hg_log_outlet *parent;        /**< parent outlet, NULL for the root */
    struct hg_dlog *debug_log;           /**< records debug calls at min_debug, or NULL */
    HG_QUEUE_ENTRY(hg_log_outlet) entry; /**< link in the registered outlets */
};

/** Name of the root outlet, the parent of a program's subsystems. */
#define HG_LOG_OUTLET_ROOT_NAME hg_all

/** The global variable of outlet @p name. */
#define HG_LOG_OUTLET(name) HG_UTIL_CAT(name, _log_outlet_g)
/** Declare (or, with an initializer, define) outlet @p name. */
#define HG_LOG_OUTLET_DECL(name) struct hg_log_outlet HG_LOG_OUTLET(name)
/** Initializer of an outlet (@p parent and @p debug_log may be NULL). */
#define HG_LOG_OUTLET_INITIALIZER(name, state, parent, debug_log)                        \
    {                                                                                    \
        HG_UTIL_STRINGIFY(name), state, HG_LOG_LEVEL_NONE, parent, debug_log,            \
        {                                                                                \
            NULL                                                                         \
        }                                                                                \
    }
/** Initializer of subsystem @p name below outlet @p parent_name. */
#define HG_LOG_OUTLET_SUBSYS_INITIALIZER(name, parent_name)                              \
    HG_LOG_OUTLET_INITIALIZER(name, HG_LOG_PASS, &HG_LOG_OUTLET(parent_name), NULL)
/** Same with an explicit state. */
#define HG_LOG_OUTLET_SUBSYS_STATE_INITIALIZER(name, parent_name, state)                 \
    HG_LOG_OUTLET_INITIALIZER(name, state, &HG_LOG_OUTLET(parent_name), NULL)
/** Register outlet @p name before main() runs. */
#define HG_LOG_SUBSYS_REGISTER(name)                                                     \
    static void HG_UTIL_CAT(hg_log_outlet_, name)(void) HG_UTIL_CONSTRUCTOR;             \
    static void HG_UTIL_CAT(hg_log_outlet_, name)(void)                                  \
    {                                                                                    \
        hg_log_outlet_register(&HG_LOG_OUTLET(name));                                    \
    }                                                                                    \
    void HG_UTIL_CAT(hg_log_outlet_unused_, name)(void)
/** Define and register subsystem outlet @p name below @p parent_name. */
#define HG_LOG_SUBSYS_DECL_REGISTER(name, parent_name)                                   \
    struct hg_log_outlet HG_LOG_OUTLET(name) =                                           \
        HG_LOG_OUTLET_SUBSYS_INITIALIZER(name, parent_name);                             \
    HG_LOG_SUBSYS_REGISTER(name)
/** Same with an explicit state. */
#define HG_LOG_SUBSYS_DECL_STATE_REGISTER(name, parent_name, state)                      \
    struct hg_log_outlet HG_LOG_OUTLET(name) =                                           \
        HG_LOG_OUTLET_SUBSYS_STATE_INITIALIZER(name, parent_name, state);                \
    HG_LOG_SUBSYS_REGISTER(name)

/** Record a debug-level call of outlet @p name in its debug log, if it has one
 * and its level is min_debug or more. */
#define HG_LOG_DLOG_RECORD_(name)                                                        \
    do {                                                                                 \
        if (HG_LOG_OUTLET(name).level >= HG_LOG_LEVEL_MIN_DEBUG &&                       \
            HG_LOG_OUTLET(name).debug_log)                                               \
            hg_dlog_addlog(HG_LOG_OUTLET(name).debug_log, __FILE__, __LINE__, __func__,  \
                           NULL, NULL);                                                  \
    } while (0)
/** Write a printf-style line to outlet @p name if its level admits @p log_level;
 * a debug-level call is also recorded in the outlet's debug log. */
#define HG_LOG_WRITE(name, log_level, ...)                                               \
    do {                                                                                 \
        if ((log_level) == HG_LOG_LEVEL_DEBUG)                                           \
            HG_LOG_DLOG_RECORD_(name);                                                   \
        if (HG_LOG_OUTLET(name).level < (log_level))                                     \
            break;                                                                       \
        hg_log_write(&HG_LOG_OUTLET(name), log_level, __FILE__, __LINE__, __func__,      \
                     __VA_ARGS__);                                                       \
    } while (0)
/** Write a debug line to outlet @p name and run @p debug_func, at debug level;
 * the call is also recorded in the outlet's debug log. */
#define HG_LOG_WRITE_DEBUG(name, debug_func, ...)                                        \
    do {                                                                                 \
        HG_LOG_DLOG_RECORD_(name);                                                       \
        if (HG_LOG_OUTLET(name).level < HG_LOG_LEVEL_DEBUG)                              \
            break;                                                                       \
        hg_log_write(&HG_LOG_OUTLET(name), HG_LOG_LEVEL_DEBUG, __FILE__, __LINE__,       \
                     __func__, __VA_ARGS__);                                             \
        debug_func;                                                                      \
    } while (0)

/* Debug logs of outlets. */
/** The global variable of the debug log of outlet @p name. */
#define HG_LOG_DEBUG_DLOG(name) HG_UTIL_CAT(name, _dlog_g)
/** The global array of the records of that debug log. */
#define HG_LOG_DEBUG_LE(name) HG_UTIL_CAT(name, _dlog_entries_g)
/** Declare (or, with an initializer, define) the debug log of outlet @p name. */
#define HG_LOG_DEBUG_DECL_DLOG(name) struct hg_dlog HG_LOG_DEBUG_DLOG(name)
/** Declare (or define) the @p size records of that debug log. */
#define HG_LOG_DEBUG_DECL_LE(name, size) struct hg_dlog_entry HG_LOG_DEBUG_LE(name)[size]
/** Initializer of that debug log: named @p name (at most 7 characters), over its
 * @p size records, looping (once full, a record replaces the oldest). */
#define HG_LOG_DLOG_INITIALIZER(name, size)                                              \
    HG_DLOG_INITIALIZER(HG_UTIL_STRINGIFY(name), HG_LOG_DEBUG_LE(name), size, 1)
/** Initializer of subsystem @p name below @p parent_name, with its debug log. */
#define HG_LOG_OUTLET_SUBSYS_DLOG_INITIALIZER(name, parent_name)                         \
    HG_LOG_OUTLET_INITIALIZER(name, HG_LOG_PASS, &HG_LOG_OUTLET(parent_name),            \
                              &HG_LOG_DEBUG_DLOG(name))
/** Define and register subsystem outlet @p name below @p parent_name, with the
 * debug log defined before it by HG_LOG_DEBUG_DECL_DLOG(name) =
 * HG_LOG_DLOG_INITIALIZER(name, size). */
#define HG_LOG_SUBSYS_DLOG_DECL_REGISTER(name, parent_name)                              \
    struct hg_log_outlet HG_LOG_OUTLET(name) =                                           \
        HG_LOG_OUTLET_SUBSYS_DLOG_INITIALIZER(name, parent_name);                        \
    HG_LOG_SUBSYS_REGISTER(name)
/** Point @p counter_ptr (hg_atomic_int32_t **) at the 32-bit counter
 * @p counter_name of the debug log of outlet @p name (hg_dlog_mkcount32). */
#define HG_LOG_ADD_COUNTER32(name, counter_ptr, counter_name, counter_desc)              \
    hg_dlog_mkcount32(HG_LOG_OUTLET(name).debug_log, counter_ptr, counter_name,          \
                      counter_desc)
/** Same for a 64-bit counter (hg_atomic_int64_t **, hg_dlog_mkcount64). */
#define HG_LOG_ADD_COUNTER64(name, counter_ptr, counter_name, counter_desc)              \
    hg_dlog_mkcount64(HG_LOG_OUTLET(name).debug_log, counter_ptr, counter_name,          \
                      counter_desc)

/** A printf-like function taking the stream first, as fprintf. */
typedef int (*hg_log_func_t)(FILE *stream, const char *format, ...);

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Set the level of every outlet that does not have its own.
 * \param log_level [IN] new level
 */
HG_UTIL_PUBLIC void hg_log_set_level(enum hg_log_level log_level);

/**
 * \return the level set by hg_log_set_level() (or HG_LOG_LEVEL, default error)
 */
HG_UTIL_PUBLIC enum hg_log_level hg_log_get_level(void);

/**
 * Select the outlets that log: "a,b" only a and b (and the outlets below
 * them), "~a" all but a; applied left to right.
 * \param log_subsys [IN] comma-separated list
 */
HG_UTIL_PUBLIC void hg_log_set_subsys(const char *log_subsys);

/**
 * \return the list last given to hg_log_set_subsys() ("" if none); a static buffer
 */
HG_UTIL_PUBLIC const char *hg_log_get_subsys(void);

/**
 * Give outlet @p subsys and the outlets below it their own level.
 * \param subsys [IN] outlet name
 * \param log_level [IN] its level
 */
HG_UTIL_PUBLIC void hg_log_set_subsys_level(const char *subsys,
                                            enum hg_log_level log_level);

/**
 * \param log_level [IN] "none", "error", "warning", "min_debug" or "debug"
 * \return the level of that name, HG_LOG_LEVEL_NONE for an unknown name or NULL
 */
HG_UTIL_PUBLIC enum hg_log_level hg_log_name_to_level(const char *log_level);

/**
 * Set the function that writes each line (NULL: fprintf).
 * \param log_func [IN] printf-like function taking the stream first
 */
HG_UTIL_PUBLIC void hg_log_set_func(hg_log_func_t log_func);

/**
 * \return the function that writes each line: the one given to
 * hg_log_set_func(), or fprintf
 */
HG_UTIL_PUBLIC hg_log_func_t hg_log_get_func(void);

/**
 * Set where error lines go (NULL: stderr).
 * \param stream [IN] open stream
 */
HG_UTIL_PUBLIC void hg_log_set_stream_error(FILE *stream);

/** \return the stream of error lines */
HG_UTIL_PUBLIC FILE *hg_log_get_stream_error(void);

/**
 * Set where warning lines go (NULL: stdout).
 * \param stream [IN] open stream
 */
HG_UTIL_PUBLIC void hg_log_set_stream_warning(FILE *stream);

/** \return the stream of warning lines */
HG_UTIL_PUBLIC FILE *hg_log_get_stream_warning(void);

/**
 * Set where debug lines go (NULL: stdout).
 * \param stream [IN] open stream
 */
HG_UTIL_PUBLIC void hg_log_set_stream_debug(FILE *stream);

/** \return the stream of debug lines */
HG_UTIL_PUBLIC FILE *hg_log_get_stream_debug(void);

/**
 * Register @p outlet (done by HG_LOG_SUBSYS_REGISTER) and set its level.
 * Its parent must be registered or be the root outlet.
 * \param outlet [IN/OUT] outlet, which must live until the program exits
 */
HG_UTIL_PUBLIC void hg_log_outlet_register(struct hg_log_outlet *outlet);

/**
 * Write one line to @p outlet, prefixed with its name, level and place.
 * \param outlet [IN] outlet
 * \param log_level [IN] level of the line
 * \param file [IN] source file
 * \param line [IN] source line
 * \param func [IN] function name
 * \param format [IN] printf format, then its arguments
 */
HG_UTIL_PUBLIC void hg_log_write(struct hg_log_outlet *outlet,
                                 enum hg_log_level log_level, const char *file,
                                 unsigned int line, const char *func, const char *format,
                                 ...) HG_UTIL_PRINTF(6, 7);

/** The root outlet. */
extern HG_UTIL_PUBLIC HG_LOG_OUTLET_DECL(HG_LOG_OUTLET_ROOT_NAME);

#ifdef __cplusplus
}
#endif

#endif /* MERCURY_LOG_H */
