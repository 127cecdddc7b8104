/*
 * emul_int.h -- put/get over two-sided MPI: the types of the emulation and
 * the calls between its files (private; hgx_emul.h is its interface).
 */
#ifndef HGX_EMUL_INT_H
#define HGX_EMUL_INT_H

#include "hgx_emul.h"

#include "emul_state.h"
#include "hgx_clock.h"
#include "hgx_list.h"
#include "hgx_log.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CTRL_BATCH 256 /* control packets taken per progress call */
#define TBUCKETS 1024  /* target index buckets, keyed by (origin, request id) */
#define NTOMB 64       /* tombstones kept (oldest overwritten) */
#define TOMB_LIFE_US 10000000ull
#define DATA_BATCH 64 /* data messages taken per progress call */
/* With nothing receiving, the data communicator is still probed every this
 * many progress calls, to drop strays (they only cost MPI memory meanwhile). */
#define DATA_IDLE_EVERY 16
/* A matched chunk this small is received with the blocking MPI_Mrecv: below
 * every MPI transport's eager limit, its data came with the match (as
 * MRECV_MAX in na_mpi_priv.h). Larger ones use MPI_Imrecv. */
#define DATA_MRECV_MAX 4096
#define CTRL_WIRE_SIZE 48 /* control packet on the wire (emul_wire.c) */
/* Most tag-generation bits (hgx_emul_set_tag_gens): tags stay ints. */
#define GEN_BITS_MAX 30

/*------------------------------------------------------------ counters */

enum {
    C_REQ,
    C_YES,
    C_NO,
    C_TIMEOUT,
    C_LATE_REPLY,
    C_LATE_DATA,
    C_PARTIAL,
    C_TYES,
    C_TNO,
    C_TOMBDROP,
    C_ABORT,
    C_BAD_DATA,
    C_TEXPIRED,
    G_OACTIVE,
    G_TREC,
    G_TOMB,
    C_N
};
#pragma GCC visibility push(hidden)
extern atomic_ulong hgx_emul_ctr[C_N];
#pragma GCC visibility pop
#define CINC(i) atomic_fetch_add_explicit(&hgx_emul_ctr[i], 1, memory_order_relaxed)
#define CDEC(i) atomic_fetch_sub_explicit(&hgx_emul_ctr[i], 1, memory_order_relaxed)

/*------------------------------------------------------------ structures */

/* A transfer that receives data chunks: listed while more can come for it
 * (the per-tag probes of a shared communicator walk the list; its length
 * gates the probes of a separate data communicator). The record that embeds
 * it starts it unlinked (emul_rx_init). */
struct rxlink {
    struct hgx_list link; /* on hgx_emul.rx */
    int tag;
};

static inline void emul_rx_init(struct rxlink *l)
{
    hgx_list_init(&l->link);
}

/* Whether more chunks can come for the transfer (it is listed). */
static inline bool emul_rx_on(const struct rxlink *l)
{
    return hgx_list_linked(&l->link);
}

struct hgx_emul_oreq {
    struct hgx_emul *e;
    uint32_t id;
    uint64_t seq;
    int dtag; /* data tag (id and tag generation) */
    bool put;
    enum hgx_emul_oxfer xfer;
    enum hgx_emul_ocancel cancel;
    int peer;
    struct hgx_emul_mem local; /* segments borrowed from the caller */
    uint64_t local_offset;
    size_t size;
    uint32_t nchunks;
    uint32_t outstanding; /* MPI requests on the caller's memory (put: sends; get:
                             chunk receives) */
    MPI_Request *creqs;   /* put: data sends */
    unsigned char *cdone; /* put: send completed */
    uint32_t nmatched;    /* get: chunk messages taken so far (the k-th is chunk k) */
    uint32_t nwritten;    /* get: of those, received into the caller's memory */
    struct rxlink rx;     /* get */
    uint64_t deadline, expire_at;
    na_return_t result;
    hgx_emul_done_fn done; /* NULL once it ran (or was suppressed): completed */
    void *arg;
};

