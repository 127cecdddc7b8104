/*
 * na_op.c -- op ids, completion queues, progress, trigger and cancel of the NA core.
 */
#include "na_op.h"
#include "hgx_assert.h"
#include "hgx_atomic.h"
#include "hgx_clock.h"
#include "hgx_spin.h"
#include "na_backoff.h"
#include "na_lead.h"

#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

/* Monotonic time of the last post or completion in this process: a reply or
 * a next request is likely to be imminent only shortly after one. Posts and
 * completions only raise na_active (no clock read on the message path); the
 * next clock read of NA_Poll_wait dates it. */
static atomic_ullong na_last_activity_ns;
atomic_bool na_active;

/* Polls between two clock reads of a spinning NA_Poll_wait: a clock read costs
 * about as much as a shared-memory poll in a VM, and the deadlines it serves
 * are milliseconds apart. */
#define NA_POLLS_PER_CLOCK 16

/* The context whose poll_wait this thread is in: completing its own
 * context's ops needs no wake-up, the thread returns to them anyway. */
static _Thread_local na_context_t *na_waiting_context;

/* Date a noted activity with a clock value read anyway. */
static void na_activity_date(uint64_t now)
{
    if (atomic_load_explicit(&na_active, memory_order_relaxed)) {
        atomic_store_explicit(&na_active, false, memory_order_relaxed);
        atomic_store_explicit(&na_last_activity_ns, now, memory_order_relaxed);
    }
}

na_op_id_t *NA_Op_create(na_class_t *na_class, unsigned long flags)
{
    if (!na_class) {
        HGX_LOG_ERROR(NA, "NULL class");
        return NULL;
    }
    if (flags & NA_OP_MULTI) {
        HGX_LOG_ERROR(NA, "NA_OP_MULTI op ids are not supported (no multi-recv)");
        return NULL;
    }
    na_op_id_t *op = calloc(1, sizeof(*op) + na_class->ops->op_size);
    if (!op) {
        HGX_LOG_ERROR(NA, "out of memory for an op id");
        return NULL;
    }
    op->na_class = na_class;
    atomic_init(&op->state, NA_OP_IDLE);
    return op;
}

void NA_Op_destroy(na_class_t *na_class, na_op_id_t *op_id)
{
    (void)na_class;
    if (!op_id)
        return;
    if (atomic_load(&op_id->state) != NA_OP_IDLE) {
        /* Freeing it would leave the plugin or the queue with a dangling op. */
        HGX_LOG_ERROR(NA, "op id %p is still in use (pending or queued); not freed",
                      (void *)op_id);
        return;
    }
    free(op_id);
}

na_return_t na_op_post_refuse(na_class_t *na_class, na_context_t *context, na_op_id_t *op)
{
    if (!op || op == (na_op_id_t *)1) {
        HGX_LOG_ERROR(NA, "op id must come from NA_Op_create()");
        return NA_INVALID_ARG;
    }
    if (op->na_class != na_class) {
        HGX_LOG_ERROR(NA, "op id %p belongs to another class", (void *)op);
        return NA_INVALID_ARG;
    }
    if (context->na_class != na_class) {
        HGX_LOG_ERROR(NA, "context %p belongs to another class", (void *)context);
        return NA_INVALID_ARG;
    }
    HGX_LOG_ERROR(NA, "op id %p is already in use", (void *)op);
    return NA_BUSY;
}

void na_op_post_abort(na_op_id_t *op)
{
    hgx_ulong_add(&op->context->n_posted, (unsigned long)-1, op->na_class->single);
    atomic_store(&op->state, NA_OP_IDLE);
}

