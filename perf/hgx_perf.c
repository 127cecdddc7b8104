/*
 * hgx_perf.c -- hgx-perf: hgx against the raw transport under it, in one run,
 * one process pair, one pattern; prints an aligned table with hgx/raw.
 *
 *   hgx-perf [--transport ofi+tcp|ofi+shm|ucx+tcp|ucx+shm|mpi+static]
 *            [--mode lat|rate|bw|cancel|scale] [--raw|--no-raw] [--sizes a-b]
 *            [--iters N] [--csv FILE] [--quiet]
 *
 * OFI and UCX run standalone: the program forks its server before any
 * initialization and the two talk bootstrap data over pipes. mpi+static runs
 * under mpirun with two ranks: rank 0 serves, rank 1 measures and prints.
 * --server-cmd starts the server on another host instead (perf_remote.c).
 */
#include "config.h"
#include "perf.h"

#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const size_t perf_rate_inflight[] = {1, 2, 4, 8, 16, 32, 64};
const int perf_rate_n = 7;
const size_t perf_scale_counts[] = {10, 100, 1000, 10000};
const int perf_scale_n = 4;

static const char *mode_names[] = {"lat", "rate", "bw", "cancel", "scale"};
static const char *mode_units[] = {"us, median (lower is better)",
                                   "ops/s (higher is better)", "MiB/s (higher is better)",
                                   "us (lower is better)", "us/op (lower is better)"};

