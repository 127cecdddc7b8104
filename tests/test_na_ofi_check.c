/*
 * test_na_ofi_check.c -- the RMA check hgx adds to ofi+shm. First its
 * tables and decoder alone (na_ofi_check.h); then a live ofi+shm class
 * whose registrations a raw libfabric shm endpoint asks about: each CHECK
 * must get its exact answer (OK, NA_ACCESS, NA_INVALID_ARG, NA_PERMISSION),
 * and forged answers and malformed control messages must be dropped and
 * counted while the class keeps answering. Last, a target killed while a
 * get waits for it (its CHECK refused, or taken and unanswered): the get
 * ends as unreachable, well before the 5 s bounds. Then messages in two
 * pieces (ofi_pieces.c) from the raw endpoint: a whole one is delivered
 * whole, and a first piece without its second (never sent, too large,
 * canceled) is dropped or fails without taking the receive with it. Also
 * the class's message size, the same whether or not shm can use CMA.
 */
#include "hgx_test_hooks.h"
#include "na.h"
#include "na_ofi_check.h"
#include "na_slots.h"
#include "test_common.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* Protocol facts of the OFI plugin (ofi_int.h): control tag, address header. */
#define CTRL_TAG (UINT64_C(1) << 62)
#define SENDER_HDR 64
#define MSG_MAX (HGX_OFI_CTRL_HDR_SIZE + SENDER_HDR + 2 * HGX_OFI_CHECK_RANGE_SIZE)
#define ANSWER_MS 5000

/* ------------------------------------------------------------------------- */
/* Tables and decoder                                                        */
/* ------------------------------------------------------------------------- */

