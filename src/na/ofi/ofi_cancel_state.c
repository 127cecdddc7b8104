/*
 * ofi_cancel_state.c -- legal moves of the OFI cancel escalation
 * (ofi_cancel_state.h).
 */
#include "ofi_cancel_state.h"

/* legal[from] is the set of stages an op may move to from `from`. */
static const unsigned legal[OFI_CST_COUNT] = {
    [OFI_CST_NONE] = 1u << OFI_CST_WATCHED,
    /* the deadline passed, or the provider completed the op */
    [OFI_CST_WATCHED] = 1u << OFI_CST_ESCALATED | 1u << OFI_CST_NONE,
    /* forced by the policy, or the provider completed the op */
    [OFI_CST_ESCALATED] = 1u << OFI_CST_FORCED | 1u << OFI_CST_NONE,
    /* the op ends through its claimed contexts; it starts over as NONE */
    [OFI_CST_FORCED] = 0,
};

static const char *const names[OFI_CST_COUNT] = {
    [OFI_CST_NONE] = "none",
    [OFI_CST_WATCHED] = "watched",
    [OFI_CST_ESCALATED] = "escalated",
    [OFI_CST_FORCED] = "forced",
};

bool ofi_cst_move_legal(enum ofi_cst from, enum ofi_cst to)
{
    if ((unsigned)from >= OFI_CST_COUNT || (unsigned)to >= OFI_CST_COUNT)
        return false;
    return (legal[from] >> to) & 1u;
}

const char *ofi_cst_name(enum ofi_cst s)
{
    return (unsigned)s < OFI_CST_COUNT ? names[s] : "?";
}
