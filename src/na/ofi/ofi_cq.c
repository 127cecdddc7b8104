/*
 * ofi_cq.c -- completions and progress (polling, sleeping, waiting).
 */
#include "ofi_int.h"

#include "na_backoff.h"

/* Parse the sender's header; false if it is malformed. */
bool ofi_hdr_parse(const struct ofi_class *cls, const unsigned char *buf, size_t len,
                   unsigned char *raw, size_t *raw_len)
{
    const unsigned char *sent = ofi_hdr_raw(buf, len, raw_len);
    if (!sent)
        return false;
    memcpy(raw, sent, *raw_len);
    return ofi_raw_addr_normalize(cls, raw, raw_len);
}

/* An unexpected message arrived: find its sender from the header. A bad
 * header (or an address we cannot insert) drops the message and reposts. */
static void ofi_complete_recv_unexpected(struct ofi_class *cls, struct ofi_op *oop,
                                         size_t len, uint64_t data)
{
    na_op_id_t *op = na_op_from_plugin(oop);
    struct ofi_peer *peer;

    if (ofi_peer_of_hdr(cls, oop->buf, len, &peer)) {
        if (peer) {
            op->info.info.recv_unexpected.actual_buf_size = len;
            op->info.info.recv_unexpected.source = ofi_peer_source(cls, peer);
            op->info.info.recv_unexpected.tag = (na_tag_t)(data & OFI_TAG_NA_MASK);
            ofi_op_finish(cls, oop, NA_SUCCESS);
            return;
        }
    } else {
        atomic_fetch_add(&cls->n_bad_headers, 1);
        HGX_LOG_ERROR(OFI,
                      "dropped an unexpected message of %zu bytes with a malformed "
                      "header (%lu so far)",
                      len, atomic_load(&cls->n_bad_headers));
    }
    ofi_recv_unexpected_repost(cls, oop);
}

static void ofi_complete(struct ofi_class *cls, struct ofi_ctx *ctx, na_return_t ret,
                         size_t len, uint64_t data, uint64_t tag)
{
    if (ctx->ctrl) {
        ofi_ctrl_received(cls, ofi_ctrl_rx_of(ctx), ret, len);
        return;
    }
    struct ofi_op *oop = ofi_ctx_op_swap(&ctx->op, NULL, cls->single);

    if (!oop) {
        unsigned late = atomic_load_explicit(&ctx->late, memory_order_relaxed);
        if (late) /* a sink: a late message dropped, or the sink cancelled */
            ofi_late_done(cls, ctx, late - 1, ret, tag);
        else /* its op was completed by a forced cancel; the context is free now */
            ofi_ctx_put(cls, ctx);
        return;
    }
    na_op_id_t *op = na_op_from_plugin(oop);
    if (ofi_op_is_rma(oop))
        ofi_rma_part_end(cls, oop, ret);
    else if (oop->split)
        ofi_part_done(cls, oop, ret);
    else if (oop->reassembling)
        ofi_pieces_second_in(cls, oop, ret, len);
    else if ((tag & OFI_TAG_FIRST) && ret == NA_SUCCESS && oop->kind == OFI_OP_RECV)
        ofi_pieces_first_in(cls, oop, len, data, tag);
    else if (op->info.type == NA_CB_RECV_UNEXPECTED && ret == NA_SUCCESS)
        ofi_complete_recv_unexpected(cls, oop, len, data);
    else {
        if (op->info.type == NA_CB_RECV_EXPECTED) {
            op->info.info.recv_expected.actual_buf_size = ret == NA_SUCCESS ? len : 0;
            /* Cancelled (or flushed) with its message still to come. */
            if (ret == NA_HOSTUNREACH && na_op_cancel_requested(op) && oop->peer)
                ofi_late_expect(cls, oop->peer, oop->fi_addr, oop->tag);
        }
        ofi_op_finish(cls, oop, ret);
    }
}

