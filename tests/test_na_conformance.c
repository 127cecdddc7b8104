/*
 * test_na_conformance.c -- one conformance test for every NA plugin: each
 * call of the public API with edge-case input (sizes 0 and max, bad handles
 * and offsets, foreign contexts, addresses, buffers and op ids, malformed
 * strings and descriptors), and for each case the one answer every plugin
 * must give. The core checks arguments before a plugin sees them; what
 * reaches a plugin (malformed strings and descriptors, empty transfers,
 * truncation) must still come back the same, so a program written against
 * one transport handles errors the same way on another.
 *
 *   test_na_conformance [TRANSPORT...]
 *
 * Without arguments it runs every transport of test_transports_mercury(); the MPI
 * plugin runs as `mpirun -np 1 test_na_conformance mpi+static`. Every case
 * prints one line; the failures are listed again at the end and make the
 * exit status 1.
 */
#include "na_conformance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_pass, n_fail;
static char fail_list[16384];

static void conf_record(const struct conf *c, const char *name, bool ok,
                        const char *detail)
{
    char line[256];
    snprintf(line, sizeof(line), "%-4s %-12s %-40s %s\n", ok ? "ok" : "FAIL", c->info,
             name, detail);
    fputs(line, stdout);
    if (ok) {
        n_pass++;
        return;
    }
    n_fail++;
    size_t used = strlen(fail_list);
    snprintf(fail_list + used, sizeof(fail_list) - used, "%s", line);
}

void conf_code(const struct conf *c, const char *name, na_return_t got, na_return_t want)
{
    char detail[96];
    if (got == want)
        snprintf(detail, sizeof(detail), "%s", NA_Error_to_string(got));
    else
        snprintf(detail, sizeof(detail), "got %s, want %s", NA_Error_to_string(got),
                 NA_Error_to_string(want));
    conf_record(c, name, got == want, detail);
}

void conf_true(const struct conf *c, const char *name, bool ok, const char *detail)
{
    conf_record(c, name, ok, detail);
}

void conf_na(const struct conf *c, const char *name, const char *why)
{
    printf("%-4s %-12s %-40s %s\n", "n/a", c->info, name, why);
}

na_return_t conf_finish(const struct conf *c, na_return_t posted, na_op_id_t *op,
                        struct na_test_done *d)
{
    if (posted != NA_SUCCESS)
        return posted;
    if (na_test_wait(c->cls, c->ctx, d, 1, 10000))
        return d->ret;
    NA_Cancel(c->cls, c->ctx, op);
    na_test_wait(c->cls, c->ctx, d, 1, 10000);
    return NA_TIMEOUT;
}

void conf_drain(na_class_t *cls, na_context_t *ctx)
{
    unsigned int n = 0;
    do {
        NA_Progress(cls, ctx, 20);
        NA_Trigger(ctx, 64, &n);
    } while (n > 0);
}

/* Classes, contexts and op ids. */
static void cases_class(const struct conf *c)
{
    char info[128];
    const char *plugin = NA_Get_class_name(c->cls);

    conf_true(c, "initialize.null", NA_Initialize(NULL, false) == NULL, "NULL class");
    snprintf(info, sizeof(info), "%s+nope", plugin);
    conf_true(c, "initialize.unknown_protocol", NA_Initialize(info, false) == NULL,
              "NULL class");
    snprintf(info, sizeof(info), "%s+%s://[::1", plugin, NA_Get_class_protocol(c->cls));
    conf_true(c, "initialize.malformed_host", NA_Initialize(info, false) == NULL,
              "NULL class");
    conf_true(c, "class.listening", NA_Is_listening(c->cls), "true");
    conf_true(c, "context_create.null_class", NA_Context_create(NULL) == NULL,
              "NULL context");
    conf_true(c, "context_create.id_past_max", NA_Context_create_id(c->cls, 1) == NULL,
              "NULL context (max_contexts 1)");
    conf_code(c, "context_destroy.null_class", NA_Context_destroy(NULL, c->ctx),
              NA_INVALID_ARG);
    conf_code(c, "context_destroy.foreign", NA_Context_destroy(c->cls, c->octx),
              NA_INVALID_ARG);
    conf_code(c, "context_destroy.null", NA_Context_destroy(c->cls, NULL), NA_SUCCESS);
    conf_code(c, "finalize.context_alive", NA_Finalize(c->cls), NA_BUSY);
    conf_true(c, "op_create.null_class", NA_Op_create(NULL, NA_OP_SINGLE) == NULL,
              "NULL op");
    conf_true(c, "op_create.multi", NA_Op_create(c->cls, NA_OP_MULTI) == NULL, "NULL op");
    conf_true(c, "msg.limits",
              NA_Msg_get_max_unexpected_size(c->cls) >
                      NA_Msg_get_unexpected_header_size(c->cls) &&
                  NA_Msg_get_max_expected_size(c->cls) >
                      NA_Msg_get_expected_header_size(c->cls) &&
                  NA_Msg_get_max_tag(c->cls) > 0,
              "max sizes above the headers, max tag above 0");
    conf_true(c, "mem.max_segments", NA_Mem_handle_get_max_segments(c->cls) >= 1,
              "at least 1");
}

