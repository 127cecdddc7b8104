/*
 * hgx_test_hooks.h -- every test hook of the library (private): the calls that
 * exist only so that tests can read or disturb state no public call reaches.
 *
 * Who sees them: libhgx.so exports the public API and nothing else (its export
 * list, checked by tools/check-exports.sh), so no hook is part of the product.
 * The tests that call hooks link libhgx_internal.so, built from the same
 * objects, which exports every symbol of default visibility; HGX_TEST_HOOK
 * keeps a hook at default visibility even where the file defining it hides the
 * rest (#pragma GCC visibility). A hook is defined next to the state it reads,
 * in the file named above it; that file sees this header through its module's
 * private header, so the compiler checks that definition and declaration agree.
 * Tests declare no hook themselves: they include this header.
 */
#ifndef HGX_TEST_HOOKS_H
#define HGX_TEST_HOOKS_H

#include "mercury_types.h"
#include "na_types.h"

#include <stdbool.h>

#define HGX_TEST_HOOK __attribute__((visibility("default")))

/* ---- HG (src/hg/hg_handle.c) */

/* Flip a byte of the next RPC header hg_class sends, after its checksum was
 * computed, so that the peer meets a checksum mismatch. */
HGX_TEST_HOOK void hgx_test_corrupt_next_header(hg_class_t *hg_class);

/* ---- HG (src/hg/hg_context.c) */

/* Unexpected receives a listening context owns: request_post_init, plus
 * request_post_incr for each time they were all consumed at once. */
HGX_TEST_HOOK unsigned int hgx_test_hg_posts(hg_context_t *context);

/* ---- NA MPI plugin (src/na/mpi/na_mpi_msg.c) */

/* Messages an MPI class has taken from MPI and holds for NA receives not
 * posted yet: never above HGX_NA_UNEXPECTED_MAX. */
HGX_TEST_HOOK int na_mpi_held_count(na_class_t *na_class);
/* Expected messages dropped for coming after their receive was cancelled
 * (src/na/mpi/na_mpi_late.c). */
HGX_TEST_HOOK unsigned long na_mpi_late_dropped(na_class_t *na_class);

/* ---- put/get emulation over MPI (src/mpi_emul/hgx_emul.c) */

/* Process-wide cancel counters of every emulation instance
 * (docs/mpi-emul-cancel.md says what each case is). */
struct hgx_emul_counters {
    unsigned long cancel_requested; /* CANCEL packets sent by origins */
    unsigned long cancel_yes;       /* CANCELYES received in time */
    unsigned long cancel_no;        /* CANCELNO received in time */
    unsigned long cancel_timeout;   /* no answer within the bound: turned local */
    unsigned long late_replies; /* answers for timed-out / forgotten requests, dropped */
    /* data chunks received into scratch and dropped: the rest of a get cancelled
     * locally, or of a transfer that failed */
    unsigned long late_data_dropped;
    /* data messages that failed a check (size, source, no transfer on the tag):
     * received into scratch and dropped, logged */
    unsigned long bad_data;
    /* timed-out get whose data had partly landed (target stalled mid-transfer;
     * see docs/mpi-emul-cancel.md) */
    unsigned long partial_local;
    unsigned long target_yes;      /* requests dropped by a target (answered CANCELYES) */
    unsigned long target_no;       /* cancels refused by a target (CANCELNO) */
    unsigned long tombstone_drops; /* requests dropped because a tombstone named them */
    unsigned long aborts; /* ABORTs handled by a target (timed-out put after CTS) */
    /* put records a target dropped after CTS because no chunk came for the
     * target bound (HGX_MPI_TARGET_IDLE_MS): origin dead or silent */
    unsigned long target_expired;
    /* gauges: what is alive right now (0 when everything is quiet => nothing leaked) */
    unsigned long origin_active;  /* origin requests holding an id (incl. zombies) */
    unsigned long target_records; /* target request records (RECEIVED + APPLYING) */
    unsigned long tombstones;     /* live tombstones */
};
HGX_TEST_HOOK void hgx_emul_get_counters(struct hgx_emul_counters *c);

/* ---- NA OFI plugin (src/na/ofi/ofi_class.c) */

/* Counters of an ofi class: its RMA check, its messages in two pieces, the
 * late messages of cancelled receives (docs/na-ofi.md). */
struct hgx_ofi_ctrl_counts {
    unsigned long bad;            /* malformed control messages dropped */
    unsigned long refused;        /* CHECKs this class refused */
    unsigned long stale;          /* answers that matched no waiting op */
    unsigned long pieces_dropped; /* first pieces dropped without their second */
    unsigned long late_dropped;   /* messages of cancelled expected receives dropped */
    unsigned long late_seconds;   /* second pieces of cancelled receives dropped */
};
/* The counters of na_class; zeros for a class of another plugin. */
HGX_TEST_HOOK void hgx_ofi_ctrl_counts(const na_class_t *na_class,
                                       struct hgx_ofi_ctrl_counts *c);

/* ---- NA UCX plugin: counters over every class of the process */

/* Sends queued for resources (src/na/ucx/ucx_progress.c): 0 once they drained. */
HGX_TEST_HOOK long na_ucx_pending_count(void);
/* Unexpected messages kept with no receive posted, and in *peak (unless NULL)
 * the most ever kept at once (src/na/ucx/ucx_progress.c). */
HGX_TEST_HOOK long na_ucx_held_count(long *peak);
/* Unexpected messages dropped for naming a context id the class does not have
 * (src/na/ucx/ucx_msg.c). */
HGX_TEST_HOOK long na_ucx_misaddressed_count(void);
/* Expected messages taken from UCX and dropped: late ones (their receive was
 * cancelled) and, at finalize, any UCX still held (src/na/ucx/ucx_late.c). */
HGX_TEST_HOOK long na_ucx_late_dropped_count(void);
/* Flow control of unexpected messages (src/na/ucx/ucx_credit.c): the credits
 * a sender has per peer connection, the messages receivers dropped for
 * exceeding them, and the credit returns senders dropped as malformed,
 * unknown or above what was spent. */
struct na_ucx_credit_counts {
    long credits;
    long dropped;
    long bad_returns;
};
HGX_TEST_HOOK void na_ucx_credit_counts(struct na_ucx_credit_counts *c);
/* RMA requests refused by a region check, and RMA messages dropped as
 * malformed or matching no live op (src/na/ucx/ucx_rma.c). */
HGX_TEST_HOOK void na_ucx_rma_counts(long *refused, long *dropped);
/* Whether a peer's connection may move from state `from` to state `to`
 * (enum ucx_conn; false out of range): the table ucx_peer_move asserts, which
 * tests compare with docs/na-ucx.md (src/na/ucx/ucx_ep.c). */
HGX_TEST_HOOK bool na_ucx_conn_legal(int from, int to);

#endif /* HGX_TEST_HOOKS_H */