static void test_keytab(void **state)
{
    struct hgx_ofi_keytab t;
    const uint64_t base = 0x10000, len = 0x1000;
    (void)state;

    hgx_ofi_keytab_init(&t);
    assert_int_equal(hgx_ofi_keytab_check(&t, 7, base, 1, HGX_OFI_CHECK_READ), NA_ACCESS);
    assert_int_equal(hgx_ofi_keytab_add(&t, 7, base, len, HGX_OFI_CHECK_READ),
                     NA_SUCCESS);
    assert_int_equal(hgx_ofi_keytab_add(&t, 7, base, len, HGX_OFI_CHECK_READ),
                     NA_INVALID_ARG);
    assert_int_equal(hgx_ofi_keytab_check(&t, 7, base, len, HGX_OFI_CHECK_READ),
                     NA_SUCCESS);
    assert_int_equal(hgx_ofi_keytab_check(&t, 7, base + len - 1, 1, HGX_OFI_CHECK_READ),
                     NA_SUCCESS);
    static const uint64_t bad[][2] = {
        {0x10000 + 0x1000, 1}, {0x10000 - 1, 2},         {0x10000, 0x1001},
        {0x10000, 0},          {0x10001, UINT64_MAX},    {UINT64_MAX, 2},
        {0, UINT64_MAX},       {0x10000 + 0x1000, 0x10}, {0x10800, 0x801}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        assert_int_equal(
            hgx_ofi_keytab_check(&t, 7, bad[i][0], bad[i][1], HGX_OFI_CHECK_READ),
            NA_INVALID_ARG);
    assert_int_equal(hgx_ofi_keytab_check(&t, 7, base, len, HGX_OFI_CHECK_WRITE),
                     NA_PERMISSION);
    assert_int_equal(
        hgx_ofi_keytab_check(&t, 7, base, len, HGX_OFI_CHECK_READ | HGX_OFI_CHECK_WRITE),
        NA_PERMISSION);
    assert_int_equal(hgx_ofi_keytab_check(&t, 8, base, len, HGX_OFI_CHECK_READ),
                     NA_ACCESS);
    /* Many keys (the table grows), each still found with its own range. */
    for (uint64_t k = 100; k < 1100; k++)
        assert_int_equal(hgx_ofi_keytab_add(&t, k * 0x9e3779b97f4a7c15u, k << 20, 64,
                                            HGX_OFI_CHECK_WRITE),
                         NA_SUCCESS);
    for (uint64_t k = 100; k < 1100; k++) {
        uint64_t key = k * 0x9e3779b97f4a7c15u;
        assert_int_equal(hgx_ofi_keytab_check(&t, key, k << 20, 64, HGX_OFI_CHECK_WRITE),
                         NA_SUCCESS);
        assert_int_equal(
            hgx_ofi_keytab_check(&t, key, (k + 1) << 20, 64, HGX_OFI_CHECK_WRITE),
            NA_INVALID_ARG);
    }
    hgx_ofi_keytab_remove(&t, 7);
    assert_int_equal(hgx_ofi_keytab_check(&t, 7, base, len, HGX_OFI_CHECK_READ),
                     NA_ACCESS);
    hgx_ofi_keytab_remove(&t, 7); /* twice: nothing */
    hgx_ofi_keytab_destroy(&t);
}

/* The shared table that names waiting ops on the wire (na_slots). */
static void test_cookies(void **state)
{
    struct na_slots t = {0};
    static int objs[300];
    uint64_t c[300];
    uint32_t index, gen;
    (void)state;

    assert_null(na_slots_get_cookie(&t, 0));
    for (int i = 0; i < 300; i++) {
        assert_true(na_slots_add(&t, &objs[i], &index, &gen));
        c[i] = na_slots_cookie(index, gen);
    }
    for (int i = 0; i < 300; i++)
        assert_ptr_equal(na_slots_get_cookie(&t, c[i]), &objs[i]);
    na_slots_remove(&t, (uint32_t)c[5]);
    assert_null(na_slots_get_cookie(&t, c[5]));
    assert_ptr_equal(na_slots_get_cookie(&t, c[6]), &objs[6]);
    /* The slot comes back with another generation: the old cookie stays dead. */
    assert_true(na_slots_add(&t, &objs[5], &index, &gen));
    uint64_t again = na_slots_cookie(index, gen);
    assert_int_equal((uint32_t)again, (uint32_t)c[5]);
    assert_int_not_equal(again, c[5]);
    assert_null(na_slots_get_cookie(&t, c[5]));
    assert_ptr_equal(na_slots_get_cookie(&t, again), &objs[5]);
    assert_null(
        na_slots_get_cookie(&t, c[7] ^ (UINT64_C(1) << 40)));   /* wrong generation */
    assert_null(na_slots_get_cookie(&t, UINT64_C(0xffffffff))); /* index past the end */
    na_slots_fini(&t);
}

static void test_decode(void **state)
{
    unsigned char sender[SENDER_HDR], buf[MSG_MAX + 8], m[MSG_MAX + 8];
    struct hgx_ofi_range r[2] = {{1, 2, 3}, {4, 5, 6}}, got;
    struct hgx_ofi_ctrl msg;
    (void)state;

    memset(sender, 0x5a, sizeof(sender));
    size_t len =
        hgx_ofi_check_encode(buf, 42, HGX_OFI_CHECK_WRITE, sender, SENDER_HDR, r, 2);
    assert_int_equal(len, MSG_MAX);
    assert_true(hgx_ofi_ctrl_decode(buf, len, SENDER_HDR, &msg));
    assert_int_equal(msg.type, HGX_OFI_CTRL_CHECK);
    assert_int_equal(msg.access, HGX_OFI_CHECK_WRITE);
    assert_int_equal(msg.cookie, 42);
    assert_int_equal(msg.nranges, 2);
    assert_memory_equal(msg.sender, sender, SENDER_HDR);
    hgx_ofi_ctrl_range(&msg, 1, &got);
    assert_true(got.key == 4 && got.addr == 5 && got.len == 6);
    /* Cut, lengthened, and each header field made invalid. */
    assert_false(hgx_ofi_ctrl_decode(buf, len - 1, SENDER_HDR, &msg));
    assert_false(hgx_ofi_ctrl_decode(buf, len + 1, SENDER_HDR, &msg));
    assert_false(hgx_ofi_ctrl_decode(buf, 3, SENDER_HDR, &msg));
    static const struct {
        size_t at;
        unsigned char v;
    } bad[] = {{0, 0}, {1, 9},  {2, 0}, {2, 3}, {3, 0}, {3, 4},
               {4, 0}, {4, 65}, {6, 1}, {8, 1}, {12, 1}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        memcpy(m, buf, len);
        m[bad[i].at] = bad[i].v;
        assert_false(hgx_ofi_ctrl_decode(m, len, SENDER_HDR, &msg));
    }
    len = hgx_ofi_answer_encode(buf, 43, NA_PERMISSION, 0);
    assert_true(hgx_ofi_ctrl_decode(buf, len, SENDER_HDR, &msg));
    assert_true(msg.type == HGX_OFI_CTRL_ANSWER && msg.cookie == 43 &&
                msg.status == NA_PERMISSION);
    len = hgx_ofi_answer_encode(buf, 43, NA_NOMEM, 0); /* no target sends that */
    assert_false(hgx_ofi_ctrl_decode(buf, len, SENDER_HDR, &msg));
    len = hgx_ofi_answer_encode(buf, 43, NA_SUCCESS, 0);
    buf[4] = 1; /* an answer with ranges */
    assert_false(hgx_ofi_ctrl_decode(buf, len, SENDER_HDR, &msg));
    /* A lease comes only with an OK, and no longer than an origin accepts. */
    const uint32_t lease = HGX_OFI_LEASE_MAX_US;
    len = hgx_ofi_answer_encode(buf, 44, NA_SUCCESS, lease);
    assert_true(hgx_ofi_ctrl_decode(buf, len, SENDER_HDR, &msg));
    assert_true(msg.status == NA_SUCCESS && msg.lease_us == lease);
    len = hgx_ofi_answer_encode(buf, 44, NA_SUCCESS, lease + 1);
    assert_false(hgx_ofi_ctrl_decode(buf, len, SENDER_HDR, &msg));
    len = hgx_ofi_answer_encode(buf, 44, NA_ACCESS, 1);
    assert_false(hgx_ofi_ctrl_decode(buf, len, SENDER_HDR, &msg));
    len = hgx_ofi_check_encode(buf, 45, HGX_OFI_CHECK_READ, sender, SENDER_HDR, r, 1);
    buf[12] = 1; /* a CHECK carrying a lease */
    assert_false(hgx_ofi_ctrl_decode(buf, len, SENDER_HDR, &msg));
}

/* Leases: granted on the repeated use of a region, held by the origin for a
 * range of one target, and waited for when the key goes. */
static void test_leases(void **state)
{
    struct hgx_ofi_keytab t;
    struct hgx_ofi_leases c = {0};
    const unsigned char a[] = "peer-a", b[] = "peer-b";
    const uint64_t base = 0x10000, t0 = 1000000000u, key = 9;
    const unsigned int rd = HGX_OFI_CHECK_READ, wr = HGX_OFI_CHECK_WRITE;
    (void)state;

    hgx_ofi_keytab_init(&t);
    assert_int_equal(hgx_ofi_keytab_add(&t, key, base, 4096, rd), NA_SUCCESS);
    assert_int_equal(hgx_ofi_keytab_add(&t, 10, base + 8192, 4096, rd), NA_SUCCESS);
    /* First OK: none; again soon after: a lease; again after a long gap: none. */
    assert_int_equal(hgx_ofi_keytab_lease(&t, &key, 1, t0), 0);
    assert_int_equal(hgx_ofi_keytab_lease(&t, &key, 1, t0 + 1000),
                     HGX_OFI_LEASE_NS / 1000u);
    assert_int_equal(
        hgx_ofi_keytab_lease(&t, &key, 1, t0 + 1000 + HGX_OFI_LEASE_REPEAT_NS), 0);
    /* A CHECK naming a fresh key with a repeated one gets none. */
    const uint64_t two[2] = {key, 10};
    assert_int_equal(hgx_ofi_keytab_lease(&t, two, 2, t0 + 2 * HGX_OFI_LEASE_REPEAT_NS),
                     0);
    /* Removal returns when the last lease ends; a key never leased, 0. */
    assert_true(hgx_ofi_keytab_remove(&t, key) == t0 + 1000 + HGX_OFI_LEASE_NS);
    assert_true(hgx_ofi_keytab_remove(&t, 10) == 0);
    assert_true(hgx_ofi_keytab_remove(&t, 10) == 0);
    hgx_ofi_keytab_destroy(&t);

    /* The origin's side: covered only inside the range, with the access, for
     * the same target, before the end. */
    struct hgx_ofi_range r = {key, base, 4096};
    hgx_ofi_leases_add(&c, a, sizeof(a), &r, rd, t0);
    struct {
        const unsigned char *peer;
        struct hgx_ofi_range r;
        unsigned int access;
        uint64_t now;
        bool want;
    } cases[] = {
        {a, {key, base, 4096}, rd, t0 - 1, true},
        {a, {key, base + 100, 10}, rd, t0 - 1, true},
        {a, {key, base, 4096}, rd, t0, false},
        {a, {key, base, 4096}, wr, t0 - 1, false},
        {a, {key, base, 4097}, rd, t0 - 1, false},
        {a, {key, base - 1, 2}, rd, t0 - 1, false},
        {a, {key, base + 1, UINT64_MAX}, rd, t0 - 1, false},
        {a, {key, base, 0}, rd, t0 - 1, false},
        {a, {key + 1, base, 16}, rd, t0 - 1, false},
        {b, {key, base, 16}, rd, t0 - 1, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
        if (hgx_ofi_leases_cover(&c, cases[i].peer, sizeof(a), &cases[i].r,
                                 cases[i].access, cases[i].now) != cases[i].want)
            fail_msg("lease case %zu: covered %d", i, !cases[i].want);
    /* The oldest lease goes once HGX_OFI_LEASES more came. */
    for (uint64_t i = 0; i < HGX_OFI_LEASES; i++) {
        struct hgx_ofi_range other = {100 + i, base, 16};
        hgx_ofi_leases_add(&c, b, sizeof(b), &other, rd, t0);
    }
    assert_false(hgx_ofi_leases_cover(&c, a, sizeof(a), &r, rd, t0 - 1));
}

/* ------------------------------------------------------------------------- */
/* A live ofi+shm class asked by a raw shm endpoint                          */
/* ------------------------------------------------------------------------- */

struct live {
    na_class_t *cls;
    na_context_t *ctx;
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    fi_addr_t peer;                   /* the class */
    unsigned char sender[SENDER_HDR]; /* our address header */
    unsigned char rbuf[MSG_MAX];
    struct fi_context2 rctx;
    /* Regions of the class: read-only and write-only 4 KiB. */
    unsigned char *mem;
    na_mem_handle_t *ro, *wo;
    uint64_t ro_addr, ro_key, wo_addr, wo_key;
};

#define RAW_CHK(call) assert_int_equal((int)(call), 0)

static void live_raw_open(struct live *l)
{
    struct fi_info *hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->fabric_attr->prov_name = strdup("shm");
    RAW_CHK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &l->info));
    fi_freeinfo(hints);
    RAW_CHK(fi_fabric(l->info->fabric_attr, &l->fabric, NULL));
    RAW_CHK(fi_domain(l->fabric, l->info, &l->domain, NULL));
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    RAW_CHK(fi_av_open(l->domain, &av_attr, &l->av, NULL));
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE};
    RAW_CHK(fi_cq_open(l->domain, &cq_attr, &l->cq, NULL));
    RAW_CHK(fi_endpoint(l->domain, l->info, &l->ep, NULL));
    RAW_CHK(fi_ep_bind(l->ep, &l->av->fid, 0));
    RAW_CHK(fi_ep_bind(l->ep, &l->cq->fid, FI_TRANSMIT | FI_RECV));
    RAW_CHK(fi_enable(l->ep));

    /* The class's shm name, as its address string gives it. */
    na_addr_t *self;
    char str[128], name[160];
    size_t n = sizeof(str);
    assert_int_equal(NA_Addr_self(l->cls, &self), NA_SUCCESS);
    assert_int_equal(NA_Addr_to_string(l->cls, str, &n, self), NA_SUCCESS);
    NA_Addr_free(l->cls, self);
    assert_true(strncmp(str, "ofi+shm://", 10) == 0);
    snprintf(name, sizeof(name), "fi_shm://%s", str + 10);
    assert_int_equal(fi_av_insert(l->av, name, 1, &l->peer, 0, NULL), 1);

    /* Our own address header, as the plugin's unexpected messages carry it. */
    char me[SENDER_HDR];
    size_t melen = sizeof(me) - 4;
    RAW_CHK(fi_getname(&l->ep->fid, me, &melen));
    melen = strnlen(me, melen);
    memset(l->sender, 0, sizeof(l->sender));
    l->sender[0] = 0xa7;
    l->sender[1] = 2;
    l->sender[2] = (unsigned char)melen;
    memcpy(l->sender + 4, me, melen);
}

