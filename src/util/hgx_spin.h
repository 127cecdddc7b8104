/*
 * hgx_spin.h -- polite spinning: what a poll loop does between two polls
 * that found nothing, shared by the NA core, plugins and hgx-perf's raw
 * baselines so that both sides of a comparison spin alike.
 */
#ifndef HGX_SPIN_H
#define HGX_SPIN_H

/* Give the CPU away, but only as often as that helps: at every call while
 * yielding lets another task run on this CPU, else at most once per few
 * microseconds. Per thread; cheap (a clock read every few calls) when it
 * does not yield. */
void hgx_spin_pause(void);

#endif /* HGX_SPIN_H */
