/**
 * @file na_mpi.h
 * Mercury 2.4.1's MPI plugin calls (NA 6.0), over hgx's "mpi+static" and
 * "mpi+dynamic" plugin.
 *
 * Installed only when libhgx was built with MPI; compile with the same MPI
 * (mpicc) that libhgx was configured with. See docs/mercury-compat.md for how
 * Mercury's communicator and port name map onto hgx.
 */
#ifndef NA_MPI_H
#define NA_MPI_H

#include "na.h"

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Set the MPI communicator that NA classes initialized after this call start
 * from (Mercury's "intra communicator": the local set of processes).
 *
 * The communicator is only remembered here and read by NA_Initialize, so MPI
 * must be initialized by the application before that and the communicator
 * must stay valid until then; NA duplicates it. MPI_COMM_NULL restores the
 * default (MPI_COMM_WORLD).
 * - mpi+static: as in Mercury, a communicator smaller than MPI_COMM_WORLD is
 *   one side (servers or clients) of a split of MPI_COMM_WORLD, and peers are
 *   reached on the other side too: hgx then runs on MPI_COMM_WORLD
 *   (NA_Initialize is collective over it). A communicator with every rank
 *   of MPI_COMM_WORLD is used as it is, and addresses are its ranks. An
 *   intercommunicator makes NA_Initialize fail with NA_INVALID_ARG.
 * - mpi+dynamic: each process connects and accepts on its own, so the
 *   communicator changes nothing.
 *
 * @param[in] intra_comm communicator, or MPI_COMM_NULL for the default.
 * @return NA_SUCCESS (always, as Mercury: the communicator is checked, with
 *         a log line, when NA_Initialize uses it).
 */
NA_PUBLIC na_return_t NA_MPI_Set_init_intra_comm(MPI_Comm intra_comm);

/**
 * Get the name under which this process of an MPI class is reached: the
 * string a peer passes to NA_Addr_lookup, the same as NA_Addr_to_string of
 * NA_Addr_self. As in Mercury, it is meant for servers (classes initialized
 * with listen): "mpi+static://RANK", or for a listening mpi+dynamic class
 * "mpi+dynamic://PORT" with the MPI port name (MPI_Open_port) percent-escaped.
 * An mpi+static class that does not listen also gets its address.
 *
 * MPI libraries without MPI_Open_port (MPICH built with ch4:ucx) cannot
 * create an mpi+dynamic class at all: NA_Initialize fails there with a log
 * line naming MPI_Open_port.
 *
 * @param[in] na_class an NA class of the MPI plugin.
 * @return a string owned by @p na_class, valid until NA_Finalize; NULL with
 *         a log line when @p na_class is NULL, of another plugin, or an
 *         mpi+dynamic class that does not listen (it has no port).
 */
NA_PUBLIC const char *NA_MPI_Get_port_name(na_class_t *na_class);

#ifdef __cplusplus
}
#endif

#endif /* NA_MPI_H */
