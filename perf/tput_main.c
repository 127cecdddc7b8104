/*
 * tput_main.c -- hgx-tput's coordinator: forks the server and the clients
 * before any of them initializes a transport, runs each phase (warm-up on
 * every client, then all clients at once), times it from the first GO to
 * the last DONE, checks every count, and prints one row per phase.
 *
 *   hgx-tput [--transport T] [--contexts 1-4] [--clients 1-8] [--window 1-64]
 *            [--iters N] [--pull-iters N] [--pull-size BYTES]
 *            [--kind rpc|pull|both]
 *            [--verify] [--check-target] [--timeout S] [--csv FILE]
 *            [--progress-ms MS]
 *
 * A phase that does not finish within --timeout seconds is reported as a
 * stall with each client's and each context's count, and the run fails.
 */
#include "config.h"
#include "tput.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *kind_names[TPUT_NKINDS] = {"rpc", "pull"};

/* The coordinator's ends: [0] the server, [1 + k] client k. */
static struct {
    struct tput_chan ch[1 + TPUT_MAX_CLIENTS];
    pid_t pid[1 + TPUT_MAX_CLIENTS];
    int n;
} procs;

static void usage(FILE *f)
{
    fputs("usage: hgx-tput [--transport ofi+tcp|ofi+shm|ucx+tcp|ucx+shm]\n"
          "                [--contexts 1-4] [--clients 1-8] [--window 1-64]\n"
          "                [--iters N] [--pull-iters N] [--pull-size BYTES]\n"
          "                [--kind rpc|pull|both]\n"
          "                [--verify] [--check-target] [--timeout S] [--csv FILE]\n"
          "                [--progress-ms MS]\n"
          "  One server with --contexts HG contexts (a progress thread each, the\n"
          "  default thread-safe mode) and --clients processes, each keeping\n"
          "  --window RPCs outstanding, spread over the contexts by target id.\n"
          "  Phases: rpc (small RPC) and pull (the handler pulls --pull-size bytes,\n"
          "  default 65536, from the client). --iters: timed small RPCs per\n"
          "  client (default 20000); --pull-iters: timed pulls (default 4000).\n"
          "  Pulled data is checked every 4 KiB, every word with --verify.\n"
          "  off-target: RPCs a context other than the one their\n"
          "  handle aimed at (HG_Set_target_id) ran; a failure with --check-target.\n"
          "  srv-us, cli-us: CPU time (user + system) per RPC of the server, of all\n"
          "  clients together. p99-us (within a factor 2), max-us: RPC round trips.\n"
          "  --progress-ms: the server threads' HG_Progress timeout (default 100).\n"
          "  --csv FILE: rows appended (header when FILE is new).\n",
          f);
}

static long arg_long(const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    return errno || end == v || *end || x < lo || x > hi ? -1 : x;
}

static int parse_args(struct tput_config *cfg, const char **csv, int argc, char **argv)
{
    *cfg = (struct tput_config){.transport = "ofi+tcp",
                                .contexts = 1,
                                .clients = 1,
                                .window = 16,
                                .iters = {20000, 4000},
                                .pull_size = 65536,
                                .kinds = 3,
                                .timeout_s = 60,
                                .progress_ms = 100};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x = 0;
        if (!strcmp(o, "--verify") || !strcmp(o, "--check-target")) {
            *(o[2] == 'v' ? &cfg->verify_all : &cfg->check_target) = 1;
            continue;
        }
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage(stdout);
            exit(0);
        }
        if (!v)
            return -1;
        i++;
        if (!strcmp(o, "--transport"))
            cfg->transport = v;
        else if (!strcmp(o, "--csv"))
            *csv = v;
        else if (!strcmp(o, "--kind"))
            x = cfg->kinds = !strcmp(v, "rpc")    ? 1
                             : !strcmp(v, "pull") ? 2
                             : !strcmp(v, "both") ? 3
                                                  : -1;
        else if (!strcmp(o, "--contexts"))
            x = cfg->contexts = (int)arg_long(v, 1, TPUT_MAX_CONTEXTS);
        else if (!strcmp(o, "--clients"))
            x = cfg->clients = (int)arg_long(v, 1, TPUT_MAX_CLIENTS);
        else if (!strcmp(o, "--window"))
            x = cfg->window = (int)arg_long(v, 1, TPUT_MAX_WINDOW);
        else if (!strcmp(o, "--iters"))
            x = cfg->iters[TPUT_RPC] = arg_long(v, 1, 1L << 40);
        else if (!strcmp(o, "--pull-iters"))
            x = cfg->iters[TPUT_PULL] = arg_long(v, 1, 1L << 40);
        else if (!strcmp(o, "--progress-ms"))
            x = cfg->progress_ms = (int)arg_long(v, 0, 60000);
        else if (!strcmp(o, "--timeout"))
            x = cfg->timeout_s = (int)arg_long(v, 1, 86400);
        else if (!strcmp(o, "--pull-size")) /* whole words, the two marks and one */
            x = (long)(cfg->pull_size = (size_t)arg_long(v, 24, 1L << 30));
        else
            return -1;
        if (x < 0 || cfg->pull_size % sizeof(uint64_t))
            return -1;
    }
    const char *proto = strchr(cfg->transport, '+');
    if (!proto ||
        (strncmp(cfg->transport, "ofi+", 4) && strncmp(cfg->transport, "ucx+", 4)) ||
        (strcmp(proto + 1, "tcp") && strcmp(proto + 1, "shm")))
        return -1;
    /* One host: tcp pinned to loopback. */
    snprintf(cfg->info, sizeof(cfg->info), "%s%s", cfg->transport,
             strcmp(proto + 1, "tcp") ? "" : "://127.0.0.1");
    return 0;
}

