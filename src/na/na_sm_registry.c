/*
 * na_sm_registry.c -- Mercury's SM names for hgx's na+sm classes.
 *
 * Mercury's na+sm addresses read "na+sm://PID-ID" (PID-ID/ before 2.1):
 * the process and a per-process class id. hgx's na+sm is another plugin's
 * shared memory with addresses of its own, so each class of an alias with
 * sm_names publishes its plugin address in a file PID-ID of a directory of
 * this user under /dev/shm, and a lookup of PID-ID reads it. No file, or a
 * process that is gone, is a peer that is not there: the lookup succeeds and
 * every post fails (na_unreachable.c), as Mercury's does.
 *
 * Names and files are untrusted: a name is digits only, within range; the
 * directory must be this user's and writable by no one else, an entry a
 * regular file of this user, small, holding one address of the serving
 * plugin in printable characters.
 */
#include "na_sm_registry.h"
#include "na_core.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NA_SM_DIR_FMT "/dev/shm/hgx-na-sm-%u"
/* An entry holds one plugin address: a larger file is not an entry. */
#define NA_SM_ENTRY_MAX 256
#define NA_SM_NAME_MAX 32

/* Ids of this process's classes, from 0 as Mercury's. */
static atomic_uint na_sm_next_id;

/* A decimal number of digits only, at most max; *end just past it. */
static bool na_sm_number(const char *s, unsigned long max, unsigned long *v,
                         const char **end)
{
    unsigned long n = 0;
    const char *p = s;

    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned long d = (unsigned long)(*p - '0');
        if (n > (max - d) / 10)
            return false;
        n = n * 10 + d;
    }
    *v = n;
    *end = p;
    return p != s;
}

/* "PID-ID" or "PID/ID" at s, PID > 0; *end just past it. */
static bool na_sm_parse(const char *s, const char **end, pid_t *pid, unsigned int *id)
{
    unsigned long p, i;
    const char *at;

    if (!na_sm_number(s, INT_MAX, &p, &at) || p == 0 || (*at != '-' && *at != '/') ||
        !na_sm_number(at + 1, UINT_MAX, &i, end))
        return false;
    *pid = (pid_t)p;
    *id = (unsigned int)i;
    return true;
}

