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
 * that returned at once. Between yields the clock is read only every
 * SPIN_CLOCK_EVERY calls: in a VM a read costs as much as a poll.
 */
#include "hgx_spin.h"

#include <sched.h>
#include <stdint.h>
#include <time.h>

#define SPIN_YIELD_BUSY_NS 5000u
#define SPIN_GAP_MIN_NS 1000u
#define SPIN_GAP_MAX_NS 20000u
#define SPIN_CLOCK_EVERY 8u

static uint64_t spin_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct spin_state {
    uint64_t next_ns, gap_ns;
    unsigned int skip;
};

/* Initial-exec: a thread-local read without a __tls_get_addr call per pause. */
#if defined(__GNUC__)
__attribute__((tls_model("initial-exec")))
#endif
static _Thread_local struct spin_state spin;

void hgx_spin_pause(void)
{
    struct spin_state *s = &spin;
    if (s->skip) {
        s->skip--;
        return;
    }
    uint64_t now = spin_now_ns();
    if (now < s->next_ns) {
        s->skip = SPIN_CLOCK_EVERY - 1;
        return;
    }
    sched_yield();
    uint64_t after = spin_now_ns();
    if (after - now > SPIN_YIELD_BUSY_NS)
        s->gap_ns = 0;
    else if (s->gap_ns == 0)
        s->gap_ns = SPIN_GAP_MIN_NS;
    else if (s->gap_ns < SPIN_GAP_MAX_NS / 2)
        s->gap_ns *= 2;
    else
        s->gap_ns = SPIN_GAP_MAX_NS;
    s->next_ns = after + s->gap_ns;
}
