/**
 * @file mercury_log.h
 * Mercury's log outlets: named log channels arranged in a tree under the
 * root outlet (HG_LOG_OUTLET_ROOT_NAME, the variable hg_all_log_outlet_g),
 * each with a level. A program declares a top outlet with
 * HG_LOG_DECL_REGISTER(name) (variable name_log_outlet_g) and writes to it
 * with HG_LOG_WRITE(name, ...); a subsystem below it with
 * HG_LOG_SUBSYS_DECL_REGISTER(name, parent_name) (variable
 * parent_name_name_log_outlet_g, named "name") and HG_LOG_SUBSYS_WRITE(name,
 * parent_name, ...). Outlets register before main() and deregister at exit.
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

#include <stdarg.h>
#include <stdio.h>

/** Paste two tokens (as given, not expanded). */
#define HG_UTIL_CAT(x, y) x##y
/** Paste two tokens with an underscore between them: x_y. */
#define HG_UTIL_CATU(x, y) x##_##y
/** The text of a token (as given, not expanded), as a string. */
#define HG_UTIL_STRINGIFY(x) #x
/** Run a function before main() (registers the outlets). */
#define HG_UTIL_CONSTRUCTOR HG_ATTR_CONSTRUCTOR
/** Run a function at exit (deregisters the outlets). */
#define HG_UTIL_DESTRUCTOR HG_ATTR_DESTRUCTOR

/**
 * The levels, from quietest to most verbose, for X(level, name, short name,
 * default stream): define X, expand HG_LOG_LEVELS, undefine X. The enum
 * below lists the same levels in the same order.
 */
#define HG_LOG_LEVELS                                                                    \
    X(HG_LOG_LEVEL_NONE, "", "", NULL)                                                   \
    X(HG_LOG_LEVEL_ERROR, "error", "err", &stderr)                                       \
    X(HG_LOG_LEVEL_WARNING, "warning", "warn", &stdout)                                  \
    X(HG_LOG_LEVEL_MIN_DEBUG, "min_debug", "trace", &stdout)                             \
    X(HG_LOG_LEVEL_DEBUG, "debug", "dbg", &stdout)                                       \
    X(HG_LOG_LEVEL_MAX, "", "", NULL)

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
    const char *name;                  /**< subsystem name */
    enum hg_log_state state;           /**< PASS, OFF or ON */
    enum hg_log_level level;           /**< level in force (set by libhgx) */
    struct hg_log_outlet *parent;      /**< parent outlet, NULL for the root */
    struct hg_dlog *debug_log;         /**< records debug calls at min_debug, or NULL */
    bool registered;                   /**< between register and deregister */
    STAILQ_ENTRY(hg_log_outlet) entry; /**< link in the registered outlets */
};

/** A printf-like function taking the stream first, as fprintf. */
typedef int (*hg_log_func_t)(FILE *stream, const char *format, ...);

/** Name of the root outlet, the parent of a program's top outlets. */
#define HG_LOG_OUTLET_ROOT_NAME hg_all

/** The global variable of outlet @p name: name_log_outlet_g. */
#define HG_LOG_OUTLET(name) HG_UTIL_CATU(name, log_outlet_g)
/** Declare (or, with an initializer, define) outlet @p name. */
#define HG_LOG_OUTLET_DECL(name) struct hg_log_outlet HG_LOG_OUTLET(name)
/** Declare (or define) subsystem @p name of @p parent_name: its variable is
 * parent_name_name_log_outlet_g. */
#define HG_LOG_OUTLET_SUBSYS_DECL(name, parent_name)                                     \
    struct hg_log_outlet HG_LOG_OUTLET(HG_UTIL_CATU(parent_name, name))