void na_op_complete(na_op_id_t *op, na_return_t ret)
{
    na_context_t *context = op->context;

    /* Exactly once per post: a second completion would queue the op twice. */
    HGX_ASSERT(atomic_load_explicit(&op->state, memory_order_relaxed) == NA_OP_POSTED ||
               atomic_load_explicit(&op->state, memory_order_relaxed) == NA_OP_CANCELING);
    op->info.ret = ret;
    op->cq_next = NULL;
    atomic_store_explicit(&op->state, NA_OP_QUEUED, memory_order_release);
    /* The counters change only under cq_lock: plain stores, no atomic
     * read-modify-write (readers outside the lock load them atomically). */
    hgx_lock(&context->cq_lock);
    if (context->cq_tail)
        context->cq_tail->cq_next = op;
    else
        context->cq_head = op;
    context->cq_tail = op;
    atomic_store_explicit(&context->cq_count,
                          atomic_load_explicit(&context->cq_count, memory_order_relaxed) +
                              1,
                          memory_order_release);
    atomic_store_explicit(
        &context->n_finished,
        atomic_load_explicit(&context->n_finished, memory_order_relaxed) + 1,
        memory_order_relaxed);
    /* Read under cq_lock, as the sleeper counts itself under it after finding
     * the queue empty: either it sees this op or this sees it. */
    bool wake = context->sleepers > 0 && na_waiting_context != context;
    hgx_unlock(&context->cq_lock);
    if (wake && context->wake_fd >= 0 && eventfd_write(context->wake_fd, 1) != 0)
        HGX_LOG_ERROR(NA, "waking context %u failed", context->id);
}

void na_context_wake_drain(na_context_t *context)
{
    eventfd_t n;
    (void)eventfd_read(context->wake_fd, &n); /* non-blocking: EAGAIN if none */
}

void na_context_interrupt(na_context_t *context)
{
    atomic_store(&context->interrupted, true);
    /* A sleeper counts itself under cq_lock after it found the flag clear:
     * either it sees the flag or this sees it. */
    hgx_lock(&context->cq_lock);
    bool wake = context->sleepers > 0;
    hgx_unlock(&context->cq_lock);
    if (wake && context->wake_fd >= 0 && eventfd_write(context->wake_fd, 1) != 0)
        HGX_LOG_ERROR(NA, "waking context %u failed", context->id);
}

/* Count one more sleeper unless a completion is queued or the context was
 * interrupted. */
static bool na_sleeper_add(na_context_t *context)
{
    hgx_lock(&context->cq_lock);
    bool empty = context->cq_head == NULL &&
                 !atomic_load_explicit(&context->interrupted, memory_order_relaxed);
    if (empty)
        context->sleepers++;
    hgx_unlock(&context->cq_lock);
    return empty;
}

static void na_sleeper_remove(na_context_t *context)
{
    hgx_lock(&context->cq_lock);
    context->sleepers--;
    hgx_unlock(&context->cq_lock);
}

/* Count this thread as asleep on the context unless a completion is queued. */
static bool na_sleep_begin(na_context_t *context)
{
    bool empty = na_sleeper_add(context);
    if (empty)
        na_waiting_context = context;
    return empty;
}

static void na_sleep_end(na_context_t *context)
{
    na_waiting_context = NULL;
    na_sleeper_remove(context);
}

int na_context_watch_fd(const na_context_t *context)
{
    return context->wake_fd;
}

bool na_context_watch_begin(na_context_t *context)
{
    /* Without a wake fd no other thread completes this context's ops. */
    return context->wake_fd < 0 || na_sleeper_add(context);
}

void na_context_watch_end(na_context_t *context)
{
    if (context->wake_fd < 0)
        return;
    na_sleeper_remove(context);
    na_context_wake_drain(context);
}

unsigned int NA_Context_get_completion_count(const na_context_t *context)
{
    return context ? atomic_load(&((na_context_t *)context)->cq_count) : 0;
}

static na_op_id_t *na_cq_pop(na_context_t *context)
{
    /* Most calls find the queue empty: no lock for them. A completion being
     * queued concurrently is found by the next call. */
    if (atomic_load_explicit(&context->cq_count, memory_order_acquire) == 0)
        return NULL;
    hgx_lock(&context->cq_lock);
    na_op_id_t *op = context->cq_head;
    if (op) {
        context->cq_head = op->cq_next;
        if (!context->cq_head)
            context->cq_tail = NULL;
        atomic_store_explicit(
            &context->cq_count,
            atomic_load_explicit(&context->cq_count, memory_order_relaxed) - 1,
            memory_order_relaxed);
    }
    hgx_unlock(&context->cq_lock);
    return op;
}

