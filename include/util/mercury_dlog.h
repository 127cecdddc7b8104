/**
 * @file mercury_dlog.h
 * Mercury's debug logs: a fixed array of records (file, line, function,
 * optional message and pointer, time), kept cheaply while a program runs and
 * printed later, for example when an error shows up; and named atomic
 * counters attached to the log. A debug log is a static variable
 * (HG_DLOG_INITIALIZER) or allocated (hg_dlog_alloc); a log outlet of
 * mercury_log.h can record its debug-level calls in one. The calls are
 * implemented in libhgx; each takes the log's mutex, so threads may share a
 * log.
 */
#ifndef MERCURY_DLOG_H
#define MERCURY_DLOG_H

#include "mercury_util_config.h"

#include "mercury_atomic.h"
#include "mercury_list.h"
#include "mercury_thread_mutex.h"
#include "mercury_time.h"

#include <stdio.h>

/** Size of the log's leading tag: the magic text, then the log's name. */
#define HG_DLOG_MAGICLEN 16
/** The magic text (8 bytes) that starts every log, so that one can be found
 * in a core file. */
#define HG_DLOG_STDMAGIC ">D.LO.G<"

/**
 * Initializer of a static struct hg_dlog named @p NAME (a string literal of at
 * most 7 characters: with the magic text and a NUL it fills dlog_magic) that records
 * into the array @p LE of @p LESIZE entries (struct hg_dlog_entry),
 * overwriting the oldest once full if @p LELOOP is non-zero, else refusing
 * new records. For example:
 *
 *     static struct hg_dlog_entry my_le[128];
 *     static struct hg_dlog my_dlog = HG_DLOG_INITIALIZER("my", my_le, 128, 1);
 *
 * Mercury's later form, HG_DLOG_INITIALIZER(NAME, VARNAME, LE, LESIZE, LELOOP),
 * which also names the variable being defined, is taken as well: the counter
 * lists here need no variable name to start empty.
 */
#define HG_DLOG_INITIALIZER(...)                                                         \
    HG_DLOG_INITIALIZER_PICK(__VA_ARGS__, HG_DLOG_INITIALIZER_5,                         \
                             HG_DLOG_INITIALIZER_4, )                                    \
    (__VA_ARGS__)
#define HG_DLOG_INITIALIZER_PICK(a, b, c, d, e, form, ...) form
#define HG_DLOG_INITIALIZER_5(NAME, VARNAME, LE, LESIZE, LELOOP)                         \
    HG_DLOG_INITIALIZER_4(NAME, LE, LESIZE, LELOOP)
#define HG_DLOG_INITIALIZER_4(NAME, LE, LESIZE, LELOOP)                                  \
    {                                                                                    \
        HG_DLOG_STDMAGIC NAME, HG_THREAD_MUTEX_INITIALIZER,                              \
            HG_LIST_HEAD_INITIALIZER(cnts32), HG_LIST_HEAD_INITIALIZER(cnts64), LE,      \
            LESIZE, LELOOP, 0, 0, 0, 0                                                   \
    }

/** One record of a debug log. */
struct hg_dlog_entry {
    const char *file;  /**< source file */
    unsigned int line; /**< source line */
    const char *func;  /**< function name */
    const char *msg;   /**< message, or NULL */
    const void *data;  /**< the caller's pointer, or NULL */
    hg_time_t time;    /**< when it was recorded */
};

/** A named 32-bit counter of a debug log (made by hg_dlog_mkcount32). */
struct hg_dlog_dcount32 {
    const char *name;                  /**< short name */
    const char *descr;                 /**< what it counts */
    hg_atomic_int32_t c;               /**< the counter */
    HG_LIST_ENTRY(hg_dlog_dcount32) l; /**< link in the log's counters */
};

/** A named 64-bit counter of a debug log (made by hg_dlog_mkcount64). */
struct hg_dlog_dcount64 {
    const char *name;                  /**< short name */
    const char *descr;                 /**< what it counts */
    hg_atomic_int64_t c;               /**< the counter */
    HG_LIST_ENTRY(hg_dlog_dcount64) l; /**< link in the log's counters */
};

/** A debug log. The field order is Mercury's: HG_DLOG_INITIALIZER relies on it. */
struct hg_dlog {
    char dlog_magic[HG_DLOG_MAGICLEN];     /**< HG_DLOG_STDMAGIC, then the name */
    hg_thread_mutex_t dlock;               /**< guards the fields below */
    HG_LIST_HEAD(hg_dlog_dcount32) cnts32; /**< 32-bit counters */
    HG_LIST_HEAD(hg_dlog_dcount64) cnts64; /**< 64-bit counters */
    struct hg_dlog_entry *le;              /**< the records */
    unsigned int lesize;                   /**< number of records in le */
    int leloop;          /**< non-zero: overwrite the oldest when full */
    unsigned int lefree; /**< index the next record goes to */
    unsigned int leadds; /**< records held (at most lesize) */
    int lestop;          /**< non-zero: take no new record */
    int mallocd;         /**< made by hg_dlog_alloc */
};

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Allocate a debug log of @p lesize records.
 * \param name [IN] its name (the first 7 characters are kept)
 * \param lesize [IN] number of records it holds
 * \param leloop [IN] non-zero: once full, a record replaces the oldest;
 *                    zero: once full, records are refused
 * \return the log, or NULL if memory ran out; free it with hg_dlog_free()
 */
