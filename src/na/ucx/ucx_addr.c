/*
 * ucx_addr.c -- NA addresses of UCX peers: lookup (recording the peer
 * only), comparison, strings and the serialized form.
 */
#include "ucx_int.h"
#include "na_netif.h"
#include "hgx_wire.h"

#include <stdlib.h>
#include <string.h>

na_return_t ucx_addr_new(na_class_t *na_class, struct ucx_peer *p, na_addr_t **addr_p)
{
    (void)na_class;
    *addr_p = na_addr_ref(&p->addr);
    return NA_SUCCESS;
}

/* "proto://HOST:PORT" or "proto://[IPV6]:PORT" -> the socket address, of
 * the class's own family (ucx_class.family). */
static na_return_t ucx_parse(struct ucx_class *cls, const char *name,
                             struct sockaddr_storage *sa, socklen_t *len)
{
    const char *sep = strstr(name, "://");
    if (!sep) {
        HGX_LOG_ERROR(UCX, "malformed address \"ucx+%s\" (want ucx+%s://HOST:PORT)", name,
                      cls->proto);
        return NA_INVALID_ARG;
    }
    if ((size_t)(sep - name) != strlen(cls->proto) ||
        strncmp(name, cls->proto, (size_t)(sep - name)))
        return NA_PROTONOSUPPORT;
    na_return_t ret = na_ipaddr_parse(sep + 3, cls->family, sa, len);
    if (ret == NA_INVALID_ARG)
        HGX_LOG_ERROR(UCX,
                      "malformed address \"ucx+%s\" (want ucx+%s://HOST:PORT or "
                      "ucx+%s://[IPV6]:PORT)",
                      name, cls->proto, cls->proto);
    else if (ret == NA_ADDRNOTAVAIL)
        HGX_LOG_ERROR(UCX,
                      "cannot look up \"ucx+%s\": a ucx+%s class looks up peers of its "
                      "own address family only (%s here; a class that names an %s "
                      "address or asks for addr_format %s is %s)",
                      name, cls->proto, cls->family == AF_INET6 ? "IPv6" : "IPv4",
                      cls->family == AF_INET6 ? "IPv4" : "IPv6",
                      cls->family == AF_INET6 ? "NA_ADDR_IPV4" : "NA_ADDR_IPV6",
                      cls->family == AF_INET6 ? "IPv4" : "IPv6");
    return ret;
}

/* A peer to connect to, recorded only: its first operation connects, so a
 * lookup never waits for the network, and an unreachable peer fails that
 * operation (NA_HOSTUNREACH), as Mercury's UCX plugin does. */
static na_return_t ucx_peer_add_outgoing(struct ucx_class *cls,
                                         const struct sockaddr_storage *sa, socklen_t len,
                                         const char *str, uint32_t id,
                                         struct ucx_peer **peer_p)
{
    struct ucx_peer *p = ucx_peer_new(cls, id, str, true);
    if (!p)
        return NA_NOMEM;
    p->sa = *sa;
    p->sa_len = len;
    *peer_p = p;
    return NA_SUCCESS;
}

/* Name resolution (getaddrinfo may block) runs before the lock is taken. */
na_return_t ucx_addr_lookup(na_class_t *na_class, const char *name, na_addr_t **addr_p)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct sockaddr_storage sa;
    socklen_t len;
    char str[UCX_ADDR_STR_MAX];

    na_return_t ret = ucx_parse(cls, name, &sa, &len);
    if (ret != NA_SUCCESS)
        return ret;
    /* Its tcp is there for wire-up only: a remote peer would never answer. */
    if (strcmp(cls->proto, "shm") == 0 && !na_netif_is_local((struct sockaddr *)&sa)) {
        HGX_LOG_ERROR(UCX,
                      "%s is not on this host: ucx+shm reaches local peers only "
                      "(use ucx+tcp or ucx+all)",
                      name);
        return NA_HOSTUNREACH;
    }
    ucx_sockaddr_string((const struct sockaddr *)&sa, cls->proto, str, sizeof(str));
    uint32_t id = ucx_hash_id(strstr(str, "://") + 3);
    hgx_lock(&cls->lock);
    struct ucx_peer *p = id == cls->id ? cls->self : ucx_peer_find(cls, id);
    if (p || (ret = ucx_peer_add_outgoing(cls, &sa, len, str, id, &p)) == NA_SUCCESS)
        ret = ucx_addr_new(na_class, p, addr_p);
    hgx_unlock(&cls->lock);
    return ret;
}

/* Never reached: the peer holds a reference to its address until finalize. */
void ucx_addr_destroy(na_class_t *na_class, na_addr_t *addr)
{
    (void)na_class;
    (void)addr;
}