double perf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void perf_progress(const struct perf_config *cfg, const char *fmt, ...)
{
    if (cfg->quiet || cfg->server)
        return;
    int tty = isatty(STDERR_FILENO);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s[hgx-perf %s] ", tty ? "\r\033[K" : "", cfg->transport);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(tty ? " ..." : " ...\n", stderr);
    fflush(stderr);
}

struct perf_point *perf_add(struct perf_point *pts, int *n, const char *what,
                            size_t param, long iters, double value)
{
    if (*n >= PERF_MAX_POINTS * 2)
        return NULL;
    struct perf_point *p = &pts[(*n)++];
    snprintf(p->what, sizeof(p->what), "%s", what);
    p->param = param;
    p->iters = iters;
    p->value = value;
    p->have = 1;
    return p;
}

long perf_iters_for(const struct perf_config *cfg, size_t x, int bulk)
{
    long it = cfg->iters;
    if (bulk) { /* at most ~256 MiB per point, at least 3 transfers */
        long cap = (long)((256u << 20) / (x ? x : 1));
        if (it > cap)
            it = cap;
        return it < 3 ? 3 : it;
    }
    if (cfg->mode == PERF_SCALE) { /* rounds of x outstanding: ~20 * iters ops */
        long r = (long)(20 * (size_t)cfg->iters / (x ? x : 1));
        return r < 2 ? 2 : r;
    }
    if (cfg->mode == PERF_LAT && x > 16384) /* keep big payloads short */
        it = it / 2 > 50 ? it / 2 : it;
    return it < 1 ? 1 : it;
}

void *perf_page_alloc(size_t n)
{
    return aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double perf_median(double *v, long n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ------------------------------------------------------------ pipes (OOB) */

static int pipe_send(struct perf_oob *o, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(o->wfd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int pipe_recv(struct perf_oob *o, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        ssize_t n = read(o->rfd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int perf_oob_send_blob(struct perf_oob *o, const void *b, size_t n)
{
    uint64_t len = n;
    return perf_oob_send(o, &len, sizeof(len)) || (n && perf_oob_send(o, b, n)) ? -1 : 0;
}

int perf_oob_recv_blob(struct perf_oob *o, void *b, size_t cap, size_t *n)
{
    uint64_t len;
    if (perf_oob_recv(o, &len, sizeof(len)) || len > cap)
        return -1;
    *n = (size_t)len;
    return len ? perf_oob_recv(o, b, (size_t)len) : 0;
}

int perf_oob_sync(struct perf_oob *o)
{
    char c = 's', d;
    return perf_oob_send(o, &c, 1) || perf_oob_recv(o, &d, 1) ? -1 : 0;
}

int perf_oob_count(const struct perf_config *cfg)
{
    return cfg->server ? cfg->clients : 1;
}

int perf_oob_barrier(const struct perf_config *cfg, struct perf_oob *oob)
{
    int ret = 0;
    for (int i = 0; i < perf_oob_count(cfg); i++)
        ret |= perf_oob_sync(&oob[i]);
    return ret;
}

/* ------------------------------------------------------------ clients */

/* With --clients N, client 0 (the first process) coordinates the others
 * over a pipe pair each: barriers, and their results at the end (under MPI:
 * a barrier of the client ranks, and MPI messages). */
static struct {
    int n;                                            /* clients, 1: no group */
    int up[PERF_MAX_CLIENTS], down[PERF_MAX_CLIENTS]; /* client 0: per client */
    int to0, from0;                                   /* other clients: to client 0 */
    int id;
    int mpi; /* MPI ranks: an MPI barrier of the client ranks instead */
} group = {.n = 1};

int perf_clients_barrier(void)
{
    char c = 'b';
    int ret = 0;
    if (group.n <= 1)
        return 0;
    if (group.mpi)
        return perf_mpi_clients_barrier();
    if (group.id == 0) {
        for (int i = 1; i < group.n; i++)
            ret |= read(group.up[i], &c, 1) != 1;
        for (int i = 1; i < group.n; i++)
            ret |= write(group.down[i], &c, 1) != 1;
    } else {
        ret |= write(group.to0, &c, 1) != 1;
        ret |= read(group.from0, &c, 1) != 1;
    }
    return ret ? -1 : 0;
}

static int fd_write_all(int fd, const void *buf, size_t len)
{
    struct perf_oob o = {.wfd = fd};
    return pipe_send(&o, buf, len);
}

static int fd_read_all(int fd, void *buf, size_t len)
{
    struct perf_oob o = {.rfd = fd};
    return pipe_recv(&o, buf, len);
}

static const struct perf_point *find(const struct perf_point *p, int n, const char *what,
                                     size_t param);

/* Rates of the clients add up: the load they put on the server together. */
static void add_client_rates(struct perf_results *sum, const struct perf_results *r)
{
    for (int side = 0; side < 2; side++) {
        struct perf_point *pts = side ? sum->raw : sum->hg;
        int n = side ? sum->nraw : sum->nhg;
        const struct perf_point *other = side ? r->raw : r->hg;
        int m = side ? r->nraw : r->nhg;
        for (int i = 0; i < n; i++) {
            if (strcmp(pts[i].what, "rate-ops/s") &&
                strcmp(pts[i].what, "rate-req-ops/s"))
                continue;
            const struct perf_point *q = find(other, m, pts[i].what, pts[i].param);
            if (!q)
                continue;
            pts[i].value += q->value;
            pts[i].best += q->best;
            pts[i].iters += q->iters;
            pts[i].ratio = 0; /* the table shows the ratio of the sums */
        }
    }
}

/* After the sums: hgx requests against HG_Forward, as the summed rates. */
static void rate_req_ratios(struct perf_results *r)
{
    for (int i = 0; i < r->nhg; i++) {
        if (strcmp(r->hg[i].what, "rate-req/hg"))
            continue;
        const struct perf_point *hg = find(r->hg, r->nhg, "rate-ops/s", r->hg[i].param);
        const struct perf_point *rq =
            find(r->hg, r->nhg, "rate-req-ops/s", r->hg[i].param);
        if (hg && rq && hg->value > 0)
            r->hg[i].value = rq->value / hg->value;
    }
}

/* A client's results to client 0: over its pipe, or to rank 1 under MPI. */
static int group_send(const void *buf, size_t len)
{
    return group.mpi ? perf_mpi_send_to(1, buf, len) : fd_write_all(group.to0, buf, len);
}

/* Client 0: client k's results. */
static int group_recv(int k, void *buf, size_t len)
{
    return group.mpi ? perf_mpi_recv_from(k + 1, buf, len)
                     : fd_read_all(group.up[k], buf, len);
}

/* Clients other than 0: hand the exit status and results to client 0. */
static int clients_send_results(int ret, const struct perf_results *res)
{
    return group_send(&ret, sizeof(ret)) || group_send(res, sizeof(*res)) ? -1 : 0;
}

/* Client 0: add the other clients' results to its own; nonzero if one
 * failed. */
static int clients_gather_results(struct perf_results *res)
{
    static struct perf_results other;
    int failed = 0;
    for (int k = 1; k < group.n; k++) {
        int r = 1;
        if (group_recv(k, &r, sizeof(r)) || group_recv(k, &other, sizeof(other)) || r) {
            fprintf(stderr, "hgx-perf: client %d failed\n", k);
            failed = 1;
        } else {
            add_client_rates(res, &other);
        }
    }
    if (group.n > 1)
        rate_req_ratios(res);
    return failed;
}

/* ------------------------------------------------------------ binding */

/* The first two CPUs this process may run on; false if it has fewer. Where
 * the two processes land otherwise depends on the scheduler from run to run
 * (sharing one CPU made small round trips 3x slower, hgx and raw alike). */
static bool two_cpus(int cpus[2])
{
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return false;
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &set))
            cpus[n++] = c;
    return n == 2;
}

static void bind_cpu(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
        perror("hgx-perf: sched_setaffinity");
}

/* ------------------------------------------------------------ options */

static void usage(FILE *f)
{
    fputs(
        "usage: hgx-perf [--transport ofi+tcp|ofi+shm|ucx+tcp|ucx+shm|mpi+static]\n"
        "                [--mode lat|rate|bw|cancel|scale] [--raw | --no-raw]\n"
        "                [--sizes A-B] [--iters N] [--repeat N] [--csv FILE] [--quiet]\n"
        "                [--no-bind] [--no-block] [--raw-wait] [--tuned]\n"
        "                [--clients N] [--runs FILE] [--na] [--server-cmd PREFIX]\n"
        "  lat: RPC round trip, payload A..B bytes (x4 steps; default 0-65536)\n"
        "  rate: RPCs/s with 1..64 in flight from each of --clients N (1-8)\n"
        "  client processes (their rates add up; only the server is bound)\n"
        "  bw: bulk pull/push A..B (default 4096-64M)\n"
        "  cancel: cancel latency and a 10000-op cancel storm\n"
        "  scale: per-op cost with 10..10000 outstanding (hgx deadlines set)\n"
        "  --raw: raw transport only; --no-raw: hgx only. mpi+static needs mpirun -np "
        "2.\n"
        "  Sizes take K/M suffixes. OFI/UCX: server and client are bound to two\n"
        "  different CPUs (as mpirun --bind-to core) unless --no-bind.\n"
        "  --repeat N (1-101): N runs of raw then hgx; medians of the values, and\n"
        "  of the per-run ratios; column best: best hgx run / best raw run.\n"
        "  --runs FILE: each run's hgx and raw values as CSV (one client only).\n"
        "  --na (lat only): the hgx column is the NA layer alone: an unexpected\n"
        "  request and an empty expected reply, the messages of an RPC without HG.\n"
        "  --no-block: hgx busy-polls (NA_NO_BLOCK) like the raw loops, no wait\n"
        "  object (an idle server then uses a whole CPU).\n"
        "  --poll: both hgx sides call HG_Progress(ctx, 0) in a loop, as a program\n"
        "  that polls from its own event loop (progress never waits).\n"
        "  --raw-wait (ofi+ only): the raw loop's CQ gets a wait fd, as hgx's in\n"
        "  its default (blocking) mode; the raw loop still busy-polls.\n"
        "  hgx runs in the library's default mode, as HG_Init gives it (thread-safe:\n"
        "  any thread may post and progress); --tuned runs it with\n"
        "  NA_THREAD_MODE_SINGLE (one thread per process, no locks), as the raw\n"
        "  loops have. --thread-safe names the default explicitly.\n"
        "  --server-cmd PREFIX (ofi+tcp, ucx+tcp): start the server on another\n"
        "  host with `PREFIX /path/to/hgx-perf --serve-stdio OPTIONS` (e.g.\n"
        "  \"ssh node1\"; the same path there), bootstrap over its stdin/stdout;\n"
        "  hgx uses the plain info string, the raw loop the same interface.\n",
        f);
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    if (*end == 'k' || *end == 'K')
        v <<= 10, end++;
    else if (*end == 'm' || *end == 'M')
        v <<= 20, end++;
    if (*end)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_sizes(struct perf_config *cfg, const char *arg)
{
    char a[64], *dash;
    size_t lo, hi;
    snprintf(a, sizeof(a), "%s", arg);
    dash = strchr(a, '-');
    if (dash)
        *dash = '\0';
    if (parse_size(a, &lo) || parse_size(dash ? dash + 1 : a, &hi) || hi < lo)
        return -1;
    cfg->nsizes = 0;
    for (size_t s = lo; cfg->nsizes < PERF_MAX_POINTS; s = s ? s * 4 : 1) {
        cfg->sizes[cfg->nsizes++] = s;
        if (s >= hi)
            break;
        if (s && s * 4 > hi && s != hi) { /* always end on hi */
            cfg->sizes[cfg->nsizes++] = hi;
            break;
        }
    }
    return 0;
}

/* The --runs file, truncated; NULL (said on stderr) if it cannot be written. */
static FILE *runs_open(const struct perf_config *cfg)
{
    FILE *f = fopen(cfg->runs_csv, "w");
    if (!f)
        fprintf(stderr, "hgx-perf: cannot write %s: %s\n", cfg->runs_csv,
                strerror(errno));
    return f;
}

static int parse_args(struct perf_config *cfg, int argc, char **argv)
{
    const char *sizes = NULL;
    cfg->transport = "ofi+tcp";
    cfg->mode = PERF_LAT;
    cfg->thread_safe = 1; /* the library default; --tuned for NA_THREAD_MODE_SINGLE */
    cfg->iters = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--raw"))
            cfg->raw_only = 1;
        else if (!strcmp(o, "--no-raw"))
            cfg->hg_only = 1;
        else if (!strcmp(o, "--quiet"))
            cfg->quiet = 1;
        else if (!strcmp(o, "--no-bind"))
            cfg->no_bind = 1;
        else if (!strcmp(o, "--no-block"))
            cfg->no_block = 1;
        else if (!strcmp(o, "--poll"))
            cfg->poll = 1;
        else if (!strcmp(o, "--raw-wait"))
            cfg->raw_wait = 1;
        else if (!strcmp(o, "--thread-safe"))
            cfg->thread_safe = 1;
        else if (!strcmp(o, "--tuned"))
            cfg->thread_safe = 0;
        else if (!strcmp(o, "--na"))
            cfg->na_layer = 1;
        else if (!strcmp(o, "--serve-stdio"))
            cfg->server = cfg->remote = 1;
        else if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage(stdout);
            exit(0);
        } else if (v && !strcmp(o, "--transport"))
            cfg->transport = v, i++;
        else if (v && !strcmp(o, "--sizes"))
            sizes = v, i++;
        else if (v && !strcmp(o, "--server-cmd"))
            cfg->server_cmd = v, cfg->remote = 1, i++;
        else if (v && !strcmp(o, "--csv"))
            cfg->csv = v, i++;
        else if (v && !strcmp(o, "--runs"))
            cfg->runs_csv = v, i++;
        else if (v && !strcmp(o, "--iters")) {
            cfg->iters = atoi(v), i++;
            if (cfg->iters <= 0)
                return -1;
        } else if (v && !strcmp(o, "--clients")) {
            cfg->clients = atoi(v), i++;
            if (cfg->clients <= 0 || cfg->clients > PERF_MAX_CLIENTS)
                return -1;
        } else if (v && !strcmp(o, "--repeat")) {
            cfg->repeat = atoi(v), i++;
            if (cfg->repeat <= 0 || cfg->repeat > PERF_MAX_REPEAT)
                return -1;
        } else if (v && !strcmp(o, "--mode")) {
            int m;
            for (m = 0; m < 5 && strcmp(v, mode_names[m]); m++)
                ;
            if (m == 5)
                return -1;
            cfg->mode = (enum perf_mode)m, i++;
        } else
            return -1;
    }
    if (!strncmp(cfg->transport, "ofi+", 4))
        cfg->kind = PERF_OFI;
    else if (!strncmp(cfg->transport, "ucx+", 4))
        cfg->kind = PERF_UCX;
    else if (!strcmp(cfg->transport, "mpi+static"))
        cfg->kind = PERF_MPI;
    else
        return -1;
    cfg->proto = strchr(cfg->transport, '+') + 1;
    if (cfg->kind != PERF_MPI && strcmp(cfg->proto, "tcp") && strcmp(cfg->proto, "shm"))
        return -1;
    if (cfg->remote && (cfg->kind == PERF_MPI || strcmp(cfg->proto, "tcp"))) {
        fprintf(stderr, "hgx-perf: --server-cmd takes ofi+tcp or ucx+tcp\n");
        return -1;
    }
    static char info[32];
    snprintf(info, sizeof(info), "%s%s", cfg->transport,
             strcmp(cfg->proto, "tcp") || cfg->remote ? "" : "://127.0.0.1");
    cfg->info = info;
    /* The raw UCX loop connects by worker address, over any of UCX's devices:
     * loopback on one host, the interface hgx picks across two. */
    if (cfg->kind == PERF_UCX && !strcmp(cfg->proto, "tcp")) {
        char ifname[64] = "lo";
        struct in_addr ip;
        if (cfg->remote && perf_routable_if(ifname, sizeof(ifname), &ip))
            return -1;
        setenv("UCX_NET_DEVICES", ifname, 0);
    }
    if (cfg->raw_wait && cfg->kind != PERF_OFI) {
        fprintf(stderr, "hgx-perf: --raw-wait applies to ofi+ transports only\n");
        return -1;
    }
    if (!cfg->clients)
        cfg->clients = 1;
    if (cfg->clients > 1 && cfg->mode != PERF_RATE) {
        fprintf(stderr, "hgx-perf: --clients applies to --mode rate only\n");
        return -1;
    }
    if (cfg->na_layer && cfg->mode != PERF_LAT) {
        fprintf(stderr, "hgx-perf: --na applies to --mode lat only\n");
        return -1;
    }
    if (cfg->clients > 1 && cfg->remote) {
        fprintf(stderr, "hgx-perf: --server-cmd takes one client\n");
        return -1;
    }
    if (cfg->clients > 1 && cfg->runs_csv) {
        fprintf(stderr, "hgx-perf: --runs takes one client (rates add up across them)\n");
        return -1;
    }
    if (cfg->runs_csv) { /* fail before measuring, not after */
        FILE *f = runs_open(cfg);
        if (!f)
            return -1;
        fclose(f);
    }
    if (!cfg->repeat)
        cfg->repeat = 1;
    if (!cfg->iters)
        cfg->iters = cfg->mode == PERF_LAT      ? 2000
                     : cfg->mode == PERF_BW     ? 200
                     : cfg->mode == PERF_CANCEL ? 200
                                                : 1000;
    if (!sizes)
        sizes = cfg->mode == PERF_BW ? "4K-64M" : "0-64K";
    return parse_sizes(cfg, sizes);
}

/* ------------------------------------------------------------ output */

static const struct perf_point *find(const struct perf_point *p, int n, const char *what,
                                     size_t param)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(p[i].what, what) && p[i].param == param)
            return &p[i];
    return NULL;
}

static void fmt_val(char *buf, size_t len, const struct perf_point *p)
{
    if (!p)
        snprintf(buf, len, "-");
    else if (p->value >= 1e5)
        snprintf(buf, len, "%.0f", p->value);
    else
        snprintf(buf, len, "%.2f", p->value);
}

static void report(const struct perf_config *cfg, const struct perf_results *r)
{
    /* rows: union of hg and raw points, hg order first */
    const struct perf_point *rows[PERF_MAX_POINTS * 4];
    int nrows = 0;
    for (int i = 0; i < r->nhg; i++)
        rows[nrows++] = &r->hg[i];
    for (int i = 0; i < r->nraw; i++)
        if (!find(r->hg, r->nhg, r->raw[i].what, r->raw[i].param))
            rows[nrows++] = &r->raw[i];

    printf(
        "# hgx-perf: transport %s%s%s%s%s%s, mode %s, sizes %zu-%zu B, iters %d (scaled "
        "per "
        "point), values in %s",
        cfg->transport, cfg->no_block ? " (hgx NA_NO_BLOCK)" : "",
        cfg->poll ? " (hgx polled: HG_Progress(ctx, 0))" : "",
        cfg->na_layer ? " (hgx column: NA alone, --na)" : "",
        cfg->thread_safe ? " (hgx default mode, thread-safe)"
                         : " (hgx tuned: NA_THREAD_MODE_SINGLE)",
        cfg->raw_wait ? " (raw CQ with a wait fd)" : "", mode_names[cfg->mode],
        cfg->sizes[0], cfg->sizes[cfg->nsizes - 1], cfg->iters, mode_units[cfg->mode]);
    if (cfg->clients > 1)
        printf(", %d clients (rates summed over them)", cfg->clients);
    bool best = cfg->repeat > 1;
    if (best)
        printf(
            ", medians of %d runs (hgx/raw: median per-run ratio; best: best hgx run / "
            "best raw run)",
            cfg->repeat);
    printf("\n");
    printf("%-16s %10s %9s %12s %12s %8s%s\n", "test",
           cfg->mode == PERF_LAT || cfg->mode == PERF_BW ? "bytes" : "n", "iters", "hgx",
           "raw", "hgx/raw", best ? "     best" : "");
    FILE *csv = NULL;
    if (cfg->csv) {
        csv = fopen(cfg->csv, "w");
        if (!csv)
            perror(cfg->csv);
        else
            fprintf(csv, "transport,mode,test,param,iters,hgx,raw,ratio,best_ratio\n");
    }
    for (int i = 0; i < nrows; i++) {
        const struct perf_point *h = find(r->hg, r->nhg, rows[i]->what, rows[i]->param);
        const struct perf_point *w = find(r->raw, r->nraw, rows[i]->what, rows[i]->param);
        char hv[32], wv[32], ratio[32] = "-", bratio[32] = "-";
        fmt_val(hv, sizeof(hv), h);
        fmt_val(wv, sizeof(wv), w);
        if (h && w && w->value > 0)
            snprintf(ratio, sizeof(ratio), "%.2f",
                     h->ratio > 0 ? h->ratio : h->value / w->value);
        if (best && h && w && w->best > 0)
            snprintf(bratio, sizeof(bratio), "%.2f", h->best / w->best);
        printf("%-16s %10zu %9ld %12s %12s %8s", rows[i]->what, rows[i]->param,
               rows[i]->iters, hv, wv, ratio);
        printf(best ? " %8s\n" : "\n", bratio);
        if (csv)
            fprintf(csv, "%s,%s,%s,%zu,%ld,%s,%s,%s,%s\n", cfg->transport,
                    mode_names[cfg->mode], rows[i]->what, rows[i]->param, rows[i]->iters,
                    h ? hv : "", w ? wv : "", strcmp(ratio, "-") ? ratio : "",
                    strcmp(bratio, "-") ? bratio : "");
    }
    if (r->idle_cpu_pct >= 0) {
        printf("# idle hgx server CPU: %.2f%% of wall time over 1 s\n", r->idle_cpu_pct);
        if (csv)
            fprintf(csv, "%s,%s,idle-cpu-pct,0,1,%.2f,,\n", cfg->transport,
                    mode_names[cfg->mode], r->idle_cpu_pct);
    }
    if (csv)
        fclose(csv);
    fflush(stdout);
}

/* ------------------------------------------------------------ main */

static int run_both(const struct perf_config *cfg, struct perf_oob *oob,
                    struct perf_results *res)
{
    int ret = 0;
    if (!cfg->hg_only) {
        int (*raw)(const struct perf_config *, struct perf_oob *, struct perf_results *) =
            cfg->kind == PERF_OFI   ? perf_raw_ofi_run
            : cfg->kind == PERF_UCX ? perf_raw_ucx_run
                                    : perf_raw_mpi_run;
        if (raw(cfg, oob, res)) {
            fprintf(stderr, "hgx-perf: raw %s baseline failed (%s)\n", cfg->transport,
                    cfg->server ? "server" : "client");
            ret = 1;
        }
        perf_oob_barrier(cfg, oob);
    }
    if (!cfg->raw_only && (cfg->na_layer ? perf_na_run : perf_hg_run)(cfg, oob, res)) {
        fprintf(stderr, "hgx-perf: %s %s run failed (%s)\n", cfg->na_layer ? "NA" : "hgx",
                cfg->transport, cfg->server ? "server" : "client");
        ret = 1;
    }
    return ret;
}

/* Median over the runs of each value of run 0 (rows missing from a run are
 * left out of that row's median); for hgx rows also the median of the
 * per-run hgx/raw ratios: the machine drifts between runs (a tcp round trip
 * moves by 20%), and within one run it moves raw and hgx alike. And the best
 * run of each side: some VMs switch between a fast and a slow state (seen:
 * shared-memory bandwidth 3 or 11 GB/s, raw and hgx alike, run to run), and a
 * per-run ratio then compares whatever states the two halves of the run got;
 * the best runs compare the fast state of each. */
static void merge_runs(const struct perf_config *cfg, const struct perf_results *runs,
                       int nruns, struct perf_results *out)
{
    bool higher_better = cfg->mode == PERF_RATE || cfg->mode == PERF_BW;
    double v[PERF_MAX_REPEAT], q[PERF_MAX_REPEAT], cpu[PERF_MAX_REPEAT];
    int ncpu = 0;
    *out = runs[0];
    for (int side = 0; side < 2; side++) {
        struct perf_point *pts = side ? out->raw : out->hg;
        int npts = side ? out->nraw : out->nhg;
        for (int i = 0; i < npts; i++) {
            long nv = 0, nq = 0;
            for (int k = 0; k < nruns; k++) {
                const struct perf_point *p =
                    find(side ? runs[k].raw : runs[k].hg,
                         side ? runs[k].nraw : runs[k].nhg, pts[i].what, pts[i].param);
                const struct perf_point *w =
                    find(runs[k].raw, runs[k].nraw, pts[i].what, pts[i].param);
                if (!p)
                    continue;
                if (nv == 0 ||
                    (higher_better ? p->value > pts[i].best : p->value < pts[i].best))
                    pts[i].best = p->value;
                v[nv++] = p->value;
                if (!side && w && w->value > 0)
                    q[nq++] = p->value / w->value;
            }
            pts[i].value = perf_median(v, nv);
            pts[i].ratio = nq ? perf_median(q, nq) : 0;
        }
    }
    for (int k = 0; k < nruns; k++)
        if (runs[k].idle_cpu_pct >= 0)
            cpu[ncpu++] = runs[k].idle_cpu_pct;
    out->idle_cpu_pct = ncpu ? perf_median(cpu, ncpu) : -1;
}

/* --runs: every run's pair of values, for a look at how the machine's state
 * moved them (the medians hide it). */
static int write_runs(const struct perf_config *cfg, const struct perf_results *runs,
                      int nruns)
{
    FILE *f = runs_open(cfg);
    if (!f)
        return -1;
    fprintf(f, "transport,mode,run,test,param,hgx,raw\n");
    for (int k = 0; k < nruns; k++) {
        const struct perf_results *r = &runs[k];
        for (int i = 0; i < r->nhg; i++) {
            const struct perf_point *w =
                find(r->raw, r->nraw, r->hg[i].what, r->hg[i].param);
            fprintf(f, "%s,%s,%d,%s,%zu,%.6g,", cfg->transport, mode_names[cfg->mode], k,
                    r->hg[i].what, r->hg[i].param, r->hg[i].value);
            if (w)
                fprintf(f, "%.6g", w->value);
            fputc('\n', f);
        }
        for (int i = 0; i < r->nraw; i++)
            if (!find(r->hg, r->nhg, r->raw[i].what, r->raw[i].param))
                fprintf(f, "%s,%s,%d,%s,%zu,,%.6g\n", cfg->transport,
                        mode_names[cfg->mode], k, r->raw[i].what, r->raw[i].param,
                        r->raw[i].value);
    }
    return fclose(f) ? -1 : 0;
}

/* cfg->repeat runs of raw then hgx, each with its own transport setup. */
static int run_repeated(const struct perf_config *cfg, struct perf_oob *oob,
                        struct perf_results *res)
{
    static struct perf_results runs[PERF_MAX_REPEAT];
    int nruns = cfg->repeat > 1 ? cfg->repeat : 1;
    for (int k = 0; k < nruns; k++) {
        runs[k] = (struct perf_results){.idle_cpu_pct = -1};
        if (nruns > 1)
            perf_progress(cfg, "run %d of %d", k + 1, nruns);
        if (run_both(cfg, oob, &runs[k]))
            return 1;
    }
    if (cfg->runs_csv && !cfg->server && write_runs(cfg, runs, nruns))
        return 1;
    if (nruns == 1)
        *res = runs[0];
    else
        merge_runs(cfg, runs, nruns, res);
    return 0;
}

/* The server process's end: nonzero (said) unless it exited with 0. */
static int reap_server(pid_t pid)
{
    int status = 0;
    if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status))
        return 0;
    fprintf(stderr, "hgx-perf: server exited abnormally (status %#x)\n", status);
    return 1;
}

