/*
 * ofi_link.c -- a bound on waiting for a tcp or sockets peer whose host is gone.
 *
 * A canceled send, put or read-into-place get that libfabric still holds
 * (ofi_cancel.c) ends only when the provider completes it. If the peer's host
 * went away without a word (its cable pulled, its power cut), the provider
 * learns of it only from the kernel: an idle connection never, a busy one
 * after the kernel's retransmissions give up (minutes). The tcp provider has
 * no keepalive of its own in 1.17 (sockets has one, off unless the whole
 * process enables it by environment), and neither shows its sockets.
 *
 * So while such an op is escalated, hgx holds the provider's connections to
 * the op's peer (found among the process's sockets) under TCP keepalive with
 * a user timeout of OFI_LINK_TIMEOUT_MS: a connection whose peer host does
 * not acknowledge anything for that long is reset by the kernel, the
 * provider reports its ops failed, and their data can no longer land. When
 * the peer's last such op ends, its connections get back the settings they
 * had (the kernel's defaults, or a keepalive the provider set itself). A peer
 * that is alive answers the probes from its kernel, even while its process
 * makes no progress, so its connection stays (a full receive window past the
 * bound is the exception: the kernel counts its unanswered window probes
 * too).
 *
 * The provider's connections are the sockets that either were accepted by
 * the class's listener (local address = the class's, remote host = the
 * peer's) or connect to the peer's own listener (remote address = the
 * peer's): other sockets of the process are left alone.
 */
#include "ofi_int.h"
#include "na_ipaddr.h"

#include <netinet/tcp.h>
#include <sys/stat.h>

/* Whether fd is one of the provider's connections to peer. */
static bool ofi_link_is_peer_conn(const struct ofi_class *cls,
                                  const struct ofi_peer *peer, int fd)
{
    struct sockaddr_storage local, remote;
    socklen_t llen = sizeof(local), rlen = sizeof(remote);
    int type;
    socklen_t tlen = sizeof(type);

    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0 || type != SOCK_STREAM ||
        getsockname(fd, (struct sockaddr *)&local, &llen) != 0 ||
        getpeername(fd, (struct sockaddr *)&remote, &rlen) != 0)
        return false;
    const struct sockaddr *self = (const struct sockaddr *)cls->self_raw;
    const struct sockaddr *to = (const struct sockaddr *)peer->raw;
    const struct sockaddr *l = (const struct sockaddr *)&local;
    const struct sockaddr *r = (const struct sockaddr *)&remote;
    bool accepted = na_ipaddr_same_host(l, self) &&
                    na_ipaddr_port(l) == na_ipaddr_port(self) &&
                    na_ipaddr_same_host(r, to);
    bool connected =
        na_ipaddr_same_host(r, to) && na_ipaddr_port(r) == na_ipaddr_port(to);
    return accepted || connected;
}

/* A connection's settings before the first hold, put back at the last
 * release: the sockets provider may have turned keepalive on itself. */
struct ofi_link_sock {
    int fd, ka, idle, intvl, cnt;
    unsigned int user_ms;
};

struct ofi_link_saved {
    size_t n;
    struct ofi_link_sock sock[OFI_LINK_SAVED_MAX];
};

static void ofi_link_get_fd(int fd, struct ofi_link_sock *s)
{
    socklen_t len = sizeof(int), ulen = sizeof(s->user_ms);

    *s = (struct ofi_link_sock){.fd = fd};
    (void)getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &s->ka, &len);
    (void)getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &s->idle, &len);
    (void)getsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &s->intvl, &len);
    (void)getsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &s->cnt, &len);
    (void)getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &s->user_ms, &ulen);
}

/* Settings s on its socket; with only the keepalive flag known (idle 0), the
 * other values are left as they are. */