/** Initializer of an outlet named @p name (@p parent and @p debug_log may be NULL). */
#define HG_LOG_OUTLET_INITIALIZER(name, state, parent, debug_log)                        \
    {                                                                                    \
        HG_UTIL_STRINGIFY(name), state, HG_LOG_LEVEL_NONE, parent, debug_log, false,     \
        {                                                                                \
            NULL                                                                         \
        }                                                                                \
    }
/** Initializer of outlet @p name below the outlet whose variable is
 * HG_LOG_OUTLET(@p parent_name). */
#define HG_LOG_OUTLET_SUBSYS_INITIALIZER(name, parent_name)                              \
    HG_LOG_OUTLET_INITIALIZER(name, HG_LOG_PASS, &HG_LOG_OUTLET(parent_name), NULL)
/** Same with an explicit state. */
#define HG_LOG_OUTLET_SUBSYS_STATE_INITIALIZER(name, parent_name, state)                 \
    HG_LOG_OUTLET_INITIALIZER(name, state, &HG_LOG_OUTLET(parent_name), NULL)

/** Register outlet HG_LOG_OUTLET(@p name) before main() and deregister it at exit. */
#define HG_LOG_REGISTER(name)                                                            \
    static void HG_UTIL_CATU(hg_log_outlet_reg, name)(void) HG_UTIL_CONSTRUCTOR;         \
    static void HG_UTIL_CATU(hg_log_outlet_reg, name)(void)                              \
    {                                                                                    \
        hg_log_outlet_register(&HG_LOG_OUTLET(name));                                    \
    }                                                                                    \
    static void HG_UTIL_CATU(hg_log_outlet_dereg, name)(void) HG_UTIL_DESTRUCTOR;        \
    static void HG_UTIL_CATU(hg_log_outlet_dereg, name)(void)                            \
    {                                                                                    \
        hg_log_outlet_deregister(&HG_LOG_OUTLET(name));                                  \
    }                                                                                    \
    void hg_log_outlet_##name##_unused(void)
/** Same for subsystem @p name of @p parent_name. */
#define HG_LOG_SUBSYS_REGISTER(name, parent_name)                                        \
    static void HG_UTIL_CATU(hg_log_outlet_reg, name)(void) HG_UTIL_CONSTRUCTOR;         \
    static void HG_UTIL_CATU(hg_log_outlet_reg, name)(void)                              \
    {                                                                                    \
        hg_log_outlet_register(&HG_LOG_OUTLET(HG_UTIL_CATU(parent_name, name)));         \
    }                                                                                    \
    static void HG_UTIL_CATU(hg_log_outlet_dereg, name)(void) HG_UTIL_DESTRUCTOR;        \
    static void HG_UTIL_CATU(hg_log_outlet_dereg, name)(void)                            \
    {                                                                                    \
        hg_log_outlet_deregister(&HG_LOG_OUTLET(HG_UTIL_CATU(parent_name, name)));       \
    }                                                                                    \
    void hg_log_outlet_##parent_name##_##name##_unused(void)

/** Define and register top outlet @p name (below the root outlet). */
#define HG_LOG_DECL_REGISTER(name)                                                       \
    HG_LOG_OUTLET_DECL(name) =                                                           \
        HG_LOG_OUTLET_SUBSYS_INITIALIZER(name, HG_LOG_OUTLET_ROOT_NAME);                 \
    HG_LOG_REGISTER(name)
/** Define and register subsystem @p name below outlet @p parent_name. */
#define HG_LOG_SUBSYS_DECL_REGISTER(name, parent_name)                                   \
    HG_LOG_OUTLET_SUBSYS_DECL(name, parent_name) =                                       \
        HG_LOG_OUTLET_SUBSYS_INITIALIZER(name, parent_name);                             \
    HG_LOG_SUBSYS_REGISTER(name, parent_name)
/** Same with an explicit state. */
#define HG_LOG_SUBSYS_DECL_STATE_REGISTER(name, parent_name, state)                      \
    HG_LOG_OUTLET_SUBSYS_DECL(name, parent_name) =                                       \
        HG_LOG_OUTLET_SUBSYS_STATE_INITIALIZER(name, parent_name, state);                \
    HG_LOG_SUBSYS_REGISTER(name, parent_name)

