/*
 * test_hg_events_mpi.c -- the events API over mpi+static, run as
 * `mpirun -np 2 ./test_hg_events_mpi`. MPI has no fd to wait on, so the
 * context's wait fd is a timer set to the steps of the plugin's idle policy.
 * Rank 0 serves RPCs from a loop driven by poll(2) on that fd alone, with
 * HG_Event_ready, HG_Event_progress and HG_Event_trigger: it progresses only
 * when HG_Event_ready says true, else sleeps on the fd (5 s at most). Rank 1
 * forwards RPCS RPCs, some after an idle gap, so the server is asleep in its
 * longest steps when they come. Checked:
 *   - every RPC completes, with the right answer, well before a 5 s sleep
 *     could have ended: the fd woke the server when HG_Progress would have
 *     polled (at most one step of the idle policy, 4 ms after a long idle);
 *   - a wake-up leaves HG_Event_ready true until the loop progressed (few
 *     wake-ups with nothing to do);
 *   - idle for IDLE_S, the loop sleeps: its CPU time (getrusage) stays small
 *     and it wakes at most once per step.
 * The same for a client class of mpi+dynamic on each rank, idle only (its
 * RPCs need a name server; mpitests/test_mpi_dynamic.sh has those), unless
 * argv[1] is "static" (an MPI without MPI_Open_port: MPICH ch4:ucx).
 */
#include "mercury.h"
#include "mercury_macros.h"
#include "mpitest_na.h"

#include <mpi.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

MERCURY_GEN_PROC(ev_in_t, ((uint32_t)(value)))
MERCURY_GEN_PROC(ev_out_t, ((uint32_t)(value)))

#define RPCS 100
#define GAP_EVERY 25  /* every GAP_EVERY-th RPC comes after an idle gap */
#define GAP_MS 150    /* past the policy's 100 ms of short steps: 4 ms steps */
#define SLEEP_MS 5000 /* a poll(2) the fd should always end sooner */
/* An RPC's round trip through a server asleep in 4 ms steps: 8-12 ms at
 * worst on 2 cores, 106 ms with a load average of 14 on them (late timers,
 * time slices); still far below a sleep of SLEEP_MS, which the server's
 * poll(2) reaches only if the fd fails to wake it. */
#define RPC_MAX_MS 1000.0
#define EMPTY_WAKES_MAX 3
#define IDLE_S 0.5
#define IDLE_CPU_MAX 0.15 /* seconds of CPU in IDLE_S: a loop that spins uses all 0.5 */
/* Wake-ups of an idle loop in IDLE_S: steps of at most 1 ms for 100 ms after
 * the last activity, then of 4 ms (~210); a loop that spins has hundreds of
 * thousands. */
#define IDLE_WAKES_MAX 400

static int rank, nprocs, passes, failures;
static unsigned int served, answered;

