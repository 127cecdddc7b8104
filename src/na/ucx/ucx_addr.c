/*
 * ucx_addr.c -- NA addresses of UCX peers: lookup (recording the peer
 * only), comparison, strings and the serialized form.
 */
#include "ucx_int.h"
#include "na_netif.h"
#include "hgx_wire.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

na_return_t ucx_addr_new(na_class_t *na_class, struct ucx_peer *p, na_addr_t **addr_p)
{
    (void)na_class;
    *addr_p = na_addr_ref(&p->addr);
    return NA_SUCCESS;
}

/* "proto://host:port" -> resolved IPv4 sockaddr. */
static na_return_t ucx_parse(struct ucx_class *cls, const char *name,
                             struct sockaddr_in *sin)
{
    const char *sep = strstr(name, "://");
    if (!sep)
        return NA_INVALID_ARG;
    if ((size_t)(sep - name) != strlen(cls->proto) ||
        strncmp(name, cls->proto, (size_t)(sep - name)))
        return NA_PROTONOSUPPORT;
    const char *host = sep + 3, *colon = strrchr(host, ':');
    if (!colon || colon == host || colon[1] == '\0' || (size_t)(colon - host) >= 256)
        return NA_INVALID_ARG;
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port < 1 || port > 65535 || colon[1] == '-' || colon[1] == '+')
        return NA_INVALID_ARG;
    char hostname[256];
    memcpy(hostname, host, (size_t)(colon - host));
    hostname[colon - host] = '\0';

    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM},
                    *res = NULL;
    if (getaddrinfo(hostname, NULL, &hints, &res) != 0 || !res) {
        HGX_LOG_ERROR(UCX, "cannot resolve host \"%s\"", hostname);
        return NA_ADDRNOTAVAIL;
    }
    *sin = *(struct sockaddr_in *)res->ai_addr;
    sin->sin_port = htons((uint16_t)port);
    freeaddrinfo(res);
    return NA_SUCCESS;
}

/* A peer to connect to, recorded only: its first operation connects, so a
 * lookup never waits for the network, and an unreachable peer fails that
 * operation (NA_HOSTUNREACH), as Mercury's UCX plugin does. */
static na_return_t ucx_peer_add_outgoing(struct ucx_class *cls,
                                         const struct sockaddr_in *sin, const char *str,
                                         uint32_t id, struct ucx_peer **peer_p)
{
    struct ucx_peer *p = ucx_peer_new(cls, id, str, true);
    if (!p)
        return NA_NOMEM;
    p->sin = *sin;
    *peer_p = p;
    return NA_SUCCESS;
}

/* Name resolution (getaddrinfo may block) runs before the lock is taken. */
na_return_t ucx_addr_lookup(na_class_t *na_class, const char *name, na_addr_t **addr_p)
{
    struct ucx_class *cls = ucx_cls(na_class);
    struct sockaddr_in sin;
    char str[UCX_ADDR_STR_MAX];

    na_return_t ret = ucx_parse(cls, name, &sin);
    if (ret != NA_SUCCESS)
        return ret;
    /* Its tcp is there for wire-up only: a remote peer would never answer. */
    if (strcmp(cls->proto, "shm") == 0 && !na_netif_is_local((struct sockaddr *)&sin)) {
        HGX_LOG_ERROR(UCX,
                      "%s is not on this host: ucx+shm reaches local peers only "
                      "(use ucx+tcp or ucx+all)",
                      name);
        return NA_HOSTUNREACH;
    }
    ucx_sockaddr_string((const struct sockaddr *)&sin, cls->proto, str, sizeof(str));
    uint32_t id = ucx_hash_id(strstr(str, "://") + 3);
    hgx_lock(&cls->lock);
    struct ucx_peer *p = id == cls->id ? cls->self : ucx_peer_find(cls, id);
    if (p || (ret = ucx_peer_add_outgoing(cls, &sin, str, id, &p)) == NA_SUCCESS)
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
