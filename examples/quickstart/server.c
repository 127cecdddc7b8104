/*
 * Quick start, server side: answers "greet" RPCs until SIGINT or SIGTERM.
 *
 *     ./examples/quickstart/server [INFO]      (default INFO: ofi+tcp)
 *
 * It prints the address clients pass to ./examples/quickstart/client. A call
 * that asks for a delay is answered that many milliseconds later; the server
 * keeps serving other calls meanwhile (the call waits in a small table).
 */
#define _POSIX_C_SOURCE 200809L

#include "greet.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAX_CALLS 64         /* calls being delayed or answered at once */
#define MAX_DELAY_MS 10000u  /* a longer delay asked for is cut to this */
#define PROGRESS_SLICE_MS 20 /* how late a delayed answer may be at most */
#define DRAIN_MS 2000u       /* at stop, how long answers on the way may take */

/* A call from its handler until its answer has gone out. */
struct call {
    hg_handle_t handle; /* HG_HANDLE_NULL: free slot */
    int answered;       /* HG_Respond called, its callback not run yet */
    uint64_t due_ms;
    char greeting[128];
};

static struct call calls[MAX_CALLS];
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void call_free(struct call *c)
{
    HG_Destroy(c->handle);
    c->handle = HG_HANDLE_NULL;
}

static hg_return_t answer_done(const struct hg_cb_info *info)
{
    if (info->ret != HG_SUCCESS && info->ret != HG_CANCELED)
        fprintf(stderr, "quickstart server: answer failed: %s\n",
                HG_Error_to_string(info->ret));
    call_free(info->arg);
    return HG_SUCCESS;
}

static void answer(struct call *c)
{
    greet_out_t out = {.greeting = c->greeting};
    hg_return_t ret = HG_Respond(c->handle, answer_done, c, &out);
    if (ret != HG_SUCCESS) {
        fprintf(stderr, "quickstart server: HG_Respond: %s\n", HG_Error_to_string(ret));
        call_free(c);
        return;
    }
    c->answered = 1;
}

static hg_return_t greet_handler(hg_handle_t handle)
{
    struct call *c = NULL;
    greet_in_t in;

    for (int i = 0; i < MAX_CALLS && !c; i++)
        if (calls[i].handle == HG_HANDLE_NULL)
            c = &calls[i];
    hg_return_t ret = c ? HG_Get_input(handle, &in) : HG_NOMEM;
    if (ret != HG_SUCCESS) {
        /* Unanswered: the client's deadline or its transport ends the call. */
        fprintf(stderr, "quickstart server: call dropped: %s\n", HG_Error_to_string(ret));
        HG_Destroy(handle);
        return ret;
    }
    uint32_t delay = in.delay_ms < MAX_DELAY_MS ? in.delay_ms : MAX_DELAY_MS;
    c->handle = handle;
    c->answered = 0;
    c->due_ms = now_ms() + delay;
    snprintf(c->greeting, sizeof c->greeting, "Hello, %s!",
             in.name ? in.name : "stranger");
    HG_Free_input(handle, &in);
    printf("quickstart server: greet, answer in %u ms\n", delay);
    if (delay == 0)
        answer(c);
    return HG_SUCCESS;
}

static void answer_due(void)
{
    uint64_t now = now_ms();
    for (int i = 0; i < MAX_CALLS; i++)
        if (calls[i].handle != HG_HANDLE_NULL && !calls[i].answered &&
            calls[i].due_ms <= now)
            answer(&calls[i]);
}

/* Progress for one slice and run the callbacks it made ready. */
static hg_return_t progress(hg_context_t *ctx)
{
    unsigned int n = 0;
    hg_return_t ret = HG_Progress(ctx, PROGRESS_SLICE_MS);
    if (ret != HG_SUCCESS && ret != HG_TIMEOUT) {
        fprintf(stderr, "quickstart server: HG_Progress: %s\n", HG_Error_to_string(ret));
        return ret;
    }
    do {
        ret = HG_Trigger(ctx, 0, 16, &n);
    } while (ret == HG_SUCCESS && n > 0);
    return HG_SUCCESS;
}

/* At stop: drop the calls still waiting for their delay, cancel the answers
 * on their way to clients that may have gone, and let their callbacks run. */
static void drain(hg_context_t *ctx)
{
    int left;
    uint64_t end = now_ms() + DRAIN_MS;
    for (int i = 0; i < MAX_CALLS; i++) {
        if (calls[i].handle == HG_HANDLE_NULL)
            continue;
        if (calls[i].answered)
            HG_Cancel(calls[i].handle);
        else
            call_free(&calls[i]);
    }
    do {
        left = 0;
        for (int i = 0; i < MAX_CALLS; i++)
            left += calls[i].handle != HG_HANDLE_NULL;
    } while (left > 0 && now_ms() < end && progress(ctx) == HG_SUCCESS);
}

int main(int argc, char *argv[])
{
    const char *info = argc > 1 ? argv[1] : "ofi+tcp";
    char addr[256];
    hg_size_t addr_len = sizeof addr;
    hg_addr_t self = HG_ADDR_NULL;
    int rc = 1;

    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    hg_class_t *cls = HG_Init(info, HG_TRUE);
    if (!cls) {
        fprintf(stderr, "quickstart server: HG_Init(\"%s\") failed\n", info);
        return 1;
    }
    hg_context_t *ctx = HG_Context_create(cls);
    if (!ctx ||
        MERCURY_REGISTER(cls, GREET_RPC, greet_in_t, greet_out_t, greet_handler) == 0 ||
        HG_Addr_self(cls, &self) != HG_SUCCESS ||
        HG_Addr_to_string(cls, addr, &addr_len, self) != HG_SUCCESS) {
        fprintf(stderr, "quickstart server: setup failed\n");
        goto out;
    }
    printf("quickstart server listening at %s\n", addr);

    while (!stop) {
        if (progress(ctx) != HG_SUCCESS)
            goto out;
        answer_due();
    }
    printf("quickstart server: stopped\n");
    rc = 0;
out:
    if (ctx)
        drain(ctx);
    if (self != HG_ADDR_NULL)
        HG_Addr_free(cls, self);
    if (ctx)
        HG_Context_destroy(ctx);
    HG_Finalize(cls);
    return rc;
}
