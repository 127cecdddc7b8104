/*
 * hg_context.c -- HG contexts: the user completion queue, the pool of
 * pre-posted unexpected receives of a listening class, progress and trigger.
 */
#include "hg_handle.h"
#include "hgx_clock.h"
#include "na_plugin.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

/* Longest HG_Context_destroy() waits for cancelled receives to come back. */
#define HG_UNPOST_WAIT_MS 5000
/* Longest HG_Context_destroy() progresses and triggers so that operations
 * still in progress end (Mercury waits as long, HG_CORE_CLEANUP_TIMEOUT). */
#define HG_SETTLE_WAIT_MS 1000
#define HG_SETTLE_PASS_MS 10

struct hg_post {
    hg_context_t *context;
    void *buf;
    void *plugin;
    na_op_id_t *op;
    struct hg_post *repost_next; /* in context->repost */
};

struct hg_post_chunk {
    struct hg_post_chunk *next;
    unsigned int n;         /* entries set up (buffer and op tried) */
    struct hg_post posts[]; /* stable addresses: NA holds them as callback args */
};

void hg_completion_push(hg_context_t *context, struct hg_completion *completion)
{
    completion->next = NULL;
    hgx_lock(&context->cq_lock);
    if (context->cq_tail)
        context->cq_tail->next = completion;
    else
        context->cq_head = completion;
    context->cq_tail = completion;
    /* A thread waiting in HG_Progress on this context must see this
     * completion, or have its NA wait interrupted (the self path and bulk
     * copies queue without any NA completion): the count's store and the
     * waiters' load are ordered against progress_wait's increment and load. */
    bool interrupt = false;
    if (context->hg_class->single) {
        atomic_store_explicit(&context->cq_count, context->cq_count + 1,
                              memory_order_release);
    } else {
        atomic_store(&context->cq_count, context->cq_count + 1);
        interrupt = atomic_load(&context->poll_sleepers) > 0;
    }
    bool wake = context->cq_waiters > 0;
    /* An event loop sleeping on the wait fd: one signal per sleep. */
    bool signal = context->ev_armed;
    if (signal)
        context->ev_armed = false;
    hgx_unlock(&context->cq_lock);
    if (interrupt)
        na_context_interrupt(context->na_context);
    if (signal)
        hg_event_signal(context);
    if (wake) {
        /* A waiter counted itself under cq_lock before it found the queue
         * empty, and holds wait_lock until it sleeps: the signal is not lost. */
        pthread_mutex_lock(&context->wait_lock);
        pthread_cond_signal(&context->cq_cond);
        pthread_mutex_unlock(&context->wait_lock);
    }
}

static struct hg_completion *completion_pop_locked(hg_context_t *context)
{
    struct hg_completion *c = context->cq_head;

    if (c) {
        context->cq_head = c->next;
        if (!context->cq_head)
            context->cq_tail = NULL;
        atomic_store_explicit(&context->cq_count, context->cq_count - 1,
                              memory_order_relaxed);
    }
    return c;
}

static struct hg_completion *completion_pop(hg_context_t *context)
{
    hgx_lock(&context->cq_lock);
    struct hg_completion *c = completion_pop_locked(context);
    hgx_unlock(&context->cq_lock);
    return c;
}

/* Wait until another thread's progress queues a completion or the deadline
 * (ms) passes, and pop it. */
static struct hg_completion *completion_wait(hg_context_t *context, uint64_t deadline)
{
    pthread_mutex_lock(&context->wait_lock);
    hgx_lock(&context->cq_lock);
    struct hg_completion *c = completion_pop_locked(context);
    if (!c)
        context->cq_waiters++;
    hgx_unlock(&context->cq_lock);
    if (!c) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t now = hgx_clock_now_ms(), left = deadline > now ? deadline - now : 0;
        ts.tv_sec += (time_t)(left / 1000);
        ts.tv_nsec += (long)(left % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        int rc = 0;
        while (!c && rc != ETIMEDOUT) {
            rc = pthread_cond_timedwait(&context->cq_cond, &context->wait_lock, &ts);
            hgx_lock(&context->cq_lock);
            c = completion_pop_locked(context);
            if (c || rc == ETIMEDOUT)
                context->cq_waiters--;
            hgx_unlock(&context->cq_lock);
        }
    }
    pthread_mutex_unlock(&context->wait_lock);
    return c;
}

