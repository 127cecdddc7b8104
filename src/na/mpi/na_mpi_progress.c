/*
 * na_mpi_progress.c -- the MPI NA plugin: progress: the claim of waiting messages, poll
 * and poll_wait. The plugin as a whole: na_mpi_priv.h.
 */
#include "na_mpi_priv.h"
#include "na_backoff.h"

/*------------------------------------------------------------ progress */

/*
 * Whether this pass runs nm_claim_any. Under Open MPI (mpi+static) every posted
 * NA receive can be in MPI as an MPI_Irecv that the request table's
 * MPI_Testsome reports; an MPI_Improbe (~70 ns, 3x an MPI_Testsome) then only
 * finds control packets of peers' puts/gets, and messages no receive waits
 * for yet (a receive posted later takes them from MPI in order). So it runs
 * every pass only while something depends on it: a receive not in MPI (eq,
 * or uq not armed), a put/get of ours (CTS, ACK, cancel answers), or no
 * request in the table (MPI_Testsome, which also drives MPI's progress, does
 * not run); otherwise every CLAIM_EVERY-th pass, which delays the start of a
 * peer's put/get here by at most CLAIM_EVERY-1 passes. Lock held.
 */
#define CLAIM_EVERY 4

static bool nm_claim_due(struct nm_class *pc)
{
#ifdef OPEN_MPI
    if (pc->tab.n > 0 && hgx_list_empty(&pc->eq) &&
        (hgx_list_empty(&pc->uq) || pc->upost) && !pc->nrma && !pc->dynamic &&
        ++pc->npass < CLAIM_EVERY)
        return false;
    pc->npass = 0;
    return true;
#else
    (void)pc;
    return true;
#endif
}

/*
 * Whether a message waits on connection k (*flag). The oldest message waiting
 * there, found with MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG), is claimed and
 * handed to the connection's emulation when its tag is not one of the NA
 * (unexpected, expected), control or BYE tags: a data chunk is attributed to
 * its transfer, anything else is received whole and dropped (counted), so a
 * stray does not stay queued in MPI. Data chunks behind an NA message still
 * reach their transfer through the emulation's per-tag probes. Returns an
 * MPI error code; *events counts the messages handed over. Lock held.
 */
#define CONN_DATA_BATCH 64

static int nm_conn_peek(struct nm_class *pc, struct dyn_conn *k, int *flag, int *events)
{
    for (int n = 0; n < CONN_DATA_BATCH; n++) {
        MPI_Status st;
        int rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, k->comm, flag, &st);
        if (rc != MPI_SUCCESS || !*flag)
            return rc;
        int tag = st.MPI_TAG;
        bool late = tag >= TAG_EXP_BASE && nm_late_is(pc, &st, k->comm);
        if (!late && (tag == TAG_UNEXP || tag == TAG_CTRL || tag == pc->tag_bye ||
                      (tag >= TAG_EXP_BASE && tag <= TAG_EXP_BASE + (int)pc->max_tag)))
            return MPI_SUCCESS;
        int got = 0;
        MPI_Message msg;
        rc = MPI_Improbe(st.MPI_SOURCE, tag, k->comm, &got, &msg, &st);
        if (rc != MPI_SUCCESS)
            return rc;
        if (got && late) {
            nm_late_drop(pc, &msg, &st, k->comm);
            (*events)++;
        } else if (got) {
            hgx_emul_data_msg(k->emul, &msg, &st);
            (*events)++;
        }
    }
    return MPI_SUCCESS; /* more may wait: the next pass goes on */
}

/*
 * pc->comm: held messages first, then nm_claim_any (one MPI call whether or not
 * anything waits). With held_max messages held, claiming stops: pc->waiting
 * makes the per-kind probes (posted receives, control packets) run instead,
 * so the held messages bound the memory without blocking anything else.
 * Connections (mpi+dynamic) carry emulation data with RPC messages on one
 * intercommunicator, so a wildcard claim could take data chunks: one
 * MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG) per connection tells whether
 * anything waits there (and hands a data message or stray at the head to the
 * emulation, nm_conn_peek), and only then do its per-kind probes run. Returns
 * an MPI error code; *events counts messages claimed or delivered. Lock held.
 */
int nm_probe_waiting(struct nm_class *pc, int *events)
{
    int rc = MPI_SUCCESS;
    *events = hgx_list_empty(&pc->held) ? 0 : nm_take_held(pc);
    if (!hgx_list_empty(&pc->uq) && !pc->upost)
        nm_unexp_arm(pc);
    pc->take_ctrl = false;
    pc->waiting = pc->nheld >= pc->held_max;
    if (pc->waiting)
        pc->take_ctrl = true;
    else if (nm_claim_due(pc))
        *events += nm_claim_any(pc, &rc);
    struct hgx_list *it;
    hgx_list_for_each(it, &pc->conns)
    {
        if (rc != MPI_SUCCESS)
            break;
        struct dyn_conn *k = hgx_list_entry(it, struct dyn_conn, link);
        int flag = 0;
        if (!k->dead)
            rc = nm_conn_peek(pc, k, &flag, events);
        k->waiting = flag != 0;
    }
    return rc;
}

