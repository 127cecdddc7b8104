/*
 * fault_server.c -- server for the fault and load tests (see fault_rpc.h).
 * Every bulk chunk it pulls is an hgx request with a 3 s deadline, so a dead
 * or unreachable client never blocks it; each chunk completes exactly once
 * (xfer_done counts completions, xfer_issued starts).
 */
#define _POSIX_C_SOURCE 200809L
#include "fault_rpc.h"
#include "hgx.h"
#include "test_common.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FT_CHUNK_DEADLINE_MS 3000u
#define FT_DRAIN_S 15.0 /* responses still in flight at quit */

struct ft_job {
    struct ft_job *next;
    hg_handle_t h;
    ft_pull_in_t in;
    void *buf;
    hg_bulk_t local;
    uint64_t off, len;
    hgx_request_t req;
    double next_time;
};

static struct {
    bool quit;
    int responding; /* HG_Respond calls not yet completed */
    hg_context_t *ctx;
    struct ft_job *jobs;
    struct ft_job *incoming; /* new jobs; handlers may run inside jobs_poll() */
    uint64_t client_rpcs[FT_MAX_CLIENTS];
    int64_t last_seq[FT_MAX_CLIENTS];
    uint64_t rpcs, jobs_ok, jobs_failed, xfer_issued, xfer_done, xfer_failed, dup_seq;
    long rss_mark_kb, fds_mark;
    void *region;
    hg_bulk_t region_bulk;
} fs;