/* Without the lock: a push racing with this read is seen by the next one. */
unsigned int hg_completion_count(hg_context_t *context)
{
    return atomic_load_explicit(&context->cq_count, memory_order_acquire);
}

static void post_cb(const struct na_cb_info *info);

static hg_return_t post_one(struct hg_post *post)
{
    hg_context_t *context = post->context;
    hg_class_t *hg_class = context->hg_class;

    bool single = hg_class->single;
    hgx_long_add(&context->n_posted, 1, single);
    na_return_t na_ret = NA_Msg_recv_unexpected(
        hg_class->na_class, context->na_context, post_cb, post, post->buf,
        hg_class->unexpected_size, post->plugin, post->op);
    if (na_ret != NA_SUCCESS) {
        hgx_long_add(&context->n_posted, -1, single);
        HGX_LOG_ERROR(HG, "could not post unexpected receive: %s",
                      NA_Error_to_string(na_ret));
        return hg_ret_from_na(na_ret);
    }
    return HG_SUCCESS;
}

static void post_cb(const struct na_cb_info *info)
{
    struct hg_post *post = info->arg;
    hg_context_t *context = post->context;
    na_addr_t *source = info->info.recv_unexpected.source;

    bool last = hgx_long_add(&context->n_posted, -1, context->hg_class->single) == 1;
    /* Every receive consumed before any came back: as Mercury does when its
     * pre-posted handles are all in use, the pool grows (at the next flush,
     * outside NA's callback). */
    if (last && info->ret == NA_SUCCESS && context->hg_class->post_incr &&
        !context->unposting)
        atomic_store_explicit(&context->post_grow, true, memory_order_relaxed);
    if (info->ret == NA_SUCCESS)
        hg_target_receive(context, post->buf, info->info.recv_unexpected.actual_buf_size,
                          source);
    else {
        if (source)
            NA_Addr_free(context->hg_class->na_class, source);
        if (info->ret != NA_CANCELED)
            HGX_LOG_ERROR(HG, "unexpected receive failed: %s",
                          NA_Error_to_string(info->ret));
    }
    if (context->unposting || info->ret == NA_CANCELED)
        return;
    /* Posted again by the next HG_Progress, once the request was handled:
     * posting costs as much as handling a small request, and the transport
     * holds what arrives meanwhile. */
    struct hg_post *head = atomic_load_explicit(&context->repost, memory_order_relaxed);
    if (context->hg_class->single) {
        post->repost_next = head;
        atomic_store_explicit(&context->repost, post, memory_order_relaxed);
        return;
    }
    do
        post->repost_next = head;
    while (!atomic_compare_exchange_weak_explicit(
        &context->repost, &head, post, memory_order_release, memory_order_relaxed));
}

/* Take the whole repost stack. */
HGX_ATOMIC_SWAP_FN(repost_swap, _Atomic(struct hg_post *), struct hg_post *)

static hg_return_t posts_add(hg_context_t *context, unsigned int count);

void hg_posts_flush(hg_context_t *context)
{
    if (atomic_load_explicit(&context->post_grow, memory_order_relaxed) &&
        atomic_exchange(&context->post_grow, false) && !context->unposting) {
        unsigned int have = atomic_load(&context->n_posts);
        unsigned int room = have < HG_POST_POOL_MAX ? HG_POST_POOL_MAX - have : 0;
        unsigned int incr = context->hg_class->post_incr;
        if (incr > room)
            incr = room;
        HGX_LOG_DEBUG(HG, "all %u posted receives consumed at once: posting %u more",
                      have, incr);
        if (incr && posts_add(context, incr) != HG_SUCCESS)
            HGX_LOG_ERROR(HG, "could not post %u more unexpected receives", incr);
    }
    if (!atomic_load_explicit(&context->repost, memory_order_relaxed))
        return;
    struct hg_post *post = repost_swap(&context->repost, NULL, context->hg_class->single);
    while (post) {
        struct hg_post *next = post->repost_next;
        if (!context->unposting)
            (void)post_one(post);
        post = next;
    }
}

