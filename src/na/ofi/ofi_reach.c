/*
 * ofi_reach.c -- is a peer whose posts the provider keeps refusing there at all?
 *
 * Whoever waits on such a peer holds its look: posts in the retry queue
 * (ofi_op.c), control messages in the outbox and put/get whose RMA check
 * has gone unanswered for OFI_REACH_POLL_MS (ofi_ctrl.c).
 *
 * libfabric 1.17 reports nothing for a peer that is not there: rxm closes a
 * refused connection inside the provider and starts a new one at the next
 * post (every post returns EAGAIN, no CQ or EQ entry reaches the user), and
 * shm returns EAGAIN while it cannot open the peer's region. Left alone, the
 * posts would wait for OFI_RETRY_TIMEOUT_MS. So hgx looks for itself:
 *
 *  - tcp and sockets: a connect of its own to the peer's address, from the
 *    class's address. A refusal (RST), or the network saying there is no
 *    route, means nobody listens there; an accepted connection (closed at
 *    once) means the provider's own connection is only slow, and the posts
 *    keep waiting.
 *  - shm: the peer's region (/dev/shm/NAME) is gone, or the process whose id
 *    starts its name is. A name is only known once its region exists, so a
 *    missing region is a peer that went away, not one still starting.
 */
#include "ofi_int.h"

/* Errors of a connect that mean nobody takes connections at the address. */
static bool ofi_reach_refusal(int err)
{
    switch (err) {
    case ECONNREFUSED:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EHOSTDOWN:
    case ENETDOWN:
    case ETIMEDOUT:
        return true;
    default:
        return false;
    }
}

/* A shm region name "PID:N:N" whose process no longer exists. */
bool ofi_shm_owner_gone(const char *name)
{
    int pid, a, b, end = 0;

    if (sscanf(name, "%d:%d:%d%n", &pid, &a, &b, &end) != 3 || name[end] != '\0' ||
        pid <= 0)
        return false;
    return kill(pid, 0) != 0 && errno == ESRCH;
}

/* shm: ENOENT when the peer's region is gone, ESRCH when its process is. */
static int ofi_reach_shm(const struct ofi_class *cls, const struct ofi_peer *peer)
{
    size_t plen = strlen(cls->proto->str_prefix);
    char name[OFI_RAW_ADDR_MAX + 1];
    char path[sizeof("/dev/shm/") + OFI_RAW_ADDR_MAX];

    snprintf(name, sizeof(name), "%.*s", (int)(peer->len - plen), peer->raw + plen);
    if (ofi_shm_owner_gone(name))
        return ESRCH;
    /* Names come from the network too: never a path of their own. */
    if (name[0] == '\0' || name[0] == '.' || strchr(name, '/'))
        return 0;
    snprintf(path, sizeof(path), "/dev/shm/%s", name);
    return access(path, F_OK) != 0 && errno == ENOENT ? ENOENT : 0;
}

/* Our own connect to a tcp or sockets peer: 0 when a listener took it (or
 * there is no telling), EINPROGRESS while it has no answer, else the errno
 * of the refusal. */
static int ofi_reach_tcp(const struct ofi_class *cls, const struct ofi_peer *peer,
                         struct ofi_reach *r)
{
    int err = 0;

    if (r->fd < 0) {
        struct sockaddr_storage to, from;
        memcpy(&to, peer->raw, peer->len);
        memcpy(&from, cls->self_raw, cls->self_len);
        int fd = socket(to.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return 0;
        /* From the address the provider's connections come from. */
        if (from.ss_family == AF_INET)
            ((struct sockaddr_in *)&from)->sin_port = 0;
        else
            ((struct sockaddr_in6 *)&from)->sin6_port = 0;
        if (from.ss_family == to.ss_family)
            (void)bind(fd, (struct sockaddr *)&from, (socklen_t)cls->self_len);
        if (connect(fd, (struct sockaddr *)&to, (socklen_t)peer->len) == 0) {
            close(fd);
            return 0;
        }
        if (errno == EINPROGRESS) {
            r->fd = fd;
            return EINPROGRESS;
        }
        err = errno;
        close(fd);
        return err;
    }
    struct pollfd pfd = {.fd = r->fd, .events = POLLOUT};
    if (poll(&pfd, 1, 0) == 0)
        return EINPROGRESS;
    socklen_t len = sizeof(err);
    if (getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = 0;
    close(r->fd);
    r->fd = -1;
    return err;
}

/* A refused post or control message of peer starts waiting (under the
 * class lock); the first one starts looking at the peer. */
void ofi_reach_hold_locked(const struct ofi_class *cls, struct ofi_peer *peer,
                           uint64_t now_ms)
{
    if (peer->reach.holds++ > 0)
        return;
    peer->reach = (struct ofi_reach){
        .next_ms = now_ms + (cls->proto->str_prefix ? 0 : OFI_REACH_GRACE_MS),
        .fd = -1,
        .holds = 1,
    };
}

/* One of them stopped waiting; the last one ends the look. */
void ofi_reach_release_locked(struct ofi_peer *peer)
{
    HGX_ASSERT(peer->reach.holds > 0);
    if (--peer->reach.holds > 0)
        return;
    if (peer->reach.fd >= 0)
        close(peer->reach.fd);
    peer->reach.fd = -1;
}

/* The provider refused a post or control message to peer again (it holds
 * the look): the errno saying why the peer is not there, or 0 while it may
 * still be. Logs the finding once. */
int ofi_reach_check_locked(const struct ofi_class *cls, struct ofi_peer *peer,
                           uint64_t now_ms)
{
    struct ofi_reach *r = &peer->reach;

    if (r->gone || r->settled || now_ms < r->next_ms)
        return r->gone;
    r->next_ms = now_ms + OFI_REACH_POLL_MS;
    int err =
        cls->proto->str_prefix ? ofi_reach_shm(cls, peer) : ofi_reach_tcp(cls, peer, r);
    if (err == EINPROGRESS || err == 0) {
        r->settled = !cls->proto->str_prefix && err == 0;
        return 0;
    }
    if (!cls->proto->str_prefix && !ofi_reach_refusal(err)) {
        r->settled = true; /* a local failure says nothing about the peer */
        return 0;
    }
    char str[128];
    ofi_raw_addr_format(cls, peer->raw, peer->len, str, sizeof(str));
    HGX_LOG_ERROR(OFI, "%s is unreachable (%s): its posts fail", str,
                  err == ENOENT  ? "its shared-memory region is gone"
                  : err == ESRCH ? "its process is gone"
                                 : strerror(err));
    r->gone = err;
    return err;
}