HG_UTIL_PUBLIC struct hg_dlog *hg_dlog_alloc(char *name, unsigned int lesize, int leloop);

/**
 * Free the counters of @p d and, if hg_dlog_alloc() made it, @p d itself. No
 * other thread may use @p d during or after the call; a static log may take
 * new counters afterwards.
 * \param d [IN/OUT] debug log
 */
HG_UTIL_PUBLIC void hg_dlog_free(struct hg_dlog *d);

/**
 * Point @p *cptr at the 32-bit counter of @p d named @p name, made (at 0) by
 * the first call for that name: files and threads asking for the same name
 * share one counter. Nothing is done if @p *cptr is already set. Aborts the
 * program if memory runs out.
 * \param d [IN/OUT] debug log
 * \param cptr [IN/OUT] where to store the counter's address (NULL to start)
 * \param name [IN] short name, which must outlive the log
 * \param descr [IN] what it counts, which must outlive the log
 */
HG_UTIL_PUBLIC void hg_dlog_mkcount32(struct hg_dlog *d, hg_atomic_int32_t **cptr,
                                      const char *name, const char *descr);

/**
 * Same as hg_dlog_mkcount32(), for a 64-bit counter.
 * \param d [IN/OUT] debug log
 * \param cptr [IN/OUT] where to store the counter's address (NULL to start)
 * \param name [IN] short name, which must outlive the log
 * \param descr [IN] what it counts, which must outlive the log
 */
HG_UTIL_PUBLIC void hg_dlog_mkcount64(struct hg_dlog *d, hg_atomic_int64_t **cptr,
                                      const char *name, const char *descr);

/**
 * Record a call, with the current time. The strings are kept as pointers, so
 * they must outlive the log (string literals, __FILE__, __func__).
 * \param d [IN/OUT] debug log
 * \param file [IN] source file
 * \param line [IN] source line
 * \param func [IN] function name
 * \param msg [IN] message, or NULL
 * \param data [IN] any pointer, or NULL
 * \return 1 if recorded; 0 if the log is stopped, or full and not looping
 */
HG_UTIL_PUBLIC unsigned int hg_dlog_addlog(struct hg_dlog *d, const char *file,
                                           unsigned int line, const char *func,
                                           const char *msg, const void *data);

/**
 * Stop (or resume) recording in @p d: while stopped, hg_dlog_addlog() refuses
 * records and @p d keeps those it has.
 * \param d [IN/OUT] debug log
 * \param stop [IN] 1 to stop, 0 to resume
 */
HG_UTIL_PUBLIC void hg_dlog_setlogstop(struct hg_dlog *d, int stop);

/**
 * Drop every record of @p d (its counters keep their values).
 * \param d [IN/OUT] debug log
 */
HG_UTIL_PUBLIC void hg_dlog_resetlog(struct hg_dlog *d);

/**
 * Print @p d to @p stream: its name, its counters, then its records, oldest
 * first (time, file, line, function, message). Prints nothing for a log with
 * neither counters nor records.
 * \param d [IN] debug log
 * \param log_func [IN] printf-like function taking the stream first (NULL: fprintf)
 * \param stream [IN] open stream
 * \param trylock [IN] non-zero: if another thread holds the log, print a
 *                     warning to stderr and nothing else, rather than wait
 *                     (for a program that is crashing)
 */
HG_UTIL_PUBLIC void hg_dlog_dump(struct hg_dlog *d,
                                 int (*log_func)(FILE *, const char *, ...), FILE *stream,
                                 int trylock);

/**
 * Print the counters of @p d alone to @p stream (nothing if it has none).
 * \param d [IN] debug log
 * \param log_func [IN] printf-like function taking the stream first (NULL: fprintf)
 * \param stream [IN] open stream
 * \param trylock [IN] as for hg_dlog_dump()
 */
HG_UTIL_PUBLIC void hg_dlog_dump_counters(struct hg_dlog *d,
                                          int (*log_func)(FILE *, const char *, ...),
                                          FILE *stream, int trylock);

/**
 * Write the counters and records of @p d, one a line, to the file
 * "<base>.log", or "<base>-<pid>.log" (created or truncated). A file that
 * cannot be opened is reported on stderr.
 * \param d [IN] debug log
 * \param base [IN] path of the file without ".log"
 * \param addpid [IN] non-zero: add "-" and the process id to the name
 * \param trylock [IN] as for hg_dlog_dump()
 */
HG_UTIL_PUBLIC void hg_dlog_dump_file(struct hg_dlog *d, const char *base, int addpid,
                                      int trylock);

#ifdef __cplusplus
}
#endif

#endif /* MERCURY_DLOG_H */
