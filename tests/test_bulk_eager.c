/*
 * test_bulk_eager.c -- eager bulk descriptors (HG_BULK_EAGER) and the init-info
 * field no_bulk_eager, on every transport built, with an origin and a target
 * class in this process (each progressed here, so that nothing runs behind
 * the test's back):
 *   - an RPC whose input carries a small read-only handle: the target's pull
 *     returns the bytes the handle held when the RPC was encoded, although the
 *     origin overwrote them and freed the handle (deregistering its memory)
 *     before the target ran, so no RMA read them; a read-write handle is
 *     embedded the same way (Mercury's rule);
 *   - with no_bulk_eager, and with a handle too large for the message, the pull
 *     reads the origin's memory through the plugin (it sees the new bytes);
 *   - HG_Bulk_serialize with HG_BULK_EAGER: sizes, which handles carry their
 *     data, a pull served from the copy through the completion queue, a push
 *     into a read-only eager handle refused with HG_PERMISSION, and forged
 *     eager descriptors refused with HG_PROTOCOL_ERROR like any malformed one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mercury.h"
#include "mercury_bulk.h"
#include "mercury_macros.h"
#include "mercury_proc_bulk.h"
#include "test_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL 256
#define WAIT_S 10.0
#define SEED_OLD 11 /* bytes of the handle when the RPC is encoded */
#define SEED_NEW 12 /* bytes written over them before the target runs */

MERCURY_GEN_PROC(eager_in_t, ((hg_bulk_t)(bulk))((uint64_t)(size)))
MERCURY_GEN_PROC(eager_out_t, ((int32_t)(ret)))

static const char *cur_info;

/* What the target's handler saw. */
static struct {
    unsigned char *data; /* bytes pulled */
    hg_size_t size;
    hg_return_t ret;
    int done;
    bool in_transfer; /* inside the target's HG_Bulk_transfer call */
    bool inline_cb;   /* its callback ran before the call returned */
} tgt;

struct pull_job {
    hg_handle_t handle;
    hg_bulk_t local;
};

static hg_return_t pull_done(const struct hg_cb_info *info)
{
    struct pull_job *job = info->arg;
    eager_out_t out = {.ret = (int32_t)info->ret};

    void *ptr = NULL;

    if (tgt.in_transfer)
        tgt.inline_cb = true;
    tgt.ret = info->ret;
    if (info->ret == HG_SUCCESS &&
        HG_Bulk_access(job->local, 0, tgt.size, HG_BULK_READ_ONLY, 1, &ptr, NULL, NULL) ==
            HG_SUCCESS &&
        (tgt.data = malloc(tgt.size)) != NULL)
        memcpy(tgt.data, ptr, tgt.size);
    HG_Respond(job->handle, NULL, NULL, &out);
    HG_Destroy(job->handle);
    HG_Bulk_free(job->local);
    free(job);
    tgt.done++;
    return HG_SUCCESS;
}

static hg_return_t pull_rpc(hg_handle_t handle)
{
    const struct hg_info *info = HG_Get_info(handle);
    struct pull_job *job = calloc(1, sizeof(*job));
    eager_in_t in;

    job->handle = handle;
    if (HG_Get_input(handle, &in) != HG_SUCCESS)
        return HG_OTHER_ERROR;
    tgt.size = in.size;
    hg_size_t size = in.size;
    HG_Bulk_create(info->hg_class, 1, NULL, &size, HG_BULK_READWRITE, &job->local);
    tgt.in_transfer = true;
    hg_return_t ret = HG_Bulk_transfer(info->context, pull_done, job, HG_BULK_PULL,
                                       info->addr, in.bulk, 0, job->local, 0, size, NULL);
    tgt.in_transfer = false;
    HG_Free_input(handle, &in);
    return ret;
}

/* An origin and a target class over cur_info, the target's address known
 * to the origin. */
struct pair {
    hg_class_t *ocls, *tcls;
    hg_context_t *octx, *tctx;
    hg_addr_t target;     /* the target, for the origin */
    hg_addr_t target_own; /* the target, for itself */
    hg_id_t id;
};