static void ofi_cq_read_error(struct ofi_class *cls)
{
    struct fi_cq_err_entry err = {0};
    ssize_t rc = fi_cq_readerr(cls->cq, &err, 0);

    if (rc != 1) {
        if (rc != -FI_EAGAIN)
            HGX_LOG_ERROR(OFI, "fi_cq_readerr failed: %s", fi_strerror((int)-rc));
        return;
    }
    if (!err.op_context) {
        HGX_LOG_ERROR(OFI, "completion error without context: %s", fi_strerror(err.err));
        return;
    }
    if (err.err < 0)
        err.err = -err.err; /* shm reports negative codes */
    na_return_t ret = ofi_na_error(err.err);
    if (err.err == FI_ECANCELED) {
        /* Ours, or flushed by the provider: tcp drops the connection when the
         * target refuses an RMA access. ofi_op_finish turns either into
         * NA_CANCELED if a cancel was requested. */
        HGX_LOG_DEBUG(OFI, "operation canceled or flushed");
        ret = NA_HOSTUNREACH;
    } else if (err.err == FI_ETRUNC &&
               atomic_load_explicit(&((struct ofi_ctx *)err.op_context)->late,
                                    memory_order_relaxed)) {
        HGX_LOG_DEBUG(OFI, "late message larger than a sink (%zu bytes dropped)",
                      err.olen);
    } else if (err.err == FI_ETRUNC) {
        HGX_LOG_ERROR(OFI, "message larger than its receive buffer (%zu bytes dropped)",
                      err.olen);
    } else {
        HGX_LOG_ERROR(OFI, "operation failed: %s (%s)", fi_strerror(err.err),
                      fi_cq_strerror(cls->cq, err.prov_errno, err.err_data, NULL, 0));
    }
    ofi_complete(cls, err.op_context, ret, err.len, err.data, err.tag);
}

/* Process what the CQ holds, in bounded batches; returns completions seen. */
static unsigned int ofi_cq_drain(struct ofi_class *cls)
{
    struct fi_cq_tagged_entry entries[OFI_CQ_BATCH];
    unsigned int count = 0;

    for (int round = 0; round < OFI_CQ_MAX_ROUNDS; round++) {
        ssize_t n = fi_cq_read(cls->cq, entries, OFI_CQ_BATCH);
        if (n == -FI_EAGAIN)
            break;
        if (n == -FI_EAVAIL) {
            ofi_cq_read_error(cls);
            count++;
            continue;
        }
        if (n < 0) {
            HGX_LOG_ERROR(OFI, "fi_cq_read failed: %s", fi_strerror((int)-n));
            break;
        }
        for (ssize_t i = 0; i < n; i++)
            ofi_complete(cls, entries[i].op_context, NA_SUCCESS, entries[i].len,
                         entries[i].data, entries[i].tag);
        count += (unsigned int)n;
        if (n < OFI_CQ_BATCH)
            break;
    }
    return count;
}

int ofi_poll_get_fd(na_class_t *na_class, na_context_t *context)
{
    (void)context;
    return ofi_class(na_class)->wait.fd;
}

/* Posts the provider refused (ops, control messages, control receives): only
 * progress retries them, and the wait fd does not announce when. The counts
 * are read without the locks of their lists on every poll; a change missed
 * here is seen at the next one. */
static inline bool ofi_retrying(const struct ofi_class *cls)
{
    return atomic_load_explicit(&cls->retry.count, memory_order_relaxed) > 0 ||
           atomic_load_explicit(&cls->outbox_count, memory_order_relaxed) > 0 ||
           atomic_load_explicit(&cls->ctrl_unposted, memory_order_relaxed) > 0;
}

/* Deadlines looked at every OFI_CANCEL_POLL_MS: stuck cancels, and receives
 * waiting for a second piece (seconds away). */
static inline bool ofi_slow_deadlines(const struct ofi_class *cls)
{
    return atomic_load_explicit(&cls->n_canceling, memory_order_relaxed) > 0 ||
           atomic_load_explicit(&cls->reassembly.count, memory_order_relaxed) > 0;
}

/* Ops waiting for a deadline: RMA checks, stuck cancels and receives
 * waiting for a second piece. */
static inline bool ofi_deadlines(const struct ofi_class *cls)
{
    return atomic_load_explicit(&cls->checking.count, memory_order_relaxed) > 0 ||
           ofi_slow_deadlines(cls);
}

/* Milliseconds to the plugin's next timed duty (UINT64_MAX: none, 0: due
 * now), which no fd announces: retrying refused posts, at intervals that
 * back off from OFI_RETRY_POLL_MS to OFI_RETRY_POLL_MAX_MS while they wait;
 * moving RMA checks on and looking at their peers (every OFI_REACH_POLL_MS);
 * escalating stuck cancels (every OFI_CANCEL_POLL_MS). The due time holds
 * until progress runs the duties, which clears it; the next question then
 * sets the next one. Threads asking at once may each set it: either time is
 * one of the duty's steps. */
