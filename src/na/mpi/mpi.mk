# The MPI plugin's sources, with the one-sided emulation it runs on and the
# MPI request bridge (included by Makefile.am under HAVE_MPI).
libhgx_core_la_SOURCES += src/na/mpi/na_mpi.c src/na/mpi/na_mpi_addr.c \
	src/na/mpi/na_mpi_dynamic.c src/na/mpi/na_mpi_msg.c src/na/mpi/na_mpi_rma.c \
	src/na/mpi/na_mpi_progress.c src/na/mpi/na_mpi_late.c src/na/mpi/na_mpi_priv.h src/na/mpi/na_mpi_int.h \
	src/na/mpi/na_mpi_api.c \
	src/mpi_emul/hgx_emul.c src/mpi_emul/hgx_emul.h src/mpi_emul/emul_int.h \
	src/mpi_emul/emul_registry.c src/mpi_emul/emul_wire.c src/mpi_emul/emul_data.c \
	src/mpi_emul/emul_origin.c src/mpi_emul/emul_target.c \
	src/mpi_emul/emul_state.c src/mpi_emul/emul_state.h \
	src/mpi_emul/hgx_mreqtab.c src/mpi_emul/hgx_mreqtab.h \
	src/req/hgx_mpi.c
include_HEADERS += include/hgx_mpi.h include/na_mpi.h