static void live_expose(struct live *l, size_t off, unsigned long flags,
                        na_mem_handle_t **mh, uint64_t *addr, uint64_t *key)
{
    unsigned char ser[64];
    assert_int_equal(NA_Mem_handle_create(l->cls, l->mem + off, 4096, flags, mh),
                     NA_SUCCESS);
    assert_int_equal(NA_Mem_register(l->cls, *mh, NA_MEM_TYPE_HOST, 0), NA_SUCCESS);
    assert_int_equal(NA_Mem_handle_get_serialize_size(l->cls, *mh), 40);
    assert_int_equal(NA_Mem_handle_serialize(l->cls, ser, sizeof(ser), *mh), NA_SUCCESS);
    /* 16-byte header, then addr u64, len u64, key u64 (little-endian). */
    memcpy(addr, ser + 16, 8);
    memcpy(key, ser + 32, 8);
    assert_true(*addr == (uint64_t)(uintptr_t)(l->mem + off));
}

static int live_setup(void **state)
{
    struct live *l = calloc(1, sizeof(*l));
    l->cls = NA_Initialize("ofi+shm", true);
    assert_non_null(l->cls);
    l->ctx = NA_Context_create(l->cls);
    l->mem = calloc(1, 3 * 4096);
    live_raw_open(l);
    live_expose(l, 0, NA_MEM_READ_ONLY, &l->ro, &l->ro_addr, &l->ro_key);
    live_expose(l, 8192, NA_MEM_WRITE_ONLY, &l->wo, &l->wo_addr, &l->wo_key);
    *state = l;
    return 0;
}

static int live_teardown(void **state)
{
    struct live *l = *state;
    fi_close(&l->ep->fid);
    fi_close(&l->cq->fid);
    fi_close(&l->av->fid);
    fi_close(&l->domain->fid);
    fi_close(&l->fabric->fid);
    fi_freeinfo(l->info);
    if (l->ro) {
        NA_Mem_deregister(l->cls, l->ro);
        NA_Mem_handle_free(l->cls, l->ro);
    }
    NA_Mem_deregister(l->cls, l->wo);
    NA_Mem_handle_free(l->cls, l->wo);
    NA_Context_destroy(l->cls, l->ctx);
    NA_Finalize(l->cls);
    free(l->mem);
    free(l);
    return 0;
}

static void poll_once(struct live *l)
{
    unsigned int count;
    NA_Poll(l->cls, l->ctx, &count);
}

static void live_send(struct live *l, const void *buf, size_t len)
{
    ssize_t rc;
    double end = test_now() + ANSWER_MS / 1e3;
    while ((rc = fi_tinject(l->ep, buf, len, l->peer, CTRL_TAG)) == -FI_EAGAIN &&
           test_now() < end)
        poll_once(l);
    assert_int_equal((int)rc, 0);
}

/* Progress the class until our receive completes or ms pass; its length, or 0. */
static size_t live_recv(struct live *l, unsigned int ms)
{
    struct fi_cq_tagged_entry e;
    double end = test_now() + ms / 1e3;
    RAW_CHK(fi_trecv(l->ep, l->rbuf, sizeof(l->rbuf), NULL, FI_ADDR_UNSPEC, CTRL_TAG, 0,
                     &l->rctx));
    while (test_now() < end) {
        poll_once(l);
        ssize_t n = fi_cq_read(l->cq, &e, 1);
        if (n == 1)
            return e.len;
        assert_true(n == -FI_EAGAIN);
    }
    /* Nothing came: take the receive back. */
    fi_cancel(&l->ep->fid, &l->rctx);
    struct fi_cq_err_entry err = {0};
    while (fi_cq_read(l->cq, &e, 1) == -FI_EAVAIL && fi_cq_readerr(l->cq, &err, 0) == 1)
        ;
    return 0;
}

/* Send a CHECK and return the class's answer, and the lease it grants. */
static na_return_t ask_lease(struct live *l, unsigned int access,
                             const struct hgx_ofi_range *r, size_t n, uint32_t *lease_us)
{
    static uint64_t cookie = 1000;
    unsigned char buf[MSG_MAX];
    struct hgx_ofi_ctrl msg;

    cookie++;
    live_send(l, buf,
              hgx_ofi_check_encode(buf, cookie, access, l->sender, SENDER_HDR, r, n));
    size_t len = live_recv(l, ANSWER_MS);
    assert_true(len > 0);
    assert_true(hgx_ofi_ctrl_decode(l->rbuf, len, SENDER_HDR, &msg));
    assert_int_equal(msg.type, HGX_OFI_CTRL_ANSWER);
    assert_int_equal(msg.cookie, cookie);
    *lease_us = msg.lease_us;
    return msg.status;
}

static na_return_t ask(struct live *l, unsigned int access, const struct hgx_ofi_range *r,
                       size_t n)
{
    uint32_t lease_us;
    return ask_lease(l, access, r, n, &lease_us);
}