/* Returns the number of progress events (messages matched, MPI requests
 * completed, emulation packets and timers, connections), < 0 on error. */
static int nm_poll_locked(struct nm_class *pc)
{
    int events = 0;
    unsigned long before = pc->ncompleted;
    for (int round = 0; round < 16; round++) {
        int claimed = 0;
        int rc = nm_probe_waiting(pc, &claimed);
        if (rc == MPI_SUCCESS)
            rc = nm_match_unexpected(pc);
        if (rc == MPI_SUCCESS)
            rc = nm_match_expected(pc);
        if (rc != MPI_SUCCESS) {
            nm_log_err("MPI_Iprobe/MPI_Improbe", rc);
            return -1;
        }
        int ndone = claimed;
        int nreq = 0;
        rc = hgx_mreqtab_poll(&pc->tab, &nreq);
        ndone += nreq;
        if (rc != MPI_SUCCESS) {
            nm_log_err("MPI_Test", rc);
            return -1;
        }
        /* put/get emulation: control packets (cancels first), cancel timers */
        ndone += hgx_emul_progress_ex(pc->emul, pc->take_ctrl);
        if (pc->dynamic) {
            ndone += nm_dyn_take_accepted(pc);
            struct hgx_list *it;
            hgx_list_for_each(it, &pc->conns)
            {
                struct dyn_conn *k = hgx_list_entry(it, struct dyn_conn, link);
                if (k->dead)
                    continue;
                ndone += hgx_emul_progress_ex(k->emul, k->waiting);
                if (k->waiting)
                    ndone += nm_dyn_check_bye(pc, k);
            }
        }
        events += ndone;
        /* An NA completion ends the pass at once: its callback is on the
         * critical path, one more round would only delay it. */
        if (ndone == 0 || pc->ncompleted != before)
            break;
    }
    return events;
}

/* Whether MPI requests are in flight, not counting the unexpected receive
 * waiting in MPI (nm_unexp_arm): a server would poll NM_INFLIGHT_SPIN_US
 * after every request instead of sleeping (a request above the eager size it
 * took meanwhile may then finish only at the next wake-up). Lock held. */
static bool nm_inflight(const struct nm_class *pc)
{
    return pc->tab.n > (pc->upost ? 1 : 0);
}

/* One progress pass; *n = NA operations completed, *inflight = MPI requests
 * still outstanding. Any event (also a bulk chunk or a control packet served
 * for a peer) marks the class active. */
static na_return_t nm_poll_once(struct nm_class *pc, unsigned long *n, bool *inflight)
{
    hgx_lock(&pc->lock);
    unsigned long before = pc->ncompleted;
    int events = nm_poll_locked(pc);
    *n = pc->ncompleted - before;
    *inflight = nm_inflight(pc);
    pc->wait_due_us = 0; /* the step of the wait fd's timer is over */
    hgx_unlock(&pc->lock);
    if (events > 0 || *n > 0)
        nm_mark_active(pc, ACT_EVENT);
    return events < 0 ? NA_PROTOCOL_ERROR : NA_SUCCESS;
}

na_return_t nm_poll(na_class_t *na_class, na_context_t *context, unsigned int *count_p)
{
    (void)context;
    unsigned long n = 0;
    bool inflight;
    na_return_t ret = nm_poll_once(PC(na_class), &n, &inflight);
    if (count_p)
        *count_p = (unsigned int)n;
    return ret != NA_SUCCESS ? ret : n ? NA_SUCCESS : NA_TIMEOUT;
}

/*
 * MPI offers no wait object (no fd, no blocking "wait for anything" across
 * arbitrary requests and probes), so this is NOT a true block. Within the
 * polling window of the last activity of the class (a post, or any progress
 * event: a peer's bulk chunk or control packet served here counts, not only
 * an NA completion; see nm_mark_active), or while MPI requests are in flight and
 * progressing, it polls (hgx_spin_pause between polls). Past it, it sleeps
 * between polls in the steps of NA's one idle policy (na_backoff.h: an eighth
 * of the time idle so far, at most 4 ms), and at most NM_SLEEP_BUSY_MAX_NS
 * while the last activity is under NM_IDLE_US old, so that a peer's post
 * window (NM_POST_SPIN_US) outlasts its sleep. A wake-up costs ~25 us of CPU
 * in a VM, so an idle process stays around 1% of a core, and a request after
 * a long idle period waits at most ~4 ms. The sleep depends only on the idle
 * time, so it does not restart short at every call. The wait fd's timer
 * follows the same steps (nm_poll_try_wait).
 */
