/*
 * hgx_mreqtab.h -- table of outstanding MPI requests driven by MPI_Testsome (private).
 *
 * Every nonblocking MPI call of the MPI plugin and of mpi_emul is recorded here
 * with a handler. hgx_mreqtab_poll() tests them all at once and runs the
 * handler of each completed request after it left the table, so handlers may
 * post new requests. Cancelling is done on a copy of the MPI_Request handle
 * (MPI_Cancel does not free it); the request then completes here as usual and
 * the handler reads MPI_Test_cancelled on its status.
 */
#ifndef HGX_MREQTAB_H
#define HGX_MREQTAB_H

#include "na_types.h"

#include <mpi.h>
#include <stdint.h>

/* err: MPI error of this request (MPI_SUCCESS, MPI_ERR_TRUNCATE, ...). */
typedef void (*hgx_mreq_fn)(void *obj, uintptr_t aux, int err, const MPI_Status *status);

struct hgx_mreq_ent {
    hgx_mreq_fn fn;
    void *obj;
    uintptr_t aux;
};

struct hgx_mreqtab {
    MPI_Request *reqs;
    struct hgx_mreq_ent *ents;
    MPI_Status *statuses;
    int *indices;
    int n, cap;
};

void hgx_mreqtab_init(struct hgx_mreqtab *t);
/* Cancel what is left, wait up to timeout_ms for it, free the rest; free the table. */
void hgx_mreqtab_destroy(struct hgx_mreqtab *t, unsigned int timeout_ms);
/* Record req; returns 0, or -1 when out of memory (req is then untouched). */
int hgx_mreqtab_add(struct hgx_mreqtab *t, MPI_Request req, hgx_mreq_fn fn, void *obj,
                    uintptr_t aux);
/* Test all, run handlers of completed ones; *ndone = number completed. MPI error code. */
int hgx_mreqtab_poll(struct hgx_mreqtab *t, int *ndone);

/* Receive and discard the matched message msg a matched probe returned st
 * for, whatever its size (also above INT_MAX bytes, where MPI_Get_count has no
 * answer), never truncating it (MPICH raises MPI_ERR_TRUNCATE on
 * MPI_COMM_WORLD, whatever the handler of the message's communicator). MPI
 * error code. */
int hgx_mpi_mrecv_drop(MPI_Message *msg, const MPI_Status *st);

/* The NA return code of MPI error code rc, the same for the plugin and the
 * emulation: a truncation is NA_MSGSIZE, no memory NA_NOMEM, a bad rank,
 * tag or count NA_INVALID_ARG, anything else NA_PROTOCOL_ERROR. */
na_return_t hgx_mpi_err_to_na(int rc);

#endif