/* Set up and post count more receives, in a chunk of their own. A chunk is
 * linked before its receives are posted, so posts_destroy frees whatever
 * part a failure left. */
static hg_return_t posts_add(hg_context_t *context, unsigned int count)
{
    hg_class_t *hg_class = context->hg_class;
    struct hg_post_chunk *chunk =
        calloc(1, sizeof(*chunk) + (size_t)count * sizeof(chunk->posts[0]));
    if (!chunk)
        return HG_NOMEM;
    chunk->next = atomic_load(&context->post_chunks);
    while (!atomic_compare_exchange_weak(&context->post_chunks, &chunk->next, chunk))
        ;
    for (unsigned int i = 0; i < count; i++) {
        struct hg_post *post = &chunk->posts[i];
        post->context = context;
        post->buf = NA_Msg_buf_alloc(hg_class->na_class, hg_class->unexpected_size,
                                     NA_RECV, &post->plugin);
        post->op = NA_Op_create(hg_class->na_class, NA_OP_SINGLE);
        chunk->n++;
        if (!post->buf || !post->op)
            return HG_NOMEM;
        hg_return_t ret = post_one(post);
        if (ret != HG_SUCCESS)
            return ret;
        atomic_fetch_add(&context->n_posts, 1);
    }
    return HG_SUCCESS;
}

/* Cancel every posted receive and wait (bounded) for their callbacks. */
static void posts_destroy(hg_context_t *context)
{
    hg_class_t *hg_class = context->hg_class;
    uint64_t deadline = hgx_clock_now_ms() + HG_UNPOST_WAIT_MS;
    struct hg_post_chunk *chunks = atomic_load(&context->post_chunks);

    context->unposting = true;
    atomic_store(&context->repost, NULL);
    atomic_store(&context->post_grow, false);
    for (struct hg_post_chunk *c = chunks; c; c = c->next)
        for (unsigned int i = 0; i < c->n; i++)
            if (c->posts[i].op)
                NA_Cancel(hg_class->na_class, context->na_context, c->posts[i].op);
    while (atomic_load(&context->n_posted) > 0 && hgx_clock_now_ms() < deadline) {
        NA_Trigger(context->na_context, UINT32_MAX, NULL);
        if (atomic_load(&context->n_posted) > 0)
            NA_Poll_wait(hg_class->na_class, context->na_context, 10, NULL);
    }
    NA_Trigger(context->na_context, UINT32_MAX, NULL);
    while (chunks) {
        struct hg_post_chunk *next = chunks->next;
        for (unsigned int i = 0; i < chunks->n; i++) {
            struct hg_post *post = &chunks->posts[i];
            if (post->op)
                NA_Op_destroy(hg_class->na_class, post->op);
            NA_Msg_buf_free(hg_class->na_class, post->buf, post->plugin);
        }
        free(chunks);
        chunks = next;
    }
    atomic_store(&context->post_chunks, NULL);
    atomic_store(&context->n_posts, 0);
}

unsigned int hgx_test_hg_posts(hg_context_t *context)
{
    return atomic_load(&context->n_posts);
}

hg_context_t *HG_Context_create(hg_class_t *hg_class)
{
    return HG_Context_create_id(hg_class, 0);
}