static void test_live_answers(void **state)
{
    struct live *l = *state;
    const unsigned int rd = HGX_OFI_CHECK_READ, wr = HGX_OFI_CHECK_WRITE;
    struct hgx_ofi_ctrl_counts c0, c1;
    struct {
        unsigned int access;
        struct hgx_ofi_range r[2];
        size_t n;
        na_return_t want;
    } cases[] = {
        {rd, {{l->ro_key, l->ro_addr, 4096}}, 1, NA_SUCCESS},
        {wr, {{l->wo_key, l->wo_addr + 100, 10}}, 1, NA_SUCCESS},
        {wr, {{l->ro_key, l->ro_addr, 4096}}, 1, NA_PERMISSION},
        {rd, {{l->wo_key, l->wo_addr, 1}}, 1, NA_PERMISSION},
        {rd, {{l->ro_key, l->ro_addr, 4097}}, 1, NA_INVALID_ARG},
        {rd, {{l->ro_key, l->ro_addr - 1, 2}}, 1, NA_INVALID_ARG},
        {rd, {{l->ro_key, l->ro_addr + 4096, 1}}, 1, NA_INVALID_ARG},
        {rd, {{l->ro_key, l->ro_addr + 1, UINT64_MAX}}, 1, NA_INVALID_ARG},
        {rd, {{l->ro_key, UINT64_MAX, 2}}, 1, NA_INVALID_ARG},
        {rd, {{l->ro_key ^ 1, l->ro_addr, 16}}, 1, NA_ACCESS},
        {rd, {{l->wo_key, l->ro_addr, 16}}, 1, NA_INVALID_ARG}, /* another region's key */
        {rd,
         {{l->ro_key, l->ro_addr, 16}, {l->ro_key, l->ro_addr + 8192, 16}},
         2,
         NA_INVALID_ARG},
        {rd | wr, {{l->ro_key, l->ro_addr, 16}}, 1, NA_PERMISSION},
    };
    size_t refusals = 0;

    hgx_ofi_ctrl_counts(l->cls, &c0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        na_return_t got = ask(l, cases[i].access, cases[i].r, cases[i].n);
        if (got != cases[i].want)
            fail_msg("case %zu: answer %s, want %s", i, NA_Error_to_string(got),
                     NA_Error_to_string(cases[i].want));
        refusals += cases[i].want != NA_SUCCESS;
    }
    /* A freed registration is unknown at once. */
    NA_Mem_deregister(l->cls, l->ro);
    NA_Mem_handle_free(l->cls, l->ro);
    l->ro = NULL;
    struct hgx_ofi_range freed = {l->ro_key, l->ro_addr, 16};
    assert_int_equal(ask(l, rd, &freed, 1), NA_ACCESS);
    hgx_ofi_ctrl_counts(l->cls, &c1);
    assert_int_equal(c1.refused - c0.refused, refusals + 1);
    assert_int_equal(c1.bad, c0.bad);
}

/* A region in repeated use is leased; its deregistration returns only once
 * the lease has ended, and the region is refused from then on. */
static void test_live_lease(void **state)
{
    struct live *l = *state;
    na_mem_handle_t *mh;
    uint64_t addr, key;
    uint32_t lease_us;

    live_expose(l, 4096, NA_MEM_READ_ONLY, &mh, &addr, &key);
    struct hgx_ofi_range r = {key, addr, 4096}, part = {key, addr + 64, 64};
    assert_int_equal(ask_lease(l, HGX_OFI_CHECK_READ, &r, 1, &lease_us), NA_SUCCESS);
    assert_int_equal(lease_us, 0); /* first use */
    assert_int_equal(ask_lease(l, HGX_OFI_CHECK_READ, &part, 1, &lease_us), NA_SUCCESS);
    assert_int_equal(lease_us, HGX_OFI_LEASE_NS / 1000u);
    double granted = test_now();
    /* A refusal grants nothing. */
    assert_int_equal(ask_lease(l, HGX_OFI_CHECK_WRITE, &r, 1, &lease_us), NA_PERMISSION);
    assert_int_equal(lease_us, 0);
    NA_Mem_deregister(l->cls, mh);
    double done = test_now();
    print_message("# deregistration with a lease: returned %.2f ms after the grant\n",
                  (done - granted) * 1e3);
    assert_true(done - granted >= HGX_OFI_LEASE_NS / 1e9 * 0.99);
    assert_true(done - granted < HGX_OFI_LEASE_NS / 1e9 + 0.5);
    NA_Mem_handle_free(l->cls, mh);
    assert_int_equal(ask_lease(l, HGX_OFI_CHECK_READ, &part, 1, &lease_us), NA_ACCESS);
    assert_int_equal(lease_us, 0);
}

static void test_live_malformed(void **state)
{
    struct live *l = *state;
    unsigned char buf[3000], junk[HGX_OFI_CTRL_HDR_SIZE + SENDER_HDR + 24];
    struct hgx_ofi_range r = {l->wo_key, l->wo_addr, 16};
    struct hgx_ofi_ctrl_counts c0, c1;

    hgx_ofi_ctrl_counts(l->cls, &c0);
    /* Too short, wrong magic, cut CHECK, oversized (truncated by the receive). */
    memset(buf, 0xee, sizeof(buf));
    size_t len =
        hgx_ofi_check_encode(junk, 1, HGX_OFI_CHECK_WRITE, l->sender, SENDER_HDR, &r, 1);
    live_send(l, buf, 3);
    live_send(l, buf, sizeof(buf));
    live_send(l, junk, len - 1);
    memcpy(buf, junk, len);
    buf[0] ^= 0xff;
    live_send(l, buf, len);
    /* A CHECK whose sender header is garbage: nobody to answer. */
    memcpy(buf, junk, len);
    memset(buf + HGX_OFI_CTRL_HDR_SIZE + 4, 0xff, SENDER_HDR - 4);
    buf[HGX_OFI_CTRL_HDR_SIZE + 2] = 200;
    live_send(l, buf, len);
    const size_t bad = 5;
    /* Answers for cookies the class never gave out. */
    live_send(l, buf, hgx_ofi_answer_encode(buf, 0, NA_SUCCESS, 0));
    live_send(l, buf,
              hgx_ofi_answer_encode(buf, UINT64_C(0xdeadbeef00000003), NA_ACCESS, 0));
    assert_int_equal(live_recv(l, 300), 0); /* none of these is answered */
    hgx_ofi_ctrl_counts(l->cls, &c1);
    assert_int_equal(c1.bad - c0.bad, bad);
    assert_int_equal(c1.stale - c0.stale, 2);
    /* The class still answers. */
    assert_int_equal(ask(l, HGX_OFI_CHECK_WRITE, &r, 1), NA_SUCCESS);
}

/* ---- the class as origin, the raw endpoint as a target that answers as told ---- */

struct origin_op {
    struct live *l;
    na_addr_t *target;
    na_mem_handle_t *local, *remote;
    unsigned char buf[4096];
    na_op_id_t *op;
    int calls;
    na_return_t ret;
};

static void origin_cb(const struct na_cb_info *info)
{
    struct origin_op *o = info->arg;
    o->calls++;
    o->ret = info->ret;
}

/* The descriptor of a one-segment remote handle of len bytes at addr under
 * key, as the plugin serializes one (ofi_mem.c). */
#define DESC_SIZE 40
static void remote_desc(unsigned char desc[DESC_SIZE], uint64_t addr, uint64_t len,
                        uint64_t key)
{
    static const unsigned char head[8] = {0x46, 0x4f, 1, NA_MEM_READWRITE, 1};
    memcpy(desc, head, sizeof(head));
    memcpy(desc + 8, &len, 8);
    memcpy(desc + 16, &addr, 8);
    memcpy(desc + 24, &len, 8);
    memcpy(desc + 32, &key, 8);
}

/* o, cleared, with the raw endpoint as its target and an op to start. */
static void origin_open(struct live *l, struct origin_op *o)
{
    char name[160], *me = (char *)l->sender + 4;

    memset(o, 0, sizeof(*o));
    o->l = l;
    snprintf(name, sizeof(name), "ofi+shm://%.*s", (int)l->sender[2] - 9, me + 9);
    assert_int_equal(NA_Addr_lookup(l->cls, name, &o->target), NA_SUCCESS);
    o->op = NA_Op_create(l->cls, NA_OP_SINGLE);
}