static void result(const char *name, int ok, const char *why)
{
    mpitest_result(rank, &passes, &failures, name, ok, why);
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static hg_return_t responded(const struct hg_cb_info *info)
{
    if (info->ret == HG_SUCCESS)
        answered++;
    return HG_SUCCESS;
}

static hg_return_t ev_rpc(hg_handle_t handle)
{
    ev_in_t in;
    if (HG_Get_input(handle, &in) == HG_SUCCESS) {
        ev_out_t out = {.value = in.value + 1};
        HG_Free_input(handle, &in);
        served++;
        HG_Respond(handle, responded, NULL, &out);
    }
    HG_Destroy(handle);
    return HG_SUCCESS;
}

/* A loop that takes HG_Event_ready at its word. */
struct strict_loop {
    unsigned int busy;  /* HG_Event_ready said true: the loop progressed */
    unsigned int wakes; /* poll(2) returned with the fd readable */
    unsigned int empty; /* ... and HG_Event_ready then said false */
    unsigned int timeouts;
    bool failed; /* an event call failed */
};

/* One turn: progress when HG_Event_ready says so, else sleep on fd; after a
 * wake-up ask once more, to count wake-ups for nothing (the answer counts at
 * the next turn: asking twice must not lose a true). */
static void strict_turn(hg_context_t *ctx, int fd, int ms, struct strict_loop *loop)
{
    if (HG_Event_ready(ctx)) {
        loop->busy++;
        if (HG_Event_progress(ctx, NULL) != HG_SUCCESS ||
            HG_Event_trigger(ctx, 64, NULL) != HG_SUCCESS)
            loop->failed = true;
        return;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, ms);
    if (n > 0) {
        loop->wakes++;
        if (!HG_Event_ready(ctx))
            loop->empty++;
    } else if (n == 0) {
        loop->timeouts++;
    }
}

/* Idle for IDLE_S in a strict loop on ctx's wait fd: few wake-ups, little
 * CPU. what names the class in the result lines. */
static void idle_check(hg_context_t *ctx, int fd, const char *what)
{
    char name[128], why[128];
    struct strict_loop loop = {0};
    double start = mpitest_now(), cpu = cpu_s(), now;
    while ((now = mpitest_now()) < start + IDLE_S)
        strict_turn(ctx, fd, (int)((start + IDLE_S - now) * 1e3) + 1, &loop);
    cpu = cpu_s() - cpu;
    printf("rank %d: %s idle %.1f s: %u wake-up(s) (%u with nothing to do), %u turn(s) "
           "with progress, %.2f ms of CPU\n",
           rank, what, IDLE_S, loop.wakes, loop.empty, loop.busy, cpu * 1e3);
    snprintf(name, sizeof(name), "%s: an idle loop on the wait fd sleeps", what);
    snprintf(why, sizeof(why), "%.2f ms of CPU, %u wake-ups, %u for nothing", cpu * 1e3,
             loop.wakes, loop.empty);
    result(name,
           !loop.failed && cpu < IDLE_CPU_MAX && loop.wakes <= IDLE_WAKES_MAX &&
               loop.empty <= EMPTY_WAKES_MAX,
           why);
}

static void serve(hg_context_t *ctx, int fd)
{
    struct strict_loop loop = {0};
    char why[128];
    double end = mpitest_now() + 60.0;
    while ((served < RPCS || answered < RPCS) && mpitest_now() < end)
        strict_turn(ctx, fd, SLEEP_MS, &loop);
    printf("rank 0: served %u RPCs from poll(2) on the wait fd: %u wake-up(s), %u with "
           "nothing to do, %u turn(s) with progress, %u poll(2) timeout(s)\n",
           served, loop.wakes, loop.empty, loop.busy, loop.timeouts);
    snprintf(why, sizeof(why), "%u served, %u answered, %u timeouts, %u empty", served,
             answered, loop.timeouts, loop.empty);
    result("serve: RPCs served by a loop on poll(2) of the wait fd alone",
           !loop.failed && served == RPCS && answered == RPCS && loop.timeouts == 0 &&
               loop.empty <= EMPTY_WAKES_MAX,
           why);
}

struct call {
    bool done;
    uint32_t value;
};

static hg_return_t forwarded(const struct hg_cb_info *info)
{
    struct call *call = info->arg;
    ev_out_t out;
    if (info->ret == HG_SUCCESS &&
        HG_Get_output(info->info.forward.handle, &out) == HG_SUCCESS) {
        call->value = out.value;
        HG_Free_output(info->info.forward.handle, &out);
    }
    call->done = true;
    return HG_SUCCESS;
}

static void forward_all(hg_class_t *cls, hg_context_t *ctx, hg_id_t id)
{
    hg_addr_t server = HG_ADDR_NULL;
    char why[160] = "lookup of mpi+static://0 failed";
    unsigned int ok = 0;
    double worst_ms = 0, worst_gap_ms = 0;

    if (HG_Addr_lookup2(cls, "mpi+static://0", &server) == HG_SUCCESS) {
        for (uint32_t i = 0; i < RPCS; i++) {
            if (i % GAP_EVERY == GAP_EVERY - 1)
                usleep(GAP_MS * 1000);
            struct call call = {0};
            hg_handle_t h = HG_HANDLE_NULL;
            ev_in_t in = {.value = i};
            double sent = mpitest_now(), end = sent + 10.0;
            if (HG_Create(ctx, server, id, &h) != HG_SUCCESS ||
                HG_Forward(h, forwarded, &call, &in) != HG_SUCCESS)
                break;
            while (!call.done && mpitest_now() < end) {
                unsigned int n;
                HG_Progress(ctx, 100);
                HG_Trigger(ctx, 0, 64, &n);
            }
            double ms = (mpitest_now() - sent) * 1e3;
            HG_Destroy(h);
            if (!call.done || call.value != i + 1)
                break;
            ok++;
            if (i % GAP_EVERY == GAP_EVERY - 1)
                worst_gap_ms = ms > worst_gap_ms ? ms : worst_gap_ms;
            else if (i > 0)
                worst_ms = ms > worst_ms ? ms : worst_ms;
        }
        HG_Addr_free(cls, server);
        printf("rank 1: %u of %d RPCs answered; slowest %.2f ms, slowest after a %d ms "
               "gap %.2f ms\n",
               ok, RPCS, worst_ms, GAP_MS, worst_gap_ms);
        snprintf(why, sizeof(why), "%u of %d answered, slowest %.2f ms, %.2f after a gap",
                 ok, RPCS, worst_ms, worst_gap_ms);
    }
    result("forward: every RPC answered, none waited for a sleep to run out",
           ok == RPCS && worst_ms < RPC_MAX_MS && worst_gap_ms < RPC_MAX_MS, why);
}

/* mpi+static: rank 0 serves from the wait fd, rank 1 forwards. */
static void test_static(void)
{
    hg_class_t *cls = HG_Init("mpi+static", rank == 0 ? HG_TRUE : HG_FALSE);
    hg_context_t *ctx = cls ? HG_Context_create(cls) : NULL;
    result("init: mpi+static class and context", ctx != NULL, "HG_Init failed");
    if (!ctx)
        MPI_Abort(MPI_COMM_WORLD, 1);
    hg_id_t id =
        MERCURY_REGISTER(cls, "ev_mpi", ev_in_t, ev_out_t, rank == 0 ? ev_rpc : NULL);
    if (rank == 0) {
        int fd = HG_Event_get_wait_fd(ctx);
        result("mpi+static: HG_Event_get_wait_fd gives an fd", fd >= 0, "-1");
        MPI_Barrier(MPI_COMM_WORLD); /* the server is ready */
        if (fd >= 0)
            serve(ctx, fd);
        MPI_Barrier(MPI_COMM_WORLD); /* the client is done */
        if (fd >= 0)
            idle_check(ctx, fd, "mpi+static server");
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        forward_all(cls, ctx, id);
        MPI_Barrier(MPI_COMM_WORLD);
        usleep((useconds_t)(IDLE_S * 1e6)); /* the server's idle time: no spinning here */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    HG_Context_destroy(ctx);
    HG_Finalize(cls);
}

/* mpi+dynamic: a client class per rank (no port), idle on its wait fd. */
static void test_dynamic_idle(void)
{
    hg_class_t *cls = HG_Init("mpi+dynamic", HG_FALSE);
    hg_context_t *ctx = cls ? HG_Context_create(cls) : NULL;
    result("init: mpi+dynamic client class and context", ctx != NULL, "HG_Init failed");
    int fd = ctx ? HG_Event_get_wait_fd(ctx) : -1;
    result("mpi+dynamic: HG_Event_get_wait_fd gives an fd", fd >= 0, "-1");
    if (fd >= 0)
        idle_check(ctx, fd, "mpi+dynamic client");
    if (ctx)
        HG_Context_destroy(ctx);
    if (cls)
        HG_Finalize(cls);
}

int main(int argc, char **argv)
{
    mpitest_init(&argc, &argv, &rank, &nprocs);
    if (nprocs != 2) {
        if (rank == 0)
            printf("[  FAILED  ] test_hg_events_mpi needs 2 ranks (got %d)\n", nprocs);
        MPI_Finalize();
        return 1;
    }
    test_static();
    if (argc > 1 && strcmp(argv[1], "static") == 0) {
        if (rank == 0)
            printf("mpi+dynamic: not run (this MPI has no MPI_Open_port; "
                   "test_mpi_dynamic.sh checks that the class says so)\n");
    } else {
        test_dynamic_idle();
    }
    return mpitest_finish(passes, failures);
}