static void pair_open(struct pair *p, bool no_bulk_eager)
{
    struct hg_init_info oinfo = HG_INIT_INFO_INITIALIZER;
    char name[TEST_ADDR_MAX];
    hg_size_t len = sizeof(name);

    memset(p, 0, sizeof(*p));
    memset(&tgt, 0, sizeof(tgt));
    oinfo.no_bulk_eager = no_bulk_eager;
    p->tcls = HG_Init(cur_info, HG_TRUE);
    assert_non_null(p->tcls);
    p->ocls = HG_Init_opt2(cur_info, HG_FALSE, HG_VERSION(2, 4), &oinfo);
    assert_non_null(p->ocls);
    p->tctx = HG_Context_create(p->tcls);
    p->octx = HG_Context_create(p->ocls);
    assert_non_null(p->tctx);
    assert_non_null(p->octx);
    p->id = MERCURY_REGISTER(p->ocls, "eager_pull", eager_in_t, eager_out_t, NULL);
    assert_int_equal(
        MERCURY_REGISTER(p->tcls, "eager_pull", eager_in_t, eager_out_t, pull_rpc),
        p->id);
    assert_int_equal(HG_Addr_self(p->tcls, &p->target_own), HG_SUCCESS);
    assert_int_equal(HG_Addr_to_string(p->tcls, name, &len, p->target_own), HG_SUCCESS);
    assert_int_equal(HG_Addr_lookup2(p->ocls, name, &p->target), HG_SUCCESS);
}

static void pair_close(struct pair *p)
{
    free(tgt.data);
    tgt.data = NULL;
    HG_Addr_free(p->ocls, p->target);
    HG_Addr_free(p->tcls, p->target_own);
    /* A response's send may complete after the response arrived (ofi+sockets
     * under load): progress both until each context can go. */
    hg_context_t *ctx[2] = {p->octx, p->tctx};
    double t0 = test_now();
    for (int i = 0; i < 2; i++) {
        while (HG_Context_destroy(ctx[i]) != HG_SUCCESS) {
            unsigned int n;
            assert_true(test_now() - t0 < WAIT_S);
            for (int j = i; j < 2; j++) { /* the contexts still alive */
                HG_Progress(ctx[j], 1);
                HG_Trigger(ctx[j], 0, 16, &n);
            }
        }
    }
    assert_int_equal(HG_Finalize(p->ocls), HG_SUCCESS);
    assert_int_equal(HG_Finalize(p->tcls), HG_SUCCESS);
}

/* Progress and trigger both classes until *count reaches want. */
static void pair_run(struct pair *p, const int *count, int want)
{
    double t0 = test_now();
    while (*count < want && test_now() - t0 < WAIT_S) {
        unsigned int n;
        HG_Progress(p->octx, 1);
        HG_Trigger(p->octx, 0, 16, &n);
        HG_Progress(p->tctx, 1);
        HG_Trigger(p->tctx, 0, 16, &n);
    }
    assert_int_equal(*count, want);
}

static hg_return_t forward_cb(const struct hg_cb_info *info)
{
    ++*(int *)info->arg;
    return HG_SUCCESS;
}

/* Forward size bytes (SEED_OLD) in a handle of the given access, overwrite them with
 * SEED_NEW once the input is encoded, free the handle too if free_early,
 * then let the target pull them all. */
static void forward_pull(struct pair *p, size_t size, bool free_early, hg_uint8_t access)
{
    unsigned char *buf = malloc(size);
    void *ptr = buf;
    hg_size_t bsize = size;
    hg_bulk_t bulk;
    hg_handle_t h;
    eager_out_t out;
    int calls = 0;

    test_fill(buf, size, SEED_OLD);
    assert_int_equal(HG_Bulk_create(p->ocls, 1, &ptr, &bsize, access, &bulk), HG_SUCCESS);
    eager_in_t in = {.bulk = bulk, .size = size};
    assert_int_equal(HG_Create(p->octx, p->target, p->id, &h), HG_SUCCESS);
    assert_int_equal(HG_Forward(h, forward_cb, &calls, &in), HG_SUCCESS);
    test_fill(buf, size, SEED_NEW);
    if (free_early)
        HG_Bulk_free(bulk);
    pair_run(p, &calls, 1);
    assert_int_equal(tgt.done, 1);
    assert_false(tgt.inline_cb);
    assert_int_equal(HG_Get_output(h, &out), HG_SUCCESS);
    assert_int_equal(out.ret, tgt.ret);
    HG_Free_output(h, &out);
    HG_Destroy(h);
    if (!free_early)
        HG_Bulk_free(bulk);
    free(buf);
}