/* Start o->op: a get into o->buf of len bytes at off of o->target's
 * one-segment handle of total bytes at addr under key. */
static void origin_get(na_class_t *cls, na_context_t *ctx, struct origin_op *o,
                       uint64_t addr, uint64_t total, uint64_t key, uint64_t off,
                       uint64_t len)
{
    unsigned char desc[DESC_SIZE];

    remote_desc(desc, addr, total, key);
    assert_int_equal(NA_Mem_handle_deserialize(cls, &o->remote, desc, sizeof(desc)),
                     NA_SUCCESS);
    assert_int_equal(
        NA_Mem_handle_create(cls, o->buf, sizeof(o->buf), NA_MEM_READWRITE, &o->local),
        NA_SUCCESS);
    assert_int_equal(NA_Mem_register(cls, o->local, NA_MEM_TYPE_HOST, 0), NA_SUCCESS);
    assert_int_equal(NA_Get(cls, ctx, origin_cb, o, o->local, 0, o->remote, off, len,
                            o->target, 0, o->op),
                     NA_SUCCESS);
}

/* A get of 4096 bytes at a made-up address of the raw endpoint. */
static void origin_start(struct live *l, struct origin_op *o)
{
    origin_open(l, o);
    origin_get(l->cls, l->ctx, o, 0x7000, 4096, 0x1234, 0, 4096);
}

/* Receive the CHECK the get sends; check what it names and return its cookie. */
static uint64_t origin_check(struct origin_op *o)
{
    struct hgx_ofi_ctrl msg;
    struct hgx_ofi_range r;
    size_t len = live_recv(o->l, ANSWER_MS);

    assert_true(len > 0);
    assert_true(hgx_ofi_ctrl_decode(o->l->rbuf, len, SENDER_HDR, &msg));
    assert_int_equal(msg.type, HGX_OFI_CTRL_CHECK);
    assert_int_equal(msg.access, HGX_OFI_CHECK_READ);
    assert_int_equal(msg.nranges, 1);
    hgx_ofi_ctrl_range(&msg, 0, &r);
    assert_true(r.key == 0x1234 && r.addr == 0x7000 && r.len == 4096);
    assert_int_equal(msg.sender[0], 0xa7); /* the class's address header */
    return msg.cookie;
}

static void origin_answer(struct origin_op *o, uint64_t cookie, na_return_t status)
{
    unsigned char buf[HGX_OFI_CTRL_HDR_SIZE];
    live_send(o->l, buf, hgx_ofi_answer_encode(buf, cookie, status, 0));
}

/* Progress and trigger for up to ms; the seconds it took the callback to run. */
static double origin_wait(struct origin_op *o, unsigned int ms)
{
    double t0 = test_now(), end = t0 + ms / 1e3;
    while (o->calls == 0 && test_now() < end) {
        unsigned int n;
        poll_once(o->l);
        NA_Trigger(o->l->ctx, 16, &n);
    }
    return test_now() - t0;
}

/* Release what origin_open and origin_get made. */
static void origin_free(na_class_t *cls, struct origin_op *o)
{
    NA_Op_destroy(cls, o->op);
    NA_Mem_deregister(cls, o->local);
    NA_Mem_handle_free(cls, o->local);
    NA_Mem_handle_free(cls, o->remote);
    NA_Addr_free(cls, o->target);
}

static void origin_end(struct origin_op *o)
{
    origin_free(o->l->cls, o);
}

static void test_live_origin(void **state)
{
    struct live *l = *state;
    struct origin_op o;
    struct hgx_ofi_ctrl_counts c0, c1;

    hgx_ofi_ctrl_counts(l->cls, &c0);
    /* A refusal ends the get with its code; a forged cookie first changes nothing. */
    origin_start(l, &o);
    uint64_t cookie = origin_check(&o);
    origin_answer(&o, cookie ^ (UINT64_C(1) << 32), NA_SUCCESS);
    origin_wait(&o, 200);
    assert_int_equal(o.calls, 0);
    origin_answer(&o, cookie, NA_PERMISSION);
    assert_true(origin_wait(&o, ANSWER_MS) < 1.0);
    assert_int_equal(o.calls, 1);
    assert_int_equal(o.ret, NA_PERMISSION);
    origin_end(&o);

    /* A get waiting for its answer cancels at once (well before ANSWER_MS, with
     * room for a loaded machine); the late answer is dropped. */
    origin_start(l, &o);
    cookie = origin_check(&o);
    assert_int_equal(NA_Cancel(l->cls, l->ctx, o.op), NA_SUCCESS);
    double dt = origin_wait(&o, ANSWER_MS);
    print_message("# cancel while checking: %s after %.2f ms\n",
                  NA_Error_to_string(o.ret), dt * 1e3);
    assert_int_equal(o.ret, NA_CANCELED);
    assert_true(dt < 1.0);
    origin_answer(&o, cookie, NA_SUCCESS);
    o.calls = 0;
    origin_wait(&o, 200);
    assert_int_equal(o.calls, 0);
    origin_end(&o);

    /* A target that never answers: the get ends, bounded, as unreachable. */
    origin_start(l, &o);
    origin_check(&o);
    dt = origin_wait(&o, 10000);
    print_message("# unanswered check: %s after %.2f s\n", NA_Error_to_string(o.ret), dt);
    assert_int_equal(o.calls, 1);
    assert_int_equal(o.ret, NA_HOSTUNREACH);
    assert_true(dt > 4.0 && dt < 7.0);
    origin_end(&o);

    hgx_ofi_ctrl_counts(l->cls, &c1);
    assert_int_equal(c1.stale - c0.stale, 2);
    assert_int_equal(c1.bad, c0.bad);
}

/* The class as origin of gets from the raw endpoint's memory (this process):
 * after an OK with a lease, gets inside the range go without a CHECK until
 * the lease ends; a get outside it is checked. */
static na_return_t lease_get(struct origin_op *o, struct live *l,
                             const unsigned char *mem, uint64_t off, uint64_t len,
                             bool checked, uint32_t lease_us)
{
    const uint64_t addr = (uint64_t)(uintptr_t)mem, key = 0x4321;

    origin_open(l, o);
    origin_get(l->cls, l->ctx, o, addr, 8192, key, off, len);
    if (checked) {
        struct hgx_ofi_ctrl msg;
        struct hgx_ofi_range r;
        size_t n = live_recv(l, ANSWER_MS);
        assert_true(n > 0);
        assert_true(hgx_ofi_ctrl_decode(l->rbuf, n, SENDER_HDR, &msg));
        assert_int_equal(msg.type, HGX_OFI_CTRL_CHECK);
        hgx_ofi_ctrl_range(&msg, 0, &r);
        assert_true(r.key == key && r.addr == addr + off && r.len == len);
        unsigned char buf[HGX_OFI_CTRL_HDR_SIZE];
        live_send(l, buf, hgx_ofi_answer_encode(buf, msg.cookie, NA_SUCCESS, lease_us));
    } else {
        assert_int_equal(live_recv(l, 50), 0); /* no CHECK came */
    }
    origin_wait(o, ANSWER_MS);
    assert_int_equal(o->calls, 1);
    if (o->ret == NA_SUCCESS)
        assert_memory_equal(o->buf, mem + off, len);
    na_return_t ret = o->ret;
    origin_end(o);
    return ret;
}

