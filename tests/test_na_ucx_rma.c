/*
 * test_na_ucx_rma.c -- a peer that forges UCX memory descriptors reads and
 * writes nothing outside what the target exposed. A target class, driven
 * by its own thread, exposes regions lying between secret bytes: read-only,
 * write-only, read-write, and one already freed. The origin class (another
 * UCX worker, reached over tcp or shared memory) changes the descriptors as
 * an attacker would: wrong key, generation or index, lengths past the end
 * (up to 2^64 - 1), permissions the owner did not grant, and every byte
 * xor 0xFF, + 1 and set to 0xFF. Every transfer must end within 1 s; one
 * that succeeds must have moved only region bytes; the secret bytes must
 * stay untouched and never reach the origin.
 */
#include "hgx_test_hooks.h"
#include "na_test_proto.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define REG 4096        /* bytes of each exposed region */
#define SECRET 0x5a     /* the bytes around every region */
#define LOCAL (3 * REG) /* the origin's buffer */
#define TRY_MS 1000     /* a transfer must end this fast, refused or not */

/* Descriptor fields (docs/na-ucx.md): flags, total, index, gen, key, first length. */
#define D_FLAGS 4
#define D_TOTAL 8
#define D_INDEX 20
#define D_GEN 24
#define D_KEY 28
#define D_LEN0 36

enum { RO, WO, RW, NREG };

struct target {
    na_class_t *cls;
    na_context_t *ctx;
    pthread_t thread;
    atomic_bool stop;
    unsigned char *arena; /* per region: secret, region, secret */
    na_mem_handle_t *mh[NREG];
    unsigned char desc[NREG + 1][256]; /* serialized; [NREG]: a freed handle */
    size_t desc_len[NREG + 1];
};

struct origin {
    na_class_t *cls;
    na_context_t *ctx;
    na_addr_t *target;
    unsigned char *buf;
    na_mem_handle_t *local;
    na_op_id_t *op;
};

static const char *current_info;
static struct target tg;
static struct origin og;

static unsigned char *region(int r)
{
    return tg.arena + (size_t)r * 3 * REG + REG;
}

static void *target_progress(void *arg)
{
    (void)arg;
    while (!atomic_load(&tg.stop)) {
        NA_Progress(tg.cls, tg.ctx, 10);
        NA_Trigger(tg.ctx, 64, NULL);
    }
    return NULL;
}

static na_mem_handle_t *expose(unsigned char *buf, unsigned long flags, int slot)
{
    na_mem_handle_t *mh = NULL;
    assert_int_equal(NA_Mem_handle_create(tg.cls, buf, REG, flags, &mh), NA_SUCCESS);
    assert_int_equal(NA_Mem_register(tg.cls, mh, NA_MEM_TYPE_HOST, 0), NA_SUCCESS);
    tg.desc_len[slot] = NA_Mem_handle_get_serialize_size(tg.cls, mh);
    assert_true(tg.desc_len[slot] <= sizeof(tg.desc[slot]));
    assert_int_equal(
        NA_Mem_handle_serialize(tg.cls, tg.desc[slot], tg.desc_len[slot], mh),
        NA_SUCCESS);
    return mh;
}