long ft_rss_kb(void)
{
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

long ft_count_fds(void)
{
    long n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory stream itself */
}

static hg_return_t respond_done(const struct hg_cb_info *info)
{
    fs.responding--;
    HG_Destroy(info->info.respond.handle);
    return HG_SUCCESS;
}

static void respond(hg_handle_t h, void *out)
{
    if (HG_Respond(h, respond_done, NULL, out) != HG_SUCCESS)
        HG_Destroy(h);
    else
        fs.responding++;
}

static void job_finish(struct ft_job *j, hg_return_t ret)
{
    ft_pull_out_t out = {.ret = (int32_t)ret, .seq = j->in.seq};
    if (ret == HG_SUCCESS && j->in.seed && !test_check(j->buf, j->in.size, j->in.seed))
        out.ret = HG_CHECKSUM_ERROR;
    if (out.ret == HG_SUCCESS)
        fs.jobs_ok++;
    else
        fs.jobs_failed++;
    HG_Bulk_free(j->local);
    free(j->buf);
    HG_Free_input(j->h, &j->in);
    respond(j->h, &out);
    free(j);
}

static hg_return_t job_issue(struct ft_job *j)
{
    j->len = j->in.chunk && j->in.chunk < j->in.size - j->off ? j->in.chunk
                                                              : j->in.size - j->off;
    hg_return_t ret =
        hgx_ibulk_transfer(fs.ctx, HG_BULK_PULL, HG_Get_info(j->h)->addr, j->in.bulk,
                           j->off, j->local, j->off, j->len, &j->req);
    if (ret != HG_SUCCESS)
        return ret;
    fs.xfer_issued++;
    hgx_request_set_timeout(j->req, FT_CHUNK_DEADLINE_MS);
    return HG_SUCCESS;
}

static hg_return_t pull_rpc(hg_handle_t h)
{
    struct ft_job *j = calloc(1, sizeof(*j));
    j->h = h;
    HG_Get_input(h, &j->in);
    uint32_t c = j->in.client % FT_MAX_CLIENTS;
    fs.rpcs++;
    if (fs.client_rpcs[c]++ && (int64_t)j->in.seq <= fs.last_seq[c])
        fs.dup_seq++;
    fs.last_seq[c] = j->in.seq;
    j->buf = malloc(j->in.size ? j->in.size : 1);
    hg_size_t size = j->in.size;
    hg_return_t ret = HG_Bulk_create(HG_Get_info(h)->hg_class, 1, &j->buf, &size,
                                     HG_BULK_WRITE_ONLY, &j->local);
    if (ret == HG_SUCCESS)
        ret = job_issue(j);
    if (ret != HG_SUCCESS) {
        if (!j->local)
            j->local = HG_BULK_NULL;
        job_finish(j, ret);
        return HG_SUCCESS;
    }
    j->next = fs.incoming;
    fs.incoming = j;
    return HG_SUCCESS;
}

/* Check the pulls in progress; start the next chunk of each when due. */
static void jobs_poll(void)
{
    while (fs.incoming) {
        struct ft_job *j = fs.incoming;
        fs.incoming = j->next;
        j->next = fs.jobs;
        fs.jobs = j;
    }
    for (struct ft_job **pj = &fs.jobs; *pj;) {
        struct ft_job *j = *pj;
        if (j->req) {
            int flag = 0, c = 0;
            hgx_status_t st;
            hgx_test(&j->req, &flag, &st);
            if (flag) {
                fs.xfer_done++;
                hgx_test_cancelled(&st, &c);
                if (st.error != HG_SUCCESS || c) {
                    fs.xfer_failed++;
                    *pj = j->next;
                    job_finish(j, st.error != HG_SUCCESS ? st.error : HG_CANCELED);
                    continue;
                }
                j->off += j->len;
                j->next_time = test_now() + j->in.delay_ms / 1000.0;
            }
        }
        if (!j->req && j->off == j->in.size) {
            *pj = j->next;
            job_finish(j, HG_SUCCESS);
            continue;
        }
        if (!j->req && test_now() >= j->next_time) {
            hg_return_t ret = job_issue(j);
            if (ret != HG_SUCCESS) {
                *pj = j->next;
                job_finish(j, ret);
                continue;
            }
        }
        pj = &j->next;
    }
}

static hg_return_t sleep_rpc(hg_handle_t h)
{
    ft_sleep_in_t in;
    ft_sleep_out_t out = {.ret = 0};
    HG_Get_input(h, &in);
    usleep(in.ms * 1000u);
    HG_Free_input(h, &in);
    respond(h, &out);
    return HG_SUCCESS;
}

static hg_return_t expose_rpc(hg_handle_t h)
{
    ft_expose_in_t in;
    ft_expose_out_t out;
    HG_Get_input(h, &in);
    if (fs.region_bulk)
        HG_Bulk_free(fs.region_bulk);
    free(fs.region);
    fs.region = malloc(in.size);
    test_fill(fs.region, in.size, in.seed);
    hg_size_t size = in.size;
    /* Read-write: the multi-host tests push into it and pull it back. */
    HG_Bulk_create(HG_Get_info(h)->hg_class, 1, &fs.region, &size, HG_BULK_READWRITE,
                   &fs.region_bulk);
    out.bulk = fs.region_bulk;
    HG_Free_input(h, &in);
    respond(h, &out);
    return HG_SUCCESS;
}

static hg_return_t stats_rpc(hg_handle_t h)
{
    ft_stats_in_t in;
    ft_stats_out_t out;
    HG_Get_input(h, &in);
    if (in.mark) {
        fs.rss_mark_kb = ft_rss_kb();
        fs.fds_mark = ft_count_fds();
    }
    out = (ft_stats_out_t){.client_rpcs = fs.client_rpcs[in.client % FT_MAX_CLIENTS],
                           .rpcs = fs.rpcs,
                           .jobs_ok = fs.jobs_ok,
                           .jobs_failed = fs.jobs_failed,
                           .xfer_issued = fs.xfer_issued,
                           .xfer_done = fs.xfer_done,
                           .xfer_failed = fs.xfer_failed,
                           .dup_seq = fs.dup_seq,
                           .rss_mark_kb = (uint64_t)fs.rss_mark_kb,
                           .rss_kb = (uint64_t)ft_rss_kb(),
                           .fds_mark = fs.fds_mark,
                           .fds = ft_count_fds()};
    HG_Free_input(h, &in);
    respond(h, &out);
    return HG_SUCCESS;
}

static hg_return_t quit_rpc(hg_handle_t h)
{
    fs.quit = true;
    return HG_Destroy(h);
}

void ft_register(hg_class_t *cls, struct ft_ids *ids, bool srv)
{
    ids->pull = MERCURY_REGISTER(cls, "ft_pull", ft_pull_in_t, ft_pull_out_t,
                                 srv ? pull_rpc : NULL);
    ids->sleep = MERCURY_REGISTER(cls, "ft_sleep", ft_sleep_in_t, ft_sleep_out_t,
                                  srv ? sleep_rpc : NULL);
    ids->expose = MERCURY_REGISTER(cls, "ft_expose", ft_expose_in_t, ft_expose_out_t,
                                   srv ? expose_rpc : NULL);
    ids->stats = MERCURY_REGISTER(cls, "ft_stats", ft_stats_in_t, ft_stats_out_t,
                                  srv ? stats_rpc : NULL);
    ids->quit = HG_Register_name(cls, "ft_quit", NULL, NULL, srv ? quit_rpc : NULL);
    HG_Registered_disable_response(cls, ids->quit, HG_TRUE);
}

int ft_server_main(const char *info, int publish_fd)
{
    struct ft_ids ids;
    char addr[TEST_ADDR_MAX] = "";
    hg_size_t len = sizeof(addr);
    hg_addr_t self = HG_ADDR_NULL;
    /* The region this server exposes is read-write and read back after a
     * client's push: no_bulk_eager keeps its data out of the RPC output, so
     * every pull of it is an RMA of the current bytes (with eager data, a
     * pull would read the copy taken when the output was encoded). */
    struct hg_init_info init = HG_INIT_INFO_INITIALIZER;
    init.no_bulk_eager = true;
    hg_class_t *cls = HG_Init_opt(info, HG_TRUE, &init);
    hg_context_t *ctx = cls ? HG_Context_create(cls) : NULL;

    if (!ctx || HG_Addr_self(cls, &self) != HG_SUCCESS ||
        HG_Addr_to_string(cls, addr, &len, self) != HG_SUCCESS) {
        test_server_publish(publish_fd, "");
        return 1;
    }
    HG_Addr_free(cls, self);
    fs.ctx = ctx;
    ft_register(cls, &ids, true);
    test_server_publish(publish_fd, addr);
    double idle_since = test_now();
    while (!fs.quit && test_now() - idle_since < 120) {
        unsigned int count = 0;
        HG_Progress(ctx, fs.jobs || fs.incoming ? 1 : 20);
        HG_Trigger(ctx, 0, 64, &count);
        if (fs.jobs || fs.incoming)
            jobs_poll();
        if (count || fs.jobs)
            idle_since = test_now();
    }
    /* Jobs still running at quit fail their remaining chunks by deadline. */
    while (fs.jobs || fs.incoming)
        jobs_poll();
    /* A response to a client that died completes only when the transport
     * gives up on it (bounded by the plugin's retry and cancel limits). */
    double drain_start = test_now();
    while (fs.responding > 0 && test_now() - drain_start < FT_DRAIN_S) {
        unsigned int count = 0;
        HG_Progress(ctx, 20);
        HG_Trigger(ctx, 0, 64, &count);
    }
    if (fs.region_bulk)
        HG_Bulk_free(fs.region_bulk);
    free(fs.region);
    hg_return_t cret = HG_Context_destroy(ctx), fret = HG_Finalize(cls);
    if (cret != HG_SUCCESS || fret != HG_SUCCESS || !fs.quit)
        fprintf(stderr,
                "# fault server %s: quit %d, HG_Context_destroy %s, HG_Finalize %s\n",
                info, (int)fs.quit, HG_Error_to_string(cret), HG_Error_to_string(fret));
    return cret == HG_SUCCESS && fret == HG_SUCCESS && fs.quit ? 0 : 1;
}