static void test_live_origin_lease(void **state)
{
    struct live *l = *state;
    struct origin_op o;
    static unsigned char mem[8192];
    const uint32_t lease_us = 300000; /* 300 ms, longer than a 50 ms quiet wait */

    for (size_t i = 0; i < sizeof(mem); i++)
        mem[i] = (unsigned char)(i * 7);
    /* Checked, no lease granted: the next get is checked again. */
    assert_int_equal(lease_get(&o, l, mem, 0, 4096, true, 0), NA_SUCCESS);
    assert_int_equal(lease_get(&o, l, mem, 0, 4096, true, lease_us), NA_SUCCESS);
    double granted = test_now();
    /* Leased: inside the range, no CHECK; outside it, a CHECK. */
    assert_int_equal(lease_get(&o, l, mem, 0, 4096, false, 0), NA_SUCCESS);
    assert_int_equal(lease_get(&o, l, mem, 1000, 100, false, 0), NA_SUCCESS);
    assert_int_equal(lease_get(&o, l, mem, 4000, 200, true, 0), NA_SUCCESS);
    assert_true(test_now() - granted < lease_us / 1e6);
    /* Once it ended, checked again. */
    while (test_now() - granted < lease_us / 1e6 + 0.01)
        poll_once(l);
    assert_int_equal(lease_get(&o, l, mem, 0, 4096, true, 0), NA_SUCCESS);
}

/* ---- a target killed while a get waits for it ---- */

static void note_cb(const struct na_cb_info *info)
{
    *(bool *)info->arg = true;
}

/* An ofi+shm class that publishes its address, progresses until its first
 * unexpected message if first_message (so that shm knows the sender and
 * takes its next messages into the queue), then never again, until killed. */
static int quiet_target(const char *info, int publish_fd, bool first_message)
{
    na_class_t *cls = NA_Initialize(info, true);
    na_context_t *ctx = cls ? NA_Context_create(cls) : NULL;
    na_addr_t *self = NULL;
    char str[TEST_ADDR_MAX];
    size_t n = sizeof(str);

    if (!ctx || NA_Addr_self(cls, &self) != NA_SUCCESS ||
        NA_Addr_to_string(cls, str, &n, self) != NA_SUCCESS) {
        test_server_publish(publish_fd, NULL);
        return 1;
    }
    size_t size = NA_Msg_get_max_unexpected_size(cls);
    void *plugin_data = NULL, *buf = NA_Msg_buf_alloc(cls, size, NA_RECV, &plugin_data);
    na_op_id_t *op = NA_Op_create(cls, NA_OP_SINGLE);
    bool got = !first_message;
    if (first_message && NA_Msg_recv_unexpected(cls, ctx, note_cb, &got, buf, size,
                                                plugin_data, op) != NA_SUCCESS)
        return 1;
    test_server_publish(publish_fd, str);
    while (!got) {
        unsigned int count;
        NA_Progress(cls, ctx, 100);
        NA_Trigger(ctx, 1, &count);
    }
    for (;;)
        pause();
}

static int silent_target_main(const char *info, int publish_fd)
{
    return quiet_target(info, publish_fd, false);
}

static int stalled_target_main(const char *info, int publish_fd)
{
    return quiet_target(info, publish_fd, true);
}

static void progress_until(na_class_t *cls, na_context_t *ctx, const bool *flag,
                           double end)
{
    while (!*flag && test_now() < end) {
        unsigned int n;
        NA_Progress(cls, ctx, 10);
        NA_Trigger(ctx, 16, &n);
    }
}

/* A get to a target that takes no CHECK (it never progressed: shm refuses
 * the CHECK) or holds one unanswered (it stopped progressing after a first
 * message): killed and reaped meanwhile, its process is gone and the get
 * ends NA_HOSTUNREACH within 1 s, not at the 5 s bounds. */
static void killed_target(bool stalled)
{
    struct test_server srv;
    struct origin_op o = {0};

    /* The target first: a fork of a process without a class. */
    assert_true(test_server_start(&srv, "ofi+shm",
                                  stalled ? stalled_target_main : silent_target_main));
    na_class_t *cls = NA_Initialize("ofi+shm", false);
    assert_non_null(cls);
    na_context_t *ctx = NA_Context_create(cls);
    assert_int_equal(NA_Addr_lookup(cls, srv.addr, &o.target), NA_SUCCESS);
    o.op = NA_Op_create(cls, NA_OP_SINGLE);
    if (stalled) {
        size_t size = NA_Msg_get_unexpected_header_size(cls) + 8;
        void *plugin_data = NULL;
        char *msg = NA_Msg_buf_alloc(cls, size, NA_SEND, &plugin_data);
        bool sent = false;
        NA_Msg_init_unexpected(cls, msg, size);
        assert_int_equal(NA_Msg_send_unexpected(cls, ctx, note_cb, &sent, msg, size,
                                                plugin_data, o.target, 0, 0, o.op),
                         NA_SUCCESS);
        progress_until(cls, ctx, &sent, test_now() + 5);
        assert_true(sent);
        NA_Msg_buf_free(cls, msg, plugin_data);
        usleep(100000); /* the target took it and stopped */
    }
    origin_get(cls, ctx, &o, 0x7000, sizeof(o.buf), 0x1234, 0, sizeof(o.buf));
    bool never = false;
    progress_until(cls, ctx, &never, test_now() + 0.2);
    assert_int_equal(o.calls, 0); /* the target is there: the get waits */
    double t0 = test_now();
    kill(srv.pid, SIGKILL);
    test_server_wait(&srv, 1000); /* reaped: its process is gone */
    while (o.calls == 0 && test_now() < t0 + 10)
        progress_until(cls, ctx, &never, test_now() + 0.01);
    double dt = test_now() - t0;
    print_message("# target %s, killed: get %s %.3f s after the kill\n",
                  stalled ? "holding the CHECK" : "refusing the CHECK",
                  NA_Error_to_string(o.ret), dt);
    assert_int_equal(o.calls, 1);
    assert_int_equal(o.ret, NA_HOSTUNREACH);
    assert_true(dt < 1.0);
    origin_free(cls, &o);
    assert_int_equal(NA_Context_destroy(cls, ctx), NA_SUCCESS);
    assert_int_equal(NA_Finalize(cls), NA_SUCCESS);
}

static void test_killed_target_refusing(void **state)
{
    (void)state;
    killed_target(false);
}

static void test_killed_target_holding(void **state)
{
    (void)state;
    killed_target(true);
}

/* ---- messages in two pieces: the raw endpoint as their sender ---- */

/* Protocol facts (ofi_int.h): the tag bits of the two pieces. */
#define TAG_UNEXPECTED (UINT64_C(1) << 63)
#define TAG_FIRST (UINT64_C(1) << 61)
#define TAG_SECOND (UINT64_C(1) << 60)
#define TAG_SEQ_SHIFT 40
#define PIECE 4096  /* shm's inject size */
#define WAIT_MS 100 /* HGX_OFI_RETRY_TIMEOUT_MS of the class: it waits 2x for a piece */

struct piece_rx {
    na_class_t *cls;
    na_op_id_t *op;
    unsigned char *buf;
    void *pd;
    int calls;
    na_return_t ret;
    size_t actual;
    na_tag_t tag;
};

static void piece_cb(const struct na_cb_info *info)
{
    struct piece_rx *r = info->arg;
    r->calls++;
    r->ret = info->ret;
    if (info->type == NA_CB_RECV_UNEXPECTED && info->ret == NA_SUCCESS) {
        r->actual = info->info.recv_unexpected.actual_buf_size;
        r->tag = info->info.recv_unexpected.tag;
        NA_Addr_free(r->cls, info->info.recv_unexpected.source);
    } else if (info->type == NA_CB_RECV_EXPECTED) {
        r->actual = info->info.recv_expected.actual_buf_size;
    }
}

