/*
 * hgx_emul.h -- one-sided put/get emulated over two-sided MPI (private).
 *
 * Origin: sends a control packet {PUT|GET, request id, handle id, generation,
 * offset, size, seq} on the control tag; put data follows in chunks on the
 * request's put-data tag, get data comes back on its get-data tag. A data tag
 * names the request id and a tag generation taken from seq (see
 * hgx_emul_set_tag_gens), so a late chunk of an older use of an id is a stray,
 * never a chunk of the request that reuses the id. The TARGET moves the data from its NA
 * progress (poll) after validating the request against its registered handles (id,
 * generation, bounds, permission); a bad request gets an ERR reply and memory is never
 * touched. A put completes when the target ACKs that all data was applied; a
 * get when all data arrived.
 *
 * A put waits for the target's CTS (clear to send) before sending data, so
 * no put data is ever in flight for a request the target has not started.
 * A target drops a put that got no chunk for HGX_MPI_TARGET_IDLE_MS (default
 * HGX_MPI_CANCEL_ZOMBIE_MS) after CTS or its last chunk (origin dead or
 * silent): ACK NA_TIMEOUT, counted, its region never written afterwards.
 *
 * No receive is ever posted for a data chunk before its message arrived:
 * chunks are found with MPI_Improbe, attributed by (source, tag) to the
 * transfer and, in arrival order, to its next chunk, and received with
 * MPI_Mrecv/MPI_Imrecv into that chunk's memory only if their size is exactly
 * the chunk's; anything else is received whole into scratch and dropped
 * (counted), so a peer can neither write past a region nor make MPI truncate.
 *
 * Cancel follows the IMPI message-cancellation protocol (docs/mpi-emul-cancel.md):
 * the origin sends CANCEL {request id, seq}; the target answers CANCELYES and
 * drops the request if it has not started it (nothing written, nothing sent),
 * else CANCELNO and the transfer completes in full. The wait for the answer
 * is bounded (HGX_MPI_CANCEL_TIMEOUT_MS, default 200); past it the cancel
 * turns local (late data dropped, never written into the caller's memory).
 */
#ifndef HGX_EMUL_H
#define HGX_EMUL_H

#include "hgx_mreqtab.h"
#include "hgx_param.h"
#include "hgx_test_hooks.h"
#include "na_types.h"

#include <stdbool.h>
#include <stddef.h>

/* Largest data message of a transfer. Every chunk is probed at its receiver
 * before it is received (see docs/mpi-emul-cancel.md), and MPI pipelines a
 * large message internally: fewer, larger chunks cost fewer probes and
 * rendezvous. Open MPI 16 MiB pushes ran at 0.88-0.91x raw with 1 MiB
 * chunks, 1.00-1.06x with 16 MiB ones (docs/performance.md, "Design choices,
 * measured"). */
#define HGX_EMUL_CHUNK (16u << 20)
#define HGX_EMUL_NSLOTS                                                                  \
    1024 /* max active requests per origin = data tags per direction */
#define HGX_EMUL_MAX_CHUNKS (1u << 16) /* refuse transfers above 1 TiB */

/* A local or remote region as the emulation sees it. Segments are known only
 * to the owner; a remote region carries only {owner, id, generation}. */
struct hgx_emul_mem {
    uint32_t id, gen;        /* registry slot and generation (0: not registered) */
    unsigned long flags;     /* NA_MEM_* */
    size_t len;              /* total bytes */
    size_t nseg;             /* local only */
    struct na_segment *segs; /* local only */
    int owner;               /* rank of the owner */
};

/* Serialized memory handle: these fields in this order, little-endian (the
 * struct is its storage; on a little-endian host it also reads them). */
#define HGX_EMUL_MEM_MAGIC 0x48474d48u /* "HMGH" */
struct hgx_emul_mem_wire {
    uint32_t magic;
    int32_t owner;
    uint32_t id, gen;
    uint32_t flags, pad;
    uint64_t len;
};

/* Control packet, decoded (untrusted on receipt). On the wire: its fields in
 * this order, little-endian, exactly this size (emul_wire.c). */
#define HGX_EMUL_CTRL_MAGIC 0x48434d45u /* "HCME" */
enum hgx_emul_ctrl_type {
    HGX_EMUL_CT_PUT = 1,
    HGX_EMUL_CT_GET = 2,
    HGX_EMUL_CT_ACK = 3,       /* put applied (status) */
    HGX_EMUL_CT_ERR = 4,       /* request refused (status); no data follows */
    HGX_EMUL_CT_CANCEL = 5,    /* origin -> target: cancel {req_id, seq} */
    HGX_EMUL_CT_CANCELYES = 6, /* target dropped the request: nothing written or sent */
    HGX_EMUL_CT_CANCELNO = 7,  /* target had started: the transfer completes in full */
    HGX_EMUL_CT_CTS = 8,       /* put: target started the request; origin may send */
    HGX_EMUL_CT_ABORT = 9, /* origin -> target: timed-out put after CTS, no more data */
};
struct hgx_emul_ctrl {
    uint32_t magic;
    uint32_t type;
    uint32_t req_id;
    uint32_t handle_id;
    uint32_t gen;
    /* replies: an na_return_t. PUT/GET: the number of tag-generation bits the
     * origin's data tags use (0: one generation; the target refuses more than
     * it has tags for) */
    int32_t status;
    uint64_t offset;
    uint64_t size;
    uint64_t seq; /* origin's request sequence number (unique per origin process) */
};

/* The request state machines: emul_state.h. */