static uint64_t ofi_next_duty_ms(struct ofi_class *cls)
{
    bool retrying = ofi_retrying(cls);
    /* Reset only what is set: the common answer (no duty) writes nothing. */
    if (!retrying && atomic_load_explicit(&cls->retry_step_ms, memory_order_relaxed))
        atomic_store_explicit(&cls->retry_step_ms, 0, memory_order_relaxed);
    if (!retrying && !ofi_deadlines(cls)) {
        if (atomic_load_explicit(&cls->duty_due_ns, memory_order_relaxed))
            atomic_store_explicit(&cls->duty_due_ns, 0, memory_order_relaxed);
        return UINT64_MAX;
    }
    uint64_t now = hgx_clock_now_ns();
    uint64_t due = atomic_load_explicit(&cls->duty_due_ns, memory_order_relaxed);
    if (due != 0)
        return hgx_clock_left_ms(now, due);
    uint64_t left = UINT64_MAX;
    if (retrying) {
        uint64_t step = atomic_load_explicit(&cls->retry_step_ms, memory_order_relaxed);
        step = step == 0                          ? OFI_RETRY_POLL_MS
               : step * 2 < OFI_RETRY_POLL_MAX_MS ? step * 2
                                                  : OFI_RETRY_POLL_MAX_MS;
        atomic_store_explicit(&cls->retry_step_ms, step, memory_order_relaxed);
        left = step;
    }
    if (atomic_load_explicit(&cls->checking.count, memory_order_relaxed) > 0 &&
        left > OFI_REACH_POLL_MS)
        left = OFI_REACH_POLL_MS;
    if (ofi_slow_deadlines(cls) && left > OFI_CANCEL_POLL_MS)
        left = OFI_CANCEL_POLL_MS;
    atomic_store_explicit(&cls->duty_due_ns, hgx_clock_after_ms(now, left),
                          memory_order_relaxed);
    return left;
}

/*
 * The idle policy of a class without a CQ fd (na_backoff.h) with OFI's own
 * rules: how long to sleep before the next poll, in nanoseconds, or 0 to
 * poll again at once. At once within spin_ns of the last activity (a post
 * or a completion), and while an answer to our CHECK is due: it usually
 * comes sooner than a sleep (>= 50 us of timer slack) ends. Otherwise a step
 * that grows with the time the class has been idle. A peer holding a lease
 * of ours asks again when it ends: the step ends then at the latest, and the
 * idle time counts from then. The sleep loop passes spin_ns 0 (NA_Poll_wait
 * has polled through the window before calling it); poll_try_wait passes
 * the window, as nothing polled through it for the events API's caller.
 */
static uint64_t ofi_idle_step_ns(struct ofi_class *cls, uint64_t now, uint64_t spin_ns)
{
    if (atomic_exchange_explicit(&cls->active, false, memory_order_relaxed))
        atomic_store_explicit(&cls->idle_since_ns, now, memory_order_relaxed);
    uint64_t since = atomic_load_explicit(&cls->idle_since_ns, memory_order_relaxed);
    if (now < since + spin_ns)
        return 0;
    if (atomic_load_explicit(&cls->checking.count, memory_order_relaxed) > 0 &&
        now - atomic_load_explicit(&cls->check_sent_ns, memory_order_relaxed) <
            OFI_CHECK_SPIN_NS)
        return 0;
    uint64_t renew = atomic_load_explicit(&cls->lease_end_ns, memory_order_relaxed);
    if (renew > since && renew <= now)
        since = renew;
    uint64_t step = na_backoff_step_ns(now > since ? now - since : 0);
    if (renew > now && step > renew - now)
        step = renew - now;
    return step;
}

/* Without a CQ fd the wait fd holds the timer alone, set to the step the
 * sleep loop would sleep now (or to the next timed duty, if sooner): a
 * caller sleeping on it wakes when poll_wait would have polled. Once the
 * step has run out the answer is "poll" until progress runs (ofi_progress
 * clears idle_due_ns), so asking twice does not lose it. */
