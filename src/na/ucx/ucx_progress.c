/*
 * ucx_progress.c -- driving the worker (progress, waiting on its fd), the
 * plugin's counters, and cancel with its escalation.
 */
#include "ucx_int.h"
#include "hgx_clock.h"

#include <errno.h>
#include <poll.h>
#include <string.h>

static void ucx_cancel_check(struct ucx_class *cls);

/* Sends queued for resources across all classes (tests check it drains). */
static atomic_long ucx_pending_total;

long na_ucx_pending_count(void);
long na_ucx_pending_count(void)
{
    return atomic_load(&ucx_pending_total);
}

/* Unexpected messages kept with no receive posted, across all classes, and
 * the most ever kept at once (tests check the path ran and drains). */
static atomic_long ucx_held_total, ucx_held_peak;

long na_ucx_held_count(long *peak);
long na_ucx_held_count(long *peak)
{
    if (peak)
        *peak = atomic_load(&ucx_held_peak);
    return atomic_load(&ucx_held_total);
}

/* A message kept in box (n = 1) or taken from it (-1). The box is full from
 * unexp_max messages on. Lock held. */
void ucx_held_add(struct ucx_class *cls, struct ucx_unexp_box *box, int n)
{
    unsigned was = box->nheld;
    box->nheld += (unsigned)n;
    cls->held += (unsigned)n;
    if (was < cls->unexp_max && box->nheld >= cls->unexp_max) {
        cls->full++;
        if (cls->full_warned)
            HGX_LOG_DEBUG(UCX, "a context holds %u unexpected messages", box->nheld);
        else
            HGX_LOG_WARNING(UCX,
                            "a context holds %u unexpected messages with no receive "
                            "posted (HGX_NA_UNEXPECTED_MAX): further messages stay with "
                            "UCX until receives are posted",
                            box->nheld);
        cls->full_warned = true;
    } else if (was >= cls->unexp_max && box->nheld < cls->unexp_max) {
        cls->full--;
    }
    long now = atomic_fetch_add(&ucx_held_total, n) + n;
    if (now > atomic_load(&ucx_held_peak))
        atomic_store(&ucx_held_peak, now);
}

/* Whether anything of the class waits on the worker: an op of one of its
 * contexts (a posted receive, a send, a put/get), or the plugin's own work
 * (queued sends, wire-ups, forced closes, peers' transfers, cancels waiting
 * for escalation). Lock held. */
static __attribute__((noinline)) bool ucx_worker_needed(const struct ucx_class *cls)
{
    if (cls->queued || cls->connecting || cls->closing || !hgx_list_empty(&cls->txs) ||
        ucx_cancels_watched(cls))
        return true;
    for (unsigned i = 0; i < cls->n_unexp; i++) {
        na_context_t *c = cls->unexp[i].context;
        if (c && atomic_load_explicit(&c->n_posted, memory_order_relaxed) !=
                     atomic_load_explicit(&c->n_finished, memory_order_relaxed))
            return true;
    }
    return false;
}

/* The idle bound on the unexpected backlog. A UCX active-message handler
 * cannot say "not now": UCX runs it once it has taken the message from the
 * transport, and the handler can only consume it or keep it. The bound that
 * always holds is the senders' credits, UCX_CREDITS per peer account
 * (ucx_credit.c). On top of it, once a context holds HGX_NA_UNEXPECTED_MAX
 * kept messages (from many peers), progress stops taking anything from UCX:
 * further messages stay in the transport (socket buffers, shared-memory
 * FIFOs), and their senders' sends then wait in their send windows and
 * queues, until receives drain the backlog. Nothing is dropped. Stopping the
 * worker stops every transfer of the class, so it happens only while nothing
 * the class asked for waits on the worker (ucx_worker_needed): such an op
 * keeps the worker running, and the context may then keep up to UCX_CREDITS
 * per peer past this bound. Lock held. */
static inline bool ucx_stalled(const struct ucx_class *cls)
{
    return __builtin_expect(cls->full != 0, 0) && !ucx_worker_needed(cls);
}

/* Count sends entering (n > 0) or leaving a peer's resource queue. */
void ucx_queued_add(struct ucx_class *cls, long n)
{
    cls->queued += n;
    atomic_fetch_add(&ucx_pending_total, n);
}

/* Drive the worker until it has nothing left to do (bounded), or until the
 * context has a completion to hand up: every extra pass costs a system call
 * per TCP interface (UCX polls its sockets), and the caller polls again.
 * Send completions free window slots here: refill them from the queues. */