/* Forget the connection: an outgoing peer's ep is closed and its next
 * operation connects again; an accepted peer fails until its client
 * connects again. */
na_return_t ucx_addr_set_remove(na_class_t *na_class, na_addr_t *addr)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct ucx_peer *p = ucx_peer_of(addr);
    hgx_lock(&cls->lock);
    if (!p->self)
        ucx_peer_down(cls, p, p->outgoing);
    hgx_unlock(&cls->lock);
    return NA_SUCCESS;
}

na_return_t ucx_addr_self(na_class_t *na_class, na_addr_t **addr_p)
{
    return ucx_addr_new(na_class, ucx_cls(na_class)->self, addr_p);
}

bool ucx_addr_cmp(na_class_t *na_class, na_addr_t *addr1, na_addr_t *addr2)
{
    (void)na_class;
    return ucx_peer_of(addr1)->id == ucx_peer_of(addr2)->id;
}

bool ucx_addr_is_self(na_class_t *na_class, na_addr_t *addr)
{
    return ucx_peer_of(addr)->id == ucx_cls(na_class)->id;
}

na_return_t ucx_addr_to_string(na_class_t *na_class, char *buf, size_t *buf_size,
                               na_addr_t *addr)
{
    (void)na_class;
    const char *str = ucx_peer_of(addr)->str;
    if (strlen(str) + 1 > *buf_size)
        return NA_OVERFLOW;
    memcpy(buf, str, strlen(str) + 1);
    return NA_SUCCESS;
}

/* A peer's id: the same in its own class (the hash of its listener's address,
 * or the id a client draws) and in ours (the id we hash or it sent). */
na_return_t ucx_addr_key(na_class_t *na_class, na_addr_t *addr, char *buf, size_t size)
{
    (void)na_class;
    int len = snprintf(buf, size, "ucx-%08x", (unsigned int)ucx_peer_of(addr)->id);
    return len > 0 && (size_t)len < size ? NA_SUCCESS : NA_OVERFLOW;
}

/* Serialized address (little-endian, hgx_wire.h): magic u32, id u32, string
 * length u16, string. */
#define UCX_ADDR_HDR 10

size_t ucx_addr_get_serialize_size(na_class_t *na_class, na_addr_t *addr)
{
    (void)na_class;
    return UCX_ADDR_HDR + strlen(ucx_peer_of(addr)->str);
}

na_return_t ucx_addr_serialize(na_class_t *na_class, void *buf, size_t buf_size,
                               na_addr_t *addr)
{
    (void)na_class;
    (void)buf_size; /* checked by the core */
    struct ucx_peer *p = ucx_peer_of(addr);
    uint16_t len = (uint16_t)strlen(p->str);
    unsigned char *out = buf;
    hgx_put_u32(out, UCX_ADDR_MAGIC);
    hgx_put_u32(out + 4, p->id);
    hgx_put_u16(out + 8, len);
    memcpy(out + UCX_ADDR_HDR, p->str, len);
    return NA_SUCCESS;
}

na_return_t ucx_addr_deserialize(na_class_t *na_class, na_addr_t **addr_p,
                                 const void *buf, size_t buf_size)
{
    struct ucx_class *cls = ucx_cls(na_class);
    const unsigned char *in = buf;
    char str[UCX_ADDR_STR_MAX];

    if (buf_size < UCX_ADDR_HDR)
        return NA_PROTOCOL_ERROR;
    uint32_t magic = hgx_get_u32(in), id = hgx_get_u32(in + 4);
    uint16_t len = hgx_get_u16(in + 8);
    if (magic != UCX_ADDR_MAGIC || len >= sizeof(str) || len > buf_size - UCX_ADDR_HDR ||
        id > UCX_ID_MASK)
        return NA_PROTOCOL_ERROR;
    memcpy(str, in + UCX_ADDR_HDR, len);
    str[len] = '\0';
    if (memchr(str, '\0', len) || strncmp(str, "ucx+", 4) != 0)
        return NA_PROTOCOL_ERROR;

    /* A peer we know (e.g. an accepted client) is reused; else it is looked
     * up, which records it: its first operation connects. */
    hgx_lock(&cls->lock);
    struct ucx_peer *p = id == cls->id ? cls->self : ucx_peer_find(cls, id);
    na_return_t ret = p ? ucx_addr_new(na_class, p, addr_p) : NA_NOENTRY;
    hgx_unlock(&cls->lock);
    return p ? ret : ucx_addr_lookup(na_class, str + 4, addr_p);
}