/* Progress, poll and trigger. */
static void cases_progress(const struct conf *c)
{
    unsigned int n = 99;

    conf_drain(c->cls, c->ctx);
    conf_code(c, "progress.null_class", NA_Progress(NULL, c->ctx, 0), NA_INVALID_ARG);
    conf_code(c, "progress.null_context", NA_Progress(c->cls, NULL, 0), NA_INVALID_ARG);
    conf_code(c, "progress.foreign_context", NA_Progress(c->cls, c->octx, 0),
              NA_INVALID_ARG);
    conf_code(c, "progress.idle", NA_Progress(c->cls, c->ctx, 0), NA_TIMEOUT);
    conf_code(c, "progress.idle_10ms", NA_Progress(c->cls, c->ctx, 10), NA_TIMEOUT);
    n = 99;
    conf_code(c, "poll_wait.idle", NA_Poll_wait(c->cls, c->ctx, 0, &n), NA_TIMEOUT);
    conf_true(c, "poll_wait.idle_count", n == 0, "count 0");
    conf_code(c, "poll.foreign_context", NA_Poll(c->cls, c->octx, &n), NA_INVALID_ARG);
    conf_code(c, "poll.idle", NA_Poll(c->cls, c->ctx, &n), NA_SUCCESS);
    conf_true(c, "poll.idle_count", n == 0, "count 0");
    conf_true(c, "poll_get_fd.foreign_context", NA_Poll_get_fd(c->cls, c->octx) == -1,
              "-1");
    conf_true(c, "poll_try_wait.foreign_context", !NA_Poll_try_wait(c->cls, c->octx),
              "false");
    conf_code(c, "trigger.null_context", NA_Trigger(NULL, 1, &n), NA_INVALID_ARG);
    n = 99;
    conf_code(c, "trigger.max_count_0", NA_Trigger(c->ctx, 0, &n), NA_SUCCESS);
    conf_true(c, "trigger.max_count_0_count", n == 0, "count 0");
    n = 99;
    conf_code(c, "trigger.empty", NA_Trigger(c->ctx, 16, &n), NA_SUCCESS);
    conf_true(c, "trigger.empty_count", n == 0, "count 0");
}

/* Post an expected receive nothing will match, on op. */
static na_return_t post_idle_recv(const struct conf *c, na_op_id_t *op,
                                  struct na_test_done *d, char *buf, size_t size)
{
    return NA_Msg_recv_expected(c->cls, c->ctx, na_test_cb, d, buf, size, NULL, c->self,
                                0, 0x7fff, op);
}