/* ------------------------------------------------------------ processes */

static void kill_all(void)
{
    for (int i = 0; i < procs.n; i++)
        if (procs.pid[i] > 0) {
            kill(procs.pid[i], SIGKILL);
            waitpid(procs.pid[i], NULL, 0);
            procs.pid[i] = 0;
        }
}

/* Fork process i (0: server, 1 + k: client k); its pipe pair to us. */
static int spawn(struct tput_config *cfg, struct tput_shared *sh, int i)
{
    int down[2], up[2];
    if (pipe(down) || pipe(up)) {
        perror("hgx-tput: pipe");
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("hgx-tput: fork");
        return -1;
    }
    if (pid == 0) {
        for (int j = 0; j < procs.n; j++)
            close(procs.ch[j].rfd), close(procs.ch[j].wfd);
        close(down[1]);
        close(up[0]);
        struct tput_chan ch = {.rfd = down[0], .wfd = up[1]};
        cfg->client_id = i - 1;
        /* exit, not _exit: leak checkers run at exit; stdio is empty (flushed
         * before the fork). */
        exit(i == 0 ? tput_server(cfg, sh, &ch) : tput_client(cfg, sh, &ch));
    }
    close(down[0]);
    close(up[1]);
    procs.ch[i] = (struct tput_chan){.rfd = up[0], .wfd = down[1]};
    procs.pid[i] = pid;
    procs.n = i + 1;
    return 0;
}

/* One answer from each client (expect), before the deadline: 0, -1 on a
 * failure, -2 on a timeout. */
static int wait_clients(int nclients, char expect, double deadline)
{
    struct pollfd pfd[TPUT_MAX_CLIENTS];
    int left = nclients;
    for (int k = 0; k < nclients; k++)
        pfd[k] = (struct pollfd){.fd = procs.ch[1 + k].rfd, .events = POLLIN};
    while (left > 0) {
        double ms = (deadline - tput_now()) * 1e3;
        if (ms <= 0)
            return -2;
        int r = poll(pfd, (nfds_t)nclients, (int)ms + 1);
        if (r < 0 && errno != EINTR)
            return -1;
        for (int k = 0; r > 0 && k < nclients; k++) {
            char c;
            if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (tput_recv(&procs.ch[1 + k], &c) || c != expect) {
                fprintf(stderr, "hgx-tput: client %d failed\n", k);
                return -1;
            }
            pfd[k].fd = -1;
            left--;
        }
    }
    return 0;
}

static int server_cpu(struct tput_shared *sh, double *cpu)
{
    char c;
    if (tput_send(&procs.ch[0], TPUT_CMD_CPU) || tput_recv(&procs.ch[0], &c) ||
        c != TPUT_ANS_ACK)
        return -1;
    *cpu = sh->server_cpu;
    return 0;
}

/* ------------------------------------------------------------ phases */

struct phase_result {
    double wall, server_cpu, clients_cpu;
    long handled[TPUT_MAX_CONTEXTS];
    long off_target;         /* RPCs a context other than their target ran */
    double lat_p99, lat_max; /* round trips, seconds (p99: bucket bound) */
};

static void report_stall(const struct tput_config *cfg, struct tput_shared *sh,
                         enum tput_kind kind, const long *h0)
{
    fprintf(stderr,
            "hgx-tput: STALL: %s phase not done after %d s (%s, %d contexts, %d "
            "clients)\n",
            kind_names[kind], cfg->timeout_s, cfg->transport, cfg->contexts,
            cfg->clients);
    for (int k = 0; k < cfg->clients; k++)
        fprintf(stderr, "  client %d: %ld of %ld completed\n", k,
                atomic_load(&sh->client[k].done), cfg->iters[kind]);
    for (int i = 0; i < cfg->contexts; i++)
        fprintf(stderr, "  context %d: %ld answered\n", i,
                atomic_load(&sh->handled[i]) - h0[i]);
}