static bool na_sm_process_gone(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

/* This user's directory, opened: -1 (errno set) when it is missing, not a
 * directory, another user's or writable by others. */
static int na_sm_dir_open(bool create)
{
    char path[64];
    struct stat st;

    snprintf(path, sizeof(path), NA_SM_DIR_FMT, (unsigned int)geteuid());
    if (create && mkdir(path, 0700) != 0 && errno != EEXIST)
        return -1;
    int dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        return -1;
    if (fstat(dir, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
        close(dir);
        errno = EPERM;
        return -1;
    }
    return dir;
}

bool na_sm_registry_is_name(const char *rest)
{
    return !strchr(rest, ':') && strpbrk(rest, "-/");
}

void na_sm_registry_publish(na_class_t *na_class)
{
    char addr[NA_SM_ENTRY_MAX + 1], name[NA_SM_NAME_MAX], tmp[NA_SM_NAME_MAX + 4];
    size_t size = sizeof(addr);
    na_addr_t *self = NULL;
    pid_t pid = getpid();

    na_class->sm.id = atomic_fetch_add(&na_sm_next_id, 1);
    na_return_t ret = na_class->ops->addr_self(na_class, &self);
    if (ret == NA_SUCCESS) {
        ret = na_class->ops->addr_to_string(na_class, addr, &size, self);
        NA_Addr_free(na_class, self);
    }
    if (ret != NA_SUCCESS) {
        HGX_LOG_WARNING(NA, "na+sm class %d-%u not published: no address string (%s)",
                        (int)pid, na_class->sm.id, NA_Error_to_string(ret));
        return;
    }
    snprintf(name, sizeof(name), "%d-%u", (int)pid, na_class->sm.id);
    snprintf(tmp, sizeof(tmp), "%s.tmp", name);
    int dir = na_sm_dir_open(true);
    if (dir < 0) {
        HGX_LOG_WARNING(NA, "na+sm class %s not published: " NA_SM_DIR_FMT ": %s", name,
                        (unsigned int)geteuid(), strerror(errno));
        return;
    }
    /* A file of this name is a dead process's (one of our pid before us). */
    (void)unlinkat(dir, tmp, 0);
    int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    size_t len = strlen(addr);
    bool ok = fd >= 0 && write(fd, addr, len) == (ssize_t)len;
    if (fd >= 0 && close(fd) != 0)
        ok = false;
    /* The rename makes the entry whole at once for a reader. */
    if (ok && renameat(dir, tmp, dir, name) == 0) {
        na_class->sm.pid = pid;
    } else {
        int err = errno;
        (void)unlinkat(dir, tmp, 0);
        HGX_LOG_WARNING(NA, "na+sm class %s not published: %s", name, strerror(err));
    }
    close(dir);
}

void na_sm_registry_withdraw(na_class_t *na_class)
{
    char name[NA_SM_NAME_MAX];

    /* A forked child's copy of the class does not own the entry. */
    if (na_class->sm.pid != getpid())
        return;
    snprintf(name, sizeof(name), "%d-%u", (int)na_class->sm.pid, na_class->sm.id);
    int dir = na_sm_dir_open(false);
    if (dir >= 0) {
        (void)unlinkat(dir, name, 0);
        close(dir);
    }
    na_class->sm.pid = 0;
}

/* An entry's contents: one address of the serving plugin, printable. */
static bool na_sm_entry_valid(const na_class_t *na_class, const char *addr)
{
    const char *plugin = na_class->ops->class_name, *proto = na_class->alias->serves;
    size_t plen = strlen(plugin), slen = strlen(proto);

    if (strncmp(addr, plugin, plen) != 0 || addr[plen] != '+' ||
        strncmp(addr + plen + 1, proto, slen) != 0 ||
        strncmp(addr + plen + 1 + slen, "://", 3) != 0)
        return false;
    for (const char *c = addr; *c; c++)
        if (*c < 0x21 || *c > 0x7e)
            return false;
    return true;
}

/* Read entry name into buf[size]: true with the plugin address, else false
 * (no live class there; a stale entry is removed). */
static bool na_sm_entry_read(const na_class_t *na_class, pid_t pid, const char *name,
                             char *buf, size_t size)
{
    struct stat st;
    ssize_t n = -1;

    int dir = na_sm_dir_open(false);
    if (dir < 0)
        return false;
    if (na_sm_process_gone(pid)) {
        (void)unlinkat(dir, name, 0);
        close(dir);
        return false;
    }
    /* O_NONBLOCK: a fifo put there must not hang the open. */
    int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    close(dir);
    if (fd < 0)
        return false;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        st.st_size > 0 && (size_t)st.st_size < size)
        n = read(fd, buf, size - 1);
    close(fd);
    if (n > 0)
        buf[n] = '\0';
    if (n <= 0 || n != st.st_size || strlen(buf) != (size_t)n ||
        !na_sm_entry_valid(na_class, buf)) {
        HGX_LOG_WARNING(NA, "na+sm registry entry %s is not an address of %s+%s: ignored",
                        name, na_class->ops->class_name, na_class->alias->serves);
        return false;
    }
    return true;
}

na_return_t na_sm_registry_lookup(na_class_t *na_class, const char *rest,
                                  na_addr_t **addr_p)
{
    const struct na_alias *alias = na_class->alias;
    char addr[NA_SM_ENTRY_MAX + 1], name[NA_SM_NAME_MAX], pub[NA_SM_NAME_MAX + 32];
    const char *end;
    pid_t pid;
    unsigned int id;

    if (!na_sm_parse(rest, &end, &pid, &id) || *end != '\0') {
        HGX_LOG_ERROR(NA, "malformed address \"%s+%s://%.64s\" (want %s+%s://PID-ID)",
                      alias->class_name, alias->protocol, rest, alias->class_name,
                      alias->protocol);
        return NA_INVALID_ARG;
    }
    snprintf(name, sizeof(name), "%d-%u", (int)pid, id);
    snprintf(pub, sizeof(pub), "%s+%s://%s", alias->class_name, alias->protocol, name);
    if (na_sm_entry_read(na_class, pid, name, addr, sizeof(addr))) {
        /* The plugin takes its name without "plugin+". */
        na_return_t ret = na_class->ops->addr_lookup(
            na_class, addr + strlen(na_class->ops->class_name) + 1, addr_p);
        if (ret == NA_SUCCESS || ret == NA_NOMEM)
            return ret;
    }
    HGX_LOG_DEBUG(NA, "%s: no live class there, its operations will fail", pub);
    return na_unreachable_new(na_class, pub, addr_p);
}

void na_sm_registry_cleanup(void)
{
    int dir = na_sm_dir_open(false);
    if (dir < 0)
        return;
    DIR *d = fdopendir(dir);
    if (!d) {
        close(dir);
        return;
    }
    for (struct dirent *e; (e = readdir(d));) {
        const char *end;
        pid_t pid;
        unsigned int id;
        if (na_sm_parse(e->d_name, &end, &pid, &id) &&
            (*end == '\0' || strcmp(end, ".tmp") == 0) && na_sm_process_gone(pid))
            (void)unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}