na_return_t NA_Trigger(na_context_t *context, unsigned int max_count,
                       unsigned int *actual_count)
{
    unsigned int count = 0;

    if (!context) {
        HGX_LOG_ERROR(NA, "NULL context");
        return NA_INVALID_ARG;
    }
    while (count < max_count) {
        na_op_id_t *op = na_cq_pop(context);
        if (!op)
            break;
        HGX_ASSERT(atomic_load_explicit(&op->state, memory_order_acquire) ==
                   NA_OP_QUEUED);
        /* Copy out and release the op first: the callback may post it again. */
        struct na_cb_info info = op->info;
        na_cb_t callback = op->callback;
        atomic_store_explicit(&op->state, NA_OP_IDLE, memory_order_release);
        if (callback)
            callback(&info);
        else if (info.type == NA_CB_RECV_UNEXPECTED && info.info.recv_unexpected.source)
            NA_Addr_free(context->na_class, info.info.recv_unexpected.source);
        count++;
    }
    if (actual_count)
        *actual_count = count;
    /* As Mercury 2.4.1 (NA 6.0): nothing queued is not an error. */
    return NA_SUCCESS;
}

static na_return_t na_progress_check(na_class_t *na_class, na_context_t *context)
{
    if (!na_class || !context) {
        HGX_LOG_ERROR(NA, "NULL class or context");
        return NA_INVALID_ARG;
    }
    if (context->na_class != na_class) {
        HGX_LOG_ERROR(NA, "context %p belongs to another class", (void *)context);
        return NA_INVALID_ARG;
    }
    return NA_SUCCESS;
}

na_return_t NA_Poll(na_class_t *na_class, na_context_t *context, unsigned int *count_p)
{
    na_return_t ret = na_progress_check(na_class, context);
    if (ret != NA_SUCCESS)
        return ret;
    ret = na_class->ops->poll(na_class, context, NULL);
    if (count_p)
        *count_p = atomic_load(&context->cq_count);
    return ret == NA_TIMEOUT ? NA_SUCCESS : ret;
}

/* The class's progress roles, when this wait takes part in them: several
 * contexts of a thread-safe class whose plugin can wake them. A zero timeout
 * polls as NA_Poll does. */
static struct na_lead *na_lead_of(na_class_t *na_class, na_context_t *context,
                                  unsigned int timeout_ms)
{
    if (timeout_ms == 0 || context->wake_fd < 0 ||
        atomic_load_explicit(&na_class->n_contexts, memory_order_relaxed) < 2)
        return NULL;
    return &na_class->lead;
}

/* Sleep until this context has a completion (queued and woken by the thread
 * that blocks on the transport), the blocker's role is handed to this thread,
 * or the timeout passes. */
static void na_follow_sleep(struct na_lead *lead, na_context_t *context,
                            unsigned int timeout_ms)
{
    int fd = na_lead_thread_fd();
    if (fd < 0) {
        hgx_spin_pause(); /* no fd to be woken on: stay awake */
        return;
    }
    if (!na_sleep_begin(context))
        return; /* a completion is queued */
    struct na_lead_waiter waiter;
    if (na_lead_sleep_begin(lead, &waiter, fd)) {
        struct pollfd pfd[2] = {{.fd = context->wake_fd, .events = POLLIN},
                                {.fd = fd, .events = POLLIN}};
        if (poll(pfd, 2, timeout_ms > INT_MAX ? -1 : (int)timeout_ms) > 0) {
            if (pfd[0].revents & POLLIN)
                na_context_wake_drain(context);
            if (pfd[1].revents & POLLIN)
                na_lead_fd_drain(fd);
        }
        na_lead_sleep_end(lead, &waiter);
    }
    na_sleep_end(context);
}

/* Sleep in the transport's wait object (which also watches the wake fd). */
static na_return_t na_transport_sleep(na_class_t *na_class, na_context_t *context,
                                      unsigned int timeout_ms)
{
    bool counted = context->wake_fd >= 0;
    if (counted && !na_sleep_begin(context))
        return NA_SUCCESS; /* another thread queued a completion meanwhile */
    na_return_t ret = na_class->ops->poll_wait(na_class, context, timeout_ms);
    if (counted)
        na_sleep_end(context);
    return ret;
}

