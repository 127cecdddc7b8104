/*
 * tput.h -- hgx-tput: server throughput with many client processes and a
 * server of several HG contexts, each context driven by its own thread in the
 * default (thread-safe) mode.
 *
 * One coordinator process forks the server and the clients, then drives the
 * phases over a pipe pair per process (one-byte commands) and reads figures
 * from a shared anonymous mapping that every process writes its own slots of.
 */
#ifndef HGX_TPUT_H
#define HGX_TPUT_H

#include "mercury.h"
#include "mercury_macros.h"
#include "mercury_proc_bulk.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define TPUT_MAX_CLIENTS 8
#define TPUT_MAX_CONTEXTS 4
#define TPUT_MAX_WINDOW 64
#define TPUT_LAT_BUCKETS 40

/* Phases: small RPCs, then RPCs whose handler pulls from the client. */
enum tput_kind { TPUT_RPC, TPUT_PULL, TPUT_NKINDS };

/* Commands of the coordinator and the answers of the processes. */
enum {
    TPUT_CMD_WARM = 'w',  /* client: warm the phase up, answer READY */
    TPUT_CMD_GO = 'g',    /* client: run the timed phase, answer DONE */
    TPUT_CMD_CPU = 'c',   /* server: store CPU time, answer ACK */
    TPUT_CMD_QUIT = 'q',  /* both: finalize and exit */
    TPUT_ANS_READY = 'r', /* client warmed up */
    TPUT_ANS_DONE = 'd',  /* client finished the phase (figures stored) */
    TPUT_ANS_ACK = 'k',   /* server stored its CPU time */
    TPUT_ANS_FAIL = 'f'   /* failure; the process says why on stderr */
};

struct tput_config {
    const char *transport;   /* ofi+tcp, ucx+shm, ... */
    char info[64];           /* HG_Init's info string (tcp pinned to 127.0.0.1) */
    int contexts;            /* server contexts, one progress thread each */
    int clients;             /* client processes */
    int window;              /* RPCs each client keeps outstanding */
    long iters[TPUT_NKINDS]; /* timed RPCs per client, per phase */
    size_t pull_size;        /* bytes the handler pulls in the pull phase */
    int kinds;               /* bit per enum tput_kind to run */
    int verify_all;          /* check every pulled word, not a sample */
    int check_target;        /* an RPC run off its target context fails */
    int timeout_s;           /* a phase that takes longer is a stall */
    int progress_ms;         /* server threads' HG_Progress timeout */
    int client_id;           /* this client's index */
};

/* A client's figures. done and bad are read while a phase runs (to report a
 * stall): atomics. The rest is read once the client said DONE. */
struct tput_client_stats {
    atomic_long done; /* RPCs completed and checked, this phase */
    atomic_long bad;  /* replies that failed a check */
    double wall, cpu; /* timed phase: seconds, CPU seconds */
    /* Round trips of the timed phase: bucket b counts those of
     * [2^b, 2^(b+1)) ns; and the longest, in seconds. */
    long lat_hist[TPUT_LAT_BUCKETS];
    double lat_max;
};

/* What every process publishes; the coordinator reads it. */
struct tput_shared {
    struct tput_client_stats client[TPUT_MAX_CLIENTS];
    atomic_long handled[TPUT_MAX_CONTEXTS]; /* RPCs answered per server context */
    atomic_long off_target;                 /* handler ran on another context */
    atomic_long bad_data;                   /* pulled bytes not as the client wrote */
    atomic_long progress_errors;            /* HG_Progress/HG_Trigger failures */
    double server_cpu;                      /* at the last TPUT_CMD_CPU */
};

/* A process's end of its pipe pair to the coordinator. */
struct tput_chan {
    int rfd, wfd;
};

/* One byte; 0, or -1 on a closed or broken pipe. */
int tput_send(const struct tput_chan *ch, char c);
int tput_recv(const struct tput_chan *ch, char *c);
/* Length-prefixed string (the server's address). */
int tput_send_str(const struct tput_chan *ch, const char *s);
int tput_recv_str(const struct tput_chan *ch, char *buf, size_t cap);

/* CPU seconds (user + system) of this process, all threads. */
double tput_cpu_seconds(void);
double tput_now(void);

/* RPC inputs and outputs. The target context travels in the input so that
 * the handler can check it ran where the client aimed it. */
MERCURY_GEN_PROC(tput_rpc_in_t, ((uint64_t)(seq))((uint32_t)(target)))
MERCURY_GEN_PROC(tput_rpc_out_t, ((uint64_t)(seq))((uint32_t)(context)))
MERCURY_GEN_PROC(tput_pull_in_t, ((hg_bulk_t)(bulk))((uint64_t)(seq))((uint64_t)(seed))(
                                     (uint32_t)(size))((uint32_t)(target)))
MERCURY_GEN_PROC(tput_pull_out_t,
                 ((uint64_t)(seq))((uint32_t)(context))((uint32_t)(data_ok)))

struct tput_ids {
    hg_id_t rpc, pull;
};

/* Pull buffers: word 0 and the last word hold the RPC's sequence number, every
 * other word i holds tput_word(seed, i); the seed names the client's slot. */
static inline uint64_t tput_word(uint64_t seed, size_t i)
{
    uint64_t x = seed + (uint64_t)i * 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    return x ^ (x >> 31);
}

/* Checked words of a buffer of n words: all, or one in 512 (every 4 KiB) and
 * the two ends; true if they are as the client wrote them. */
int tput_check(const uint64_t *w, size_t n, uint64_t seq, uint64_t seed, int all);

/* Register both RPCs with these handlers (NULL on the clients). */
void tput_register(hg_class_t *cls, struct tput_ids *ids, hg_rpc_cb_t rpc_cb,
                   hg_rpc_cb_t pull_cb);

/* The two process bodies; their exit status. */
int tput_server(const struct tput_config *cfg, struct tput_shared *sh,
                const struct tput_chan *ch);
int tput_client(const struct tput_config *cfg, struct tput_shared *sh,
                const struct tput_chan *ch);

#endif /* HGX_TPUT_H */