/* --server-cmd (client) and --serve-stdio (the server it starts): one client,
 * the bootstrap channel over the server command's stdin and stdout. */
static int run_remote(struct perf_config *cfg, int argc, char **argv,
                      struct perf_results *res)
{
    struct perf_oob oob = {.send = pipe_send, .recv = pipe_recv, .rfd = -1, .wfd = -1};
    int cpus[2];
    bool bind = !cfg->no_bind && two_cpus(cpus);
    signal(SIGPIPE, SIG_IGN);
    if (cfg->server) {
        if (perf_remote_serve_oob(&oob))
            return 1;
        if (bind)
            bind_cpu(cpus[0]);
        return run_repeated(cfg, &oob, res);
    }
    pid_t pid = perf_remote_start(cfg->server_cmd, argc, argv, &oob);
    if (pid < 0)
        return 1;
    if (bind)
        bind_cpu(cpus[1]);
    int ret = run_repeated(cfg, &oob, res);
    if (!cfg->quiet && isatty(STDERR_FILENO))
        fputs("\r\033[K", stderr);
    close(oob.wfd);
    ret |= reap_server(pid);
    report(cfg, res);
    return ret;
}

int main(int argc, char **argv)
{
    static struct perf_config cfg;
    static struct perf_results res;
    struct perf_oob oob = {.send = pipe_send, .recv = pipe_recv, .rfd = -1, .wfd = -1};
    int ret;

    if (parse_args(&cfg, argc, argv)) {
        usage(stderr);
        return 2;
    }
    res.idle_cpu_pct = -1;

    if (cfg.kind == PERF_MPI) {
#ifdef HGX_HAVE_MPI
        int rank, size;
        if (perf_mpi_init(&argc, &argv, &rank, &size))
            return 1;
        if (size != cfg.clients + 1) {
            if (rank == 0)
                fprintf(stderr,
                        "hgx-perf: mpi+static needs %d ranks (mpirun -np %d): rank 0 "
                        "serves, the others are the --clients %d\n",
                        cfg.clients + 1, cfg.clients + 1, cfg.clients);
            perf_mpi_finalize();
            return 2;
        }
        cfg.server = rank == 0;
        cfg.client_id = rank ? rank - 1 : 0;
        group.n = cfg.clients;
        group.id = cfg.client_id;
        group.mpi = 1;
        if (cfg.client_id)
            cfg.quiet = 1;
        static struct perf_oob chans[PERF_MAX_CLIENTS];
        for (int k = 0; k < (cfg.server ? cfg.clients : 1); k++)
            perf_mpi_oob(&chans[k], cfg.server ? k + 1 : 0);
        ret = run_repeated(&cfg, chans, &res);
        /* The other clients' results go to client 0 (rank 1), which reports. */
        if (!cfg.server && cfg.client_id) {
            clients_send_results(ret, &res);
        } else if (!cfg.server) {
            ret |= clients_gather_results(&res);
            if (!ret)
                report(&cfg, &res);
        }
        perf_mpi_finalize();
        return ret;
#else
        fprintf(stderr, "hgx-perf: built without MPI\n");
        return 2;
#endif
    }

    if (cfg.remote)
        return run_remote(&cfg, argc, argv, &res);

    int cpus[2];
    /* With several clients only the server is bound: the clients share the
     * machine's CPUs as the scheduler sees fit. */
    bool bind = !cfg.no_bind && two_cpus(cpus);
    int n = cfg.clients;
    /* Channel k joins the server and client k. Fork the server before any
     * transport is initialized. */
    int c2s[PERF_MAX_CLIENTS][2], s2c[PERF_MAX_CLIENTS][2];
    int up[PERF_MAX_CLIENTS][2], down[PERF_MAX_CLIENTS][2];
    for (int k = 0; k < n; k++)
        if (pipe(c2s[k]) || pipe(s2c[k]) || (k && (pipe(up[k]) || pipe(down[k])))) {
            perror("pipe");
            return 1;
        }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        static struct perf_oob chans[PERF_MAX_CLIENTS];
        for (int k = 0; k < n; k++) {
            close(c2s[k][1]);
            close(s2c[k][0]);
            if (k)
                close(up[k][0]), close(up[k][1]), close(down[k][0]), close(down[k][1]);
            chans[k] = oob;
            chans[k].rfd = c2s[k][0];
            chans[k].wfd = s2c[k][1];
        }
        cfg.server = 1;
        if (bind)
            bind_cpu(cpus[0]);
        _exit(run_repeated(&cfg, chans, &res));
    }
    for (int k = 0; k < n; k++)
        close(c2s[k][0]), close(s2c[k][1]);
    pid_t kids[PERF_MAX_CLIENTS] = {0};
    for (int k = 1; k < n; k++) {
        fflush(NULL);
        kids[k] = fork();
        if (kids[k] < 0) {
            perror("fork");
            return 1;
        }
        if (kids[k] == 0) {
            for (int j = 0; j < n; j++)
                if (j != k) {
                    close(c2s[j][1]), close(s2c[j][0]);
                    if (j)
                        close(up[j][0]), close(up[j][1]), close(down[j][0]),
                            close(down[j][1]);
                }
            close(up[k][0]);
            close(down[k][1]);
            group.n = n;
            group.id = k;
            group.to0 = up[k][1];
            group.from0 = down[k][0];
            cfg.client_id = k;
            cfg.quiet = 1;
            oob.rfd = s2c[k][0];
            oob.wfd = c2s[k][1];
            signal(SIGPIPE, SIG_IGN);
            int r = run_repeated(&cfg, &oob, &res);
            _exit(clients_send_results(r, &res) ? 1 : r);
        }
    }
    for (int k = 1; k < n; k++) {
        close(c2s[k][1]), close(s2c[k][0]), close(up[k][1]), close(down[k][0]);
        group.up[k] = up[k][0];
        group.down[k] = down[k][1];
    }
    group.n = n;
    group.id = 0;
    if (bind && n == 1)
        bind_cpu(cpus[1]);
    oob.rfd = s2c[0][0];
    oob.wfd = c2s[0][1];
    signal(SIGPIPE, SIG_IGN);
    ret = run_repeated(&cfg, &oob, &res);
    if (!cfg.quiet && isatty(STDERR_FILENO))
        fputs("\r\033[K", stderr);
    close(oob.wfd);
    ret |= clients_gather_results(&res);
    for (int k = 1; k < n; k++) {
        int status = 0;
        if (waitpid(kids[k], &status, 0) != kids[k] || !WIFEXITED(status) ||
            WEXITSTATUS(status))
            ret = 1;
    }
    ret |= reap_server(pid);
    report(&cfg, &res);
    return ret;
}