static int pieces_setup(void **state)
{
    setenv("HGX_OFI_RETRY_TIMEOUT_MS", "100", 1);
    int rc = live_setup(state);
    unsetenv("HGX_OFI_RETRY_TIMEOUT_MS");
    return rc;
}

static void piece_rx_open(struct live *l, struct piece_rx *r)
{
    memset(r, 0, sizeof(*r));
    r->cls = l->cls;
    assert_int_equal(NA_Msg_get_max_unexpected_size(l->cls), 2 * PIECE);
    r->buf = NA_Msg_buf_alloc(l->cls, 2 * PIECE, NA_RECV, &r->pd);
    assert_non_null(r->buf);
    r->op = NA_Op_create(l->cls, NA_OP_SINGLE);
}

/* Post r's buffer, or its first size bytes (0: all). */
static void piece_rx_post_size(struct live *l, struct piece_rx *r, size_t size)
{
    r->calls = 0;
    assert_int_equal(NA_Msg_recv_unexpected(l->cls, l->ctx, piece_cb, r, r->buf,
                                            size ? size : 2 * PIECE, r->pd, r->op),
                     NA_SUCCESS);
}

static void piece_rx_post(struct live *l, struct piece_rx *r)
{
    piece_rx_post_size(l, r, 0);
}

static void piece_rx_close(struct live *l, struct piece_rx *r)
{
    NA_Op_destroy(l->cls, r->op);
    NA_Msg_buf_free(l->cls, r->buf, r->pd);
}

/* Progress and trigger for ms, or until r's callback ran. */
static void piece_wait(struct live *l, struct piece_rx *r, unsigned int ms)
{
    double end = test_now() + ms / 1e3;
    while (r->calls == 0 && test_now() < end) {
        unsigned int n;
        poll_once(l);
        NA_Trigger(l->ctx, 16, &n);
    }
}

/* Send len bytes of buf from the raw endpoint as one message tagged tag
 * (with CQ data data), waiting for its completion. */
static void raw_send(struct live *l, const unsigned char *buf, size_t len, uint64_t tag,
                     uint64_t data)
{
    struct fi_context2 ctx;
    struct fi_cq_tagged_entry e;
    ssize_t rc;
    double end = test_now() + ANSWER_MS / 1e3;
    while ((rc = fi_tsenddata(l->ep, buf, len, NULL, data, l->peer, tag, &ctx)) ==
               -FI_EAGAIN &&
           test_now() < end)
        poll_once(l);
    assert_int_equal((int)rc, 0);
    while (fi_cq_read(l->cq, &e, 1) != 1) {
        assert_true(test_now() < end);
        poll_once(l);
    }
    assert_ptr_equal(e.op_context, &ctx);
}

/* An unexpected message of len bytes (our header, then bytes seed, seed+1,
 * ...), in two pieces numbered seq, the second of second_len bytes (the
 * rest of the message when 0; none when SIZE_MAX). */
static void raw_send_pieces(struct live *l, size_t len, unsigned char seed, uint16_t seq,
                            size_t second_len, na_tag_t na_tag)
{
    unsigned char *msg = malloc(len + PIECE);
    memcpy(msg, l->sender, SENDER_HDR);
    for (size_t i = SENDER_HDR; i < len + PIECE; i++)
        msg[i] = (unsigned char)(seed + i);
    raw_send(l, msg, PIECE, TAG_UNEXPECTED | TAG_FIRST | (uint64_t)seq << TAG_SEQ_SHIFT,
             na_tag);
    if (second_len != SIZE_MAX)
        raw_send(l, msg + PIECE, second_len ? second_len : len - PIECE, TAG_SECOND | seq,
                 0);
    free(msg);
}

/* A whole unexpected message of len bytes in one piece, as raw_send_pieces fills it. */
static void raw_send_whole(struct live *l, size_t len, unsigned char seed,
                           na_tag_t na_tag)
{
    unsigned char *msg = malloc(len);
    memcpy(msg, l->sender, SENDER_HDR);
    for (size_t i = SENDER_HDR; i < len; i++)
        msg[i] = (unsigned char)(seed + i);
    raw_send(l, msg, len, TAG_UNEXPECTED, na_tag);
    free(msg);
}

static void assert_msg(const struct piece_rx *r, size_t len, unsigned char seed,
                       na_tag_t na_tag)
{
    assert_int_equal(r->calls, 1);
    assert_int_equal(r->ret, NA_SUCCESS);
    assert_int_equal(r->actual, len);
    assert_int_equal(r->tag, na_tag);
    for (size_t i = SENDER_HDR; i < len; i++)
        if (r->buf[i] != (unsigned char)(seed + i))
            fail_msg("byte %zu of %zu differs", i, len);
}

static unsigned long pieces_dropped(struct live *l)
{
    struct hgx_ofi_ctrl_counts c;
    hgx_ofi_ctrl_counts(l->cls, &c);
    return c.pieces_dropped;
}

/* Two-piece messages of several sizes arrive whole, and one-piece ones
 * still do. */
static void test_pieces_whole(void **state)
{
    struct live *l = *state;
    struct piece_rx r;
    static const size_t sizes[] = {PIECE + 1, 6000, 2 * PIECE};

    piece_rx_open(l, &r);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
        piece_rx_post(l, &r);
        raw_send_pieces(l, sizes[i], (unsigned char)i, (uint16_t)(100 + i), 0,
                        (na_tag_t)(70 + i));
        piece_wait(l, &r, ANSWER_MS);
        assert_msg(&r, sizes[i], (unsigned char)i, (na_tag_t)(70 + i));
    }
    piece_rx_post(l, &r);
    raw_send_whole(l, 3000, 9, 79);
    piece_wait(l, &r, ANSWER_MS);
    assert_msg(&r, 3000, 9, 79);
    piece_rx_close(l, &r);
}

/* A first piece whose second never comes is dropped after the class's
 * bound, and the receive takes the next message. */
static void test_pieces_first_only(void **state)
{
    struct live *l = *state;
    struct piece_rx r;
    unsigned long dropped = pieces_dropped(l);

    piece_rx_open(l, &r);
    piece_rx_post(l, &r);
    double t0 = test_now();
    raw_send_pieces(l, 6000, 1, 7, SIZE_MAX, 71);
    piece_wait(l, &r, WAIT_MS);
    assert_int_equal(r.calls, 0);
    while (pieces_dropped(l) == dropped && test_now() < t0 + ANSWER_MS / 1e3)
        piece_wait(l, &r, 10);
    assert_int_equal(pieces_dropped(l), dropped + 1);
    assert_true(test_now() - t0 >= 2 * WAIT_MS / 1e3);
    assert_int_equal(r.calls, 0);
    raw_send_pieces(l, 5000, 2, 8, 0, 72);
    piece_wait(l, &r, ANSWER_MS);
    assert_msg(&r, 5000, 2, 72);
    piece_rx_close(l, &r);
}

/* A message too large for the receive, whole or in pieces, ends the receive
 * with NA_MSGSIZE: a first piece that fills a 4096-byte receive, a second
 * piece larger than the room the first left in a 6000-byte one. (Pieces
 * stay at most the inject size: the raw endpoint shares this thread, and a
 * larger message would need its progress while the class receives it.) */