/**
 * Write a printf-style line to outlet HG_LOG_OUTLET(@p name) if its level
 * admits @p log_level, giving the place (@p module may be NULL) and whether
 * to end the line (@p no_return false). A debug-level call is also recorded
 * in the outlet's debug log while its level is min_debug or more.
 */
#define HG_LOG_WRITE_FUNC(name, log_level, module, file, line, func, no_return, ...)     \
    do {                                                                                 \
        if ((log_level) == HG_LOG_LEVEL_DEBUG &&                                         \
            HG_LOG_OUTLET(name).level >= HG_LOG_LEVEL_MIN_DEBUG &&                       \
            HG_LOG_OUTLET(name).debug_log)                                               \
            hg_dlog_addlog(HG_LOG_OUTLET(name).debug_log, file, line, func, NULL, NULL); \
        if (HG_LOG_OUTLET(name).level >= (log_level))                                    \
            hg_log_write(&HG_LOG_OUTLET(name), log_level, module, file, line, func,      \
                         no_return, __VA_ARGS__);                                        \
    } while (0)
/** Same with the format's arguments in a va_list @p ap. */
#define HG_LOG_VWRITE_FUNC(name, log_level, module, file, line, func, no_return,         \
                           message, ap)                                                  \
    do {                                                                                 \
        if ((log_level) == HG_LOG_LEVEL_DEBUG &&                                         \
            HG_LOG_OUTLET(name).level >= HG_LOG_LEVEL_MIN_DEBUG &&                       \
            HG_LOG_OUTLET(name).debug_log)                                               \
            hg_dlog_addlog(HG_LOG_OUTLET(name).debug_log, file, line, func, NULL, NULL); \
        if (HG_LOG_OUTLET(name).level >= (log_level))                                    \
            hg_log_vwrite(&HG_LOG_OUTLET(name), log_level, module, file, line, func,     \
                          no_return, message, ap);                                       \
    } while (0)
/**
 * At debug level only: a debug line to outlet HG_LOG_OUTLET(@p name) with
 * @p header as its text, then the printf-style rest written as given to the
 * debug stream, then a line "---".
 */
#define HG_LOG_WRITE_FUNC_DEBUG_EXT(name, header, module, file, line, func, no_return,   \
                                    ...)                                                 \
    do {                                                                                 \
        if (HG_LOG_OUTLET(name).level == HG_LOG_LEVEL_DEBUG) {                           \
            hg_log_func_t hg_log_func_ext_ = hg_log_get_func();                          \
            hg_log_write(&HG_LOG_OUTLET(name), HG_LOG_LEVEL_DEBUG, module, file, line,   \
                         func, no_return, header);                                       \
            hg_log_func_ext_(hg_log_get_stream_debug(), __VA_ARGS__);                    \
            hg_log_func_ext_(hg_log_get_stream_debug(), "---\n");                        \
        }                                                                                \
    } while (0)

/** Write a printf-style line to outlet @p name if its level admits @p log_level. */
#define HG_LOG_WRITE(name, log_level, ...)                                               \
    HG_LOG_WRITE_FUNC(name, log_level, NULL, __FILE__, __LINE__, __func__, false,        \
                      __VA_ARGS__)
/** Same for subsystem @p name of @p parent_name. */
#define HG_LOG_SUBSYS_WRITE(name, parent_name, log_level, ...)                           \
    HG_LOG_WRITE_FUNC(HG_UTIL_CATU(parent_name, name), log_level, NULL, __FILE__,        \
                      __LINE__, __func__, false, __VA_ARGS__)