static bool ofi_idle_try_wait(struct ofi_class *cls)
{
    if (cls->wait.fd < 0)
        return false; /* NA_NO_BLOCK: never sleeps */
    uint64_t now = hgx_clock_now_ns();
    uint64_t step = ofi_idle_step_ns(cls, now, na_backoff_spin_ns());
    if (step == 0)
        return false;
    uint64_t due = atomic_load_explicit(&cls->idle_due_ns, memory_order_relaxed);
    if (due != 0)
        return now < due; /* the timer is set to it */
    uint64_t duty_ms = ofi_next_duty_ms(cls);
    if (duty_ms == 0)
        return false;
    if (duty_ms < step / HGX_NS_PER_MS)
        step = duty_ms * HGX_NS_PER_MS;
    int err = na_wait_set_arm_ns(&cls->wait, step);
    if (err) {
        HGX_LOG_ERROR(OFI, "cannot set the wait fd's timer: %s", strerror(err));
        return false;
    }
    atomic_store_explicit(&cls->idle_due_ns, now + step, memory_order_relaxed);
    return true;
}

/* Whether a sleep on the wait fd may begin: no timed duty due now (the
 * timer set to the next), the provider agrees (fi_trywait), and the fd is
 * quiet now. The last check is for providers whose fi_trywait agrees
 * whatever the CQ holds: the sockets provider's wait fd stays readable while
 * completions wait in the CQ, so a caller told it may sleep (HG_Event_ready
 * false) would wake at once, sleep again, and spin without ever reading
 * them. */
bool ofi_poll_try_wait(na_class_t *na_class, na_context_t *context)
{
    struct ofi_class *cls = ofi_class(na_class);
    struct fid *fid = &cls->cq->fid;

    (void)context;
    if (cls->cq_fd < 0)
        return ofi_idle_try_wait(cls);
    uint64_t left = ofi_next_duty_ms(cls);
    if (left == 0)
        return false;
    int err = na_wait_set_arm_ms(&cls->wait, left);
    if (err) {
        HGX_LOG_ERROR(OFI, "cannot set the wait fd's timer: %s", strerror(err));
        return false;
    }
    return fi_trywait(cls->fabric, &fid, 1) == FI_SUCCESS &&
           !na_wait_set_ready(&cls->wait);
}

/* Retry refused posts, process completions, move the RMA check on, escalate
 * stuck cancels. A poll that finds none of these to do costs the CQ read and
 * two tests. */
static unsigned int ofi_progress(struct ofi_class *cls)
{
    ofi_retry_progress(cls);
    unsigned int count = ofi_cq_drain(cls);
    if (ofi_retrying(cls) || ofi_deadlines(cls)) {
        ofi_ctrl_progress(cls);
        ofi_cancel_check(cls);
        ofi_pieces_expire(cls);
        atomic_store_explicit(&cls->duty_due_ns, 0, memory_order_relaxed);
    }
    if (count > 0)
        ofi_activity_mark(cls);
    /* Without a CQ fd: the step the wait fd's timer was set to is over. */
    if (cls->cq_fd < 0 && atomic_load_explicit(&cls->idle_due_ns, memory_order_relaxed))
        atomic_store_explicit(&cls->idle_due_ns, 0, memory_order_relaxed);
    return count;
}

na_return_t ofi_poll(na_class_t *na_class, na_context_t *context, unsigned int *count_p)
{
    (void)context;
    unsigned int count = ofi_progress(ofi_class(na_class));
    if (count_p)
        *count_p = count;
    return count > 0 ? NA_SUCCESS : NA_TIMEOUT;
}

/*
 * Without a CQ fd: poll, and sleep in between for the step of the idle
 * policy (ofi_idle_step_ns), which grows with how long the class has been
 * idle (no post, no completion): an idle server wakes at most 250 times a
 * second, and a message after an idle gap t waits at most min(t / 8, 4 ms)
 * to be noticed. Our own posts reset the idle clock, so a reply is polled
 * for promptly.
 */
static unsigned int ofi_sleep_poll(struct ofi_class *cls, na_context_t *context,
                                   unsigned int timeout_ms)
{
    uint64_t deadline = hgx_clock_after_ms(hgx_clock_now_ns(), timeout_ms);

    for (;;) {
        unsigned int count = ofi_progress(cls);
        uint64_t now = hgx_clock_now_ns();
        /* Another context's thread may have completed this one's ops, or
         * the layer above interrupted the wait (na_context_interrupt). */
        if (count == 0)
            count = atomic_load_explicit(&context->cq_count, memory_order_acquire);
        if (count > 0 || now >= deadline ||
            atomic_load_explicit(&context->interrupted, memory_order_relaxed))
            return count;
        uint64_t step = ofi_idle_step_ns(cls, now, 0);
        if (step == 0) {
            hgx_spin_pause();
            continue;
        }
        if (step > deadline - now)
            step = deadline - now;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)step};
        if (context->wake_fd < 0) {
            nanosleep(&ts, NULL);
            continue;
        }
        struct pollfd pfd = {.fd = context->wake_fd, .events = POLLIN};
        if (ppoll(&pfd, 1, &ts, NULL) > 0)
            na_context_wake_drain(context);
    }
}

