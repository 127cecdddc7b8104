/*
 * na_lead.c -- the roles of a class's progress threads (see na_lead.h).
 *
 * Why no waiter sleeps with the blocker's role empty: a thread that goes to
 * sleep first lists itself (asleep + 1), then stops counting as awake, then
 * looks at the role; a thread that leaves has released the role already (a
 * blocker releases it as it wakes), then stops counting as awake, then looks
 * at the waiters and the awake count. All of these are sequentially
 * consistent, so of the two the later one sees the other: the sleeper sees
 * the role free and takes it instead of sleeping, or the leaver sees the
 * sleeper listed. A leaver that sees another thread awake leaves the
 * handing-on to it: that thread either takes the role, goes to sleep (and
 * sees the role free), or leaves in turn. The blocker counts as awake while
 * it sleeps on the transport, so waiters stay asleep behind it.
 */
#include "na_lead.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

void na_lead_init(struct na_lead *lead)
{
    atomic_init(&lead->polling, false);
    atomic_init(&lead->polls, 0);
    atomic_init(&lead->blocked, false);
    atomic_init(&lead->awake, 0);
    atomic_init(&lead->asleep, 0);
    hgx_lock_init(&lead->lock);
    lead->head = lead->tail = NULL;
}

void na_lead_fini(struct na_lead *lead)
{
    hgx_lock_fini(&lead->lock);
}

void na_lead_enter(struct na_lead *lead)
{
    atomic_fetch_add(&lead->awake, 1);
}

/* Wake the first waiter to take the role; it counts as awake from here on,
 * so that other leavers do not wake a second one for the same free role. */
static void na_lead_hand_on(struct na_lead *lead)
{
    hgx_lock(&lead->lock);
    struct na_lead_waiter *w = lead->head;
    int fd = -1;
    if (w) {
        lead->head = w->next;
        if (!lead->head)
            lead->tail = NULL;
        w->linked = false;
        fd = w->fd;
        atomic_fetch_add(&lead->awake, 1);
        atomic_fetch_sub(&lead->asleep, 1);
    }
    hgx_unlock(&lead->lock);
    if (fd >= 0)
        (void)eventfd_write(fd, 1);
}

void na_lead_release(struct na_lead *lead)
{
    atomic_store(&lead->blocked, false);
}

void na_lead_leave(struct na_lead *lead)
{
    atomic_fetch_sub(&lead->awake, 1);
    if (atomic_load(&lead->asleep) > 0 && atomic_load(&lead->awake) == 0 &&
        !atomic_load(&lead->blocked))
        na_lead_hand_on(lead);
}

bool na_lead_sleep_begin(struct na_lead *lead, struct na_lead_waiter *waiter, int fd)
{
    waiter->next = NULL;
    waiter->fd = fd;
    waiter->linked = true;
    hgx_lock(&lead->lock);
    if (lead->tail)
        lead->tail->next = waiter;
    else
        lead->head = waiter;
    lead->tail = waiter;
    atomic_fetch_add(&lead->asleep, 1);
    hgx_unlock(&lead->lock);
    atomic_fetch_sub(&lead->awake, 1);
    if (!atomic_load(&lead->blocked)) {
        na_lead_sleep_end(lead, waiter);
        return false;
    }
    return true;
}

void na_lead_sleep_end(struct na_lead *lead, struct na_lead_waiter *waiter)
{
    hgx_lock(&lead->lock);
    if (waiter->linked) {
        struct na_lead_waiter **p = &lead->head, *prev = NULL;
        while (*p != waiter) {
            prev = *p;
            p = &(*p)->next;
        }
        *p = waiter->next;
        if (lead->tail == waiter)
            lead->tail = prev;
        waiter->linked = false;
        atomic_fetch_add(&lead->awake, 1);
        atomic_fetch_sub(&lead->asleep, 1);
    }
    hgx_unlock(&lead->lock);
}

static pthread_key_t na_lead_fd_key;
static bool na_lead_fd_keyed;
static pthread_once_t na_lead_fd_once = PTHREAD_ONCE_INIT;
static _Thread_local int na_lead_fd = -1;

static void na_lead_fd_close(void *arg)
{
    close((int)(intptr_t)arg - 1);
}

static void na_lead_fd_key_make(void)
{
    na_lead_fd_keyed = pthread_key_create(&na_lead_fd_key, na_lead_fd_close) == 0;
}

int na_lead_thread_fd(void)
{
    if (na_lead_fd >= 0)
        return na_lead_fd;
    if (pthread_once(&na_lead_fd_once, na_lead_fd_key_make) != 0 || !na_lead_fd_keyed)
        return -1;
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0)
        return -1;
    /* Stored plus one: a key's destructor runs only for non-NULL values. */
    if (pthread_setspecific(na_lead_fd_key, (void *)(intptr_t)(fd + 1)) != 0) {
        close(fd);
        return -1;
    }
    na_lead_fd = fd;
    return fd;
}

void na_lead_fd_drain(int fd)
{
    eventfd_t n;
    (void)eventfd_read(fd, &n); /* non-blocking: EAGAIN if none */
}
