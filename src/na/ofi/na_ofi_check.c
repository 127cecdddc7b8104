/*
 * na_ofi_check.c -- key table and messages of the ofi RMA check
 * (see na_ofi_check.h).
 */
#include "na_ofi_check.h"

#include "hgx_clock.h"
#include "hgx_wire.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------------------
 * Key table: chained hash on the (random) keys
 * ------------------------------------------------------------------------- */

#define KEYTAB_BUCKETS_INIT 64

struct hgx_ofi_keyent {
    struct hgx_ofi_keyent *next;
    uint64_t key, base, len;
    unsigned int access;
    uint64_t last_ok_ns, lease_until_ns; /* see HGX_OFI_LEASE_NS */
};

void hgx_ofi_keytab_init(struct hgx_ofi_keytab *t)
{
    t->buckets = NULL;
    t->nbuckets = t->count = 0;
}

void hgx_ofi_keytab_destroy(struct hgx_ofi_keytab *t)
{
    for (size_t i = 0; i < t->nbuckets; i++)
        for (struct hgx_ofi_keyent *e = t->buckets[i], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    free(t->buckets);
    hgx_ofi_keytab_init(t);
}

static struct hgx_ofi_keyent **keytab_slot(const struct hgx_ofi_keytab *t, uint64_t key)
{
    struct hgx_ofi_keyent **p = &t->buckets[key % t->nbuckets];
    while (*p && (*p)->key != key)
        p = &(*p)->next;
    return p;
}

static bool keytab_grow(struct hgx_ofi_keytab *t)
{
    size_t n = t->nbuckets ? t->nbuckets * 2 : KEYTAB_BUCKETS_INIT;
    struct hgx_ofi_keyent **buckets = calloc(n, sizeof(*buckets));

    if (!buckets)
        return t->nbuckets > 0; /* longer chains, still correct */
    for (size_t i = 0; i < t->nbuckets; i++)
        for (struct hgx_ofi_keyent *e = t->buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = buckets[e->key % n];
            buckets[e->key % n] = e;
        }
    free(t->buckets);
    t->buckets = buckets;
    t->nbuckets = n;
    return true;
}

na_return_t hgx_ofi_keytab_add(struct hgx_ofi_keytab *t, uint64_t key, uint64_t base,
                               uint64_t len, unsigned int access)
{
    if (t->count >= t->nbuckets && !keytab_grow(t))
        return NA_NOMEM;
    struct hgx_ofi_keyent **slot = keytab_slot(t, key);
    if (*slot)
        return NA_INVALID_ARG;
    struct hgx_ofi_keyent *e = malloc(sizeof(*e));
    if (!e)
        return NA_NOMEM;
    *e = (struct hgx_ofi_keyent){.next = NULL,
                                 .key = key,
                                 .base = base,
                                 .len = len,
                                 .access = access,
                                 .last_ok_ns = 0,
                                 .lease_until_ns = 0};
    *slot = e;
    t->count++;
    return NA_SUCCESS;
}

uint64_t hgx_ofi_keytab_remove(struct hgx_ofi_keytab *t, uint64_t key)
{
    uint64_t until = 0;
    if (t->nbuckets == 0)
        return 0;
    struct hgx_ofi_keyent **slot = keytab_slot(t, key);
    struct hgx_ofi_keyent *e = *slot;
    if (e) {
        until = e->lease_until_ns;
        *slot = e->next;
        free(e);
        t->count--;
    }
    return until;
}

na_return_t hgx_ofi_keytab_check(const struct hgx_ofi_keytab *t, uint64_t key,
                                 uint64_t addr, uint64_t len, unsigned int access)
{
    const struct hgx_ofi_keyent *e = t->nbuckets ? *keytab_slot(t, key) : NULL;

    if (!e)
        return NA_ACCESS;
    /* addr - base cannot wrap once addr >= base; the length is compared
     * with what remains, so nothing overflows. */
    if (len == 0 || addr < e->base || addr - e->base > e->len ||
        len > e->len - (addr - e->base))
        return NA_INVALID_ARG;
    if ((access & e->access) != access)
        return NA_PERMISSION;
    return NA_SUCCESS;
}

uint32_t hgx_ofi_keytab_lease(struct hgx_ofi_keytab *t, const uint64_t *keys, size_t n,
                              uint64_t now_ns)
{
    bool repeated = true;
    for (size_t i = 0; i < n; i++) {
        const struct hgx_ofi_keyent *e = *keytab_slot(t, keys[i]);
        repeated = repeated && e->last_ok_ns != 0 &&
                   now_ns - e->last_ok_ns < HGX_OFI_LEASE_REPEAT_NS;
    }
    for (size_t i = 0; i < n; i++) {
        struct hgx_ofi_keyent *e = *keytab_slot(t, keys[i]);
        e->last_ok_ns = now_ns;
        if (repeated && e->lease_until_ns < now_ns + HGX_OFI_LEASE_NS)
            e->lease_until_ns = now_ns + HGX_OFI_LEASE_NS;
    }
    return repeated ? HGX_OFI_LEASE_NS / 1000u : 0;
}

void hgx_ofi_lease_wait(uint64_t until_ns)
{
    uint64_t now;
    while ((now = hgx_clock_now_ns()) < until_ns) {
        struct timespec ts = hgx_clock_timespec(until_ns - now);
        nanosleep(&ts, NULL);
    }
}

/* ---------------------------------------------------------------------------
 * Origin's leases
 * ------------------------------------------------------------------------- */

void hgx_ofi_leases_add(struct hgx_ofi_leases *c, const unsigned char *peer,
                        size_t peer_len, const struct hgx_ofi_range *r,
                        unsigned int access, uint64_t until_ns)
{
    struct hgx_ofi_lease *l = &c->l[c->next];

    if (peer_len > sizeof(l->peer))
        return; /* no lease: every transfer is checked */
    memcpy(l->peer, peer, peer_len);
    l->peer_len = peer_len;
    l->key = r->key;
    l->addr = r->addr;
    l->len = r->len;
    l->until_ns = until_ns;
    l->access = access;
    c->next = (c->next + 1) % HGX_OFI_LEASES;
}

bool hgx_ofi_leases_cover(const struct hgx_ofi_leases *c, const unsigned char *peer,
                          size_t peer_len, const struct hgx_ofi_range *r,
                          unsigned int access, uint64_t now_ns)
{
    for (size_t i = 0; i < HGX_OFI_LEASES; i++) {
        const struct hgx_ofi_lease *l = &c->l[i];
        /* Inside [addr, addr + len) without overflow, as keytab_check. */
        if (now_ns < l->until_ns && l->key == r->key && (l->access & access) == access &&
            r->len > 0 && r->addr >= l->addr && r->addr - l->addr <= l->len &&
            r->len <= l->len - (r->addr - l->addr) && l->peer_len == peer_len &&
            memcmp(l->peer, peer, peer_len) == 0)
            return true;
    }
    return false;
}

/* ---------------------------------------------------------------------------
 * Messages (little-endian):
 *   0 magic u8, 1 version u8, 2 type u8, 3 access u8, 4 range count u16,
 *   6 reserved u16 (0), 8 status u32, 12 lease in us u32 (ANSWER; 0 in a
 *   CHECK), 16 cookie u64;
 *   CHECK then: the sender's address header, and key u64, addr u64, len u64
 *   per range.
 * ------------------------------------------------------------------------- */

#define CTRL_MAGIC 0xc5
#define CTRL_VERSION 2 /* 2: leases */

static void ctrl_header(unsigned char *buf, enum hgx_ofi_ctrl_type type,
                        unsigned int access, size_t nranges, uint32_t status,
                        uint32_t lease_us, uint64_t cookie)
{
    buf[0] = CTRL_MAGIC;
    buf[1] = CTRL_VERSION;
    buf[2] = (unsigned char)type;
    buf[3] = (unsigned char)access;
    hgx_put_u16(buf + 4, (uint16_t)nranges);
    hgx_put_u16(buf + 6, 0);
    hgx_put_u32(buf + 8, status);
    hgx_put_u32(buf + 12, lease_us);
    hgx_put_u64(buf + 16, cookie);
}

size_t hgx_ofi_check_encode(unsigned char *buf, uint64_t cookie, unsigned int access,
                            const unsigned char *sender, size_t sender_len,
                            const struct hgx_ofi_range *ranges, size_t nranges)
{
    unsigned char *p = buf + HGX_OFI_CTRL_HDR_SIZE;

    ctrl_header(buf, HGX_OFI_CTRL_CHECK, access, nranges, 0, 0, cookie);
    memcpy(p, sender, sender_len);
    p += sender_len;
    for (size_t i = 0; i < nranges; i++, p += HGX_OFI_CHECK_RANGE_SIZE) {
        hgx_put_u64(p, ranges[i].key);
        hgx_put_u64(p + 8, ranges[i].addr);
        hgx_put_u64(p + 16, ranges[i].len);
    }
    return (size_t)(p - buf);
}

size_t hgx_ofi_answer_encode(unsigned char *buf, uint64_t cookie, na_return_t status,
                             uint32_t lease_us)
{
    ctrl_header(buf, HGX_OFI_CTRL_ANSWER, 0, 0, (uint32_t)status, lease_us, cookie);
    return HGX_OFI_CTRL_HDR_SIZE;
}

static bool answer_status_valid(uint32_t status)
{
    return status == NA_SUCCESS || status == NA_ACCESS || status == NA_INVALID_ARG ||
           status == NA_PERMISSION;
}

bool hgx_ofi_ctrl_decode(const unsigned char *buf, size_t len, size_t sender_len,
                         struct hgx_ofi_ctrl *msg)
{
    if (len < HGX_OFI_CTRL_HDR_SIZE || buf[0] != CTRL_MAGIC || buf[1] != CTRL_VERSION ||
        hgx_get_u16(buf + 6) != 0)
        return false;
    msg->type = (enum hgx_ofi_ctrl_type)buf[2];
    msg->access = buf[3];
    msg->nranges = hgx_get_u16(buf + 4);
    msg->status = (na_return_t)hgx_get_u32(buf + 8);
    msg->lease_us = hgx_get_u32(buf + 12);
    msg->cookie = hgx_get_u64(buf + 16);
    msg->sender = buf + HGX_OFI_CTRL_HDR_SIZE;
    msg->ranges = msg->sender + sender_len;
    if (msg->type == HGX_OFI_CTRL_ANSWER)
        return len == HGX_OFI_CTRL_HDR_SIZE && msg->access == 0 && msg->nranges == 0 &&
               answer_status_valid(hgx_get_u32(buf + 8)) &&
               (msg->lease_us == 0 ||
                (msg->status == NA_SUCCESS && msg->lease_us <= HGX_OFI_LEASE_MAX_US));
    return msg->type == HGX_OFI_CTRL_CHECK && msg->lease_us == 0 && msg->access != 0 &&
           (msg->access & ~(HGX_OFI_CHECK_READ | HGX_OFI_CHECK_WRITE)) == 0 &&
           msg->status == NA_SUCCESS && msg->nranges > 0 &&
           msg->nranges <= HGX_OFI_CHECK_MAX_RANGES &&
           len == HGX_OFI_CTRL_HDR_SIZE + sender_len +
                      msg->nranges * HGX_OFI_CHECK_RANGE_SIZE;
}

void hgx_ofi_ctrl_range(const struct hgx_ofi_ctrl *msg, size_t i, struct hgx_ofi_range *r)
{
    const unsigned char *p = msg->ranges + i * HGX_OFI_CHECK_RANGE_SIZE;
    r->key = hgx_get_u64(p);
    r->addr = hgx_get_u64(p + 8);
    r->len = hgx_get_u64(p + 16);
}