hg_context_t *HG_Context_create_id(hg_class_t *hg_class, hg_uint8_t id)
{
    if (!hg_class) {
        HGX_LOG_ERROR(HG, "NULL class");
        return NULL;
    }
    hg_context_t *context = calloc(1, sizeof(*context));
    if (!context) {
        HGX_LOG_ERROR(HG, "out of memory");
        return NULL;
    }
    context->hg_class = hg_class;
    context->id = id;
    atomic_init(&context->ev_epfd, -1);
    context->ev_fd = -1;
    hgx_lock_init_mode(&context->cq_lock, hg_class->single);
    hgx_list_init(&context->live);
    pthread_mutex_init(&context->wait_lock, NULL);
    pthread_cond_init(&context->cq_cond, NULL);
    context->na_context = NA_Context_create_id(hg_class->na_class, id);
    if (!context->na_context) {
        HGX_LOG_ERROR(HG, "could not create NA context %u", id);
        goto error;
    }
    if (hg_class->listening && posts_add(context, hg_class->post_count) != HG_SUCCESS) {
        HGX_LOG_ERROR(HG, "could not post unexpected receives");
        posts_destroy(context);
        goto error;
    }
    atomic_fetch_add(&hg_class->n_contexts, 1);
    return context;

error:
    if (context->na_context)
        NA_Context_destroy(hg_class->na_class, context->na_context);
    pthread_cond_destroy(&context->cq_cond);
    pthread_mutex_destroy(&context->wait_lock);
    free(context);
    return NULL;
}

/* Let what is in progress on the context end, as Mercury does before it
 * destroys one: progress and trigger (callbacks run) for up to
 * HG_SETTLE_WAIT_MS while handles are alive or callbacks wait. Handles the
 * program forgot, with nothing in progress, are released (counted for
 * HG_Finalize's warning). */
static void context_settle(hg_context_t *context)
{
    hg_class_t *hg_class = context->hg_class;
    uint64_t deadline = 0;

    for (;;) {
        (void)HG_Trigger(context, 0, UINT32_MAX, NULL);
        if (hg_completion_count(context) == 0 && atomic_load(&context->n_handles) > 0)
            atomic_fetch_add(&hg_class->n_forgotten_handles,
                             hg_handle_release_forgotten(context));
        if (hg_completion_count(context) == 0 && atomic_load(&context->n_handles) == 0)
            return;
        uint64_t now = hgx_clock_now_ms();
        if (!deadline)
            deadline = now + HG_SETTLE_WAIT_MS;
        else if (now >= deadline)
            return;
        /* Short passes: an operation that ends inside NA (a response's
         * send) queues no callback, which is all HG_Progress returns for. */
        (void)HG_Progress(context, deadline - now < HG_SETTLE_PASS_MS
                                       ? (unsigned int)(deadline - now)
                                       : HG_SETTLE_PASS_MS);
    }
}

hg_return_t HG_Context_destroy(hg_context_t *context)
{
    if (!context)
        return HG_INVALID_ARG;
    hg_class_t *hg_class = context->hg_class;
    context_settle(context);
    if (hg_completion_count(context) > 0 || atomic_load(&context->n_handles) > 0) {
        HGX_LOG_ERROR(HG,
                      "cannot destroy context: %ld handle(s) / transfer(s) alive or "
                      "callbacks not yet triggered",
                      (long)atomic_load(&context->n_handles));
        return HG_BUSY;
    }
    hg_handle_cache_drain(context);
    if (atomic_load(&context->post_chunks))
        posts_destroy(context);
    na_return_t na_ret = NA_Context_destroy(hg_class->na_class, context->na_context);
    if (na_ret != NA_SUCCESS) {
        HGX_LOG_ERROR(HG, "cannot destroy context: %s", NA_Error_to_string(na_ret));
        if (hg_class->listening) {
            /* Stay usable: post the receives again. */
            context->unposting = false;
            (void)posts_add(context, hg_class->post_count);
        }
        return hg_ret_from_na(na_ret);
    }
    hg_addr_source_forget(context);
    hg_event_fini(context);
    if (context->data_free)
        context->data_free(context->data);
    pthread_cond_destroy(&context->cq_cond);
    pthread_mutex_destroy(&context->wait_lock);
    atomic_fetch_sub(&hg_class->n_contexts, 1);
    free(context);
    return HG_SUCCESS;
}

