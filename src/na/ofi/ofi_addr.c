/*
 * ofi_addr.c -- raw addresses, the peer table (raw address to address vector
 * entry) and the NA address calls.
 */
#include "ofi_int.h"
#include "na_ipaddr.h"

/* A character of a provider's string address: ASCII letters and digits (in
 * any locale) and ":._-/". Checked for each byte of every unexpected
 * message's sender address, so without a call per byte. */
static inline bool ofi_name_char(unsigned char c)
{
    unsigned char lower = c | 0x20;
    return (c >= '0' && c <= '9') || (lower >= 'a' && lower <= 'z') || c == ':' ||
           c == '.' || c == '_' || c == '-' || c == '/';
}

/* Check untrusted raw address bytes and put them in canonical form, so that
 * equal peers have equal bytes. */
bool ofi_raw_addr_normalize(const struct ofi_class *cls, unsigned char *raw, size_t *len)
{
    const char *prefix = cls->proto->str_prefix;

    if (prefix) {
        size_t n = strnlen((const char *)raw, *len);
        size_t plen = strlen(prefix);
        if (n <= plen || memcmp(raw, prefix, plen) != 0)
            return false;
        /* Provider names are made of these; anything else (a '#' fragment,
         * spaces, controls) is a malformed address, not another peer. */
        for (size_t i = plen; i < n; i++)
            if (!ofi_name_char(raw[i]))
                return false;
        *len = n; /* drop the NUL libfabric may count */
        return true;
    }

    sa_family_t family;
    if (*len < sizeof(family))
        return false;
    memcpy(&family, raw, sizeof(family));
    if (family == AF_INET && *len == sizeof(struct sockaddr_in)) {
        struct sockaddr_in sin;
        memcpy(&sin, raw, sizeof(sin));
        if (sin.sin_port == 0)
            return false;
        memset(sin.sin_zero, 0, sizeof(sin.sin_zero));
        memcpy(raw, &sin, sizeof(sin));
        return true;
    }
    if (family == AF_INET6 && *len == sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 sin6;
        memcpy(&sin6, raw, sizeof(sin6));
        if (sin6.sin6_port == 0)
            return false;
        sin6.sin6_flowinfo = 0;
        memcpy(raw, &sin6, sizeof(sin6));
        return true;
    }
    return false;
}

/* "tcp://1.2.3.4:5", "tcp://[::1]:5" or "shm://name" into buf (NUL included). */
size_t ofi_raw_addr_format(const struct ofi_class *cls, const unsigned char *raw,
                           size_t len, char *buf, size_t buf_size)
{
    const char *proto = cls->proto->name;

    if (cls->proto->str_prefix) {
        size_t plen = strlen(cls->proto->str_prefix);
        return (size_t)snprintf(buf, buf_size, "ofi+%s://%.*s", proto, (int)(len - plen),
                                (const char *)raw + plen) +
               1;
    }
    struct sockaddr_storage ss;
    char hp[NA_IPADDR_STR_MAX];
    memset(&ss, 0, sizeof(ss));
    memcpy(&ss, raw, len < sizeof(ss) ? len : sizeof(ss));
    na_ipaddr_string((const struct sockaddr *)&ss, hp, sizeof(hp));
    return (size_t)snprintf(buf, buf_size, "ofi+%s://%s", proto, hp) + 1;
}

/* "host:port" or "[v6]:port" of a peer into its raw address, of the
 * family this class is bound to. */
static na_return_t ofi_parse_ip_addr(const struct ofi_class *cls, const char *hp,
                                     unsigned char *raw, size_t *len)
{
    sa_family_t family;
    memcpy(&family, cls->self_raw, sizeof(family));
    struct sockaddr_storage ss;
    socklen_t sslen;
    na_return_t ret = na_ipaddr_parse(hp, family, &ss, &sslen);
    if (ret != NA_SUCCESS)
        return ret;
    memcpy(raw, &ss, sslen);
    *len = sslen;
    return ofi_raw_addr_normalize(cls, raw, len) ? NA_SUCCESS : NA_INVALID_ARG;
}

