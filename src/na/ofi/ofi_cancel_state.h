/*
 * ofi_cancel_state.h -- the stages of a cancel the provider has not
 * confirmed, and the moves between them (private).
 *
 * fi_cancel stops receives at once; a send or RMA may stay with the
 * provider. Such an op is watched for HGX_NA_CANCEL_TIMEOUT_MS
 * (na_cancel_watch.h), then escalated: canceled again (it may have been
 * posted after the first try) and, where the class's ofi_cancel_policy
 * allows it, completed without the provider OFI_CANCEL_FORCE_MS later. An op
 * whose provider completion comes first leaves the watch or the escalation
 * for good. Every stage change goes through one function (ofi_cancel.c) that
 * checks the move against ofi_cst_move_legal.
 */
#ifndef HGX_OFI_CANCEL_STATE_H
#define HGX_OFI_CANCEL_STATE_H

#include <stdbool.h>

enum ofi_cst {
    OFI_CST_NONE,      /* no cancel waiting for the provider */
    OFI_CST_WATCHED,   /* canceled, the deadline running */
    OFI_CST_ESCALATED, /* canceled again at the deadline, perhaps to be forced */
    OFI_CST_FORCED,    /* completed without the provider (its contexts are ghosts) */
    OFI_CST_COUNT
};

/* Whether an op may go from stage `from` to stage `to` (false for any
 * stage out of range, and for staying put). */
bool ofi_cst_move_legal(enum ofi_cst from, enum ofi_cst to);

/* The stage's name for logs ("?" out of range). */
const char *ofi_cst_name(enum ofi_cst s);

/* Stages in which the op is on one of the class's cancel lists. */
static inline bool ofi_cst_listed(enum ofi_cst s)
{
    return s == OFI_CST_WATCHED || s == OFI_CST_ESCALATED;
}

#endif /* HGX_OFI_CANCEL_STATE_H */
