# The libfabric plugin's sources (included by Makefile.am under HAVE_OFI).
libhgx_core_la_SOURCES += src/na/ofi/ofi_int.h src/na/ofi/ofi_class.c src/na/ofi/ofi_addr.c \
	src/na/ofi/ofi_mem.c src/na/ofi/ofi_op.c src/na/ofi/ofi_rma.c src/na/ofi/ofi_msg.c \
	src/na/ofi/ofi_cq.c src/na/ofi/ofi_reach.c src/na/ofi/ofi_link.c src/na/ofi/ofi_cancel.c src/na/ofi/ofi_cancel_state.c \
	src/na/ofi/ofi_cancel_state.h src/na/ofi/ofi_ctrl.c src/na/ofi/ofi_pieces.c src/na/ofi/ofi_late.c \
	src/na/ofi/na_ofi_check.c src/na/ofi/na_ofi_check.h
