/*
 * hg_event.c -- the events API: a program drives a context from its own
 * event loop, with poll(2) on the wait fd, HG_Event_ready, HG_Event_progress
 * and HG_Event_trigger.
 *
 * The wait fd is an epoll set, made by the first HG_Event_get_wait_fd, that
 * holds three fds: the plugin's (traffic), the context's eventfd (a
 * completion queued by another thread or by an RPC to self) and NA's wake fd
 * of the context (its operations completed by another thread's progress). A
 * thread that sleeps in poll(2) on it is thus woken by every completion of
 * the context, whoever produced it. The two signalling fds are written only
 * while the loop may sleep: from an HG_Event_ready that returned false to the
 * loop's next event call, which drains them. A program that never asks for
 * the wait fd pays nothing.
 */
#include "hg_internal.h"
#include "na_plugin.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

static bool epoll_add(int epfd, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

/* The epoll set around the plugin's fd, or -1 (nothing left open). */
static int event_set_create(hg_context_t *context, int na_fd)
{
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    int evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int wake_fd = na_context_watch_fd(context->na_context);

    if (epfd < 0 || evfd < 0 || !epoll_add(epfd, na_fd) || !epoll_add(epfd, evfd) ||
        (wake_fd >= 0 && !epoll_add(epfd, wake_fd))) {
        HGX_LOG_ERROR(HG, "could not make the context's wait fd: %s", strerror(errno));
        if (epfd >= 0)
            close(epfd);
        if (evfd >= 0)
            close(evfd);
        return -1;
    }
    context->ev_fd = evfd;
    return epfd;
}

int HG_Event_get_wait_fd(const hg_context_t *context)
{
    if (!context)
        return -1;
    int epfd = atomic_load_explicit(&context->ev_epfd, memory_order_acquire);
    if (epfd >= 0)
        return epfd;
    /* As Mercury: no wait fd when the plugin has none (NA_NO_BLOCK); the
     * program then polls with HG_Event_progress. */
    int na_fd = NA_Poll_get_fd(context->hg_class->na_class, context->na_context);
    if (na_fd < 0)
        return -1;
    /* The caller's context is never read-only: the set is made once, under
     * its wait lock, on the first request. */
    hg_context_t *ctx = (hg_context_t *)(uintptr_t)context;
    pthread_mutex_lock(&ctx->wait_lock);
    epfd = atomic_load_explicit(&ctx->ev_epfd, memory_order_relaxed);
    if (epfd < 0) {
        epfd = event_set_create(ctx, na_fd);
        atomic_store_explicit(&ctx->ev_epfd, epfd, memory_order_release);
    }
    pthread_mutex_unlock(&ctx->wait_lock);
    return epfd;
}

void hg_event_signal(hg_context_t *context)
{
    if (eventfd_write(context->ev_fd, 1) != 0)
        HGX_LOG_ERROR(HG, "waking the event loop of context %u failed", context->id);
}

/* No more signals for this sleep; drain the one that may have been written. */
static void event_disarm(hg_context_t *context)
{
    hgx_lock(&context->cq_lock);
    context->ev_armed = false;
    hgx_unlock(&context->cq_lock);
    eventfd_t n;
    (void)eventfd_read(context->ev_fd, &n); /* non-blocking: EAGAIN if none */
}

/* The loop is awake: stop being signalled and leave the fds drained, so a
 * level-triggered poll does not return for signals already handled. */
static void event_unwatch(hg_context_t *context)
{
    if (!atomic_load_explicit(&context->ev_watching, memory_order_relaxed) ||
        !atomic_exchange(&context->ev_watching, false))
        return;
    event_disarm(context);
    na_context_watch_end(context->na_context);
}

/* The loop may sleep on the wait fd: be signalled by whatever queues work on
 * the context from now on. False when work is queued already. Checked under
 * the queues' locks, where the producers read the flags: either this sees
 * their work or they see the flags. */
static bool event_watch(hg_context_t *context)
{
    if (atomic_load_explicit(&context->ev_epfd, memory_order_acquire) < 0)
        return true; /* no wait fd handed out: no one to wake */
    hgx_lock(&context->cq_lock);
    bool empty = context->cq_head == NULL;
    context->ev_armed = empty;
    hgx_unlock(&context->cq_lock);
    if (!empty)
        return false;
    if (!na_context_watch_begin(context->na_context)) {
        event_disarm(context);
        return false;
    }
    atomic_store(&context->ev_watching, true);
    return true;
}

/* Called once the NA context is destroyed: a loop's last HG_Event_ready may
 * have left it watching, but the NA context's sleeper count and wake fd are
 * gone with it, so only the context's own fds are left. */
void hg_event_fini(hg_context_t *context)
{
    int epfd = atomic_load(&context->ev_epfd);
    if (epfd < 0)
        return;
    close(epfd);
    close(context->ev_fd);
}

hg_bool_t HG_Event_ready(hg_context_t *context)
{
    if (!context)
        return HG_FALSE;
    event_unwatch(context);
    /* Receives handed back by the last requests are posted before blocking. */
    hg_posts_flush(context);
    NA_Trigger(context->na_context, UINT32_MAX, NULL);
    if (hg_completion_count(context) > 0 || !event_watch(context))
        return HG_TRUE;
    if (!NA_Poll_try_wait(context->hg_class->na_class, context->na_context)) {
        event_unwatch(context);
        return HG_TRUE;
    }
    return HG_FALSE;
}

hg_return_t HG_Event_progress(hg_context_t *context, unsigned int *count_p)
{
    if (!context)
        return HG_INVALID_ARG;
    event_unwatch(context);
    hg_posts_flush(context);
    na_return_t na_ret = NA_Poll(context->hg_class->na_class, context->na_context, NULL);
    if (na_ret != NA_SUCCESS && na_ret != NA_TIMEOUT) {
        HGX_LOG_ERROR(HG, "NA poll failed: %s", NA_Error_to_string(na_ret));
        return hg_ret_from_na(na_ret);
    }
    NA_Trigger(context->na_context, UINT32_MAX, NULL);
    if (count_p)
        *count_p = hg_completion_count(context);
    return HG_SUCCESS;
}

hg_return_t HG_Event_trigger(hg_context_t *context, unsigned int max_count,
                             unsigned int *actual_count_p)
{
    hg_return_t ret = HG_Trigger(context, 0, max_count, actual_count_p);
    return ret == HG_TIMEOUT ? HG_SUCCESS : ret;
}