static na_return_t ofi_av_insert_locked(struct ofi_class *cls, struct ofi_peer *peer)
{
    char addr[OFI_RAW_ADDR_MAX + 1]; /* string addresses need their NUL */
    fi_addr_t fi_addr = FI_ADDR_NOTAVAIL;

    memcpy(addr, peer->raw, peer->len);
    addr[peer->len] = '\0';
    int rc = fi_av_insert(cls->av, addr, 1, &fi_addr, 0, NULL);
    if (rc != 1) {
        char str[128];
        ofi_raw_addr_format(cls, peer->raw, peer->len, str, sizeof(str));
        HGX_LOG_ERROR(OFI, "fi_av_insert(%s) failed: %s", str,
                      rc < 0 ? fi_strerror(-rc) : "address rejected");
        return rc < 0 ? ofi_na_error(-rc) : NA_ADDRNOTAVAIL;
    }
    atomic_store(&peer->fi_addr, fi_addr);
    return NA_SUCCESS;
}

/* Find or create the peer of a normalized raw address, referenced. */
na_return_t ofi_peer_get(struct ofi_class *cls, const unsigned char *raw, size_t len,
                         struct ofi_peer **peer_p)
{
    na_return_t ret = NA_SUCCESS;

    ofi_mutex_lock(cls, &cls->lock);
    struct ofi_peer *peer = na_peer_map_find(&cls->peers, raw, len);
    if (!peer) {
        peer = calloc(1, sizeof(*peer) + len);
        HGX_CHECK(OFI, !peer, out, ret, NA_NOMEM, "out of memory for a peer");
        peer->len = len;
        memcpy(peer->raw, raw, len);
        na_addr_init_owned(cls->na_class, &peer->src.head);
        peer->src.peer = peer;
        atomic_init(&peer->fi_addr, FI_ADDR_NOTAVAIL);
        ret = ofi_av_insert_locked(cls, peer);
        if (ret != NA_SUCCESS) {
            free(peer);
            goto out;
        }
        ret = na_peer_map_insert(&cls->peers, peer->raw, len, peer);
        if (ret != NA_SUCCESS) {
            HGX_LOG_ERROR(OFI, "out of memory for a peer");
            ofi_av_remove_locked(cls, peer);
            free(peer);
            goto out;
        }
    }
    peer->removed = false;
    hgx_int_add(&peer->refs, 1, cls->single);
    *peer_p = peer;
out:
    ofi_mutex_unlock(cls, &cls->lock);
    return ret;
}

void ofi_av_remove_locked(struct ofi_class *cls, struct ofi_peer *peer)
{
    fi_addr_t fi_addr = atomic_exchange(&peer->fi_addr, FI_ADDR_NOTAVAIL);
    if (fi_addr == FI_ADDR_NOTAVAIL)
        return;
    int rc = fi_av_remove(cls->av, &fi_addr, 1, 0);
    if (rc != 0)
        HGX_LOG_ERROR(OFI, "fi_av_remove failed: %s", fi_strerror(-rc));
}

void ofi_peer_ref(const struct ofi_class *cls, struct ofi_peer *peer)
{
    hgx_int_add(&peer->refs, 1, cls->single);
}

/* The sender of an unexpected message, from its header, referenced in
 * *peer_p (NULL if it could not be added); false if the header is malformed.
 * Most messages come from the sender of the one before: header bytes equal
 * to its bytes as sent normalize to the same address, so they skip the
 * checks and the table. */
bool ofi_peer_of_hdr(struct ofi_class *cls, const unsigned char *buf, size_t len,
                     struct ofi_peer **peer_p)
{
    size_t sent_len;
    const unsigned char *sent = ofi_hdr_raw(buf, len, &sent_len);
    unsigned char raw[OFI_RAW_ADDR_MAX];
    size_t raw_len;

