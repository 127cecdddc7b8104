/*
 * mpi_emul.h -- one-sided put/get emulated over two-sided MPI (private).
 *
 * Origin: sends a control packet {PUT|GET, request id, handle id, generation,
 * offset, size} on the control tag; put data follows in chunks on
 * put-data tag base + request id, get data comes back on get-data tag base +
 * request id. The TARGET moves the data from its NA progress (poll) after
 * validating the request against its registered handles (id, generation,
 * bounds, permission); a bad request gets an ERR reply and memory is never
 * touched. A put completes when the target ACKs that all data was applied; a
 * get when all data arrived.
 *
 * Cancel is LOCAL for now (see enum mpi_emul_ostate): outstanding receives are
 * MPI_Cancel'ed, the op completes NA_CANCELED, and the request id stays
 * reserved (ZOMBIE) while late data is matched into a scratch buffer and
 * dropped. The IMPI remote-cancel protocol (CANCEL request, CANCELYES/CANCELNO)
 * plugs into the states marked "IMPI" below.
 */
#ifndef HGX_MPI_EMUL_H
#define HGX_MPI_EMUL_H

#include "mpi_reqtab.h"
#include "na_types.h"

#include <stdbool.h>
#include <stddef.h>

#define MPI_EMUL_CHUNK      (1u << 20) /* pipelining unit */
#define MPI_EMUL_NSLOTS     1024       /* max active requests per origin = data tags per direction */
#define MPI_EMUL_MAX_CHUNKS (1u << 20) /* refuse transfers above 1 TiB */

/* A local or remote region as the emulation sees it. Segments are known only
 * to the owner; a remote region carries only {owner, id, generation}. */
struct mpi_emul_mem {
    uint32_t id, gen;        /* registry slot and generation (0: not registered) */
    unsigned long flags;     /* NA_MEM_* */
    size_t len;              /* total bytes */
    size_t nseg;             /* local only */
    struct na_segment *segs; /* local only */
    int owner;               /* rank of the owner */
};

/* Serialized memory handle (wire format, fixed size). */
#define MPI_EMUL_MEM_MAGIC 0x48474d48u /* "HMGH" */
struct mpi_emul_mem_wire {
    uint32_t magic;
    int32_t owner;
    uint32_t id, gen;
    uint32_t flags, pad;
    uint64_t len;
};

/* Origin request states (named so the IMPI protocol can be added). */
enum mpi_emul_ostate {
    MPI_EMUL_O_ACTIVE,     /* data moving / waiting for ack */
    MPI_EMUL_O_CANCELING,  /* local cancel: MPI_Cancel'ed, waiting for MPI to confirm */
    /* IMPI (later): MPI_EMUL_O_CANCEL_SENT -- cancel packet sent, waiting for
     * CANCELYES (drop, complete NA_CANCELED) or CANCELNO (complete normally);
     * bounded wait, then fall back to the local cancel below. */
    MPI_EMUL_O_ZOMBIE,     /* op completed (canceled); late data drained and dropped */
};

struct mpi_emul;
struct mpi_emul_oreq;
typedef void (*mpi_emul_done_fn)(void *arg, na_return_t ret);

struct mpi_emul_stats {
    unsigned long bad_packets;   /* malformed / unknown control packets dropped */
    unsigned long refused;       /* requests refused by validation */
    unsigned long late_dropped;  /* late data chunks dropped after a local cancel */
};

na_return_t mpi_emul_create(struct mpi_emul **ep, MPI_Comm comm, struct hgx_mreqtab *tab,
    int tag_ctrl, int tag_putdata_base, int tag_getdata_base);
/* Call with the request table about to be destroyed; then mpi_emul_free after. */
void mpi_emul_close(struct mpi_emul *e);
void mpi_emul_free(struct mpi_emul *e);

na_return_t mpi_emul_mem_register(struct mpi_emul *e, struct mpi_emul_mem *m);
void mpi_emul_mem_deregister(struct mpi_emul *e, struct mpi_emul_mem *m);
void mpi_emul_mem_serialize(const struct mpi_emul_mem *m, struct mpi_emul_mem_wire *w);
na_return_t mpi_emul_mem_deserialize(struct mpi_emul_mem *m, const void *buf, size_t size, int comm_size);

na_return_t mpi_emul_xfer(struct mpi_emul *e, bool put, const struct mpi_emul_mem *local,
    uint64_t local_offset, const struct mpi_emul_mem *remote, uint64_t remote_offset, size_t size,
    mpi_emul_done_fn done, void *arg, struct mpi_emul_oreq **oreq_p);
/* Start a local cancel; done() runs later (once) from progress. */
void mpi_emul_cancel(struct mpi_emul *e, struct mpi_emul_oreq *o);
/* Completions of ops for NA (incremented by done callbacks through the caller). */
void mpi_emul_get_stats(const struct mpi_emul *e, struct mpi_emul_stats *s);

#endif