static int group_setup(void **state)
{
    (void)state;
    tg.cls = NA_Initialize(current_info, true);
    if (!tg.cls) {
        print_message("SKIP %s: cannot initialize a listening class\n", current_info);
        return -1;
    }
    tg.ctx = NA_Context_create(tg.cls);
    tg.arena = malloc((size_t)NREG * 3 * REG);
    memset(tg.arena, SECRET, (size_t)NREG * 3 * REG);
    static const unsigned long flags[NREG] = {NA_MEM_READ_ONLY, NA_MEM_WRITE_ONLY,
                                              NA_MEM_READWRITE};
    for (int r = 0; r < NREG; r++) {
        test_fill(region(r), REG, 100u + (unsigned)r);
        tg.mh[r] = expose(region(r), flags[r], r);
    }
    /* A handle freed before anyone used its descriptor. */
    na_mem_handle_t *gone = expose(region(RW), NA_MEM_READWRITE, NREG);
    NA_Mem_deregister(tg.cls, gone);
    NA_Mem_handle_free(tg.cls, gone);

    char addr[TEST_ADDR_MAX];
    size_t addr_len = sizeof(addr);
    na_addr_t *self = NULL;
    assert_int_equal(NA_Addr_self(tg.cls, &self), NA_SUCCESS);
    assert_int_equal(NA_Addr_to_string(tg.cls, addr, &addr_len, self), NA_SUCCESS);
    NA_Addr_free(tg.cls, self);
    atomic_store(&tg.stop, false);
    assert_int_equal(pthread_create(&tg.thread, NULL, target_progress, NULL), 0);

    og.cls = NA_Initialize(current_info, false);
    assert_non_null(og.cls);
    og.ctx = NA_Context_create(og.cls);
    assert_int_equal(NA_Addr_lookup(og.cls, addr, &og.target), NA_SUCCESS);
    og.buf = calloc(1, LOCAL);
    assert_int_equal(
        NA_Mem_handle_create(og.cls, og.buf, LOCAL, NA_MEM_READWRITE, &og.local),
        NA_SUCCESS);
    assert_int_equal(NA_Mem_register(og.cls, og.local, NA_MEM_TYPE_HOST, 0), NA_SUCCESS);
    og.op = NA_Op_create(og.cls, NA_OP_SINGLE);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    NA_Op_destroy(og.cls, og.op);
    NA_Mem_deregister(og.cls, og.local);
    NA_Mem_handle_free(og.cls, og.local);
    NA_Addr_free(og.cls, og.target);
    NA_Context_destroy(og.cls, og.ctx);
    NA_Finalize(og.cls);
    atomic_store(&tg.stop, true);
    pthread_join(tg.thread, NULL);
    for (int r = 0; r < NREG; r++) {
        NA_Mem_deregister(tg.cls, tg.mh[r]);
        NA_Mem_handle_free(tg.cls, tg.mh[r]);
    }
    NA_Context_destroy(tg.cls, tg.ctx);
    NA_Finalize(tg.cls);
    free(tg.arena);
    free(og.buf);
    return 0;
}

/* Put (from og.buf) or get (into og.buf) size bytes at roff of the
 * descriptor desc; its outcome. A descriptor the origin refuses to parse
 * returns NA_PROTOCOL_ERROR without a transfer. */
static na_return_t attempt(bool put, const unsigned char *desc, size_t len, uint64_t roff,
                           size_t size)
{
    na_mem_handle_t *remote = NULL;
    na_return_t ret = NA_Mem_handle_deserialize(og.cls, &remote, desc, len);
    if (ret != NA_SUCCESS)
        return NA_PROTOCOL_ERROR;
    struct na_test_done done = {0};
    double t0 = test_now();
    ret = (put ? NA_Put : NA_Get)(og.cls, og.ctx, na_test_cb, &done, og.local, 0, remote,
                                  roff, size, og.target, 0, og.op);
    if (ret == NA_SUCCESS) {
        assert_true(na_test_wait(og.cls, og.ctx, &done, 1, 10 * TRY_MS));
        assert_true(test_now() - t0 < TRY_MS / 1e3);
        ret = done.ret;
    }
    NA_Mem_handle_free(og.cls, remote);
    return ret;
}

/* A copy of region r's descriptor with one field changed. */
static const unsigned char *forged(int r, size_t off, uint64_t value, size_t width)
{
    static unsigned char d[256];
    memcpy(d, tg.desc[r], tg.desc_len[r]);
    for (size_t i = 0; i < width; i++)
        d[off + i] = (unsigned char)(value >> (8 * i));
    return d;
}

static uint64_t field(int r, size_t off, size_t width)
{
    uint64_t v = 0;
    for (size_t i = width; i-- > 0;)
        v = v << 8 | tg.desc[r][off + i];
    return v;
}

/* Only the secret bytes around every region, and the regions the origin
 * may not write (read-only) unchanged. */
static void check_target_intact(void)
{
    for (int r = 0; r < NREG; r++) {
        unsigned char *lo = region(r) - REG, *hi = region(r) + REG;
        for (size_t i = 0; i < REG; i++)
            assert_true(lo[i] == SECRET && hi[i] == SECRET);
    }
    assert_true(test_check(region(RO), REG, 100u + RO));
}