static void ofi_link_set_fd(const struct ofi_link_sock *s)
{
    if (s->idle > 0) {
        (void)setsockopt(s->fd, IPPROTO_TCP, TCP_KEEPIDLE, &s->idle, sizeof(s->idle));
        (void)setsockopt(s->fd, IPPROTO_TCP, TCP_KEEPINTVL, &s->intvl, sizeof(s->intvl));
        (void)setsockopt(s->fd, IPPROTO_TCP, TCP_KEEPCNT, &s->cnt, sizeof(s->cnt));
    }
    (void)setsockopt(s->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &s->user_ms,
                     sizeof(s->user_ms));
    (void)setsockopt(s->fd, SOL_SOCKET, SO_KEEPALIVE, &s->ka, sizeof(s->ka));
}

static struct ofi_link_sock *ofi_link_saved_of(struct ofi_link_saved *saved, int fd)
{
    for (size_t i = 0; saved && i < saved->n; i++)
        if (saved->sock[i].fd == fd)
            return &saved->sock[i];
    return NULL;
}

/* Hold (on) or give back every connection of the provider to peer; returns
 * how many there were. A hold saves a connection's settings the first time
 * it sees it (while there is room); a release puts them back, or the
 * kernel's defaults on a connection it has none for. */
static size_t ofi_link_set(const struct ofi_class *cls, struct ofi_peer *peer, bool on)
{
    const struct ofi_link_sock held = {.ka = 1,
                                       .idle = OFI_LINK_PROBE_S,
                                       .intvl = OFI_LINK_PROBE_S,
                                       .cnt =
                                           OFI_LINK_TIMEOUT_MS / 1000 / OFI_LINK_PROBE_S,
                                       .user_ms = OFI_LINK_TIMEOUT_MS};
    struct ofi_link_saved *saved = peer->link_saved;
    size_t found = 0;

    DIR *dir = opendir("/proc/self/fd");
    if (!dir)
        return 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        char *end;
        long fd = strtol(de->d_name, &end, 10);
        struct stat st;
        if (*end != '\0' || fd < 0 || fd == dirfd(dir) || fstat((int)fd, &st) != 0 ||
            !S_ISSOCK(st.st_mode) || !ofi_link_is_peer_conn(cls, peer, (int)fd))
            continue;
        struct ofi_link_sock *prev = ofi_link_saved_of(saved, (int)fd);
        struct ofi_link_sock set = held;
        if (on && !prev && saved && saved->n < OFI_LINK_SAVED_MAX)
            ofi_link_get_fd((int)fd, &saved->sock[saved->n++]);
        if (!on)
            set = prev ? *prev : (struct ofi_link_sock){0};
        set.fd = (int)fd;
        ofi_link_set_fd(&set);
        found++;
    }
    closedir(dir);
    return found;
}

void ofi_link_hold_locked(const struct ofi_class *cls, struct ofi_op *oop)
{
    if (cls->proto->str_prefix || !oop->peer || oop->link_armed)
        return; /* shm has no connection to watch */
    oop->link_armed = true;
    if (oop->peer->link_holds == 0)
        oop->peer->link_saved = calloc(1, sizeof(*oop->peer->link_saved));
    /* Each op looks again: the provider may have reconnected since an earlier one. */
    size_t n = ofi_link_set(cls, oop->peer, true);
    if (oop->peer->link_holds++ == 0 && n > 0)
        HGX_LOG_WARNING(
            OFI,
            "canceled operation still pending after %llu ms; the connections "
            "to its peer now end after %d ms unanswered",
            (unsigned long long)(cls->cancel_watcher.timeout_ns / HGX_NS_PER_MS),
            OFI_LINK_TIMEOUT_MS);
}

void ofi_link_release_locked(const struct ofi_class *cls, struct ofi_op *oop)
{
    if (!oop->link_armed)
        return;
    oop->link_armed = false;
    HGX_ASSERT(oop->peer->link_holds > 0);
    if (--oop->peer->link_holds == 0) {
        (void)ofi_link_set(cls, oop->peer, false);
        ofi_link_saved_free(oop->peer);
    }
}

void ofi_link_saved_free(struct ofi_peer *peer)
{
    free(peer->link_saved);
    peer->link_saved = NULL;
}