#define NM_IDLE_US 100000
#define NM_SLEEP_BUSY_MAX_NS 1000000u
#define NM_POLLS_PER_CLOCK 16

/* The step of that policy at t (us, activity dated): nanoseconds to sleep
 * before the next poll, 0 to poll at once. */
static uint64_t nm_idle_step_ns(const struct nm_class *pc, uint64_t t, bool inflight)
{
    uint64_t last = atomic_load(&pc->last_activity_us);
    if (t < atomic_load(&pc->spin_until_us) ||
        (inflight && t < last + NM_INFLIGHT_SPIN_US))
        return 0;
    uint64_t idle_us = t > last ? t - last : 0;
    uint64_t step = na_backoff_step_ns(idle_us * HGX_NS_PER_US);
    if (idle_us < NM_IDLE_US && step > NM_SLEEP_BUSY_MAX_NS)
        step = NM_SLEEP_BUSY_MAX_NS;
    return step;
}

na_return_t nm_poll_wait(na_class_t *na_class, na_context_t *context,
                         unsigned int timeout_ms)
{
    struct nm_class *pc = PC(na_class);
    uint64_t t = hgx_clock_now_us(), deadline = t + (uint64_t)timeout_ms * 1000u;
    nm_date_activity(pc, t);
    for (unsigned int polls = 1;; polls++) {
        unsigned long n = 0;
        bool inflight;
        na_return_t ret = nm_poll_once(pc, &n, &inflight);
        if (ret != NA_SUCCESS)
            return ret;
        if (n > 0 || atomic_load(&context->cq_count) > 0 ||
            atomic_load_explicit(&context->interrupted, memory_order_relaxed))
            return NA_SUCCESS;
        /* While spinning, the clock only every NM_POLLS_PER_CLOCK polls or
         * when activity waits to be dated: the windows it serves are
         * hundreds of microseconds long, and a read costs ~22 ns. */
        if (polls % NM_POLLS_PER_CLOCK == 0 ||
            atomic_load_explicit(&pc->noted, memory_order_relaxed)) {
            t = hgx_clock_now_us();
            nm_date_activity(pc, t);
        }
        if (t >= deadline)
            return NA_TIMEOUT;
        uint64_t step = nm_idle_step_ns(pc, t, inflight);
        if (step == 0) {
            hgx_spin_pause();
            continue;
        }
        uint64_t left_ns = (deadline - t) * HGX_NS_PER_US;
        na_backoff_sleep(step < left_ns ? step : left_ns);
        polls = NM_POLLS_PER_CLOCK - 1; /* the clock again after the sleep */
    }
}

/* The wait fd: a timer alone (MPI has no fd to add), made on the first
 * request, so a class whose caller never asks pays nothing. */
int nm_poll_get_fd(na_class_t *na_class, na_context_t *context)
{
    struct nm_class *pc = PC(na_class);
    (void)context;
    hgx_lock(&pc->lock);
    if (pc->wait.fd < 0) {
        int err = na_wait_set_open(&pc->wait);
        if (err) {
            HGX_LOG_ERROR(MPI, "cannot create the wait fd: %s", strerror(err));
            na_wait_set_close(&pc->wait);
        }
    }
    int fd = pc->wait.fd;
    hgx_unlock(&pc->lock);
    return fd;
}

/* Whether the caller may sleep on the wait fd: not while nm_poll_wait would
 * poll without sleeping; otherwise the timer is set to the step it would
 * sleep, so a caller sleeping on the fd wakes when nm_poll_wait would have
 * polled. Once the step has run out the answer is "poll" until a poll runs
 * (it clears wait_due_us), so asking twice does not lose it. */
bool nm_poll_try_wait(na_class_t *na_class, na_context_t *context)
{
    struct nm_class *pc = PC(na_class);
    (void)context;
    hgx_lock(&pc->lock);
    uint64_t t = hgx_clock_now_us();
    nm_date_activity(pc, t);
    uint64_t step = nm_idle_step_ns(pc, t, nm_inflight(pc));
    bool may_sleep = step > 0;
    if (may_sleep && pc->wait_due_us != 0) {
        may_sleep = t < pc->wait_due_us; /* the timer is set to it */
    } else if (may_sleep && pc->wait.fd >= 0) {
        int err = na_wait_set_arm_ns(&pc->wait, step);
        if (err)
            HGX_LOG_ERROR(MPI, "cannot set the wait fd's timer: %s", strerror(err));
        else
            pc->wait_due_us = t + step / HGX_NS_PER_US;
        may_sleep = err == 0;
    }
    hgx_unlock(&pc->lock);
    return may_sleep;
}