/* A get that succeeded moved region r's bytes [roff, roff + size) into the
 * start of og.buf and nothing else; one that failed moved nothing. */
static void check_got(na_return_t ret, int r, size_t roff, size_t size)
{
    size_t moved = ret == NA_SUCCESS ? size : 0;
    if (moved)
        assert_memory_equal(og.buf, region(r) + roff, moved);
    for (size_t i = moved; i < LOCAL; i++)
        assert_true(og.buf[i] == 0);
    memset(og.buf, 0, LOCAL);
}

static void test_good(void **state)
{
    (void)state;
    assert_int_equal(attempt(false, tg.desc[RO], tg.desc_len[RO], 100, 1000), NA_SUCCESS);
    check_got(NA_SUCCESS, RO, 100, 1000);
    test_fill(og.buf, REG, 9);
    assert_int_equal(attempt(true, tg.desc[WO], tg.desc_len[WO], 0, REG), NA_SUCCESS);
    assert_true(test_check(region(WO), REG, 9));
    memset(og.buf, 0, LOCAL);
    check_target_intact();
}

static void test_wrong_name(void **state)
{
    (void)state;
    long refused0, refused, dropped;
    na_ucx_rma_counts(&refused0, &dropped);
    uint64_t key = field(RO, D_KEY, 8), gen = field(RO, D_GEN, 4),
             idx = field(RO, D_INDEX, 4);
    const struct {
        size_t off, width;
        uint64_t value;
    } cases[] = {{D_KEY, 8, key ^ 1},     {D_KEY, 8, 0},         {D_GEN, 4, gen + 1},
                 {D_GEN, 4, 0},           {D_INDEX, 4, idx + 1}, {D_INDEX, 4, 0},
                 {D_INDEX, 4, UINT32_MAX}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        na_return_t ret =
            attempt(false, forged(RO, cases[i].off, cases[i].value, cases[i].width),
                    tg.desc_len[RO], 0, REG);
        assert_int_equal(ret, NA_ACCESS);
        check_got(ret, RO, 0, REG);
    }
    /* The freed handle. */
    assert_int_equal(attempt(false, tg.desc[NREG], tg.desc_len[NREG], 0, REG), NA_ACCESS);
    check_got(NA_ACCESS, RW, 0, REG);
    na_ucx_rma_counts(&refused, &dropped);
    assert_true(refused - refused0 >= (long)(sizeof(cases) / sizeof(*cases)) + 1);
    check_target_intact();
}

/* Lengths the origin's own checks accept (the descriptor says so), the
 * target's not: next to the region, and at the top of the address space. */
static void test_past_end(void **state)
{
    (void)state;
    unsigned char d[256];
    const uint64_t lens[] = {2 * REG, 3 * REG, UINT64_MAX};
    for (size_t i = 0; i < sizeof(lens) / sizeof(*lens); i++) {
        memcpy(d, forged(RO, D_TOTAL, lens[i], 8), tg.desc_len[RO]);
        memcpy(d + D_LEN0, d + D_TOTAL, 8);
        uint64_t roff = lens[i] == UINT64_MAX ? UINT64_MAX - REG : REG;
        na_return_t ret = attempt(false, d, tg.desc_len[RO], roff, REG);
        assert_int_equal(ret, NA_INVALID_ARG);
        check_got(ret, RO, 0, REG);
        /* Starts inside, ends outside. */
        ret = attempt(false, d, tg.desc_len[RO], REG / 2, REG);
        assert_int_equal(ret, NA_INVALID_ARG);
        check_got(ret, RO, 0, REG);
        memcpy(d, forged(RW, D_TOTAL, lens[i], 8), tg.desc_len[RW]);
        memcpy(d + D_LEN0, d + D_TOTAL, 8);
        memset(og.buf, 0xee, LOCAL);
        ret = attempt(true, d, tg.desc_len[RW], REG - 1, 2);
        assert_int_equal(ret, NA_INVALID_ARG);
        memset(og.buf, 0, LOCAL);
    }
    check_target_intact();
}

/* Permissions widened in the descriptor: the owner's still hold. */
/* Both wire forms are little-endian whatever the host (hgx_wire.h), and a
 * truncated one is a protocol error. */
