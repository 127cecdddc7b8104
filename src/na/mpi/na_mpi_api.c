/*
 * na_mpi_api.c -- Mercury's public MPI plugin calls (na_mpi.h): argument
 * checks and log lines, over the plugin's hooks (na_mpi_int.h).
 */
#include "na_mpi.h"
#include "na_mpi_int.h"
#include "na_plugin.h"

na_return_t NA_MPI_Set_init_intra_comm(MPI_Comm intra_comm)
{
    na_mpi_set_intra_comm(intra_comm);
    return NA_SUCCESS;
}

const char *NA_MPI_Get_port_name(na_class_t *na_class)
{
    if (!na_class) {
        HGX_LOG_ERROR(MPI, "NA_MPI_Get_port_name: NULL class");
        return NULL;
    }
    if (na_class->ops != &na_mpi_ops) {
        HGX_LOG_ERROR(MPI, "NA_MPI_Get_port_name: the class is of plugin \"%s\", not mpi",
                      na_class->ops->class_name);
        return NULL;
    }
    const char *s = na_mpi_port_string(na_class);
    if (!s)
        HGX_LOG_ERROR(MPI,
                      "NA_MPI_Get_port_name: this mpi+%s class has no port (only a class "
                      "initialized with listen opens one)",
                      na_class->protocol_name);
    return s;
}
