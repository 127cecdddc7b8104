/*
 * hg_request.c -- request emulation (mercury_request.h): a completion flag
 * set by a callback, and a wait loop that calls the class's trigger and
 * progress functions until the flag is set or the timeout passed.
 *
 * As in Mercury, one thread at a time progresses a request class: the
 * others wait on the class's condition, and each progress pass ends with a
 * broadcast. A thread asleep in progress would otherwise not see that
 * another thread's trigger completed its request (no event reaches it), and
 * sleep out its whole timeout.
 */
#include "hgx_clock.h"
#include "mercury_request.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

struct hg_request_class {
    hg_request_progress_func_t progress;
    hg_request_trigger_func_t trigger;
    void *arg;
    pthread_mutex_t lock;
    pthread_cond_t progressed; /* broadcast after each progress pass */
    bool progressing;          /* a thread is in progress/trigger (under lock) */
};

struct hg_request {
    hg_request_class_t *request_class;
    atomic_int completed;
    void *data;
};

hg_request_class_t *hg_request_init(hg_request_progress_func_t progress,
                                    hg_request_trigger_func_t trigger, void *arg)
{
    if (!progress || !trigger)
        return NULL;
    hg_request_class_t *request_class = malloc(sizeof(*request_class));
    if (!request_class)
        return NULL;
    *request_class =
        (hg_request_class_t){.progress = progress, .trigger = trigger, .arg = arg};
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* hgx_clock's clock */
    pthread_mutex_init(&request_class->lock, NULL);
    pthread_cond_init(&request_class->progressed, &attr);
    pthread_condattr_destroy(&attr);
    return request_class;
}

void hg_request_finalize(hg_request_class_t *request_class, void **arg)
{
    if (!request_class)
        return;
    if (arg)
        *arg = request_class->arg;
    pthread_cond_destroy(&request_class->progressed);
    pthread_mutex_destroy(&request_class->lock);
    free(request_class);
}

hg_request_t *hg_request_create(hg_request_class_t *request_class)
{
    if (!request_class)
        return NULL;
    hg_request_t *request = calloc(1, sizeof(*request));
    if (!request)
        return NULL;
    request->request_class = request_class;
    atomic_init(&request->completed, 0);
    return request;
}

void hg_request_destroy(hg_request_t *request)
{
    free(request);
}

void hg_request_complete(hg_request_t *request)
{
    if (request)
        atomic_store(&request->completed, 1);
}

void hg_request_reset(hg_request_t *request)
{
    if (request)
        atomic_store(&request->completed, 0);
}

/* Run every ready callback; true once the request is completed. */
static bool drain_triggers(hg_request_t *request)
{
    const hg_request_class_t *rc = request->request_class;
    unsigned int flag = 0;

    while (!atomic_load(&request->completed) &&
           rc->trigger(0, &flag, rc->arg) == HG_UTIL_SUCCESS && flag)
        flag = 0;
    return atomic_load(&request->completed);
}

/* Wait on the class's condition until another thread's progress pass ends
 * or the deadline (ms, hgx_clock). Lock held. */
static void wait_progressed(hg_request_class_t *rc, uint64_t deadline_ms)
{
    struct timespec ts = hgx_clock_timespec(deadline_ms * HGX_NS_PER_MS);
    (void)pthread_cond_timedwait(&rc->progressed, &rc->lock, &ts);
}

int hg_request_wait(hg_request_t *request, unsigned int timeout, unsigned int *flag)
{
    if (!request)
        return HG_UTIL_FAIL;

    hg_request_class_t *rc = request->request_class;
    uint64_t deadline = hgx_clock_now_ms() + timeout;
    bool done = false;

    pthread_mutex_lock(&rc->lock);
    for (;;) {
        if ((done = atomic_load(&request->completed)))
            break;
        uint64_t now = hgx_clock_now_ms();
        unsigned int left = now < deadline ? (unsigned int)(deadline - now) : 0;
        if (rc->progressing) {
            if (left == 0)
                break;
            wait_progressed(rc, deadline);
            continue;
        }
        rc->progressing = true;
        pthread_mutex_unlock(&rc->lock);
        done = drain_triggers(request);
        if (!done) {
            rc->progress(left, rc->arg);
            done = drain_triggers(request);
        }
        pthread_mutex_lock(&rc->lock);
        rc->progressing = false;
        pthread_cond_broadcast(&rc->progressed);
        if (done || left == 0)
            break;
    }
    pthread_mutex_unlock(&rc->lock);
    if (flag)
        *flag = done;
    return HG_UTIL_SUCCESS;
}

int hg_request_waitall(int count, hg_request_t *request[], unsigned int timeout,
                       unsigned int *flag)
{
    uint64_t deadline = hgx_clock_now_ms() + timeout;
    unsigned int all = 1;

    if (count < 0 || (count > 0 && !request))
        return HG_UTIL_FAIL;
    for (int i = 0; i < count; i++) {
        uint64_t now = hgx_clock_now_ms();
        unsigned int one = 0;
        if (hg_request_wait(request[i],
                            now < deadline ? (unsigned int)(deadline - now) : 0,
                            &one) != HG_UTIL_SUCCESS)
            return HG_UTIL_FAIL;
        all &= one;
    }
    if (flag)
        *flag = all;
    return HG_UTIL_SUCCESS;
}

void hg_request_set_data(hg_request_t *request, void *data)
{
    if (request)
        request->data = data;
}

void *hg_request_get_data(hg_request_t *request)
{
    return request ? request->data : NULL;
}
