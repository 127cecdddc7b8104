/*
 * emul_state.c -- the tables of legal moves of the emulation's state
 * machines (emul_state.h, docs/mpi-emul-cancel.md) and their check.
 */
#include "config.h"
#include "emul_state.h"

#include "hgx_assert.h"
#include "hgx_log.h"

#define TO(s) (1u << (s))

static const char *const oxfer_names[HGX_EMUL_OX_N] = {
    [HGX_EMUL_OX_WAIT_CTS] = "WAIT_CTS",   [HGX_EMUL_OX_SENDING] = "SENDING",
    [HGX_EMUL_OX_RECEIVING] = "RECEIVING", [HGX_EMUL_OX_ABORTED] = "ABORTED",
    [HGX_EMUL_OX_REPLIED] = "REPLIED",
};

/* ERR refuses a request in any stage; an ACK that crossed our ABORT still
 * reports what the target applied. */
static const uint32_t oxfer_moves[HGX_EMUL_OX_N] = {
    [HGX_EMUL_OX_WAIT_CTS] =
        TO(HGX_EMUL_OX_SENDING) | TO(HGX_EMUL_OX_ABORTED) | TO(HGX_EMUL_OX_REPLIED),
    [HGX_EMUL_OX_SENDING] = TO(HGX_EMUL_OX_ABORTED) | TO(HGX_EMUL_OX_REPLIED),
    [HGX_EMUL_OX_RECEIVING] = TO(HGX_EMUL_OX_REPLIED),
    [HGX_EMUL_OX_ABORTED] = TO(HGX_EMUL_OX_REPLIED),
};

static const char *const ocancel_names[HGX_EMUL_OC_N] = {
    [HGX_EMUL_OC_NONE] = "NONE",           [HGX_EMUL_OC_SENT] = "CANCEL_SENT",
    [HGX_EMUL_OC_YES] = "CANCEL_YES",      [HGX_EMUL_OC_NO] = "CANCEL_NO",
    [HGX_EMUL_OC_ZOMBIE] = "ZOMBIE",       [HGX_EMUL_OC_ZOMBIE_YES] = "ZOMBIE_YES",
    [HGX_EMUL_OC_ZOMBIE_NO] = "ZOMBIE_NO", [HGX_EMUL_OC_EXPIRED] = "EXPIRED",
};

/* One cancel per request; an answer is taken once; the zombie life runs out
 * whether or not the late answer came. */
static const uint32_t ocancel_moves[HGX_EMUL_OC_N] = {
    [HGX_EMUL_OC_NONE] = TO(HGX_EMUL_OC_SENT),
    [HGX_EMUL_OC_SENT] =
        TO(HGX_EMUL_OC_YES) | TO(HGX_EMUL_OC_NO) | TO(HGX_EMUL_OC_ZOMBIE),
    [HGX_EMUL_OC_ZOMBIE] =
        TO(HGX_EMUL_OC_ZOMBIE_YES) | TO(HGX_EMUL_OC_ZOMBIE_NO) | TO(HGX_EMUL_OC_EXPIRED),
    [HGX_EMUL_OC_ZOMBIE_YES] = TO(HGX_EMUL_OC_EXPIRED),
    [HGX_EMUL_OC_ZOMBIE_NO] = TO(HGX_EMUL_OC_EXPIRED),
};

static const char *const tstate_names[HGX_EMUL_T_N] = {
    [HGX_EMUL_T_RECEIVED] = "RECEIVED",
    [HGX_EMUL_T_APPLYING] = "APPLYING",
    [HGX_EMUL_T_ABORTED] = "ABORTED",
    [HGX_EMUL_T_DONE] = "DONE",
};

/* A request not started yet can still be dropped (CANCEL, ABORT, refusal). */
static const uint32_t tstate_moves[HGX_EMUL_T_N] = {
    [HGX_EMUL_T_RECEIVED] = TO(HGX_EMUL_T_APPLYING) | TO(HGX_EMUL_T_DONE),
    [HGX_EMUL_T_APPLYING] = TO(HGX_EMUL_T_ABORTED) | TO(HGX_EMUL_T_DONE),
    [HGX_EMUL_T_ABORTED] = TO(HGX_EMUL_T_DONE),
};

static const struct machine {
    const char *what;
    unsigned n;
    const char *const *names;
    const uint32_t *moves;
} machines[HGX_EMUL_M_N] = {
    [HGX_EMUL_M_OXFER] = {"origin transfer", HGX_EMUL_OX_N, oxfer_names, oxfer_moves},
    [HGX_EMUL_M_OCANCEL] = {"origin cancel", HGX_EMUL_OC_N, ocancel_names, ocancel_moves},
    [HGX_EMUL_M_TARGET] = {"target", HGX_EMUL_T_N, tstate_names, tstate_moves},
};

unsigned hgx_emul_nstates(enum hgx_emul_machine m)
{
    return (unsigned)m < HGX_EMUL_M_N ? machines[m].n : 0;
}

const char *hgx_emul_state_name(enum hgx_emul_machine m, unsigned s)
{
    return s < hgx_emul_nstates(m) ? machines[m].names[s] : "?";
}

bool hgx_emul_move_legal(enum hgx_emul_machine m, unsigned from, unsigned to)
{
    unsigned n = hgx_emul_nstates(m);
    return from < n && to < n && (machines[m].moves[from] & TO(to)) != 0;
}

void hgx_emul_move(enum hgx_emul_machine m, unsigned from, unsigned to, uint32_t id,
                   int peer)
{
    bool legal = hgx_emul_move_legal(m, from, to);
    if (!legal)
        HGX_LOG_ERROR(MPI_EMUL, "illegal %s move of request %u (rank %d): %s -> %s",
                      (unsigned)m < HGX_EMUL_M_N ? machines[m].what : "?", id, peer,
                      hgx_emul_state_name(m, from), hgx_emul_state_name(m, to));
    else
        HGX_LOG_DEBUG(MPI_EMUL, "%s of request %u (rank %d): %s -> %s", machines[m].what,
                      id, peer, hgx_emul_state_name(m, from), hgx_emul_state_name(m, to));
    HGX_ASSERT(legal);
}