struct trec { /* target side of one request */
    struct hgx_emul *e;
    enum hgx_emul_tstate state;
    bool put;
    int src;
    struct hgx_emul_ctrl pkt;
    int dtag; /* data tag (id and tag generation), once APPLYING */
    uint32_t n;
    uint32_t next;        /* put: chunk messages taken so far (the k-th is chunk k) */
    uint32_t outstanding; /* get: data sends; put: chunk receives */
    na_return_t result; /* put: once not NA_SUCCESS, the rest of its chunks is dropped */
    struct rxlink rx;   /* put */
    uint64_t expire_at; /* put after ABORT: stop waiting for its chunks */
    uint64_t last_us;   /* put: CTS sent or last chunk taken (target bound) */
    struct hgx_list alink; /* on hgx_emul.aborted: aborted puts still taking chunks */
    struct hgx_list hlink; /* on its hgx_emul.index bucket, newest first */
    struct hgx_list plink; /* on hgx_emul.pend: RECEIVED in this batch, in order */
};

struct tomb {
    int src; /* -1: free */
    uint64_t seq, expire;
};

struct hgx_emul {
    MPI_Comm comm;      /* control packets */
    MPI_Comm dcomm;     /* data chunks (comm unless hgx_emul_set_data_comm) */
    struct hgx_list rx; /* receiving transfers (struct rxlink) */
    unsigned nrx;
    int *rx_tags; /* shared communicator: the tags to probe, copied per pass */
    unsigned rx_cap;
    unsigned data_idle; /* progress calls since the last idle data probe */
    int rank, size;
    struct hgx_mreqtab *tab;
    int tag_ctrl, tag_put, tag_get;
    int tag_gen;       /* data tags of generations >= 1 start here */
    unsigned gen_bits; /* tag generations: 2^gen_bits (0: one) */
    struct hgx_emul_mem **reg;
    uint32_t reg_cap, gen_counter;
    struct hgx_emul *regsrc; /* registry owner when shared (mpi+dynamic), else NULL */
    struct hgx_emul_oreq *slots[HGX_EMUL_NSLOTS];
    uint32_t next_slot;
    uint64_t next_seq;
    unsigned ntimed; /* origin requests with a cancel timer or expiry running */
    uint64_t cancel_timeout_us, zombie_life_us;
    uint64_t idle_us;       /* target bound: put after CTS with no chunk for this long */
    uint64_t idle_check_at; /* next scan for such puts */
    unsigned ntrec;         /* target records of this instance */
    /* target */
    struct hgx_list index[TBUCKETS]; /* struct trec by (origin, request id) */
    struct hgx_list pend;            /* struct trec RECEIVED in this batch, FIFO */
    struct hgx_list aborted; /* struct trec: puts after ABORT, chunks may still come */
    uint64_t *maxseq;        /* per origin rank: highest request seq received (0: none) */
    struct tomb tombs[NTOMB];
    unsigned ntombs, tomb_next;
    bool closing;
    bool batch_open; /* the caller took this batch's first control packet */
    struct hgx_emul_stats stats;
};

/*------------------------------------------------------------ states */

/* Every move of a state machine goes through these (emul_state.h). */
static inline void emul_oreq_set_xfer(struct hgx_emul_oreq *o, enum hgx_emul_oxfer to)
{
    hgx_emul_move(HGX_EMUL_M_OXFER, o->xfer, to, o->id, o->peer);
    o->xfer = to;
}

static inline void emul_oreq_set_cancel(struct hgx_emul_oreq *o, enum hgx_emul_ocancel to)
{
    hgx_emul_move(HGX_EMUL_M_OCANCEL, o->cancel, to, o->id, o->peer);
    o->cancel = to;
}

static inline void emul_trec_set_state(struct trec *t, enum hgx_emul_tstate to)
{
    hgx_emul_move(HGX_EMUL_M_TARGET, t->state, to, t->pkt.req_id, t->src);
    t->state = to;
}

static inline bool emul_oreq_completed(const struct hgx_emul_oreq *o)
{
    return o->done == NULL;
}