hg_class_t *HG_Context_get_class(const hg_context_t *context)
{
    return context ? context->hg_class : NULL;
}

hg_uint8_t HG_Context_get_id(const hg_context_t *context)
{
    return context ? context->id : 0;
}

hg_return_t HG_Context_set_data(hg_context_t *context, void *data,
                                void (*free_callback)(void *))
{
    if (!context)
        return HG_INVALID_ARG;
    context->data = data;
    context->data_free = free_callback;
    return HG_SUCCESS;
}

void *HG_Context_get_data(const hg_context_t *context)
{
    return context ? context->data : NULL;
}

/* Wait in NA for up to left ms. A wait that may sleep, in a thread-safe
 * class, is counted (poll_sleepers) so that a completion another thread
 * queues ends it: counted first, then the queue found empty, while the
 * queuing thread stores the count, then reads the waiters (all sequentially
 * consistent), so that completion is either seen here or interrupts. */
static na_return_t progress_wait(hg_context_t *context, na_class_t *na_class,
                                 unsigned int left)
{
    if (left == 0 || context->hg_class->single)
        return NA_Poll_wait(na_class, context->na_context, left, NULL);
    atomic_fetch_add(&context->poll_sleepers, 1);
    na_return_t ret = atomic_load(&context->cq_count) > 0
                          ? NA_SUCCESS
                          : NA_Poll_wait(na_class, context->na_context, left, NULL);
    atomic_fetch_sub_explicit(&context->poll_sleepers, 1, memory_order_relaxed);
    return ret;
}

hg_return_t HG_Progress(hg_context_t *context, unsigned int timeout)
{
    if (!context)
        return HG_INVALID_ARG;
    na_class_t *na_class = context->hg_class->na_class;
    uint64_t deadline = 0;

    for (;;) {
        hg_posts_flush(context);
        NA_Trigger(context->na_context, UINT32_MAX, NULL);
        if (hg_completion_count(context) > 0)
            return HG_SUCCESS;
        /* One clock read per call on the common path: the first pass waits
         * the whole timeout. A zero timeout needs none (one pass). */
        unsigned int left = timeout;
        if (timeout && !deadline) {
            deadline = hgx_clock_now_ms() + timeout;
        } else if (timeout) {
            uint64_t now = hgx_clock_now_ms();
            left = now < deadline ? (unsigned int)(deadline - now) : 0;
        }
        na_return_t na_ret = progress_wait(context, na_class, left);
        if (na_ret != NA_SUCCESS && na_ret != NA_TIMEOUT) {
            HGX_LOG_ERROR(HG, "NA progress failed: %s", NA_Error_to_string(na_ret));
            return hg_ret_from_na(na_ret);
        }
        NA_Trigger(context->na_context, UINT32_MAX, NULL);
        if (hg_completion_count(context) > 0)
            return HG_SUCCESS;
        if (left == 0)
            return HG_TIMEOUT;
    }
}

hg_return_t HG_Trigger(hg_context_t *context, unsigned int timeout,
                       unsigned int max_count, unsigned int *actual_count_p)
{
    unsigned int count = 0;

    if (!context)
        return HG_INVALID_ARG;
    uint64_t deadline = timeout ? hgx_clock_now_ms() + timeout : 0;
    while (count < max_count) {
        if (timeout == 0 && hg_completion_count(context) == 0)
            break;
        struct hg_completion *c = completion_pop(context);
        if (!c && count == 0 && timeout > 0)
            c = completion_wait(context, deadline);
        if (!c)
            break;
        c->run(c);
        count++;
    }
    if (actual_count_p)
        *actual_count_p = count;
    return count ? HG_SUCCESS : HG_TIMEOUT;
}

hg_return_t HG_Context_unpost(hg_context_t *context)
{
    if (!context)
        return HG_INVALID_ARG;
    /* Received requests are handled; no new one is taken on this context. */
    if (atomic_load(&context->post_chunks))
        posts_destroy(context);
    return HG_SUCCESS;
}