static void test_rpc_eager(void **state)
{
    (void)state;
    struct pair p;
    struct hg_diag_counters c;

    pair_open(&p, false);
    forward_pull(&p, SMALL, true, HG_BULK_READ_ONLY);
    assert_int_equal(tgt.ret, HG_SUCCESS);
    assert_true(test_check(tgt.data, SMALL, SEED_OLD));
    assert_int_equal(HG_Class_get_counters(p.tcls, &c), HG_SUCCESS);
    assert_int_equal(c.bulk_count, 1);
    pair_close(&p);
}

static void test_rpc_no_bulk_eager(void **state)
{
    (void)state;
    struct pair p;

    pair_open(&p, true);
    forward_pull(&p, SMALL, false, HG_BULK_READ_ONLY);
    assert_int_equal(tgt.ret, HG_SUCCESS);
    assert_true(test_check(tgt.data, SMALL, SEED_NEW));
    pair_close(&p);
}

static void test_rpc_too_large(void **state)
{
    (void)state;
    struct pair p;

    pair_open(&p, false);
    size_t size = (size_t)HG_Class_get_input_eager_size(p.ocls) + 1;
    forward_pull(&p, size, false, HG_BULK_READ_ONLY);
    assert_int_equal(tgt.ret, HG_SUCCESS);
    assert_true(test_check(tgt.data, size, SEED_NEW));
    pair_close(&p);
}

/* A read-write handle is embedded in an RPC as a read-only one is (Mercury's
 * rule): the target's pull reads the bytes taken at encoding, not the
 * origin's memory. */
static void test_rpc_readwrite_eager(void **state)
{
    (void)state;
    struct pair p;

    pair_open(&p, false);
    forward_pull(&p, SMALL, false, HG_BULK_READWRITE);
    assert_int_equal(tgt.ret, HG_SUCCESS);
    assert_true(test_check(tgt.data, SMALL, SEED_OLD));
    pair_close(&p);
}

/* Serialize bulk with flags into a new buffer; its size in *len. */
static unsigned char *serialize(hg_bulk_t bulk, unsigned long flags, hg_size_t *len)
{
    *len = HG_Bulk_get_serialize_size(bulk, flags);
    unsigned char *desc = malloc((size_t)*len);
    assert_non_null(desc);
    assert_int_equal(HG_Bulk_serialize(desc, *len, flags, bulk), HG_SUCCESS);
    return desc;
}

