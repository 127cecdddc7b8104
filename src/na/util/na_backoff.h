/*
 * na_backoff.h -- the one idle policy of NA progress (private).
 *
 * A process waiting for completions polls while activity is recent, since a
 * reply or a next request is likely imminent: for na_backoff_spin_ns() after
 * its last post or completion (HGX_NA_SPIN_US). Past that window it sleeps,
 * in the transport's wait object when there is one, else in steps that grow
 * with the idle time: idle / NA_BACKOFF_IDLE_DIV, between NA_BACKOFF_MIN_NS
 * and NA_BACKOFF_MAX_NS. A message arriving after an idle gap t then waits at
 * most min(t / 8, 4 ms) to be noticed, while an idle server wakes at most 250
 * times a second (a wake-up costs tens of microseconds of CPU in a VM).
 */
#ifndef NA_BACKOFF_H
#define NA_BACKOFF_H

#include <stdint.h>

#define NA_BACKOFF_IDLE_DIV 8
#define NA_BACKOFF_MIN_NS 1000u
#define NA_BACKOFF_MAX_NS 4000000u

/* Polling window after the last activity, in nanoseconds (read once). */
uint64_t na_backoff_spin_ns(void);

/* Sleep step for a process idle for idle_ns. */
uint64_t na_backoff_step_ns(uint64_t idle_ns);

/* Sleep step_ns (a step, cut to the caller's deadline); 0: return at once. */
void na_backoff_sleep(uint64_t step_ns);

#endif /* NA_BACKOFF_H */