/* A thread's part in polling a shared transport while it spins. */
struct na_turn {
    bool poller;    /* holds the poller's role */
    bool stalled;   /* the poller made no poll between two clock reads */
    bool seen;      /* polls is set */
    unsigned polls; /* the poller's poll count at the last clock read */
};

/* Whether this thread polls the transport now: always without a shared
 * transport, else as the poller or once when the poller stalled. */
static inline bool na_turn_poll(struct na_lead *lead, struct na_turn *turn)
{
    if (!lead)
        return true;
    if (!turn->poller)
        turn->poller = na_lead_poll_try(lead);
    bool poll = turn->poller || turn->stalled;
    turn->stalled = false;
    return poll;
}

/* At a clock read: has the poller polled since the last one? */
static void na_turn_check(struct na_lead *lead, struct na_turn *turn)
{
    if (!lead || turn->poller)
        return;
    unsigned polls = atomic_load_explicit(&lead->polls, memory_order_relaxed);
    turn->stalled = turn->seen && polls == turn->polls;
    turn->polls = polls;
    turn->seen = true;
}

/* Stop spinning: give the poller's role up. */
static void na_turn_end(struct na_lead *lead, struct na_turn *turn)
{
    if (turn->poller) {
        na_lead_poll_done(lead);
        turn->poller = false;
    }
}

/* Idle: one thread of the class sleeps in the transport's wait object, the
 * others until it has work for them (or hands its role on). */
static na_return_t na_idle_sleep(na_class_t *na_class, na_context_t *context,
                                 struct na_lead *lead, unsigned int timeout_ms)
{
    if (!lead)
        return na_transport_sleep(na_class, context, timeout_ms);
    if (!na_lead_try(lead)) {
        na_follow_sleep(lead, context, timeout_ms);
        return NA_SUCCESS;
    }
    na_return_t ret = na_transport_sleep(na_class, context, timeout_ms);
    na_lead_release(lead);
    return ret;
}

/* The wait loop, inlined twice: with lead NULL (the only thread, or a zero
 * timeout) every role check folds away, so that path costs what it would
 * without threads to share the transport with. */
static inline __attribute__((always_inline)) na_return_t
na_poll_wait_loop(na_class_t *na_class, na_context_t *context, unsigned int timeout_ms,
                  unsigned int *count_p, struct na_lead *lead)
{
    na_return_t ret = NA_SUCCESS;
    if (lead)
        na_lead_enter(lead);
    /* The clock is read only once a poll found nothing: a completion that is
     * already there, or arrives during the spin, is returned without one. */
    unsigned int count = 0;
    uint64_t now = 0, deadline = 0, spin_end = 0;
    bool dated = false;
    struct na_turn turn = {0};
    for (unsigned int polls = 0;; polls++) {
        /* While another thread polls the shared transport, this one would
         * only wait for its lock or poll it empty: that thread completes
         * this context's ops as well. */
        if (na_turn_poll(lead, &turn)) {
            ret = na_class->ops->poll(na_class, context, NULL);
            if (lead && turn.poller) /* lead: folds the NULL loop's branch away */
                na_lead_polled(lead);
            if (ret != NA_SUCCESS && ret != NA_TIMEOUT)
                break;
        }
        count = atomic_load_explicit(&context->cq_count, memory_order_acquire);
        if (count > 0) {
            na_activity_note();
            break;
        }
        if (__builtin_expect(
                atomic_load_explicit(&context->interrupted, memory_order_relaxed), 0)) {
            atomic_store_explicit(&context->interrupted, false, memory_order_relaxed);
            break;
        }
        if (timeout_ms == 0)
            break;
        if (!dated || polls % NA_POLLS_PER_CLOCK == 0) {
            now = hgx_clock_now_ns();
            if (!dated) {
                dated = true;
                deadline = hgx_clock_after_ms(now, timeout_ms);
            }
            na_activity_date(now);
            na_turn_check(lead, &turn);
            /* Poll while activity is recent: a busy exchange then never pays
             * for a sleep and a wake-up, while an idle process blocks at once
             * (the window is anchored on activity, not on the call). */
            spin_end = atomic_load_explicit(&na_last_activity_ns, memory_order_relaxed) +
                       na_backoff_spin_ns();
            if (hgx_clock_passed(now, deadline))
                break;
        }
        if (na_class->progress_mode & NA_NO_BLOCK)
            continue;
        if (now < spin_end) {
            /* The peer may share this CPU (fewer cores than processes): let it
             * run, or the spin only delays the reply it waits for. */
            hgx_spin_pause();
            continue;
        }
        if (lead)
            na_turn_end(lead, &turn);
        ret = na_idle_sleep(na_class, context, lead,
                            (unsigned int)hgx_clock_left_ms(now, deadline));
        if (ret != NA_SUCCESS && ret != NA_TIMEOUT)
            break;
        polls = UINT_MAX; /* read the clock after the sleep */
    }
    if (lead) {
        na_turn_end(lead, &turn);
        na_lead_leave(lead);
    }
    if (ret != NA_SUCCESS && ret != NA_TIMEOUT)
        return ret;
    if (count_p)
        *count_p = count;
    return count > 0 ? NA_SUCCESS : NA_TIMEOUT;
}

