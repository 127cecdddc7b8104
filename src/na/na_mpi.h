/*
 * na_mpi.h -- internal hooks of the MPI NA plugin (private).
 */
#ifndef NA_MPI_H
#define NA_MPI_H

#include <mpi.h>

/* Use comm (duplicated at NA_Initialize) instead of MPI_COMM_WORLD for classes
 * initialized after this call; MPI_COMM_NULL restores the default. The caller
 * owns MPI: it must have initialized it, and the plugin then neither
 * initializes nor finalizes it. Addresses are ranks in comm. */
void na_mpi_set_comm(MPI_Comm comm);

#endif
