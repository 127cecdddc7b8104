/*
 * ofi_cancel.c -- NA_Cancel and the escalation of canceled ops the provider keeps.
 */
#include "ofi_int.h"

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
        hgx_list_linked(&oop->cancel_link)) {
        ofi_mutex_unlock(cls, &cls->lock);
        return NA_SUCCESS;
    }
    bool dequeued = oop->retry_queued && !ofi_op_unstoppable(oop);
    if (dequeued)
        ofi_retry_unlink_locked(cls, oop);
    if (!dequeued || oop->posted > 0) {
        oop->cancel_deadline_ms = hgx_clock_now_ms() + OFI_CANCEL_ESCALATE_MS;
        ofi_list_push(&cls->canceled, &oop->cancel_link);
        ofi_cancel_contexts_locked(cls, oop);
    }
    ofi_mutex_unlock(cls, &cls->lock);
    if (dequeued)
        ofi_abandon_canceled(cls, oop);
    return NA_SUCCESS;
}

/* First step for a canceled op still pending: cancel again (it may have been
 * posted after the first try). */
static void ofi_cancel_escalate_locked(struct ofi_class *cls, struct ofi_op *oop)
{
    oop->escalated = true;
    ofi_cancel_contexts_locked(cls, oop);
}

/* Whether the policy lets a stuck canceled op complete without the provider. */
static bool ofi_cancel_may_force(const struct ofi_class *cls, const struct ofi_op *oop)
{
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

    HGX_LOG_WARNING(OFI, "canceled operation still pending after %d ms; completing it",
                    OFI_CANCEL_ESCALATE_MS + OFI_CANCEL_FORCE_MS);
    ofi_list_remove(&cls->canceled, &oop->cancel_link);
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
    while (atomic_load(&cls->canceled.count) > 0) {
        uint64_t now = hgx_clock_now_ms();
        struct ofi_op *forced = NULL;
        size_t claimed = 0;

        ofi_mutex_lock(cls, &cls->lock);
        struct hgx_list *link;
        hgx_list_for_each(link, &cls->canceled.head)
        {
            struct ofi_op *oop = hgx_list_entry(link, struct ofi_op, cancel_link);
            if (!oop->escalated && now >= oop->cancel_deadline_ms)
                ofi_cancel_escalate_locked(cls, oop);
            else if (oop->escalated && ofi_cancel_may_force(cls, oop) &&
                     now >= oop->cancel_deadline_ms + OFI_CANCEL_FORCE_MS) {
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
            else
                ofi_op_finish(cls, forced, NA_CANCELED);
        }
    }
}
