/**
 * @file mercury_time.h
 * Mercury's time calls (hg_time_*): monotonic time as struct timespec.
 */
#ifndef MERCURY_TIME_H
#define MERCURY_TIME_H

#include "mercury_util_config.h"

#include <time.h>

typedef struct timespec hg_time_t; /**< a point in time or a duration */

/** Monotonic time now. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL. */
static HG_UTIL_INLINE int hg_time_get_current(hg_time_t *tv)
{
    return clock_gettime(CLOCK_MONOTONIC, tv) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/** Monotonic time now, millisecond precision is enough (cheaper clock). */
static HG_UTIL_INLINE int hg_time_get_current_ms(hg_time_t *tv)
{
    return clock_gettime(CLOCK_MONOTONIC_COARSE, tv) == 0 ? HG_UTIL_SUCCESS
                                                          : HG_UTIL_FAIL;
}

/** @p tv in seconds. */
static HG_UTIL_INLINE double hg_time_to_double(hg_time_t tv)
{
    return (double)tv.tv_sec + (double)tv.tv_nsec * 1e-9;
}

/** @p d seconds (non-negative) as a time. */
static HG_UTIL_INLINE hg_time_t hg_time_from_double(double d)
{
    hg_time_t tv;
    tv.tv_sec = (time_t)d;
    tv.tv_nsec = (long)((d - (double)tv.tv_sec) * 1e9);
    return tv;
}

/** @p tv in whole milliseconds. */
static HG_UTIL_INLINE unsigned int hg_time_to_ms(hg_time_t tv)
{
    return (unsigned int)(tv.tv_sec * 1000 + tv.tv_nsec / 1000000);
}

/** @p ms milliseconds as a time. */
static HG_UTIL_INLINE hg_time_t hg_time_from_ms(unsigned int ms)
{
    hg_time_t tv;
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_nsec = (long)(ms % 1000) * 1000000L;
    return tv;
}

/** Non-zero when @p in1 is before @p in2. */
static HG_UTIL_INLINE int hg_time_less(hg_time_t in1, hg_time_t in2)
{
    return in1.tv_sec < in2.tv_sec ||
           (in1.tv_sec == in2.tv_sec && in1.tv_nsec < in2.tv_nsec);
}

/** @p in1 + @p in2. */
static HG_UTIL_INLINE hg_time_t hg_time_add(hg_time_t in1, hg_time_t in2)
{
    hg_time_t out = {in1.tv_sec + in2.tv_sec, in1.tv_nsec + in2.tv_nsec};
    if (out.tv_nsec >= 1000000000L) {
        out.tv_sec++;
        out.tv_nsec -= 1000000000L;
    }
    return out;
}

/** @p in1 - @p in2. */
static HG_UTIL_INLINE hg_time_t hg_time_subtract(hg_time_t in1, hg_time_t in2)
{
    hg_time_t out = {in1.tv_sec - in2.tv_sec, in1.tv_nsec - in2.tv_nsec};
    if (out.tv_nsec < 0) {
        out.tv_sec--;
        out.tv_nsec += 1000000000L;
    }
    return out;
}

/** @p in2 - @p in1 in seconds. */
static HG_UTIL_INLINE double hg_time_diff(hg_time_t in2, hg_time_t in1)
{
    return hg_time_to_double(in2) - hg_time_to_double(in1);
}

/** Sleep for @p rqt. @return HG_UTIL_SUCCESS or HG_UTIL_FAIL (interrupted). */
static HG_UTIL_INLINE int hg_time_sleep(const hg_time_t rqt)
{
    return nanosleep(&rqt, NULL) == 0 ? HG_UTIL_SUCCESS : HG_UTIL_FAIL;
}

/**
 * The local date and time as text ("Mon, 02 Jan 2006 15:04:05 UTC": weekday,
 * day, month, year, time, zone).
 * \return the text, in a buffer of the calling translation unit that the
 *         next call overwrites, or NULL on failure
 */
static HG_UTIL_INLINE char *hg_time_stamp(void)
{
    static char buf[128];
    struct tm local;
    time_t now = time(NULL);
    if (localtime_r(&now, &local) == NULL ||
        strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S %Z", &local) == 0)
        return NULL;
    return buf;
}

#endif /* MERCURY_TIME_H */