static unsigned ucx_progress(struct ucx_class *cls, na_context_t *context)
{
    unsigned total = 0, n;
    if (ucx_stalled(cls))
        return 0;
    cls->arm_busy = false; /* what made the worker busy is processed now */
    do {
        n = ucp_worker_progress(cls->worker);
        total += n;
    } while (n && total < UCX_PROGRESS_MAX &&
             !(context && atomic_load(&context->cq_count)) && !cls->full);
    if (cls->queued)
        ucx_pending_resume(cls);
    if (__builtin_expect(cls->late_live != 0, 0) && total)
        ucx_late_drain(cls);
    return total;
}

na_return_t ucx_poll(na_class_t *na_class, na_context_t *context, unsigned int *count_p)
{
    struct ucx_class *cls = ucx_cls(na_class);
    hgx_lock(&cls->lock);
    unsigned n = ucx_progress(cls, context);
    if (ucx_cancels_watched(cls))
        ucx_cancel_check(cls);
    if (cls->connecting)
        ucx_connect_check(cls);
    hgx_unlock(&cls->lock);
    if (count_p)
        *count_p = n;
    return n ? NA_SUCCESS : NA_TIMEOUT;
}

na_return_t ucx_poll_wait(na_class_t *na_class, na_context_t *context,
                          unsigned int timeout_ms)
{
    struct ucx_class *cls = ucx_cls(na_class);

    hgx_lock(&cls->lock);
    /* Stalled on the backlog: UCX's events wait for receives, so sleep on the
     * wake fd alone and look again soon (a cancel's escalation waits as
     * long). Else the wait fd fires on UCX's next event and at the plugin's
     * next deadline (ucx_wait.c). */
    bool stalled = ucx_stalled(cls);
    ucs_status_t st = stalled ? UCS_OK : ucx_wait_arm(cls);
    if (stalled && timeout_ms > UCX_TIMER_POLL_MS)
        timeout_ms = UCX_TIMER_POLL_MS;
    hgx_unlock(&cls->lock);
    if (st == UCS_OK) {
        /* Armed: the fd fires on the next event, so sleeping cannot miss one.
         * The context's wake fd fires when another context's thread took the
         * event and queued a completion here. poll skips a negative fd. */
        struct pollfd pfd[2] = {{.fd = stalled ? -1 : cls->wait.fd, .events = POLLIN},
                                {.fd = context->wake_fd, .events = POLLIN}};
        int rc = poll(pfd, context->wake_fd >= 0 ? 2 : 1,
                      timeout_ms > INT32_MAX ? -1 : (int)timeout_ms);
        if (rc < 0 && errno != EINTR) {
            HGX_LOG_ERROR(UCX, "poll on the worker fd failed: %s", strerror(errno));
            return NA_IO_ERROR;
        }
        if (rc == 0)
            return NA_TIMEOUT;
        if (context->wake_fd >= 0 && (pfd[1].revents & POLLIN))
            na_context_wake_drain(context);
    } else if (st != UCS_ERR_BUSY) {
        HGX_LOG_ERROR(UCX, "ucp_worker_arm failed: %s", ucs_status_string(st));
        return NA_PROTOCOL_ERROR;
    }
    /* Busy (events already pending) or woken up: process them. */
    return ucx_poll(na_class, context, NULL) == NA_SUCCESS ? NA_SUCCESS : NA_TIMEOUT;
}

int ucx_poll_get_fd(na_class_t *na_class, na_context_t *context)
{
    (void)context;
    return ucx_cls(na_class)->wait.fd;
}

bool ucx_poll_try_wait(na_class_t *na_class, na_context_t *context)
{
    struct ucx_class *cls = ucx_cls(na_class);
    (void)context;
    hgx_lock(&cls->lock);
    /* Stalled on the backlog, progress has nothing to do until a receive is
     * posted: the caller sleeps on a wait fd without the worker's fd
     * (ucx_wait.c). Wire-ups and cancels waiting for escalation do not keep
     * the caller awake either: the fd's timer fires at their deadlines. */
    bool sleep = ucx_stalled(cls) ? ucx_wait_stalled(cls) : ucx_wait_arm(cls) == UCS_OK;
    hgx_unlock(&cls->lock);
    return sleep;
}

/* Drive the worker while more(arg) holds, for at most UCX_CLOSE_MS: the
 * bounded waits of teardown (closes, a deregistered region's transfers).
 * Lock held. */
