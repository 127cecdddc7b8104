/*
 * emul_state.h -- the state machines of an emulated put/get (private): their
 * states, the table of legal moves, and the one check every move goes
 * through. docs/mpi-emul-cancel.md draws the same tables.
 *
 * An origin request runs two machines side by side: its transfer (what its
 * data does) and its cancel (where the IMPI remote cancel is). Each moves on
 * its own packets and timers; their product would be some thirty states of
 * which any handler touches one coordinate. A target request runs one.
 */
#ifndef HGX_EMUL_STATE_H
#define HGX_EMUL_STATE_H

#include <stdbool.h>
#include <stdint.h>

/* Origin request: its transfer. */
enum hgx_emul_oxfer {
    HGX_EMUL_OX_WAIT_CTS,  /* put: request sent, the target's CTS not yet come */
    HGX_EMUL_OX_SENDING,   /* put: CTS came, data sends posted, waiting for ACK */
    HGX_EMUL_OX_RECEIVING, /* get: request sent, chunks taken as they arrive */
    HGX_EMUL_OX_ABORTED,   /* put: ABORT sent, no (more) data from us */
    HGX_EMUL_OX_REPLIED,   /* ACK or ERR came (a get: ERR): the target's outcome */
    HGX_EMUL_OX_N
};

/* Origin request: its cancel. */
enum hgx_emul_ocancel {
    HGX_EMUL_OC_NONE,       /* no cancel asked */
    HGX_EMUL_OC_SENT,       /* CANCEL sent, its answer awaited within the bound */
    HGX_EMUL_OC_YES,        /* CANCELYES in time: the request is dropped */
    HGX_EMUL_OC_NO,         /* CANCELNO in time: the transfer completes in full */
    HGX_EMUL_OC_ZOMBIE,     /* no answer in time: cancelled locally, answer awaited */
    HGX_EMUL_OC_ZOMBIE_YES, /* local cancel, then a late CANCELYES */
    HGX_EMUL_OC_ZOMBIE_NO,  /* local cancel, then a late CANCELNO (a get's chunks come) */
    HGX_EMUL_OC_EXPIRED,    /* zombie life over: nothing more is awaited */
    HGX_EMUL_OC_N
};

/* Target request. */
enum hgx_emul_tstate {
    HGX_EMUL_T_RECEIVED, /* control packet arrived, nothing written or sent yet */
    HGX_EMUL_T_APPLYING, /* get: data sends posted; put: CTS sent, chunks taken */
    HGX_EMUL_T_ABORTED,  /* put: ABORT came, the chunks still in flight are dropped */
    HGX_EMUL_T_DONE,     /* finished, refused or cancelled: the record is freed */
    HGX_EMUL_T_N
};

enum hgx_emul_machine {
    HGX_EMUL_M_OXFER,   /* enum hgx_emul_oxfer */
    HGX_EMUL_M_OCANCEL, /* enum hgx_emul_ocancel */
    HGX_EMUL_M_TARGET,  /* enum hgx_emul_tstate */
    HGX_EMUL_M_N
};

#pragma GCC visibility push(hidden)

/** Number of states of machine m (0 for an unknown machine). */
unsigned hgx_emul_nstates(enum hgx_emul_machine m);

/** Name of state s of machine m ("?" when out of range), for logs. */
const char *hgx_emul_state_name(enum hgx_emul_machine m, unsigned s);

/** Whether machine m may move from state from to state to (the table). */
bool hgx_emul_move_legal(enum hgx_emul_machine m, unsigned from, unsigned to);

/**
 * Check and trace the move of machine m of request id (peer rank): logged at
 * debug level with both state names; an illegal move is logged as an error
 * and asserted. The caller makes the move.
 */
void hgx_emul_move(enum hgx_emul_machine m, unsigned from, unsigned to, uint32_t id,
                   int peer);

#pragma GCC visibility pop

#endif