static void test_pieces_too_large(void **state)
{
    struct live *l = *state;
    struct piece_rx r;
    unsigned long dropped = pieces_dropped(l);

    piece_rx_open(l, &r);
    piece_rx_post_size(l, &r, PIECE);
    raw_send_pieces(l, 6000, 3, 9, 0, 73);
    piece_wait(l, &r, ANSWER_MS);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.ret, NA_MSGSIZE);
    piece_rx_post_size(l, &r, 6000);
    raw_send_pieces(l, 2 * PIECE, 3, 13, 3000, 73);
    piece_wait(l, &r, ANSWER_MS);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.ret, NA_MSGSIZE);
    assert_int_equal(pieces_dropped(l), dropped);
    piece_rx_post(l, &r);
    raw_send_whole(l, 1000, 4, 74);
    piece_wait(l, &r, ANSWER_MS);
    assert_msg(&r, 1000, 4, 74);
    piece_rx_close(l, &r);
}

static unsigned long late_seconds(struct live *l)
{
    struct hgx_ofi_ctrl_counts c;
    hgx_ofi_ctrl_counts(l->cls, &c);
    return c.late_seconds;
}

/* A receive waiting for a second piece cancels at once; the second piece,
 * sent after the cancel, is dropped (ofi_late.c) instead of staying in
 * shm's queue, and the next message arrives. */
static void test_pieces_cancel(void **state)
{
    struct live *l = *state;
    struct piece_rx r;
    unsigned long seconds = late_seconds(l);

    piece_rx_open(l, &r);
    piece_rx_post(l, &r);
    raw_send_pieces(l, 6000, 5, 10, SIZE_MAX, 75);
    piece_wait(l, &r, WAIT_MS / 2);
    assert_int_equal(r.calls, 0);
    double t0 = test_now();
    assert_int_equal(NA_Cancel(l->cls, l->ctx, r.op), NA_SUCCESS);
    piece_wait(l, &r, ANSWER_MS);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.ret, NA_CANCELED);
    assert_true(test_now() - t0 < WAIT_MS / 1e3);

    unsigned char rest[6000 - PIECE];
    memset(rest, 0x5a, sizeof(rest));
    raw_send(l, rest, sizeof(rest), TAG_SECOND | 10, 0);
    for (double end = test_now() + ANSWER_MS / 1e3;
         late_seconds(l) == seconds && test_now() < end;)
        poll_once(l);
    assert_int_equal(late_seconds(l), seconds + 1);
    piece_rx_post(l, &r);
    raw_send_whole(l, 2000, 6, 76);
    piece_wait(l, &r, ANSWER_MS);
    assert_msg(&r, 2000, 6, 76);
    piece_rx_close(l, &r);
}

/* An expected receive whose second piece never comes fails after the bound. */
static void test_pieces_expected(void **state)
{
    struct live *l = *state;
    struct origin_op o;
    struct piece_rx r;
    unsigned char msg[PIECE];

    origin_open(l, &o);
    piece_rx_open(l, &r);
    assert_int_equal(NA_Msg_recv_expected(l->cls, l->ctx, piece_cb, &r, r.buf, 2 * PIECE,
                                          r.pd, o.target, 0, 42, r.op),
                     NA_SUCCESS);
    memset(msg, 0x5a, sizeof(msg));
    raw_send(l, msg, PIECE, TAG_FIRST | (uint64_t)11 << TAG_SEQ_SHIFT | 42, 0);
    piece_wait(l, &r, WAIT_MS);
    assert_int_equal(r.calls, 0);
    piece_wait(l, &r, ANSWER_MS);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.ret, NA_PROTOCOL_ERROR);
    /* Whole, the same exchange completes. */
    assert_int_equal(NA_Msg_recv_expected(l->cls, l->ctx, piece_cb, &r, r.buf, 2 * PIECE,
                                          r.pd, o.target, 0, 43, r.op),
                     NA_SUCCESS);
    r.calls = 0;
    raw_send(l, msg, PIECE, TAG_FIRST | (uint64_t)12 << TAG_SEQ_SHIFT | 43, 0);
    raw_send(l, msg, 1000, TAG_SECOND | 12, 0);
    piece_wait(l, &r, ANSWER_MS);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.ret, NA_SUCCESS);
    assert_int_equal(r.actual, PIECE + 1000);
    piece_rx_close(l, &r);
    NA_Op_destroy(l->cls, o.op);
    NA_Addr_free(l->cls, o.target);
}

/* Max message size of an ofi+shm class opened with FI_SHM_DISABLE_CMA set to
 * value (NULL: unset). */
static size_t shm_msg_size(const char *value)
{
    const char *old = getenv("FI_SHM_DISABLE_CMA");
    char *saved = old ? strdup(old) : NULL;
    if (value)
        setenv("FI_SHM_DISABLE_CMA", value, 1);
    else
        unsetenv("FI_SHM_DISABLE_CMA");
    na_class_t *cls = NA_Initialize("ofi+shm", true);
    assert_non_null(cls);
    size_t u = NA_Msg_get_max_unexpected_size(cls), e = NA_Msg_get_max_expected_size(cls);
    assert_int_equal(u, e);
    assert_int_equal(NA_Finalize(cls), NA_SUCCESS);
    if (saved)
        setenv("FI_SHM_DISABLE_CMA", saved, 1);
    else
        unsetenv("FI_SHM_DISABLE_CMA");
    free(saved);
    return u;
}

/* 8 KiB messages (two inject-sized pieces) whether or not shm may use CMA,
 * in each of libfabric's spellings: every process of a job agrees. */
static void test_msg_size(void **state)
{
    (void)state;
    static const char *const values[] = {NULL, "0", "no", "1", "TRUE", "yes", "on"};
    for (size_t i = 0; i < sizeof(values) / sizeof(*values); i++)
        assert_int_equal(shm_msg_size(values[i]), 2 * PIECE);
}

int main(void)
{
    const struct CMUnitTest units[] = {
        cmocka_unit_test(test_keytab),
        cmocka_unit_test(test_cookies),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_leases),
    };
    const struct CMUnitTest live[] = {
        cmocka_unit_test(test_live_malformed),    cmocka_unit_test(test_live_answers),
        cmocka_unit_test(test_live_origin),       cmocka_unit_test(test_live_lease),
        cmocka_unit_test(test_live_origin_lease),
    };
    int failed = cmocka_run_group_tests_name("ofi_check/tables", units, NULL, NULL);
    na_class_t *probe = NA_Initialize("ofi+shm", true);
    if (!probe) {
        printf("SKIP: ofi+shm is not available here: no live check\n");
        return failed ? 1 : 77;
    }
    NA_Finalize(probe);
    failed +=
        cmocka_run_group_tests_name("ofi_check/ofi+shm", live, live_setup, live_teardown);
    const struct CMUnitTest dead[] = {
        cmocka_unit_test(test_killed_target_refusing),
        cmocka_unit_test(test_killed_target_holding),
    };
    failed += cmocka_run_group_tests_name("ofi_check/killed target", dead, NULL, NULL);
    const struct CMUnitTest pieces[] = {
        cmocka_unit_test(test_pieces_whole),     cmocka_unit_test(test_pieces_first_only),
        cmocka_unit_test(test_pieces_too_large), cmocka_unit_test(test_pieces_cancel),
        cmocka_unit_test(test_pieces_expected),
    };
    failed += cmocka_run_group_tests_name("ofi+shm/two pieces", pieces, pieces_setup,
                                          live_teardown);
    const struct CMUnitTest size[] = {cmocka_unit_test(test_msg_size)};
    failed += cmocka_run_group_tests_name("ofi+shm/message size", size, NULL, NULL);
    return failed ? 1 : 0;
}