void ucx_progress_while(struct ucx_class *cls, bool (*more)(void *arg), void *arg)
{
    uint64_t end = hgx_clock_after_ms(hgx_clock_now_ns(), UCX_CLOSE_MS);
    while (more(arg) && !hgx_clock_passed(hgx_clock_now_ns(), end))
        ucp_worker_progress(cls->worker);
}

/* Take a send out of its peer's resource queue; false if it was not queued. */
static bool ucx_pending_remove(struct ucx_op *uop)
{
    if (!ucx_queue_remove(uop))
        return false;
    ucx_queued_add(uop->peer->cls, -1);
    return true;
}

/* Watch a cancelled send/RMA still on the wire for escalation; cancelled
 * twice, it keeps the first deadline. Lock held. */
static void ucx_cancel_watch(struct ucx_class *cls, struct ucx_op *uop)
{
    na_cancel_watch_start(&cls->cancel_watcher, &uop->cancel_watch, hgx_clock_now_ns());
}

/* Escalate watched cancels past their deadline: force-close their peer's ep.
 * The close completes the ep's requests (now or in a later progress), which
 * stops their ops' watches; the watcher hands out one expired watch at a
 * time, so that is safe. Lock held. */
static void ucx_cancel_check(struct ucx_class *cls)
{
    uint64_t now = hgx_clock_now_ns();
    struct na_cancel_watch *watch;
    while ((watch = na_cancel_watcher_expired(&cls->cancel_watcher, now))) {
        struct ucx_op *uop = hgx_list_entry(watch, struct ucx_op, cancel_watch);
        struct ucx_peer *p = uop->peer;
        /* Self ops end on their own; an op of a dropped ep ends with it. */
        if (p->self || p->state != UCX_CONN_UP || uop->gen != p->gen)
            continue;
        HGX_LOG_WARNING(
            UCX,
            "cancelled operation to %s still pending after %llu ms; dropping "
            "the connection",
            p->str, (unsigned long long)(cls->cancel_watcher.timeout_ns / HGX_NS_PER_MS));
        ucx_peer_down(cls, p, true);
    }
}

/* Receives are cancelled in UCX (callback with UCS_ERR_CANCELED); queued sends
 * are dropped. Sends and RMA already on the wire cannot be recalled: they
 * report their real outcome if they end by themselves (NA_SUCCESS if the data
 * moved); still pending after the escalation delay, their ep is dropped
 * (ucx_cancel_check) and they end NA_CANCELED. */
na_return_t ucx_cancel(na_class_t *na_class, na_context_t *context, na_op_id_t *op)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct ucx_op *uop = ucx_op(op);
    (void)context; /* an op's queue link finds its list */

    hgx_lock(&cls->lock);
    switch (uop->kind) {
    case UCX_OP_RECV_UNEXP:
        if (ucx_queue_remove(uop)) /* off its box's posted list */
            na_op_complete(op, NA_CANCELED);
        break;
    case UCX_OP_RECV_EXP:
        if (uop->req)
            ucp_request_cancel(cls->worker, uop->req);
        break;
    case UCX_OP_SEND:
        /* Completions run under the lock: a cancel request still standing
         * here means the op has not ended. */
        if (!na_op_cancel_requested(op))
            break;
        if (ucx_pending_remove(uop))
            na_op_complete(op, NA_CANCELED);
        else if (uop->inflight)
            ucx_cancel_watch(cls, uop);
        break;
    case UCX_OP_RMA:
        if (!na_op_cancel_requested(op) || uop->pieces == 0)
            break;
        if (ucx_pending_remove(uop)) {
            /* Queued behind the wire-up: never sent, so no reply comes. */
            ucx_rma_unname(cls, uop);
            uop->pieces = 1;
            ucx_rma_piece_done(uop, NA_CANCELED);
            break;
        }
        /* A get whose reply has not started landing stops here and now; its
         * late reply matches nothing. */
        if (!uop->put && !uop->landing && ucx_rma_awaiting(cls, uop)) {
            bool sending = uop->pieces > 1;
            ucx_rma_unname(cls, uop);
            ucx_rma_piece_done(uop, NA_CANCELED);
            if (sending) /* the request itself is stuck: escalate that */
                ucx_cancel_watch(cls, uop);
        } else {
            ucx_cancel_watch(cls, uop);
        }
        break;
    }
    hgx_unlock(&cls->lock);
    return NA_SUCCESS;
}
