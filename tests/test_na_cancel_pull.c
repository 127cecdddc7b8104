/*
 * test_na_cancel_pull.c -- cancel pulls at every stage of their flight and
 * check the either-or rule on the caller's memory: after NA_CANCELED the
 * local buffer holds exactly what it held before the get, also once the
 * target has had every chance to answer late; after NA_SUCCESS it holds the
 * whole remote region.
 *
 * Target and origin are two classes of this process, progressed in turn by
 * this thread, so the cancel lands at a chosen point: before the target saw
 * the get, between its first and last answer, or after the end. Over ofi+tcp
 * a get of 256 KiB or more reads its head into a plugin buffer and its body
 * straight into the caller's memory (docs/na-cancel.md): both outcomes must
 * occur there.
 */
#include "na_test_proto.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define PULL_ROUNDS 40
#define PULL_LOCAL_BYTE 0xee
#define PULL_SETTLE_STEPS 200 /* progress after a cancel, for late data */

struct pull_state {
    const char *info;
    na_class_t *tcls, *ocls; /* target, origin */
    na_context_t *tctx, *octx;
    na_addr_t *target; /* in the origin class */
};

static const char *current_info;

static int group_setup(void **state)
{
    struct pull_state *st = calloc(1, sizeof(*st));
    char name[256];
    size_t len = sizeof(name);
    na_addr_t *self = NULL;

    st->info = current_info;
    *state = st;
    st->tcls = NA_Initialize(st->info, true);
    st->ocls = NA_Initialize(st->info, false);
    if (!st->tcls || !st->ocls)
        return -1;
    st->tctx = NA_Context_create(st->tcls);
    st->octx = NA_Context_create(st->ocls);
    if (!st->tctx || !st->octx || NA_Addr_self(st->tcls, &self) != NA_SUCCESS ||
        NA_Addr_to_string(st->tcls, name, &len, self) != NA_SUCCESS)
        return -1;
    NA_Addr_free(st->tcls, self);
    return NA_Addr_lookup(st->ocls, name, &st->target) == NA_SUCCESS ? 0 : -1;
}

static int group_teardown(void **state)
{
    struct pull_state *st = *state;
    if (!st)
        return 0;
    if (st->target)
        NA_Addr_free(st->ocls, st->target);
    if (st->octx)
        NA_Context_destroy(st->ocls, st->octx);
    if (st->tctx)
        NA_Context_destroy(st->tcls, st->tctx);
    if (st->ocls)
        NA_Finalize(st->ocls);
    if (st->tcls)
        NA_Finalize(st->tcls);
    free(st);
    return 0;
}

/* One turn of each side, without waiting. */
static void step(struct pull_state *st)
{
    NA_Progress(st->tcls, st->tctx, 0);
    NA_Trigger(st->tctx, 16, NULL);
    NA_Progress(st->ocls, st->octx, 0);
    NA_Trigger(st->octx, 16, NULL);
}

static bool all_byte(const unsigned char *buf, size_t size, unsigned char b)
{
    for (size_t i = 0; i < size; i++)
        if (buf[i] != b)
            return false;
    return true;
}

/* The target's region as a handle of the origin class. */
static na_mem_handle_t *remote_handle(struct pull_state *st, na_mem_handle_t *mh)
{
    size_t len = NA_Mem_handle_get_serialize_size(st->tcls, mh);
    char *wire = malloc(len);
    na_mem_handle_t *remote = NULL;

    assert_int_equal(NA_Mem_handle_serialize(st->tcls, wire, len, mh), NA_SUCCESS);
    assert_int_equal(NA_Mem_handle_deserialize(st->ocls, &remote, wire, len), NA_SUCCESS);
    free(wire);
    return remote;
}

struct pull_counts {
    int canceled, lost,
        after; /* NA_CANCELED; NA_SUCCESS with the cancel in flight / after */
};

/* Pull size bytes, cancel after `steps` turns, check the buffer. */
static void pull_once(struct pull_state *st, na_mem_handle_t *local, unsigned char *buf,
                      na_mem_handle_t *remote, size_t size, unsigned int seed, int steps,
                      struct pull_counts *counts)
{
    struct na_test_done done = {0};
    na_op_id_t *op = NA_Op_create(st->ocls, NA_OP_SINGLE);