static void test_serialize_eager(void **state)
{
    (void)state;
    struct pair p;
    unsigned char src[200];
    void *ptrs[3] = {src, src + 100, src + 150};
    hg_size_t sizes[3] = {100, 50, 50};
    hg_bulk_t ro, wo, rw, remote, local;
    hg_size_t len, plain_len;

    pair_open(&p, false);
    test_fill(src, sizeof(src), SEED_OLD);
    assert_int_equal(HG_Bulk_create(p.ocls, 3, ptrs, sizes, HG_BULK_READ_ONLY, &ro),
                     HG_SUCCESS);
    assert_int_equal(HG_Bulk_create(p.ocls, 1, ptrs, sizes, HG_BULK_WRITE_ONLY, &wo),
                     HG_SUCCESS);
    assert_int_equal(HG_Bulk_create(p.ocls, 1, ptrs, sizes, HG_BULK_READWRITE, &rw),
                     HG_SUCCESS);
    /* Readable handles carry their bytes and a length; a write-only one cannot. */
    plain_len = HG_Bulk_get_serialize_size(ro, 0);
    assert_int_equal(HG_Bulk_get_serialize_size(ro, HG_BULK_EAGER), plain_len + 8 + 200);
    assert_int_equal(HG_Bulk_get_serialize_size(rw, HG_BULK_EAGER),
                     HG_Bulk_get_serialize_size(rw, 0) + 8 + 100);
    assert_int_equal(HG_Bulk_get_serialize_size(wo, HG_BULK_EAGER),
                     HG_Bulk_get_serialize_size(wo, 0));
    unsigned char *desc = serialize(ro, HG_BULK_EAGER, &len);
    assert_int_equal(HG_Bulk_serialize(desc, len - 1, HG_BULK_EAGER, ro), HG_OVERFLOW);

    /* The copy outlives the handle and its memory. */
    HG_Bulk_free(ro);
    memset(src, 0, sizeof(src));
    assert_int_equal(HG_Bulk_deserialize(p.ocls, &remote, desc, len), HG_SUCCESS);
    assert_int_equal(HG_Bulk_get_size(remote), 200);
    assert_int_equal(HG_Bulk_get_segment_count(remote), 3);
    hg_size_t rlen;
    unsigned char *again = serialize(remote, 0, &rlen); /* passed on as it came */
    assert_int_equal(rlen, len);
    assert_memory_equal(again, desc, (size_t)len);
    free(again);

    /* A pull of part of it, completed through the queue, never inline. */
    unsigned char dst[150] = {0}, want[200];
    void *dptr = dst;
    hg_size_t dsize = sizeof(dst);
    int calls = 0;
    test_fill(want, sizeof(want), SEED_OLD); /* what src held */
    assert_int_equal(HG_Bulk_create(p.ocls, 1, &dptr, &dsize, HG_BULK_READWRITE, &local),
                     HG_SUCCESS);
    assert_int_equal(HG_Bulk_transfer(p.octx, forward_cb, &calls, HG_BULK_PULL, p.target,
                                      remote, 30, local, 10, 140, NULL),
                     HG_SUCCESS);
    assert_int_equal(calls, 0);
    pair_run(&p, &calls, 1);
    assert_memory_equal(dst + 10, want + 30, 140);
    assert_int_equal(dst[0], 0);
    /* A read-only handle takes no push, as in Mercury. */
    assert_int_equal(HG_Bulk_transfer(p.octx, forward_cb, &calls, HG_BULK_PUSH, p.target,
                                      remote, 0, local, 0, 100, NULL),
                     HG_PERMISSION);
    HG_Bulk_free(remote);

    /* Forged eager descriptors are malformed ones: the same error as bad magic. */
    unsigned char *forged = malloc((size_t)len);
    size_t at = (size_t)plain_len; /* data_len u64, then the data */
    const struct {
        size_t off[2];      /* bytes raised by one (0: none) */
        unsigned char xor ; /* flipped in byte off[0] instead, if not 0 */
        hg_size_t cut;      /* bytes taken off the end */
    } forgeries[] = {
        {{0, 0}, 0x01, 0},    /* bad magic */
        {{at, 0}, 0, 0},      /* data length not the handle's (count mismatch) */
        {{16, 0}, 0, 0},      /* handle length not the data's */
        {{16, at}, 0, 0},     /* both one more: the data runs past the buffer */
        {{at + 7, 0}, 0, 0},  /* a data length of 2^56 and more */
        {{5, 0}, 0x03, 0},    /* write-only: cannot carry data */
        {{6, 0}, 0x04, 0},    /* unknown option */
        {{0, 0}, 0, 1},       /* data cut short by one byte */
        {{0, 0}, 0, 200 + 8}, /* data and its length cut */
    };
    for (size_t i = 0; i < sizeof(forgeries) / sizeof(*forgeries); i++) {
        memcpy(forged, desc, (size_t)len);
        if (forgeries[i].xor)
            forged[forgeries[i].off[0]] ^= forgeries[i].xor ;
        else
            for (int k = 0; k < 2; k++)
                if (forgeries[i].off[k])
                    forged[forgeries[i].off[k]]++;
        remote = (hg_bulk_t)(uintptr_t)1;
        assert_int_equal(
            HG_Bulk_deserialize(p.ocls, &remote, forged, len - forgeries[i].cut),
            HG_PROTOCOL_ERROR);
        assert_null(remote);
    }
    free(forged);
    free(desc);

    HG_Bulk_free(local);
    HG_Bulk_free(wo);
    HG_Bulk_free(rw);
    pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rpc_eager),
        cmocka_unit_test(test_rpc_no_bulk_eager),
        cmocka_unit_test(test_rpc_too_large),
        cmocka_unit_test(test_rpc_readwrite_eager),
        cmocka_unit_test(test_serialize_eager),
    };
    return test_run_per_transport("bulk_eager", "", &cur_info, tests,
                                  sizeof(tests) / sizeof(*tests), NULL, NULL);
}
