/*
 * versions.c -- versions hgx-info reports: hgx and the Mercury/NA API it
 * implements, and each transport library as built against and as loaded.
 */
#include "config.h"
#include "hgx_info.h"

#include <na.h>

#include <stdio.h>

#ifdef HGX_HAVE_OFI
#include <rdma/fabric.h>
#endif
#ifdef HGX_HAVE_UCX
#include <ucp/api/ucp.h>
#endif
#ifdef HGX_HAVE_MPI
#include <mpi.h>
#include <string.h>
#endif

#ifdef HGX_HAVE_MPI
/* The build-time MPI implementation, from the macros its mpi.h defines. */
static void print_mpi_built(void)
{
#if defined(OMPI_MAJOR_VERSION)
    printf("Open MPI %d.%d.%d", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
           OMPI_RELEASE_VERSION);
#elif defined(MPICH_VERSION)
    printf("MPICH %s", MPICH_VERSION);
#else
    printf("unknown implementation");
#endif
    printf(" (MPI %d.%d)", MPI_VERSION, MPI_SUBVERSION);
}

static void print_mpi(void)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;

    printf("  %-10s built ", "MPI");
    print_mpi_built();
    /* Callable before MPI_Init (MPI-3.0); only its first line names the library. */
    if (MPI_Get_library_version(lib, &len) == MPI_SUCCESS) {
        lib[len < (int)sizeof lib ? len : (int)sizeof lib - 1] = '\0';
        lib[strcspn(lib, "\n,")] = '\0';
        printf(", running %s\n", lib);
    } else {
        printf(", running: MPI_Get_library_version failed\n");
    }
}
#endif

void hgx_info_list_versions(void)
{
    unsigned int major = 0, minor = 0, patch = 0;

    printf("versions:\n");
    printf("  %-10s %s\n", "hgx", PACKAGE_VERSION);
    HG_Version_get(&major, &minor, &patch);
    printf("  %-10s %u.%u.%u (Mercury API)\n", "mercury", major, minor, patch);
    NA_Version_get(&major, &minor, &patch);
    printf("  %-10s %u.%u.%u (NA API)\n", "na", major, minor, patch);
#ifdef HGX_HAVE_OFI
    uint32_t v = fi_version();
    printf("  %-10s built %d.%d, running %u.%u\n", "libfabric", FI_MAJOR_VERSION,
           FI_MINOR_VERSION, FI_MAJOR(v), FI_MINOR(v));
#endif
#ifdef HGX_HAVE_UCX
    printf("  %-10s built %d.%d, running %s\n", "UCX", UCP_API_MAJOR, UCP_API_MINOR,
           ucp_get_version_string());
#endif
#ifdef HGX_HAVE_MPI
    print_mpi();
#endif
}