    memset(buf, PULL_LOCAL_BYTE, size);
    assert_int_equal(NA_Get(st->ocls, st->octx, na_test_cb, &done, local, 0, remote, 0,
                            size, st->target, 0, op),
                     NA_SUCCESS);
    for (int i = 0; i < steps && done.count == 0; i++)
        step(st);
    bool finished_first = done.count > 0;
    assert_int_equal(NA_Cancel(st->ocls, st->octx, op), NA_SUCCESS);
    for (double t0 = test_now(); done.count == 0 && test_now() - t0 < 10.0;)
        step(st);
    assert_int_equal(done.count, 1);
    if (done.ret == NA_CANCELED) {
        assert_true(all_byte(buf, size, PULL_LOCAL_BYTE));
        for (int i = 0; i < PULL_SETTLE_STEPS; i++)
            step(st);
        assert_true(all_byte(buf, size, PULL_LOCAL_BYTE));
        counts->canceled++;
    } else {
        assert_int_equal(done.ret, NA_SUCCESS);
        assert_true(test_check(buf, size, seed));
        if (finished_first)
            counts->after++;
        else
            counts->lost++;
    }
    assert_int_equal(done.count, 1);
    NA_Op_destroy(st->ocls, op);
}

static void pull_rounds(struct pull_state *st, size_t size)
{
    unsigned char *src = malloc(size), *buf = malloc(size);
    na_mem_handle_t *smh = NULL, *local = NULL;
    struct pull_counts counts = {0};

    assert_int_equal(NA_Mem_handle_create(st->tcls, src, size, NA_MEM_READ_ONLY, &smh),
                     NA_SUCCESS);
    assert_int_equal(NA_Mem_register(st->tcls, smh, NA_MEM_TYPE_HOST, 0), NA_SUCCESS);
    assert_int_equal(NA_Mem_handle_create(st->ocls, buf, size, NA_MEM_READWRITE, &local),
                     NA_SUCCESS);
    assert_int_equal(NA_Mem_register(st->ocls, local, NA_MEM_TYPE_HOST, 0), NA_SUCCESS);
    na_mem_handle_t *remote = remote_handle(st, smh);
    for (int round = 0; round < PULL_ROUNDS; round++) {
        unsigned int seed = 100u + (unsigned int)round;
        test_fill(src, size, seed);
        /* 0, 1, 2, 4, ... turns: cancels before, during and after the pull */
        int steps = round == 0 ? 0 : 1 << (round % 12);
        pull_once(st, local, buf, remote, size, seed, steps, &counts);
    }
    print_message("# %s %zu B: %d canceled, %d completed with the cancel in flight, "
                  "%d before it\n",
                  st->info, size, counts.canceled, counts.lost, counts.after);
    if (strncmp(st->info, "ofi+tcp", 7) == 0) {
        /* a cancel before the target turned never lets the body be read */
        assert_true(counts.canceled > 0);
        assert_true(counts.lost + counts.after > 0);
    }
    NA_Mem_handle_free(st->ocls, remote);
    NA_Mem_deregister(st->ocls, local);
    NA_Mem_handle_free(st->ocls, local);
    NA_Mem_deregister(st->tcls, smh);
    NA_Mem_handle_free(st->tcls, smh);
    free(src);
    free(buf);
}

static void test_pull_small(void **state)
{
    pull_rounds(*state, 16 << 10); /* bounced whole over tcp */
}

static void test_pull_1m(void **state)
{
    pull_rounds(*state, 1 << 20);
}

static void test_pull_16m(void **state)
{
    pull_rounds(*state, 16 << 20);
}

int main(void)
{
    const char *const *transports;
    size_t n = test_transports(&transports);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pull_small),
        cmocka_unit_test(test_pull_1m),
        cmocka_unit_test(test_pull_16m),
    };
    return test_run_groups("cancel-pull", transports, n, NULL, &current_info, tests,
                           sizeof(tests) / sizeof(*tests), group_setup, group_teardown);
}
