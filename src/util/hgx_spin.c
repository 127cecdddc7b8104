/*
 * hgx_spin.c -- polite spinning (see hgx_spin.h).
 *
 * A sched_yield costs ~0.6 us in a VM, and a message that arrives meanwhile
 * waits that long on top of its latency: yielding at every poll of a spin
 * loop adds about a yield per hop to a small round trip (measured: an MPI RPC
 * round trip of 4.4 us fell to 3.0 us without it). Yielding is needed only
 * when another task, often the peer, wants this CPU (fewer cores than
 * processes), and that shows as a yield that took long. So a thread yields at
 * every call while its yields hand the CPU over, and otherwise at most once
 * per SPIN_GAP_MAX_NS, the gap doubling from SPIN_GAP_MIN_NS after each yield
 * that returned at once.
 */
#include "hgx_spin.h"

#include <sched.h>
#include <stdint.h>
#include <time.h>

#define SPIN_YIELD_BUSY_NS 5000u
#define SPIN_GAP_MIN_NS 1000u
#define SPIN_GAP_MAX_NS 20000u

static uint64_t spin_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void hgx_spin_pause(void)
{
    static _Thread_local uint64_t next_ns, gap_ns;
    uint64_t now = spin_now_ns();
    if (now < next_ns)
        return;
    sched_yield();
    uint64_t after = spin_now_ns();
    if (after - now > SPIN_YIELD_BUSY_NS)
        gap_ns = 0;
    else if (gap_ns == 0)
        gap_ns = SPIN_GAP_MIN_NS;
    else if (gap_ns < SPIN_GAP_MAX_NS / 2)
        gap_ns *= 2;
    else
        gap_ns = SPIN_GAP_MAX_NS;
    next_ns = after + gap_ns;
}