/* Both sides' checks: every RPC completed once and checked, the server
 * answered exactly as many, and with --check-target each on the context it
 * was aimed at. */
static int phase_check(const struct tput_config *cfg, struct tput_shared *sh,
                       enum tput_kind kind, const struct phase_result *r)
{
    long done = 0, bad = 0, handled = 0;
    for (int k = 0; k < cfg->clients; k++) {
        done += atomic_load(&sh->client[k].done);
        bad += atomic_load(&sh->client[k].bad);
    }
    for (int i = 0; i < cfg->contexts; i++)
        handled += r->handled[i];
    long want = cfg->iters[kind] * cfg->clients;
    long wrong = cfg->check_target ? r->off_target : 0;
    long data = atomic_load(&sh->bad_data), perr = atomic_load(&sh->progress_errors);
    if (done == want && handled == want && !bad && !wrong && !data && !perr)
        return 0;
    fprintf(stderr,
            "hgx-tput: %s phase FAILED: %ld of %ld completed, server answered %ld, "
            "%ld bad replies, %ld off target, %ld bad data, %ld progress "
            "errors\n",
            kind_names[kind], done, want, handled, bad, wrong, data, perr);
    return -1;
}

/* The clients' round trips together: the 99th percentile (the upper bound of
 * its power-of-two bucket) and the longest. */
static void latency(const struct tput_config *cfg, const struct tput_shared *sh,
                    struct phase_result *r)
{
    long hist[TPUT_LAT_BUCKETS] = {0}, n = 0, seen = 0;
    r->lat_max = 0;
    for (int k = 0; k < cfg->clients; k++) {
        for (int b = 0; b < TPUT_LAT_BUCKETS; b++)
            hist[b] += sh->client[k].lat_hist[b], n += sh->client[k].lat_hist[b];
        if (sh->client[k].lat_max > r->lat_max)
            r->lat_max = sh->client[k].lat_max;
    }
    for (int b = 0; b < TPUT_LAT_BUCKETS; b++) {
        seen += hist[b];
        if (seen * 100 >= n * 99) {
            r->lat_p99 = (double)(1L << (b + 1)) * 1e-9;
            break;
        }
    }
}

static int run_phase(const struct tput_config *cfg, struct tput_shared *sh,
                     enum tput_kind kind, struct phase_result *r)
{
    long h0[TPUT_MAX_CONTEXTS];
    double cpu0, cpu1;
    char cmd[2] = {TPUT_CMD_WARM, (char)kind};
    for (int k = 0; k < cfg->clients; k++)
        if (tput_send(&procs.ch[1 + k], cmd[0]) || tput_send(&procs.ch[1 + k], cmd[1]))
            return -1;
    int w = wait_clients(cfg->clients, TPUT_ANS_READY, tput_now() + cfg->timeout_s);
    if (w == -2)
        fprintf(stderr, "hgx-tput: STALL: %s warm-up not done after %d s\n",
                kind_names[kind], cfg->timeout_s);
    if (w || server_cpu(sh, &cpu0))
        return -1;
    for (int i = 0; i < cfg->contexts; i++)
        h0[i] = atomic_load(&sh->handled[i]);
    long off0 = atomic_load(&sh->off_target);
    double t0 = tput_now();
    for (int k = 0; k < cfg->clients; k++)
        if (tput_send(&procs.ch[1 + k], TPUT_CMD_GO))
            return -1;
    w = wait_clients(cfg->clients, TPUT_ANS_DONE, t0 + cfg->timeout_s);
    r->wall = tput_now() - t0;
    if (w == -2)
        report_stall(cfg, sh, kind, h0);
    if (w || server_cpu(sh, &cpu1))
        return -1;
    r->server_cpu = cpu1 - cpu0;
    r->clients_cpu = 0;
    for (int k = 0; k < cfg->clients; k++)
        r->clients_cpu += sh->client[k].cpu;
    for (int i = 0; i < cfg->contexts; i++)
        r->handled[i] = atomic_load(&sh->handled[i]) - h0[i];
    r->off_target = atomic_load(&sh->off_target) - off0;
    latency(cfg, sh, r);
    return phase_check(cfg, sh, kind, r);
}