static void test_wire_layout(void **state)
{
    (void)state;
    const unsigned char *d = tg.desc[RW];
    /* Descriptor: version 2, then the access flags (READWRITE 3). */
    static const unsigned char head[8] = {2, 0, 0, 0, NA_MEM_READWRITE, 0, 0, 0};
    assert_memory_equal(d, head, sizeof(head));
    na_mem_handle_t *mh = (na_mem_handle_t *)0x1;
    for (size_t n = 1; n < tg.desc_len[RW]; n++) /* 0 bytes: NA_INVALID_ARG */
        assert_int_equal(NA_Mem_handle_deserialize(og.cls, &mh, d, n), NA_PROTOCOL_ERROR);
    /* Address: magic "UCXA" as a little-endian u32, then the id. */
    unsigned char a[256];
    size_t n = NA_Addr_get_serialize_size(og.cls, og.target);
    assert_true(n <= sizeof(a));
    assert_int_equal(NA_Addr_serialize(og.cls, a, n, og.target), NA_SUCCESS);
    static const unsigned char magic[4] = {0x41, 0x58, 0x43, 0x55};
    assert_memory_equal(a, magic, sizeof(magic));
    na_addr_t *back = NULL;
    assert_int_equal(NA_Addr_deserialize(og.cls, &back, a, n), NA_SUCCESS);
    assert_true(NA_Addr_cmp(og.cls, back, og.target));
    NA_Addr_free(og.cls, back);
    for (size_t k = 1; k < 10; k++)
        assert_int_equal(NA_Addr_deserialize(og.cls, &back, a, k), NA_PROTOCOL_ERROR);
}

static void test_permission(void **state)
{
    (void)state;
    memset(og.buf, 0xee, LOCAL);
    na_return_t ret =
        attempt(true, forged(RO, D_FLAGS, NA_MEM_READWRITE, 4), tg.desc_len[RO], 0, REG);
    assert_int_equal(ret, NA_PERMISSION);
    memset(og.buf, 0, LOCAL);
    ret =
        attempt(false, forged(WO, D_FLAGS, NA_MEM_READWRITE, 4), tg.desc_len[WO], 0, REG);
    assert_int_equal(ret, NA_PERMISSION);
    check_got(ret, WO, 0, REG);
    check_target_intact();
}

/* Every byte of the read-only and read-write descriptors changed three ways;
 * each changed descriptor is pulled from (both) and pushed to (read-write). */
static void test_every_byte(void **state)
{
    (void)state;
    unsigned tries = 0, refused = 0;
    for (int r = RO; r <= RW; r += RW - RO) {
        for (size_t i = 0; i < tg.desc_len[r]; i++) {
            for (int how = 0; how < 3; how++) {
                unsigned char d[256];
                memcpy(d, tg.desc[r], tg.desc_len[r]);
                d[i] = how == 0 ? d[i] ^ 0xff : how == 1 ? d[i] + 1 : 0xff;
                if (d[i] == tg.desc[r][i])
                    continue;
                size_t n = REG;
                na_return_t ret = attempt(false, d, tg.desc_len[r], 0, n);
                check_got(ret, r, 0, n);
                tries++;
                refused += ret != NA_SUCCESS;
                if (r != RW)
                    continue;
                test_fill(og.buf, n, 500 + (unsigned)i);
                ret = attempt(true, d, tg.desc_len[r], 0, n);
                if (ret == NA_SUCCESS)
                    assert_true(test_check(region(RW), n, 500 + (unsigned)i));
                memset(og.buf, 0, LOCAL);
                tries++;
                refused += ret != NA_SUCCESS;
            }
        }
    }
    print_message("# %s: %u changed-descriptor transfers, %u refused\n", current_info,
                  tries, refused);
    assert_true(refused > 0);
    check_target_intact();
    /* The target still serves good requests. */
    test_good(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),       cmocka_unit_test(test_wrong_name),
        cmocka_unit_test(test_past_end),   cmocka_unit_test(test_permission),
        cmocka_unit_test(test_every_byte), cmocka_unit_test(test_wire_layout),
    };
    return test_run_per_transport("na_ucx_rma", "ucx+", &current_info, tests,
                                  sizeof(tests) / sizeof(*tests), group_setup,
                                  group_teardown);
}
