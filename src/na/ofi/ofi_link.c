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
 * the peer's last such op ends, its connections get the kernel's defaults
 * back. A peer that is alive answers the probes from its kernel, even while
 * its process makes no progress, so its connection stays (a full receive
 * window past the bound is the exception: the kernel counts its unanswered
 * window probes too).
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

/* Keepalive with the user timeout on fd, or back to the kernel's defaults. */
static void ofi_link_set_fd(int fd, bool on)
{
    int ka = on, idle = OFI_LINK_PROBE_S,
        cnt = OFI_LINK_TIMEOUT_MS / 1000 / OFI_LINK_PROBE_S;
    unsigned int user_ms = on ? OFI_LINK_TIMEOUT_MS : 0;

    if (on) {
        (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof(idle));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    }
    (void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms));
    (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &ka, sizeof(ka));
}

/* Apply ofi_link_set_fd to every connection of the provider to peer; returns
 * how many there were. */
static size_t ofi_link_set(const struct ofi_class *cls, const struct ofi_peer *peer,
                           bool on)
{
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
        ofi_link_set_fd((int)fd, on);
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
    if (--oop->peer->link_holds == 0)
        (void)ofi_link_set(cls, oop->peer, false);
}