static void print_row(const struct tput_config *cfg, enum tput_kind kind,
                      const struct phase_result *r, FILE *csv)
{
    long total = cfg->iters[kind] * cfg->clients, lo = total, hi = 0;
    for (int i = 0; i < cfg->contexts; i++) {
        lo = r->handled[i] < lo ? r->handled[i] : lo;
        hi = r->handled[i] > hi ? r->handled[i] : hi;
    }
    double rate = (double)total / r->wall;
    double mib = kind == TPUT_PULL ? rate * (double)cfg->pull_size / 1048576.0 : 0;
    double scpu = r->server_cpu / (double)total * 1e6;
    double ccpu = r->clients_cpu / (double)total * 1e6;
    printf("%-5s %8ld %8.3f %10.0f %9.1f %9.2f %9.2f %7.0f%% %5.0f%%-%.0f%% %10ld %8.0f "
           "%8.0f\n",
           kind_names[kind], total, r->wall, rate, mib, scpu, ccpu,
           r->server_cpu / r->wall * 100, 100.0 * (double)lo / (double)total,
           100.0 * (double)hi / (double)total, r->off_target, r->lat_p99 * 1e6,
           r->lat_max * 1e6);
    if (csv)
        fprintf(csv,
                "%s,%s,%d,%d,%d,%zu,%ld,%.6f,%.0f,%.1f,%.3f,%.3f,%.1f,%ld,%.0f,%.0f\n",
                cfg->transport, kind_names[kind], cfg->contexts, cfg->clients,
                cfg->window, kind == TPUT_PULL ? cfg->pull_size : 0, total, r->wall, rate,
                mib, scpu, ccpu, r->server_cpu / r->wall * 100, r->off_target,
                r->lat_p99 * 1e6, r->lat_max * 1e6);
}

static FILE *csv_open(const char *path)
{
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "hgx-tput: cannot write %s: %s\n", path, strerror(errno));
        return NULL;
    }
    if (ftell(f) == 0)
        fprintf(f, "transport,kind,contexts,clients,window,pull_bytes,rpcs,seconds,"
                   "rpc_per_s,mib_per_s,server_cpu_us_per_rpc,clients_cpu_us_per_rpc,"
                   "server_cpu_pct,off_target,p99_us,max_us\n");
    return f;
}

/* The phases, then QUIT to everyone; 0 if all passed and all exited 0. */
static int coordinate(const struct tput_config *cfg, struct tput_shared *sh, FILE *csv)
{
    char addr[256];
    if (tput_recv_str(&procs.ch[0], addr, sizeof(addr)) || !addr[0]) {
        fprintf(stderr, "hgx-tput: the server did not start\n");
        return -1;
    }
    for (int k = 0; k < cfg->clients; k++)
        if (tput_send_str(&procs.ch[1 + k], addr))
            return -1;
    printf("# hgx-tput %s: server at %s, %d context(s) with a thread each, %d "
           "client(s), window %d, %ld small RPCs and %ld pulls of %zu B per client\n",
           cfg->transport, addr, cfg->contexts, cfg->clients, cfg->window,
           cfg->iters[TPUT_RPC], cfg->iters[TPUT_PULL], cfg->pull_size);
    printf("%-5s %8s %8s %10s %9s %9s %9s %8s %11s %10s %8s %8s\n", "kind", "rpcs",
           "seconds", "RPC/s", "MiB/s", "srv-us", "cli-us", "srv-cpu", "ctx-share",
           "off-target", "p99-us", "max-us");
    for (int kind = 0; kind < TPUT_NKINDS; kind++) {
        struct phase_result r = {0};
        if (!(cfg->kinds & (1 << kind)))
            continue;
        if (run_phase(cfg, sh, (enum tput_kind)kind, &r))
            return -1;
        print_row(cfg, (enum tput_kind)kind, &r, csv);
        fflush(stdout);
    }
    int ret = 0;
    for (int i = procs.n - 1; i >= 0; i--) { /* clients first: they hold handles */
        int status = 0;
        if (tput_send(&procs.ch[i], TPUT_CMD_QUIT) ||
            waitpid(procs.pid[i], &status, 0) != procs.pid[i] || !WIFEXITED(status) ||
            WEXITSTATUS(status)) {
            fprintf(stderr, "hgx-tput: %s %d exited abnormally (status %#x)\n",
                    i ? "client" : "server", i ? i - 1 : 0, status);
            ret = -1;
        }
        procs.pid[i] = 0;
    }
    return ret;
}

int main(int argc, char **argv)
{
    static struct tput_config cfg;
    const char *csv_path = NULL;
    if (parse_args(&cfg, &csv_path, argc, argv)) {
        usage(stderr);
        return 2;
    }
    FILE *csv = csv_path ? csv_open(csv_path) : NULL;
    if (csv_path && !csv)
        return 1;
    struct tput_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("hgx-tput: mmap");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    int ret = 0;
    for (int i = 0; i <= cfg.clients && !ret; i++)
        ret = spawn(&cfg, sh, i);
    if (!ret)
        ret = coordinate(&cfg, sh, csv);
    kill_all(); /* after a failure or a stall: whatever is left */
    if (csv)
        fclose(csv);
    return ret ? 1 : 0;
}