/* The fd woke us but progress completed nothing: traffic for which this side
 * gets no completion (the target of a put or get, the start of a large
 * message). Its next step (the acknowledgment of a put, the rest of a read
 * response) needs our progress again soon; blocking in between would cost a
 * wake-up each time. So poll for a while first. A transfer that outlasts the
 * poll wakes us again shortly after: each such wake-up doubles the poll, so
 * a stream of transfers (a 1 MiB read takes ~400 us over loopback tcp) is
 * served without sleeping, while a lone wake-up costs only the short poll.
 * 1 MiB ofi+tcp pulls ran at 0.55x raw with a fixed 100 us poll, 0.79x with
 * this one (docs/performance.md, "Design choices, measured"). */
static unsigned int ofi_traffic_poll(struct ofi_class *cls, uint64_t deadline_ns)
{
    uint64_t now = hgx_clock_now_ns();
    uint64_t spin = atomic_load_explicit(&cls->traffic_spin_ns, memory_order_relaxed);
    uint64_t last = atomic_load_explicit(&cls->traffic_end_ns, memory_order_relaxed);
    if (spin && now - last < OFI_TRAFFIC_GAP_MUL * spin)
        spin = spin * 2 < OFI_TRAFFIC_SPIN_MAX_NS ? spin * 2 : OFI_TRAFFIC_SPIN_MAX_NS;
    else
        spin = OFI_TRAFFIC_SPIN_MIN_NS;
    atomic_store_explicit(&cls->traffic_spin_ns, spin, memory_order_relaxed);

    uint64_t end = now + spin;
    unsigned int count = 0;
    if (end > deadline_ns)
        end = deadline_ns;
    while (count == 0 && (now = hgx_clock_now_ns()) < end) {
        hgx_spin_pause();
        count = ofi_progress(cls);
    }
    atomic_store_explicit(&cls->traffic_end_ns, now, memory_order_relaxed);
    return count;
}

na_return_t ofi_poll_wait(na_class_t *na_class, na_context_t *context,
                          unsigned int timeout_ms)
{
    struct ofi_class *cls = ofi_class(na_class);
    unsigned int count;

    /* Retries and deadlines need progress the fd does not announce. */
    if (ofi_retrying(cls) && timeout_ms > OFI_RETRY_POLL_MS)
        timeout_ms = OFI_RETRY_POLL_MS;
    if (ofi_deadlines(cls) && timeout_ms > OFI_CANCEL_POLL_MS)
        timeout_ms = OFI_CANCEL_POLL_MS;
    if (cls->cq_fd < 0) {
        count = ofi_sleep_poll(cls, context, timeout_ms);
    } else {
        struct fid *fid = &cls->cq->fid;
        uint64_t deadline_ns = hgx_clock_after_ms(hgx_clock_now_ns(), timeout_ms);
        int woke = 0;
        if (fi_trywait(cls->fabric, &fid, 1) == FI_SUCCESS) {
            /* The context's wake fd fires when another context's thread
             * took the event and queued a completion here. */
            struct pollfd pfd[2] = {{.fd = cls->cq_fd, .events = POLLIN},
                                    {.fd = context->wake_fd, .events = POLLIN}};
            woke = poll(pfd, context->wake_fd >= 0 ? 2 : 1, (int)timeout_ms);
            if (woke < 0 && errno != EINTR)
                HGX_LOG_ERROR(OFI, "poll on the CQ fd failed: %s", strerror(errno));
            if (woke > 0 && context->wake_fd >= 0 && (pfd[1].revents & POLLIN)) {
                na_context_wake_drain(context);
                if (!(pfd[0].revents & POLLIN))
                    woke = 0; /* no traffic of ours: no traffic poll */
            }
        }
        count = ofi_progress(cls);
        if (count == 0 && woke > 0)
            count = ofi_traffic_poll(cls, deadline_ns);
    }
    return count > 0 ? NA_SUCCESS : NA_TIMEOUT;
}
