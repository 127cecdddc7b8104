# The UCX plugin's sources (included by Makefile.am under HAVE_UCX).
libhgx_core_la_SOURCES += src/na/ucx/ucx_int.h src/na/ucx/ucx_class.c src/na/ucx/ucx_ep.c \
	src/na/ucx/ucx_addr.c src/na/ucx/ucx_progress.c src/na/ucx/ucx_msg.c src/na/ucx/ucx_mem.c \
	src/na/ucx/ucx_rma.c src/na/ucx/ucx_wait.c src/na/ucx/ucx_credit.c src/na/ucx/ucx_late.c