/* Cancel: bad arguments, idle and completed ops, twice. */
static void cases_cancel(const struct conf *c)
{
    size_t size = NA_Msg_get_expected_header_size(c->cls) + 64;
    char *buf = malloc(size);
    na_op_id_t *op = NA_Op_create(c->cls, NA_OP_SINGLE);
    na_op_id_t *oop = NA_Op_create(c->other, NA_OP_SINGLE);
    struct na_test_done d = {0};

    conf_code(c, "cancel.null_op", NA_Cancel(c->cls, c->ctx, NULL), NA_INVALID_ARG);
    conf_code(c, "cancel.foreign_op", NA_Cancel(c->cls, c->ctx, oop), NA_INVALID_ARG);
    conf_code(c, "cancel.foreign_context", NA_Cancel(c->cls, c->octx, op),
              NA_INVALID_ARG);
    conf_code(c, "cancel.never_posted", NA_Cancel(c->cls, c->ctx, op), NA_SUCCESS);

    conf_code(c, "recv_expected.post", post_idle_recv(c, op, &d, buf, size), NA_SUCCESS);
    conf_code(c, "recv_expected.op_busy", post_idle_recv(c, op, &d, buf, size), NA_BUSY);
    conf_code(c, "cancel.pending", NA_Cancel(c->cls, c->ctx, op), NA_SUCCESS);
    conf_code(c, "cancel.twice", NA_Cancel(c->cls, c->ctx, op), NA_SUCCESS);
    na_test_wait(c->cls, c->ctx, &d, 1, 10000);
    conf_code(c, "cancel.pending_callback", d.count == 1 ? d.ret : NA_TIMEOUT,
              NA_CANCELED);
    conf_code(c, "cancel.after_completion", NA_Cancel(c->cls, c->ctx, op), NA_SUCCESS);
    conf_drain(c->cls, c->ctx);
    conf_true(c, "cancel.callback_once", d.count == 1, "one callback");

    d = (struct na_test_done){0};
    na_return_t ret =
        NA_Msg_recv_unexpected(c->cls, c->ctx, na_test_cb, &d, buf, size, NULL, op);
    if (ret == NA_SUCCESS)
        ret = NA_Cancel(c->cls, c->ctx, op);
    conf_code(c, "cancel.recv_unexpected", conf_finish(c, ret, op, &d), NA_CANCELED);
    NA_Op_destroy(c->cls, op);
    NA_Op_destroy(c->other, oop);
    free(buf);
}

/* Open the class under test and the foreign one; false if either fails. */
static bool conf_open(struct conf *c, const char *info)
{
    memset(c, 0, sizeof(*c));
    c->info = info;
    c->cls = NA_Initialize(info, true);
    c->other = NA_Initialize(info, true);
    if (!c->cls || !c->other)
        return false;
    c->ctx = NA_Context_create(c->cls);
    c->octx = NA_Context_create(c->other);
    return c->ctx && c->octx && NA_Addr_self(c->cls, &c->self) == NA_SUCCESS &&
           NA_Addr_self(c->other, &c->oself) == NA_SUCCESS;
}

static bool conf_close(struct conf *c)
{
    bool ok = true;
    NA_Addr_free(c->cls, c->self);
    NA_Addr_free(c->other, c->oself);
    if (c->ctx)
        ok &= NA_Context_destroy(c->cls, c->ctx) == NA_SUCCESS;
    if (c->octx)
        ok &= NA_Context_destroy(c->other, c->octx) == NA_SUCCESS;
    ok &= NA_Finalize(c->cls) == NA_SUCCESS;
    ok &= NA_Finalize(c->other) == NA_SUCCESS;
    return ok;
}

static void run_transport(const char *info)
{
    struct conf c;
    int before = n_fail;

    test_group_banner(info);
    if (!conf_open(&c, info)) {
        conf_true(&c, "open", false, "could not open two classes, contexts, addresses");
        conf_close(&c);
        return;
    }
    cases_class(&c);
    cases_progress(&c);
    cases_cancel(&c);
    conf_cases_addr(&c);
    conf_cases_msg(&c);
    conf_cases_mem(&c);
    conf_cases_rma(&c);
    conf_drain(c.cls, c.ctx);
    conf_true(&c, "close", conf_close(&c), "contexts destroyed, classes finalized");
    printf("# %s: %d case(s) failed\n", info, n_fail - before);
}

int main(int argc, char **argv)
{
    const char *const *transports;
    size_t n = 0;

    if (argc > 1) {
        transports = (const char *const *)argv + 1;
        n = (size_t)argc - 1;
    } else {
        n = test_transports_mercury(&transports);
    }
    if (n == 0) {
        printf("SKIP: no transport built\n");
        return 77;
    }
    for (size_t i = 0; i < n; i++)
        run_transport(transports[i]);
    if (n_fail)
        printf("\n# cases that failed:\n%s", fail_list);
    printf("[  PASSED  ] %d test(s).\n", n_pass);
    if (n_fail)
        printf("[  FAILED  ] %d test(s).\n", n_fail);
    return n_fail ? 1 : 0;
}