    *peer_p = NULL;
    if (!sent)
        return false;
    ofi_mutex_lock(cls, &cls->lock);
    struct ofi_peer *peer = cls->last_sender;
    if (peer && cls->last_sender_len == sent_len &&
        memcmp(cls->last_sender_raw, sent, sent_len) == 0) {
        peer->removed = false; /* as ofi_peer_get revives it */
        hgx_int_add(&peer->refs, 1, cls->single);
        ofi_mutex_unlock(cls, &cls->lock);
        *peer_p = peer;
        return true;
    }
    ofi_mutex_unlock(cls, &cls->lock);
    if (!ofi_hdr_parse(cls, buf, len, raw, &raw_len))
        return false;
    if (ofi_peer_get(cls, raw, raw_len, &peer) != NA_SUCCESS)
        return true;
    ofi_mutex_lock(cls, &cls->lock);
    cls->last_sender = peer; /* referenced: alive while we store it */
    cls->last_sender_len = sent_len;
    memcpy(cls->last_sender_raw, sent, sent_len);
    ofi_mutex_unlock(cls, &cls->lock);
    *peer_p = peer;
    return true;
}

/* Take a removed peer that nothing uses out of the class: no reference, and
 * no user of its source address; true when the caller must free it (after
 * unlocking). Only ofi_peer_get and ofi_peer_of_hdr (under the lock) revive a
 * peer, and users release its source under the lock, so the checks hold. */
static bool ofi_peer_unlink_unused_locked(struct ofi_class *cls, struct ofi_peer *peer)
{
    if (atomic_load(&peer->refs) != 0 || !peer->removed ||
        atomic_load(&peer->src.head.refcount) != 1)
        return false;
    ofi_av_remove_locked(cls, peer); /* in case an op re-inserted it */
    struct ofi_peer *gone = na_peer_map_remove(&cls->peers, peer->raw, peer->len);
    HGX_ASSERT(gone == peer);
    (void)gone;
    if (cls->last_sender == peer)
        cls->last_sender = NULL;
    if (hgx_log_enabled(HGX_SUBSYS_OFI, HGX_LOG_DEBUG)) {
        char str[128];
        ofi_raw_addr_format(cls, peer->raw, peer->len, str, sizeof(str));
        HGX_LOG_DEBUG(OFI, "peer %s removed and unused: freed", str);
    }
    return true;
}

/* Unreferenced peers stay cached for the next message, unless removed. */
void ofi_peer_put(struct ofi_class *cls, struct ofi_peer *peer)
{
    int refs = hgx_int_add(&peer->refs, -1, cls->single);
    HGX_ASSERT(refs > 0);
    if (refs != 1)
        return;
    ofi_mutex_lock(cls, &cls->lock);
    bool drop = ofi_peer_unlink_unused_locked(cls, peer);
    ofi_mutex_unlock(cls, &cls->lock);
    if (drop)
        free(peer);
}

/* The source address of a referenced peer's message; the caller's peer
 * reference is then dropped (the address keeps the peer). */
na_addr_t *ofi_peer_source(struct ofi_class *cls, struct ofi_peer *peer)
{
    na_addr_t *src = na_addr_ref(&peer->src.head);
    ofi_peer_put(cls, peer);
    return src;
}

/* A user lets a peer's source address go. The last user's release takes the
 * class lock, so that it and the peer's last put agree on who frees it; the
 * others (HG's cache keeps one user) only decrement. */
void ofi_addr_owned_release(na_class_t *na_class, na_addr_t *addr)
{
    struct ofi_class *cls = ofi_class(na_class);
    struct ofi_peer *peer = ofi_addr_peer(addr);
    bool drop = false;

    int seen = atomic_load(&addr->refcount);
    while (seen > 2)
        if (atomic_compare_exchange_weak(&addr->refcount, &seen, seen - 1))
            return;
    ofi_mutex_lock(cls, &cls->lock);
    int refs = hgx_int_add(&addr->refcount, -1, cls->single);
    HGX_ASSERT(refs > 1);
    if (refs == 2) {
        atomic_fetch_sub(&na_class->n_addrs, 1); /* its users are gone (na_addr_ref) */
        drop = ofi_peer_unlink_unused_locked(cls, peer);
    }
    ofi_mutex_unlock(cls, &cls->lock);
    if (drop)
        free(peer);
}

/* Address vector entry of a peer, re-inserted after NA_Addr_set_remove or a
 * cancel escalation dropped it. */
na_return_t ofi_peer_fi_addr_locked(struct ofi_class *cls, struct ofi_peer *peer,
                                    fi_addr_t *fi_addr)
{
    na_return_t ret = NA_SUCCESS;

    if (atomic_load(&peer->fi_addr) == FI_ADDR_NOTAVAIL)
        ret = ofi_av_insert_locked(cls, peer);
    *fi_addr = atomic_load(&peer->fi_addr);
    return ret;
}