/* Cancelled locally: no answer came within the bound (whatever came later). */
static inline bool emul_oreq_zombie(const struct hgx_emul_oreq *o)
{
    return o->cancel == HGX_EMUL_OC_ZOMBIE || o->cancel == HGX_EMUL_OC_ZOMBIE_YES ||
           o->cancel == HGX_EMUL_OC_ZOMBIE_NO || o->cancel == HGX_EMUL_OC_EXPIRED;
}

/* The target answered CANCELYES: it dropped the request, no data moved. */
static inline bool emul_oreq_cancel_yes(const struct hgx_emul_oreq *o)
{
    return o->cancel == HGX_EMUL_OC_YES || o->cancel == HGX_EMUL_OC_ZOMBIE_YES;
}

/* The calls between the emulation's files: hidden, so they are not exported
 * and link-time optimization inlines them as if the emulation were one file. */
#pragma GCC visibility push(hidden)

/* hgx_emul.c */
void emul_err_log(const char *what, int rc);

/* emul_registry.c */
int emul_mem_chunk(const struct hgx_emul_mem *m, uint64_t off, size_t len, void **ptr,
                   int *count, MPI_Datatype *dt);
void emul_type_release(MPI_Datatype *dt);
size_t emul_chunk_len(size_t size, uint32_t i);
uint32_t emul_nchunks_of(uint64_t size);

/* emul_wire.c */
int emul_data_tag(const struct hgx_emul *e, bool put, uint32_t id, uint64_t seq,
                  unsigned bits);
int emul_data_tag_decode(const struct hgx_emul *e, int tag, uint32_t *id);
/* Decode a control packet (untrusted); false unless its magic is ours. */
bool emul_ctrl_decode(const unsigned char *b, struct hgx_emul_ctrl *p);
int emul_ctrl_send(struct hgx_emul *e, int dest, const struct hgx_emul_ctrl *p);
void emul_ctrl_reply(struct hgx_emul *e, int dest, uint32_t type, uint32_t rid,
                     uint64_t seq, na_return_t status);

/* emul_data.c */
void emul_rx_add(struct hgx_emul *e, struct rxlink *l, int tag);
void emul_rx_del(struct hgx_emul *e, struct rxlink *l);
void emul_data_drop(struct hgx_emul *e, MPI_Message *msg, const MPI_Status *st, int count,
                    bool late, const char *why);
bool emul_chunk_admit(struct hgx_emul *e, MPI_Message *msg, const MPI_Status *st,
                      int count, size_t len, bool open, const char *closed_why,
                      const char *size_why, na_return_t *result);
void emul_chunk_recv(struct hgx_emul *e, MPI_Message *msg, void *ptr, int count,
                     MPI_Datatype dt, size_t len, hgx_mreq_fn fn, void *obj,
                     uintptr_t aux);
int emul_data_take_any(struct hgx_emul *e);
int emul_data_take_tags(struct hgx_emul *e);

/* emul_origin.c */
void emul_oreq_free(struct hgx_emul_oreq *o);
void emul_origin_data(struct hgx_emul *e, MPI_Message *msg, const MPI_Status *st,
                      int count, uint32_t id);
void emul_origin_packet(struct hgx_emul *e, int src, const struct hgx_emul_ctrl *p);
int emul_origin_timers(struct hgx_emul *e);

/* emul_target.c */
void emul_trec_free(struct hgx_emul *e, struct trec *t);
void emul_tomb_expire(struct hgx_emul *e, uint64_t t);
void emul_target_request(struct hgx_emul *e, int src, const struct hgx_emul_ctrl *p);
void emul_target_start(struct hgx_emul *e, struct trec *t);
void emul_target_data(struct hgx_emul *e, MPI_Message *msg, const MPI_Status *st,
                      int count, uint32_t rid);
void emul_target_cancel(struct hgx_emul *e, int src, const struct hgx_emul_ctrl *p);
void emul_target_abort(struct hgx_emul *e, int src, const struct hgx_emul_ctrl *p);
void emul_aborted_expire(struct hgx_emul *e, uint64_t now);
int emul_put_idle_expire(struct hgx_emul *e, uint64_t now);

#pragma GCC visibility pop

#endif
