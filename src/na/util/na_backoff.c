/*
 * na_backoff.c -- polling window and sleep steps of idle progress (na_backoff.h).
 */
#include "na_backoff.h"
#include "hgx_clock.h"
#include "hgx_param.h"

#include <stdatomic.h>
#include <time.h>

uint64_t na_backoff_spin_ns(void)
{
    /* Read on every idle poll: parse the environment once. */
    static atomic_llong spin_ns = -1;
    long long v = atomic_load_explicit(&spin_ns, memory_order_relaxed);
    if (v < 0) {
        v = (long long)hgx_param_get_int(&hgx_param_na_spin_us) * HGX_NS_PER_US;
        atomic_store_explicit(&spin_ns, v, memory_order_relaxed);
    }
    return (uint64_t)v;
}

uint64_t na_backoff_step_ns(uint64_t idle_ns)
{
    uint64_t step = idle_ns / NA_BACKOFF_IDLE_DIV;
    if (step < NA_BACKOFF_MIN_NS)
        return NA_BACKOFF_MIN_NS;
    return step > NA_BACKOFF_MAX_NS ? NA_BACKOFF_MAX_NS : step;
}

void na_backoff_sleep(uint64_t step_ns)
{
    if (step_ns == 0)
        return;
    struct timespec ts = {.tv_sec = (time_t)(step_ns / 1000000000u),
                          .tv_nsec = (long)(step_ns % 1000000000u)};
    nanosleep(&ts, NULL);
}