na_return_t ofi_peer_fi_addr(struct ofi_class *cls, struct ofi_peer *peer,
                             fi_addr_t *fi_addr)
{
    *fi_addr = atomic_load(&peer->fi_addr);
    if (*fi_addr != FI_ADDR_NOTAVAIL)
        return NA_SUCCESS;
    ofi_mutex_lock(cls, &cls->lock);
    na_return_t ret = ofi_peer_fi_addr_locked(cls, peer, fi_addr);
    ofi_mutex_unlock(cls, &cls->lock);
    return ret;
}

na_return_t ofi_addr_new(na_class_t *na_class, struct ofi_peer *peer, na_addr_t **addr_p)
{
    struct ofi_addr *addr = malloc(sizeof(*addr));
    if (!addr) {
        HGX_LOG_ERROR(OFI, "out of memory for an address");
        ofi_peer_put(ofi_class(na_class), peer);
        return NA_NOMEM;
    }
    na_addr_init(na_class, &addr->head);
    addr->peer = peer;
    *addr_p = &addr->head;
    return NA_SUCCESS;
}

/* Address of normalized raw bytes, with refcount 1. */
static na_return_t ofi_addr_from_raw(na_class_t *na_class, const unsigned char *raw,
                                     size_t len, na_addr_t **addr_p)
{
    struct ofi_peer *peer;
    na_return_t ret = ofi_peer_get(ofi_class(na_class), raw, len, &peer);
    if (ret != NA_SUCCESS)
        return ret;
    return ofi_addr_new(na_class, peer, addr_p);
}

na_return_t ofi_addr_lookup(na_class_t *na_class, const char *name, na_addr_t **addr_p)
{
    struct ofi_class *cls = ofi_class(na_class);
    unsigned char raw[OFI_RAW_ADDR_MAX];
    size_t len;

    if (strncmp(name, "ofi+", 4) == 0)
        name += 4;
    const char *sep = strstr(name, "://");
    if (!sep || sep == name || sep[3] == '\0') {
        HGX_LOG_ERROR(OFI, "malformed address \"%s\" (want %s://...)", name,
                      cls->proto->name);
        return NA_INVALID_ARG;
    }
    if (ofi_proto_find(name, (size_t)(sep - name)) != cls->proto) {
        HGX_LOG_ERROR(OFI, "address \"%s\" is not for protocol %s", name,
                      cls->proto->name);
        return NA_PROTONOSUPPORT;
    }
    const char *rest = sep + 3;
    if (cls->proto->str_prefix) {
        size_t plen = strlen(cls->proto->str_prefix);
        len = plen + strlen(rest);
        if (len > OFI_RAW_ADDR_MAX) {
            HGX_LOG_ERROR(OFI, "address \"%s\" is too long", name);
            return NA_INVALID_ARG;
        }
        memcpy(raw, cls->proto->str_prefix, plen);
        memcpy(raw + plen, rest, len - plen);
        if (!ofi_raw_addr_normalize(cls, raw, &len)) {
            HGX_LOG_ERROR(OFI, "malformed address \"%s\"", name);
            return NA_INVALID_ARG;
        }
    } else {
        na_return_t ret = ofi_parse_ip_addr(cls, rest, raw, &len);
        if (ret != NA_SUCCESS) {
            if (ret == NA_INVALID_ARG)
                HGX_LOG_ERROR(OFI, "malformed address \"%s\" (want %s://HOST:PORT)", name,
                              cls->proto->name);
            return ret;
        }
    }
    return ofi_addr_from_raw(na_class, raw, len, addr_p);
}

void ofi_addr_destroy(na_class_t *na_class, na_addr_t *addr)
{
    ofi_peer_put(ofi_class(na_class), ofi_addr_peer(addr));
    free(addr);
}

/* Drop the address vector entry (and rxm's connection); a later use
 * re-inserts it, and the cache entry goes once nothing references it.
 * While a bounced get may still be served the drop waits for it (see
 * OFI_CANCEL_FORCE_GETS). */
