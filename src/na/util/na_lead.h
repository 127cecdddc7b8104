/*
 * na_lead.h -- how the progress threads of one class share its transport
 * (private).
 *
 * The contexts of one NA class share the transport's completion queue and
 * wait object, and any thread's progress completes the ops of all contexts.
 * When each context has its own progress thread, two things go wrong without
 * coordination: every event on the shared wait object wakes every sleeping
 * thread, and spinning threads queue for the transport's lock behind the one
 * that polls. So:
 *
 * - one thread at a time, the poller, polls the transport while threads
 *   spin; the others watch their own context's queue, which the poller fills
 *   for them (it completes their ops as well), and poll themselves only when
 *   the poller has stopped polling (descheduled: threads may outnumber cores);
 * - when idle, one thread, the blocker, sleeps in the transport's wait
 *   object; the others sleep listed as waiters, on their context's wake fd
 *   (the blocker queues their completions and wakes them) and a wake fd of
 *   their own thread.
 *
 * The blocker's role is never left empty while a waiter sleeps: a thread that
 * leaves (having completions of its own context to run, or on a timeout)
 * hands the role on by waking the first waiter when no other thread is awake
 * to take it. Every count below is sequentially consistent, so that a thread
 * going to sleep and a thread leaving always see each other (see na_lead.c).
 */
#ifndef NA_LEAD_H
#define NA_LEAD_H

#include "hgx_lock.h"

#include <stdatomic.h>
#include <stdbool.h>

/* A thread asleep as a waiter; lives on its stack while it sleeps. */
struct na_lead_waiter {
    struct na_lead_waiter *next;
    int fd;      /* its thread's wake fd (na_lead_thread_fd) */
    bool linked; /* still listed: not handed the blocker's role yet */
};

struct na_lead {
    atomic_bool polling; /* the poller's role is taken */
    atomic_uint polls;   /* polls the poller made (it alone writes) */
    atomic_bool blocked; /* the blocker's role is taken */
    atomic_uint awake;   /* threads taking part, not asleep as waiters */
    atomic_uint asleep;  /* listed waiters */
    hgx_lock_t lock;     /* the waiter list */
    struct na_lead_waiter *head, *tail;
};

void na_lead_init(struct na_lead *lead);
void na_lead_fini(struct na_lead *lead);

/* A thread starts waiting for its context's completions (awake). */
void na_lead_enter(struct na_lead *lead);

/* Take the poller's role if it is free; true when taken. */
static inline bool na_lead_poll_try(struct na_lead *lead)
{
    return !atomic_load_explicit(&lead->polling, memory_order_relaxed) &&
           !atomic_exchange_explicit(&lead->polling, true, memory_order_acquire);
}

/* The poller made one more poll (a sign of life for the others). */
static inline void na_lead_polled(struct na_lead *lead)
{
    atomic_store_explicit(&lead->polls,
                          atomic_load_explicit(&lead->polls, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* The poller stops spinning (it sleeps or leaves): the role is free. */
static inline void na_lead_poll_done(struct na_lead *lead)
{
    atomic_store_explicit(&lead->polling, false, memory_order_release);
}

/* Take the blocker's role if it is free; true when taken. */
static inline bool na_lead_try(struct na_lead *lead)
{
    return !atomic_load_explicit(&lead->blocked, memory_order_relaxed) &&
           !atomic_exchange(&lead->blocked, true);
}

/* The blocker woke up: the role is free again (the thread stays awake). */
void na_lead_release(struct na_lead *lead);

/* A thread stops waiting, and wakes a waiter to take the blocker's role when
 * nobody else awake can. */
void na_lead_leave(struct na_lead *lead);

/* List waiter (its thread's wake fd: fd) before sleeping. False, and not
 * listed, when the blocker's role is free meanwhile: take it instead. */
bool na_lead_sleep_begin(struct na_lead *lead, struct na_lead_waiter *waiter, int fd);

/* The waiter woke (handed the role, or for its own reasons): unlisted and
 * awake again. */
void na_lead_sleep_end(struct na_lead *lead, struct na_lead_waiter *waiter);

/* This thread's wake fd (an eventfd, non-blocking, closed when the thread
 * exits), or -1 when none could be made. */
int na_lead_thread_fd(void);

/* Consume the wake-ups of fd (a wake fd that poll found readable). */
void na_lead_fd_drain(int fd);

#endif /* NA_LEAD_H */
