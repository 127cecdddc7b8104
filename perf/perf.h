/*
 * perf.h -- shared declarations of hgx-perf: configuration, the out-of-band
 * channel between the two processes, result rows, and the per-transport
 * runners (hgx and raw) that fill them.
 */
#ifndef HGX_PERF_H
#define HGX_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum perf_mode { PERF_LAT, PERF_RATE, PERF_BW, PERF_CANCEL, PERF_SCALE };
enum perf_kind { PERF_OFI, PERF_UCX, PERF_MPI };

#define PERF_MAX_POINTS 32
#define PERF_MAX_REPEAT 101
#define PERF_MAX_CLIENTS 8

struct perf_config {
    const char *transport; /* "ofi+tcp", ... */
    enum perf_kind kind;
    const char *proto; /* part after '+': tcp, shm, static */
    const char *info;  /* hgx's info string: tcp pinned to loopback (one host) */
    enum perf_mode mode;
    int raw_only; /* --raw: only the raw baseline */
    int hg_only;  /* --no-raw */
    size_t sizes[PERF_MAX_POINTS];
    int nsizes;
    int iters;
    const char *csv;
    const char *runs_csv; /* --runs: every run's values */
    int server;           /* this process is the server */
    int quiet;            /* no progress line */
    int no_bind;          /* OFI/UCX: leave the two processes unbound */
    int no_block;         /* hgx busy-polls (NA_NO_BLOCK): no wait object, never sleeps */
    int poll;             /* hgx is driven by HG_Progress(ctx, 0) in a loop */
    int repeat;           /* runs of raw + hgx; medians reported */
    int raw_wait;    /* OFI: the raw loop's CQ has a wait fd, as hgx's default mode's */
    int thread_safe; /* hgx without NA_THREAD_MODE_SINGLE: locks on, as a threaded app */
    int na_layer;    /* --na: the hgx side runs NA alone (perf_na.c) */
    int clients;     /* rate mode: client processes against the one server (1-8) */
    int client_id;   /* this client's index, 0 .. clients - 1 */
    const char *server_cmd; /* --server-cmd: prefix that starts the server elsewhere */
    int remote; /* server on another host (--server-cmd / --serve-stdio): plain info
                 * strings, the raw loops on the routable interface */
};

/* Out-of-band channel (pipes, or MPI point-to-point on MPI_COMM_WORLD). */
struct perf_oob {
    int (*send)(struct perf_oob *oob, const void *buf, size_t len);
    int (*recv)(struct perf_oob *oob, void *buf, size_t len);
    int rfd, wfd;
};

static inline int perf_oob_send(struct perf_oob *o, const void *b, size_t n)
{
    return o->send(o, b, n);
}
static inline int perf_oob_recv(struct perf_oob *o, void *b, size_t n)
{
    return o->recv(o, b, n);
}
/* Length-prefixed blob (addresses, keys): at most cap bytes; *len set. */
int perf_oob_send_blob(struct perf_oob *o, const void *b, size_t n);
int perf_oob_recv_blob(struct perf_oob *o, void *b, size_t cap, size_t *len);
/* A barrier: both sides exchange one byte. */
int perf_oob_sync(struct perf_oob *o);
/* The runners' oob argument: on a server, an array of one channel per client
 * (cfg->clients of them); on a client, its channel to the server.
 * perf_oob_count: how many channels this process has. */
int perf_oob_count(const struct perf_config *cfg);
/* A barrier of the server with every client (perf_oob_sync on each). */
int perf_oob_barrier(const struct perf_config *cfg, struct perf_oob *oob);
/* A barrier of the client processes only (no-op with one client): rate
 * points start together, so their rates add up to the server's load. */
int perf_clients_barrier(void);

/* One measured point; the client fills value and unit, the table shows ratio. */
struct perf_point {
    char what[32]; /* row label: "rpc", "bulk-pull", "cancel-storm" ... */
    size_t param;  /* size in bytes, in-flight count or outstanding count */
    long iters;    /* operations timed */
    double value;  /* us per op, or ops/s, or MiB/s */
    double ratio;  /* hgx/raw, median of the per-run ratios; 0: value / raw value */
    double best;   /* --repeat: the best run's value (lowest time, highest rate) */
    int have;      /* value measured */
};

struct perf_results {
    struct perf_point hg[PERF_MAX_POINTS * 2];
    struct perf_point raw[PERF_MAX_POINTS * 2];
    int nhg, nraw;
    double idle_cpu_pct; /* server CPU over an idle second, < 0 if not measured */
};

/* Runners: run the whole mode as client or server; 0 on success. */
int perf_hg_run(const struct perf_config *cfg, struct perf_oob *oob,
                struct perf_results *res);
int perf_na_run(const struct perf_config *cfg, struct perf_oob *oob,
                struct perf_results *res);
int perf_raw_ofi_run(const struct perf_config *cfg, struct perf_oob *oob,
                     struct perf_results *res);
int perf_raw_ucx_run(const struct perf_config *cfg, struct perf_oob *oob,
                     struct perf_results *res);
int perf_raw_mpi_run(const struct perf_config *cfg, struct perf_oob *oob,
                     struct perf_results *res);

/* MPI helpers (perf_raw_mpi.c). */
int perf_mpi_init(int *argc, char ***argv, int *rank, int *size);
/* oob: the channel to peer_rank over MPI_COMM_WORLD. */
void perf_mpi_oob(struct perf_oob *oob, int peer_rank);
/* A barrier of the client ranks (1..N). */
int perf_mpi_clients_barrier(void);
/* Plain transfers between ranks (a client's results to client 0). */
int perf_mpi_send_to(int rank, const void *buf, size_t len);
int perf_mpi_recv_from(int rank, void *buf, size_t len);
void perf_mpi_finalize(void);

/* Two hosts (perf_remote.c). The first IPv4 interface that is up and not
 * loopback, as hgx picks for a plain info string; -1 (said) if none. */
struct in_addr;
int perf_routable_if(char *name, size_t cap, struct in_addr *ip);
/* Client: run "PREFIX this-program --serve-stdio ARGS" (argv without
 * --server-cmd), oob over its stdin/stdout; its pid, -1 on failure. */
pid_t perf_remote_start(const char *prefix, int argc, char **argv, struct perf_oob *oob);
/* Server started that way: oob over stdin and the original stdout. */
int perf_remote_serve_oob(struct perf_oob *oob);

/* Helpers (hgx_perf.c). */
double perf_now(void); /* seconds, monotonic */
void perf_progress(const struct perf_config *cfg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
struct perf_point *perf_add(struct perf_point *pts, int *n, const char *what,
                            size_t param, long iters, double value);
/* Iterations for a point: cfg->iters scaled down for large sizes / counts. */
long perf_iters_for(const struct perf_config *cfg, size_t bytes_or_count, int bulk);

/* Page-aligned buffer of at least n bytes, as the raw loops use (free()). */
void *perf_page_alloc(size_t n);

/* Median of n samples (sorts them). */
double perf_median(double *v, long n);

/* Rate-mode in-flight counts and scale-mode outstanding counts. */
extern const size_t perf_rate_inflight[];
extern const int perf_rate_n;
extern const size_t perf_scale_counts[];
extern const int perf_scale_n;
#define PERF_STORM 10000

#endif /* HGX_PERF_H */