struct hgx_emul;
struct hgx_emul_oreq;
typedef void (*hgx_emul_done_fn)(void *arg, na_return_t ret);

struct hgx_emul_stats {
    unsigned long bad_packets;  /* malformed / unknown control packets dropped */
    unsigned long refused;      /* requests refused by validation */
    unsigned long late_dropped; /* late data chunks dropped (see late_data_dropped) */
    unsigned long bad_data;     /* data messages that failed a check, dropped */
};

/* The emulation's parameters (listed in the MPI plugin's ops table), read by
 * each hgx_emul_create. */
extern const struct hgx_param hgx_emul_param_cancel_timeout_ms;
extern const struct hgx_param hgx_emul_param_zombie_ms;
extern const struct hgx_param hgx_emul_param_target_idle_ms;

na_return_t hgx_emul_create(struct hgx_emul **ep, MPI_Comm comm, struct hgx_mreqtab *tab,
                            int tag_ctrl, int tag_putdata_base, int tag_getdata_base);
/* Call with the request table about to be destroyed; then hgx_emul_free after. */
void hgx_emul_close(struct hgx_emul *e);
void hgx_emul_free(struct hgx_emul *e);

na_return_t hgx_emul_mem_register(struct hgx_emul *e, struct hgx_emul_mem *m);
void hgx_emul_mem_deregister(struct hgx_emul *e, struct hgx_emul_mem *m);
/* Write the wire form of registered region m into w. */
void hgx_emul_mem_serialize(const struct hgx_emul_mem *m, struct hgx_emul_mem_wire *w);
/* Read a wire form of size bytes (untrusted): NA_INVALID_ARG unless it is a
 * well-formed handle of a rank below comm_size. */
na_return_t hgx_emul_mem_deserialize(struct hgx_emul_mem *m, const void *buf, size_t size,
                                     int comm_size);

na_return_t hgx_emul_xfer(struct hgx_emul *e, bool put, const struct hgx_emul_mem *local,
                          uint64_t local_offset, const struct hgx_emul_mem *remote,
                          uint64_t remote_offset, size_t size, hgx_emul_done_fn done,
                          void *arg, struct hgx_emul_oreq **oreq_p);
/* Start a cancel (IMPI remote cancel, bounded); done() runs later (once) from progress.
 */
void hgx_emul_cancel(struct hgx_emul *e, struct hgx_emul_oreq *o);
/* Receive control packets (MPI_Improbe, cancels before starting any request of
 * the same batch), start received requests, take arrived data chunks, run
 * cancel timers. Call from the NA progress loop; returns the number of events
 * handled. */
int hgx_emul_progress(struct hgx_emul *e);
/* Same; take_ctrl false skips the probes of the control communicator (the
 * caller saw no message waiting on it; with no separate data communicator
 * this includes the data probes), the rest still runs. */
int hgx_emul_progress_ex(struct hgx_emul *e, bool take_ctrl);
/* Handle a control packet the caller matched on the control tag (e.g. with
 * MPI_Improbe(MPI_ANY_TAG)); call hgx_emul_progress_ex(e, true) after it so
 * the rest of its batch is taken before the requests start. */
void hgx_emul_ctrl_msg(struct hgx_emul *e, MPI_Message *msg, const MPI_Status *st);
/* Data chunks travel on data (same group as the control communicator) instead
 * of the control communicator, so a wildcard probe there never sees them and
 * one MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG) on data finds the next chunk
 * whatever the number of transfers, and drops strays. Without it, each
 * receiving transfer's tag is probed (docs/mpi-emul-cancel.md). Call before
 * the first transfer. */
void hgx_emul_set_data_comm(struct hgx_emul *e, MPI_Comm data);
/* Tag generations: generation g of a request is its seq modulo 2^bits; its
 * data tags are the bases given to hgx_emul_create + id for g = 0, and
 * gen_base + (g - 1) * 2 * HGX_EMUL_NSLOTS + (get ? HGX_EMUL_NSLOTS : 0) + id
 * for the others, so the tags gen_base .. gen_base +
 * hgx_emul_gen_span(bits) - 1 must be free for the emulation on the data
 * communicator. Without this call (bits 0) every use of an id shares one
 * tag. A request announces its bits in its PUT/GET packet, so both sides
 * compute the same tags; a target refuses a request announcing more bits
 * than it has. Call before the first transfer. */
void hgx_emul_set_tag_gens(struct hgx_emul *e, int gen_base, unsigned bits);
/* The largest number of generation bits whose tags fit in room tags (0 if
 * not even two generations fit), and the tags those bits span. */
unsigned hgx_emul_gen_bits(long long room);
long long hgx_emul_gen_span(unsigned bits);
/* Handle a message the caller matched on its communicator on a tag it does
 * not own (e.g. the oldest message of an mpi+dynamic connection, found with
 * MPI_ANY_TAG): a data chunk is attributed to its transfer as if the
 * emulation had probed it, anything else is received whole and dropped
 * (counted in bad_data, logged). Never truncates, never aborts. */
void hgx_emul_data_msg(struct hgx_emul *e, MPI_Message *msg, const MPI_Status *st);
/* mpi+dynamic: e (one per connection) validates incoming requests against the
 * memory registry of owner (register/deregister go to owner only). owner must
 * outlive e. */
void hgx_emul_share_registry(struct hgx_emul *e, struct hgx_emul *owner);
void hgx_emul_get_stats(const struct hgx_emul *e, struct hgx_emul_stats *s);

#endif