/** HG_LOG_WRITE_FUNC_DEBUG_EXT on outlet @p name, from the calling place. */
#define HG_LOG_WRITE_DEBUG_EXT(name, header, ...)                                        \
    HG_LOG_WRITE_FUNC_DEBUG_EXT(name, header, NULL, __FILE__, __LINE__, __func__, false, \
                                __VA_ARGS__)
/** Same for subsystem @p name of @p parent_name. */
#define HG_LOG_SUBSYS_WRITE_DEBUG_EXT(name, parent_name, header, ...)                    \
    HG_LOG_WRITE_FUNC_DEBUG_EXT(HG_UTIL_CATU(parent_name, name), header, NULL, __FILE__, \
                                __LINE__, __func__, false, __VA_ARGS__)

/* Debug logs of outlets. */
/** The global variable of debug log @p name: name_dlog_g. */
#define HG_LOG_DEBUG_DLOG(name) HG_UTIL_CATU(name, dlog_g)
/** The global array of the records of that debug log: name_dlog_entries_g. */
#define HG_LOG_DEBUG_LE(name) HG_UTIL_CATU(name, dlog_entries_g)
/** Declare (or, with an initializer, define) debug log @p name. */
#define HG_LOG_DEBUG_DECL_DLOG(name) struct hg_dlog HG_LOG_DEBUG_DLOG(name)
/** Declare (or define) the @p size records of that debug log. */
#define HG_LOG_DEBUG_DECL_LE(name, size) struct hg_dlog_entry HG_LOG_DEBUG_LE(name)[size]
/** Initializer of that debug log: named @p name (at most 7 characters), over its
 * @p size records, looping (once full, a record replaces the oldest). */
#define HG_LOG_DLOG_INITIALIZER(name, size)                                              \
    HG_DLOG_INITIALIZER(HG_UTIL_STRINGIFY(name), HG_LOG_DEBUG_LE(name), size, 1)
/** Initializer of outlet @p name below @p parent_name, with debug log @p name. */
#define HG_LOG_OUTLET_SUBSYS_DLOG_INITIALIZER(name, parent_name)                         \
    HG_LOG_OUTLET_INITIALIZER(name, HG_LOG_PASS, &HG_LOG_OUTLET(parent_name),            \
                              &HG_LOG_DEBUG_DLOG(name))
/** Define and register top outlet @p name with the debug log defined before it
 * by HG_LOG_DEBUG_DECL_DLOG(name) = HG_LOG_DLOG_INITIALIZER(name, size). */
#define HG_LOG_DLOG_DECL_REGISTER(name)                                                  \
    struct hg_log_outlet HG_LOG_OUTLET(name) =                                           \
        HG_LOG_OUTLET_SUBSYS_DLOG_INITIALIZER(name, HG_LOG_OUTLET_ROOT_NAME);            \
    HG_LOG_REGISTER(name)
/** Same for subsystem @p name of @p parent_name (debug log @p name). */
#define HG_LOG_SUBSYS_DLOG_DECL_REGISTER(name, parent_name)                              \
    struct hg_log_outlet HG_LOG_OUTLET(HG_UTIL_CATU(parent_name, name)) =                \
        HG_LOG_OUTLET_SUBSYS_DLOG_INITIALIZER(name, parent_name);                        \
    HG_LOG_SUBSYS_REGISTER(name, parent_name)
/** Point @p counter_ptr (hg_atomic_int32_t **) at the 32-bit counter
 * @p counter_name of the debug log of outlet HG_LOG_OUTLET(@p name)
 * (hg_dlog_mkcount32). */
#define HG_LOG_ADD_COUNTER32(name, counter_ptr, counter_name, counter_desc)              \
    hg_dlog_mkcount32(HG_LOG_OUTLET(name).debug_log, counter_ptr, counter_name,          \
                      counter_desc)
