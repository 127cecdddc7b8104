/*
 * na_mpi_int.h -- internal hooks of the MPI NA plugin (private).
 */
#ifndef NA_MPI_INT_H
#define NA_MPI_INT_H

#include "na.h"

#include <mpi.h>

/* Use comm (duplicated at NA_Initialize) instead of MPI_COMM_WORLD for classes
 * initialized after this call; MPI_COMM_NULL restores the default. The caller
 * owns MPI: it must have initialized it, and the plugin then neither
 * initializes nor finalizes it. Addresses are ranks in comm. */
void na_mpi_set_comm(MPI_Comm comm);

/* Mercury's intra communicator for classes initialized after this call
 * (NA_MPI_Set_init_intra_comm); MPI_COMM_NULL restores the default. */
void na_mpi_set_intra_comm(MPI_Comm comm);

/* The address string of an MPI class's own process, kept by the class; NULL
 * for an mpi+dynamic class that does not listen (it has no port). */
const char *na_mpi_port_string(na_class_t *na_class);

#endif
