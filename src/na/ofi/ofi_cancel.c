/*
 * ofi_cancel.c -- NA_Cancel and the escalation of canceled ops the provider keeps.
 */
#include "ofi_int.h"

/* Every change of an op's cancel stage: checks the move and keeps the
 * watch, the escalated list and n_canceling in step with the stage. */
static void ofi_cancel_move_locked(struct ofi_class *cls, struct ofi_op *oop,
                                   enum ofi_cst to, uint64_t now_ns)
{
    enum ofi_cst from = oop->cancel_state;

    HGX_ASSERT(ofi_cst_move_legal(from, to));
    HGX_LOG_DEBUG(OFI, "canceled op %p: %s -> %s", (void *)oop, ofi_cst_name(from),
                  ofi_cst_name(to));
    if (from == OFI_CST_WATCHED)
        na_cancel_watch_stop(&oop->cancel_watch);
    else if (from == OFI_CST_ESCALATED) {
        hgx_list_remove(&oop->cancel_link);
        ofi_link_release_locked(cls, oop);
    }
    if (to == OFI_CST_WATCHED) {
        na_cancel_watch_start(&cls->cancel_watcher, &oop->cancel_watch, now_ns);
    } else if (to == OFI_CST_ESCALATED) {
        oop->force_deadline_ns =
            oop->cancel_watch.deadline_ns + (uint64_t)OFI_CANCEL_FORCE_MS * HGX_NS_PER_MS;
        hgx_list_push_back(&cls->escalated, &oop->cancel_link);
    }
    if (ofi_cst_listed(to) && !ofi_cst_listed(from))
        atomic_fetch_add(&cls->n_canceling, 1);
    else if (ofi_cst_listed(from) && !ofi_cst_listed(to))
        atomic_fetch_sub(&cls->n_canceling, 1);
    oop->cancel_state = to;
}

/* The op completed: it leaves the watch or the escalation. */
void ofi_cancel_unlist_locked(struct ofi_class *cls, struct ofi_op *oop)
{
    if (ofi_cst_listed(oop->cancel_state))
        ofi_cancel_move_locked(cls, oop, OFI_CST_NONE, 0);
}

/* Receives, and put/get waiting for their RMA check, cancel at once. Sends
 * and RMA cannot be recalled by the providers;
 * they stay listed until their completion (reported as it is), and
 * ofi_cancel_check escalates if that takes too long. Ops still in the retry
 * queue end right away. */
na_return_t ofi_cancel(na_class_t *na_class, na_context_t *context, na_op_id_t *op)
{
    struct ofi_class *cls = ofi_class(na_class);
    struct ofi_op *oop = ofi_op(op);

    (void)context;
    if (ofi_check_cancel(cls, oop)) {
        ofi_op_finish(cls, oop, NA_CANCELED);
        return NA_SUCCESS;
    }
    ofi_mutex_lock(cls, &cls->lock);
    /* The completion may have been handled meanwhile, or the op reposted. */
    if (!na_op_cancel_requested(op) || atomic_load(&oop->done) ||
        oop->cancel_state != OFI_CST_NONE) {
        ofi_mutex_unlock(cls, &cls->lock);
        return NA_SUCCESS;
    }
    bool dequeued = oop->retry_queued && !ofi_op_unstoppable(oop);
    if (dequeued)
        ofi_retry_unlink_locked(cls, oop);
    if (!dequeued || oop->posted > 0) {
        ofi_cancel_move_locked(cls, oop, OFI_CST_WATCHED, hgx_clock_now_ns());
        ofi_cancel_contexts_locked(cls, oop);
    }
    ofi_mutex_unlock(cls, &cls->lock);
    if (dequeued)
        ofi_abandon_canceled(cls, oop);
    return NA_SUCCESS;
}

/* Whether the policy lets a stuck canceled op complete without the provider. */
static bool ofi_cancel_may_force(const struct ofi_class *cls, const struct ofi_op *oop)
{
    if (oop->recalled) /* the provider no longer holds its buffer */
        return true;
    switch (cls->proto->cancel_policy) {
    case OFI_CANCEL_FORCE:
        return true;
    case OFI_CANCEL_FORCE_GETS:
        /* only what lands in the bounce buffer: a whole small get, a head */
        return oop->bounce != NULL && !atomic_load(&oop->gate_open);
    default:
        return false;
    }
}

/* Second step (policies that allow it): claim the contexts the provider
 * still holds (they become ghosts, recycled if a completion ever shows up)
 * and return how many parts the caller must now end itself. */
static size_t ofi_cancel_force_locked(struct ofi_class *cls, struct ofi_op *oop)
{
    size_t claimed = 0;

    unsigned long long ms =
        cls->cancel_watcher.timeout_ns / HGX_NS_PER_MS + OFI_CANCEL_FORCE_MS;
    if (oop->recalled) /* one per receive, hundreds at a time: not worth a warning each */
        HGX_LOG_DEBUG(OFI,
                      "canceled receive taken back by the provider, no report after "
                      "%llu ms; completing it",
                      ms);
    else
        HGX_LOG_WARNING(
            OFI, "canceled operation still pending after %llu ms; completing it", ms);
    ofi_cancel_move_locked(cls, oop, OFI_CST_FORCED, 0);
    for (size_t i = 0; i < oop->posted; i++)
        if (oop->parts[i] && atomic_exchange(&oop->parts[i]->op, NULL)) {
            oop->parts[i] = NULL;
            claimed++;
        }
    return claimed;
}

/* Listed ops can only finish through ofi_op_finish, which unlists them under
 * the lock first: while we hold it, every listed op is alive. */
void ofi_cancel_check(struct ofi_class *cls)
{
    while (atomic_load(&cls->n_canceling) > 0) {
        uint64_t now = hgx_clock_now_ns();
        struct na_cancel_watch *watch;
        struct hgx_list *link;
        struct ofi_op *forced = NULL;
        size_t claimed = 0;

        ofi_mutex_lock(cls, &cls->lock);
        /* First step: cancel again (the op may have been posted after the
         * first try). */
        while ((watch = na_cancel_watcher_expired(&cls->cancel_watcher, now))) {
            struct ofi_op *oop =
                (struct ofi_op *)((char *)watch - offsetof(struct ofi_op, cancel_watch));
            ofi_cancel_move_locked(cls, oop, OFI_CST_ESCALATED, now);
            ofi_cancel_contexts_locked(cls, oop);
        }
        hgx_list_for_each(link, &cls->escalated)
        {
            struct ofi_op *oop = hgx_list_entry(link, struct ofi_op, cancel_link);
            bool may_force = ofi_cancel_may_force(cls, oop);
            /* Only the provider can end it: bound its wait for a dead host. */
            if (!may_force)
                ofi_link_hold_locked(cls, oop);
            if (may_force && hgx_clock_passed(now, oop->force_deadline_ns)) {
                claimed = ofi_cancel_force_locked(cls, oop);
                forced = oop;
                break;
            }
        }
        ofi_mutex_unlock(cls, &cls->lock);
        if (!forced)
            return;
        /* The claimed parts keep the op alive until we end them here. */
        for (size_t i = 0; i < claimed; i++) {
            if (ofi_op_is_rma(forced))
                ofi_rma_part_end(cls, forced, NA_CANCELED);
            else if (forced->split)
                ofi_part_done(cls, forced, NA_CANCELED);
            else
                ofi_op_finish(cls, forced, NA_CANCELED);
        }
    }
}