na_return_t ofi_addr_set_remove(na_class_t *na_class, na_addr_t *addr)
{
    struct ofi_class *cls = ofi_class(na_class);
    struct ofi_peer *peer = ofi_addr_peer(addr);

    ofi_mutex_lock(cls, &cls->lock);
    if (atomic_load(&peer->bounces) == 0)
        ofi_av_remove_locked(cls, peer);
    peer->removed = true;
    ofi_mutex_unlock(cls, &cls->lock);
    return NA_SUCCESS;
}

na_return_t ofi_addr_self(na_class_t *na_class, na_addr_t **addr_p)
{
    struct ofi_class *cls = ofi_class(na_class);
    return ofi_addr_from_raw(na_class, cls->self_raw, cls->self_len, addr_p);
}

bool ofi_addr_cmp(na_class_t *na_class, na_addr_t *addr1, na_addr_t *addr2)
{
    struct ofi_peer *p1 = ofi_addr_peer(addr1), *p2 = ofi_addr_peer(addr2);
    (void)na_class;
    return p1 == p2 || (p1->len == p2->len && memcmp(p1->raw, p2->raw, p1->len) == 0);
}

bool ofi_addr_is_self(na_class_t *na_class, na_addr_t *addr)
{
    struct ofi_class *cls = ofi_class(na_class);
    struct ofi_peer *peer = ofi_addr_peer(addr);
    return peer->len == cls->self_len && memcmp(peer->raw, cls->self_raw, peer->len) == 0;
}

na_return_t ofi_addr_to_string(na_class_t *na_class, char *buf, size_t *buf_size,
                               na_addr_t *addr)
{
    struct ofi_peer *peer = ofi_addr_peer(addr);
    char str[128];
    size_t need =
        ofi_raw_addr_format(ofi_class(na_class), peer->raw, peer->len, str, sizeof(str));

    if (buf && *buf_size >= need)
        memcpy(buf, str, need);
    bool fits = !buf || *buf_size >= need;
    *buf_size = need;
    return fits ? NA_SUCCESS : NA_OVERFLOW;
}

/* Serialized address: u16 length (little endian) then the raw bytes. */
size_t ofi_addr_get_serialize_size(na_class_t *na_class, na_addr_t *addr)
{
    (void)na_class;
    return 2 + ofi_addr_peer(addr)->len;
}

na_return_t ofi_addr_serialize(na_class_t *na_class, void *buf, size_t buf_size,
                               na_addr_t *addr)
{
    struct ofi_peer *peer = ofi_addr_peer(addr);
    unsigned char *p = buf;

    (void)na_class;
    if (buf_size < 2 + peer->len) {
        HGX_LOG_ERROR(OFI, "buffer of %zu bytes too small for an address of %zu",
                      buf_size, 2 + peer->len);
        return NA_OVERFLOW;
    }
    hgx_put_u16(p, (uint16_t)peer->len);
    memcpy(p + 2, peer->raw, peer->len);
    return NA_SUCCESS;
}

na_return_t ofi_addr_deserialize(na_class_t *na_class, na_addr_t **addr_p,
                                 const void *buf, size_t buf_size)
{
    const unsigned char *p = buf;
    unsigned char raw[OFI_RAW_ADDR_MAX];

    if (buf_size < 2) {
        HGX_LOG_ERROR(OFI, "serialized address too short (%zu bytes)", buf_size);
        return NA_PROTOCOL_ERROR;
    }
    size_t len = hgx_get_u16(p);
    if (len == 0 || len > OFI_RAW_ADDR_MAX || buf_size < 2 + len) {
        HGX_LOG_ERROR(OFI, "serialized address has a bad length (%zu in %zu bytes)", len,
                      buf_size);
        return NA_PROTOCOL_ERROR;
    }
    memcpy(raw, p + 2, len);
    if (!ofi_raw_addr_normalize(ofi_class(na_class), raw, &len)) {
        HGX_LOG_ERROR(OFI, "serialized address is not a valid %s address",
                      ofi_class(na_class)->proto->name);
        return NA_PROTOCOL_ERROR;
    }
    return ofi_addr_from_raw(na_class, raw, len, addr_p);
}