/** Same for a 64-bit counter (hg_atomic_int64_t **, hg_dlog_mkcount64). */
#define HG_LOG_ADD_COUNTER64(name, counter_ptr, counter_name, counter_desc)              \
    hg_dlog_mkcount64(HG_LOG_OUTLET(name).debug_log, counter_ptr, counter_name,          \
                      counter_desc)

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
 * Select the outlets that log, by outlet name: "a,b" only a and b (and the
 * outlets below them), "~a" all but a; applied left to right.
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
 * \param log_level [IN] "none", "error", "warning", "min_debug" or "debug", or
 *                  "err", "warn", "trace" or "dbg", in any case
 * \return the level of that name, HG_LOG_LEVEL_NONE for an unknown name or NULL
 */
HG_UTIL_PUBLIC enum hg_log_level hg_log_name_to_level(const char *log_level);

/**
 * \param level [IN] a level
 * \return its name ("error", "warning", "min_debug", "debug"); "" for
 *         HG_LOG_LEVEL_NONE and any other value
 */
HG_UTIL_PUBLIC const char *hg_log_level_to_string(enum hg_log_level level);

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
 * Register @p outlet (done by the *_REGISTER macros before main()), set its
 * level and mark it registered; an outlet without a debug log takes its
 * parent's. Registering a registered outlet only updates its level.
 * \param outlet [IN/OUT] outlet, which must live until it is deregistered
 */
HG_UTIL_PUBLIC void hg_log_outlet_register(struct hg_log_outlet *outlet);

/**
 * Deregister @p outlet (done by the *_REGISTER macros at exit). If it has a
 * debug log of its own (not its parent's), the log's counters are printed
 * when the outlet's level is min_debug or more, then freed (hg_dlog_free).
 * \param outlet [IN/OUT] registered outlet
 */
HG_UTIL_PUBLIC void hg_log_outlet_deregister(struct hg_log_outlet *outlet);

/**
 * Print the counters of the debug log of @p outlet, if it has one and its
 * level is min_debug or more, to the stream of that level.
 * \param hg_log_outlet [IN] outlet
 */
HG_UTIL_PUBLIC void hg_log_dump_counters(struct hg_log_outlet *hg_log_outlet);

/**
 * Write one line to @p hg_log_outlet, prefixed with its name, the level and
 * the place ("module:" before the file when @p module is not NULL). An error
 * line is followed by the outlet's debug log, when it has one at min_debug.
 * \param hg_log_outlet [IN] outlet
 * \param log_level [IN] level of the line
 * \param module [IN] module name, or NULL
 * \param file [IN] source file
 * \param line [IN] source line
 * \param func [IN] function name
 * \param no_return [IN] true: no newline after the text
 * \param format [IN] printf format, then its arguments
 */
HG_UTIL_PUBLIC void hg_log_write(struct hg_log_outlet *hg_log_outlet,
                                 enum hg_log_level log_level, const char *module,
                                 const char *file, unsigned int line, const char *func,
                                 bool no_return, const char *format, ...)
    HG_UTIL_PRINTF(8, 9);

/**
 * hg_log_write() with the format's arguments in @p ap.
 * \param hg_log_outlet [IN] outlet
 * \param log_level [IN] level of the line
 * \param module [IN] module name, or NULL
 * \param file [IN] source file
 * \param line [IN] source line
 * \param func [IN] function name
 * \param no_return [IN] true: no newline after the text
 * \param format [IN] printf format
 * \param ap [IN] its arguments
 */
HG_UTIL_PUBLIC void hg_log_vwrite(struct hg_log_outlet *hg_log_outlet,
                                  enum hg_log_level log_level, const char *module,
                                  const char *file, unsigned int line, const char *func,
                                  bool no_return, const char *format, va_list ap)
    HG_UTIL_PRINTF(8, 0);

/** The root outlet, hg_all_log_outlet_g. */
extern HG_UTIL_PUBLIC HG_LOG_OUTLET_DECL(HG_LOG_OUTLET_ROOT_NAME);

#ifdef __cplusplus
}
#endif

#endif /* MERCURY_LOG_H */
