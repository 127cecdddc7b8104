/*
 * na_ofi_check.h -- the tables and wire format of the ofi plugin's RMA check
 * (private).
 *
 * Providers that do not check RMA at the target (shm: the initiator copies
 * with process_vm_readv/writev at the descriptor's address) get a check from
 * hgx instead: before moving data the origin sends CHECK naming each remote
 * range (key, address, length) and the access it wants; the target looks the
 * keys up among its own live registrations and answers OK (with a lease for
 * a region in repeated use) or the refusal code. This file holds what needs
 * no libfabric: the target's key table, the leases an origin holds and the
 * message encoding (the origin names its waiting ops with na_slots).
 * ofi_ctrl.c sends and receives the messages. Every function here but
 * hgx_ofi_lease_wait is called under the owner's lock; none takes one.
 */
#ifndef NA_OFI_CHECK_H
#define NA_OFI_CHECK_H

#include "na_types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One remote range of a put/get. */
struct hgx_ofi_range {
    uint64_t key, addr, len;
};

/* Access a CHECK asks for. */
#define HGX_OFI_CHECK_READ 1u
#define HGX_OFI_CHECK_WRITE 2u

/* Registrations of this process, by key: what a CHECK is judged against.
 *
 * Lease: a region an OK answer named again within HGX_OFI_LEASE_REPEAT_NS of
 * the previous OK is in repeated use (a loop of transfers on one handle).
 * Such an answer grants a lease of HGX_OFI_LEASE_NS: during it the origin may
 * move data in that range without asking again, and removing the key waits
 * for the lease to end, so that once NA_Mem_deregister returns no transfer
 * can start on the region (hgx_ofi_keytab_remove). A region used once gets no
 * lease, and its deregistration never waits. */
#define HGX_OFI_LEASE_NS 10000000u
#define HGX_OFI_LEASE_REPEAT_NS 50000000u
#define HGX_OFI_LEASE_MAX_US 1000000u /* longest lease an origin accepts */

struct hgx_ofi_keyent;
struct hgx_ofi_keytab {
    struct hgx_ofi_keyent **buckets;
    size_t nbuckets, count;
};

void hgx_ofi_keytab_init(struct hgx_ofi_keytab *t);
void hgx_ofi_keytab_destroy(struct hgx_ofi_keytab *t);
/* Record [base, base + len) with HGX_OFI_CHECK_* access under key. NA_NOMEM,
 * or NA_INVALID_ARG if the key is taken (keys are unique per domain). */
na_return_t hgx_ofi_keytab_add(struct hgx_ofi_keytab *t, uint64_t key, uint64_t base,
                               uint64_t len, unsigned int access);
/* Forget key; return when its lease ends (0 without one): the caller must
 * not let the region go before then (hgx_ofi_lease_wait). */
uint64_t hgx_ofi_keytab_remove(struct hgx_ofi_keytab *t, uint64_t key);
/* Judge one remote range: NA_ACCESS (no such key), NA_INVALID_ARG (not
 * inside the registration, or empty), NA_PERMISSION (access not granted) or
 * NA_SUCCESS; the codes of the UCX plugin and mpi_emul. */
na_return_t hgx_ofi_keytab_check(const struct hgx_ofi_keytab *t, uint64_t key,
                                 uint64_t addr, uint64_t len, unsigned int access);
/* After every range of a CHECK passed at now_ns: note the OK on each key and
 * return the lease granted to all of them in microseconds (0: none). */
uint32_t hgx_ofi_keytab_lease(struct hgx_ofi_keytab *t, const uint64_t *keys, size_t n,
                              uint64_t now_ns);
/* Sleep until until_ns (a time hgx_ofi_keytab_remove returned); without the
 * owner's lock, which answers to CHECKs need meanwhile. */
void hgx_ofi_lease_wait(uint64_t until_ns);

/* Origin: leases held, by target address and range (a few; the oldest goes
 * first). */
#define HGX_OFI_LEASES 16
#define HGX_OFI_LEASE_PEER_MAX 64 /* bytes of a target's raw address */
struct hgx_ofi_lease {
    unsigned char peer[HGX_OFI_LEASE_PEER_MAX];
    size_t peer_len;
    uint64_t key, addr, len, until_ns;
    unsigned int access;
};
struct hgx_ofi_leases {
    struct hgx_ofi_lease l[HGX_OFI_LEASES];
    size_t next; /* slot the next lease takes */
};
/* Record that the target at raw address peer (peer_len bytes, at most
 * HGX_OFI_LEASE_PEER_MAX) granted access to r until until_ns. */
void hgx_ofi_leases_add(struct hgx_ofi_leases *c, const unsigned char *peer,
                        size_t peer_len, const struct hgx_ofi_range *r,
                        unsigned int access, uint64_t until_ns);
/* Whether a lease of that target live at now_ns covers r with access. */
bool hgx_ofi_leases_cover(const struct hgx_ofi_leases *c, const unsigned char *peer,
                          size_t peer_len, const struct hgx_ofi_range *r,
                          unsigned int access, uint64_t now_ns);

/* Messages. A CHECK is the control header, the sender's address header
 * (sender_len bytes, the one its unexpected messages carry) and up to
 * HGX_OFI_CHECK_MAX_RANGES ranges; an ANSWER is the control header alone. */
#define HGX_OFI_CTRL_HDR_SIZE 24
#define HGX_OFI_CHECK_RANGE_SIZE 24
#define HGX_OFI_CHECK_MAX_RANGES 64

enum hgx_ofi_ctrl_type { HGX_OFI_CTRL_CHECK = 1, HGX_OFI_CTRL_ANSWER = 2 };

struct hgx_ofi_ctrl {
    enum hgx_ofi_ctrl_type type;
    unsigned int access; /* CHECK */
    na_return_t status;  /* ANSWER */
    uint32_t lease_us;   /* ANSWER: lease granted (OK only), 0 for none */
    uint64_t cookie;
    const unsigned char *sender; /* CHECK: the sender's address header */
    size_t nranges;
    const unsigned char *ranges; /* read with hgx_ofi_ctrl_range */
};

/* Largest message for a sender header of sender_len bytes. */
static inline size_t hgx_ofi_ctrl_max_size(size_t sender_len)
{
    return HGX_OFI_CTRL_HDR_SIZE + sender_len +
           HGX_OFI_CHECK_MAX_RANGES * HGX_OFI_CHECK_RANGE_SIZE;
}

/* Encode into buf (hgx_ofi_ctrl_max_size bytes); return the length. */
size_t hgx_ofi_check_encode(unsigned char *buf, uint64_t cookie, unsigned int access,
                            const unsigned char *sender, size_t sender_len,
                            const struct hgx_ofi_range *ranges, size_t nranges);
size_t hgx_ofi_answer_encode(unsigned char *buf, uint64_t cookie, na_return_t status,
                             uint32_t lease_us);
/* Untrusted bytes: false for anything malformed (wrong magic, version, type,
 * access or length, a CHECK without ranges, an ANSWER status outside the
 * codes a target sends). */
bool hgx_ofi_ctrl_decode(const unsigned char *buf, size_t len, size_t sender_len,
                         struct hgx_ofi_ctrl *msg);
void hgx_ofi_ctrl_range(const struct hgx_ofi_ctrl *msg, size_t i,
                        struct hgx_ofi_range *r);

#endif /* NA_OFI_CHECK_H */
