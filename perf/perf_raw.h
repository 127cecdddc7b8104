/*
 * perf_raw.h -- the raw-transport baseline: one pattern driver (perf_raw.c)
 * over a small table of transport operations that perf_raw_ofi.c,
 * perf_raw_ucx.c and perf_raw_mpi.c provide.
 *
 * Slots name posted operations: receives use slots [0, PERF_RAW_SEND_BASE),
 * sends [PERF_RAW_SEND_BASE, PERF_RAW_NSLOTS), RMA uses PERF_RAW_RMA_SLOT.
 * Tags are (client << 32) | (command << 16) | client slot; the client bits,
 * set on requests only, tell a server of several clients whom to answer
 * (peer index: the client's --clients index; a client's only peer is 0).
 */
#ifndef HGX_PERF_RAW_H
#define HGX_PERF_RAW_H

#include "perf.h"

#define PERF_RAW_SEND_BASE 16384
#define PERF_RAW_NSLOTS 32768
#define PERF_RAW_RMA_SLOT (PERF_RAW_NSLOTS - 1)
#define PERF_RAW_MSG_MAX 65536 /* largest lat payload */
/* Wildcard receives the server keeps posted: more than the requests that can
 * be outstanding, 64 per client plus 64 (128 with one client). With fewer,
 * libfabric 1.17's shm provider stalled: 8 clients x 64 in flight against 128
 * posted receives left every process waiting for a message none of them
 * received. PERF_RAW_SRV_RECVS is the most, for 8 clients. */
#define PERF_RAW_SRV_POSTED(nclients) ((nclients)*64 + 64)
#define PERF_RAW_SRV_RECVS PERF_RAW_SRV_POSTED(PERF_MAX_CLIENTS)

enum {
    RAW_CMD_REPLY = 1,
    RAW_CMD_ECHO,
    RAW_CMD_PULL,
    RAW_CMD_PUSHREQ,
    RAW_CMD_PUSHDATA,
    RAW_CMD_QUIT,
    RAW_CMD_NEVER
};
#define RAW_TAG(cmd, slot) (((uint64_t)(cmd) << 16) | (uint64_t)(slot))
#define RAW_TAG_CLIENT_SHIFT 32

enum raw_event { RAW_EV_SEND, RAW_EV_RECV, RAW_EV_RMA, RAW_EV_CANCELLED };

struct raw_completion {
    int slot;
    enum raw_event ev;
    uint64_t tag;
    size_t len;
};

struct raw_transport {
    void *t;
    /* Registered memory, allocated by the transport: msg (send/recv buffers,
     * PERF_RAW_SRV_RECVS * PERF_RAW_MSG_MAX + PERF_RAW_MSG_MAX bytes) and big
     * (bulk; the peer can read and write it). */
    char *msg, *big;
    size_t big_size;
    int max_recvs; /* receives that can be posted at once (0: no limit) */
    /* Requests a client may have outstanding at the server (0: no limit):
     * libfabric 1.17 shm stalls when a few hundred of them arrive before
     * receives are posted (every process then waits for a message none of
     * them received), so over shm no more than the server keeps posted. */
    int max_outstanding;
    int (*send)(void *t, int peer, int slot, const void *buf, size_t len, uint64_t tag);
    int (*recv)(void *t, int slot, void *buf, size_t len, uint64_t tag, int any_tag);
    int (*poll)(void *t, struct raw_completion *out, int max); /* count, < 0 error */
    int (*cancel)(void *t, int slot);
    /* RMA on the peer's big region at offset 0, or NULL (then bw uses messages). */
    int (*rma)(void *t, int put, void *local, size_t len);
};

/* Run the mode with the given transport (set up, peer connected). */
int perf_raw_drive(const struct perf_config *cfg, struct raw_transport *rt,
                   struct perf_results *res);

/* Largest bw size of the configuration (bytes), at least 4096. */
size_t perf_raw_big_size(const struct perf_config *cfg);

#endif /* HGX_PERF_RAW_H */
