/*
 * hgx_clock.h -- the one monotonic clock of the library (private).
 *
 * Deadlines, idle windows and back-off steps all compare times from this
 * clock, so they never jump with the wall clock and never mix units: times
 * are nanoseconds in a uint64_t (about 584 years of range), and the helpers
 * below convert at the edges.
 */
#ifndef HGX_CLOCK_H
#define HGX_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define HGX_NS_PER_US 1000u
#define HGX_NS_PER_MS 1000000u

/* Monotonic time in nanoseconds. */
static inline uint64_t hgx_clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Monotonic time in microseconds. */
static inline uint64_t hgx_clock_now_us(void)
{
    return hgx_clock_now_ns() / HGX_NS_PER_US;
}

/* Monotonic time in milliseconds. */
static inline uint64_t hgx_clock_now_ms(void)
{
    return hgx_clock_now_ns() / HGX_NS_PER_MS;
}

/* The time timeout_ms after now (both in nanoseconds). */
static inline uint64_t hgx_clock_after_ms(uint64_t now_ns, uint64_t timeout_ms)
{
    return now_ns + timeout_ms * HGX_NS_PER_MS;
}

/* True once now_ns has reached deadline_ns. */
static inline bool hgx_clock_passed(uint64_t now_ns, uint64_t deadline_ns)
{
    return now_ns >= deadline_ns;
}

/* A time of this clock as a struct timespec: the deadline of a
 * pthread_cond_timedwait on a condition variable set to CLOCK_MONOTONIC
 * (pthread_condattr_setclock), so that wait does not move with the wall
 * clock either. */
static inline struct timespec hgx_clock_timespec(uint64_t ns)
{
    return (struct timespec){.tv_sec = (time_t)(ns / 1000000000u),
                             .tv_nsec = (long)(ns % 1000000000u)};
}

/* Whole milliseconds left until deadline_ns, rounded up so that a wait of
 * that length never ends before the deadline; 0 once it has passed. */
static inline uint64_t hgx_clock_left_ms(uint64_t now_ns, uint64_t deadline_ns)
{
    if (now_ns >= deadline_ns)
        return 0;
    return (deadline_ns - now_ns + HGX_NS_PER_MS - 1) / HGX_NS_PER_MS;
}

#endif /* HGX_CLOCK_H */