na_return_t NA_Poll_wait(na_class_t *na_class, na_context_t *context,
                         unsigned int timeout_ms, unsigned int *count_p)
{
    na_return_t ret = na_progress_check(na_class, context);
    if (ret != NA_SUCCESS)
        return ret;
    struct na_lead *lead = na_lead_of(na_class, context, timeout_ms);
    if (__builtin_expect(lead != NULL, 0))
        return na_poll_wait_loop(na_class, context, timeout_ms, count_p, lead);
    return na_poll_wait_loop(na_class, context, timeout_ms, count_p, NULL);
}

na_return_t NA_Progress(na_class_t *na_class, na_context_t *context,
                        unsigned int timeout_ms)
{
    return NA_Poll_wait(na_class, context, timeout_ms, NULL);
}

int NA_Poll_get_fd(na_class_t *na_class, na_context_t *context)
{
    if (na_progress_check(na_class, context) != NA_SUCCESS || !na_class->ops->poll_get_fd)
        return -1;
    if (na_class->progress_mode & NA_NO_BLOCK) {
        HGX_LOG_DEBUG(NA, "NA_NO_BLOCK class: no wait fd");
        return -1;
    }
    return na_class->ops->poll_get_fd(na_class, context);
}

bool NA_Poll_try_wait(na_class_t *na_class, na_context_t *context)
{
    if (na_progress_check(na_class, context) != NA_SUCCESS)
        return false;
    if (atomic_load(&context->cq_count) > 0)
        return false;
    return na_class->ops->poll_try_wait ? na_class->ops->poll_try_wait(na_class, context)
                                        : true;
}

na_return_t NA_Cancel(na_class_t *na_class, na_context_t *context, na_op_id_t *op_id)
{
    na_return_t ret = na_progress_check(na_class, context);
    if (ret != NA_SUCCESS)
        return ret;
    if (!op_id || op_id->na_class != na_class) {
        HGX_LOG_ERROR(NA, "invalid op id %p", (void *)op_id);
        return NA_INVALID_ARG;
    }
    int expected = NA_OP_POSTED;
    if (!atomic_compare_exchange_strong(&op_id->state, &expected, NA_OP_CANCELING)) {
        /* Already completed, queued, idle or being cancelled: nothing to do. */
        HGX_LOG_DEBUG(NA, "op id %p not pending (state %d), cancel is a no-op",
                      (void *)op_id, expected);
        return NA_SUCCESS;
    }
    ret = na_class->ops->cancel(na_class, op_id->context, op_id);
    if (ret != NA_SUCCESS)
        HGX_LOG_ERROR(NA, "plugin could not cancel op id %p: %s", (void *)op_id,
                      NA_Error_to_string(ret));
    return ret;
}
