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
 * An address prints as its name too: each class also links the name from
 * "k-" and its key (the plugin's name of the class, the same on both sides of
 * a connection) in hex, and printing an address reads the link of its key,
 * remembered for a second per class so that programs printing an address per
 * RPC (Margo's monitor) read no file per RPC.
 *
 * Names and files are untrusted: a name is digits only, within range; the
 * directory must be this user's and writable by no one else, an entry a
 * regular file of this user, small, holding one address of the serving
 * plugin in printable characters.
 */
#include "na_sm_registry.h"
#include "na_core.h"
#include "hgx_clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NA_SM_DIR_FMT "/dev/shm/hgx-na-sm-%u"
/* An entry holds one plugin address: a larger file is not an entry. */
#define NA_SM_ENTRY_MAX 256
#define NA_SM_NAME_MAX 32
/* A class's key, at most this long, is linked; a longer one is not. */
#define NA_SM_KEY_MAX 100
#define NA_SM_LINK_MAX (2 + 2 * NA_SM_KEY_MAX + 1)
/* Peers' names a class remembers, and for how long. */
#define NA_SM_KNOWN 64
#define NA_SM_KNOWN_NS 1000000000ull

struct na_sm_known {
    char key[NA_SM_KEY_MAX + 1];
    char name[NA_SM_NAME_MAX]; /* "" for a peer with no name */
    uint64_t read_ns;          /* 0: a free slot */
};

struct na_sm_names {
    hgx_lock_t lock;
    char link[NA_SM_LINK_MAX]; /* this class's link, "" when none */
    unsigned int next;         /* the slot a new peer takes */
    struct na_sm_known known[NA_SM_KNOWN];
};

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

/* The name "PID-ID" of a class, as Mercury prints it. */
static void na_sm_name(char name[NA_SM_NAME_MAX], pid_t pid, unsigned int id)
{
    snprintf(name, NA_SM_NAME_MAX, "%d-%u", (int)pid, id);
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

/* addr's key (na_ops addr_key), printable, at most NA_SM_KEY_MAX bytes. */
static bool na_sm_key(na_class_t *na_class, na_addr_t *addr, const char *plugin_str,
                      char key[NA_SM_KEY_MAX + 1])
{
    if (na_class->ops->addr_key) {
        if (na_class->ops->addr_key(na_class, addr, key, NA_SM_KEY_MAX + 1) != NA_SUCCESS)
            return false;
    } else if (strlen(plugin_str) > NA_SM_KEY_MAX)
        return false;
    else
        strcpy(key, plugin_str);
    for (const char *c = key; *c; c++)
        if (*c < 0x21 || *c > 0x7e)
            return false;
    return key[0] != '\0';
}

/* The link of key: "k-" and key in hex. */
static void na_sm_link_name(const char *key, char link[NA_SM_LINK_MAX])
{
    static const char hex[] = "0123456789abcdef";
    char *o = link;

    *o++ = 'k';
    *o++ = '-';
    for (const unsigned char *c = (const unsigned char *)key; *c; c++) {
        *o++ = hex[*c >> 4];
        *o++ = hex[*c & 15];
    }
    *o = '\0';
}

/* The name link points to in dir, normalized into name[NA_SM_NAME_MAX]:
 * false when it is no link, not a name, or its process is gone (*pid then
 * set when the name was one). */
static bool na_sm_link_target(int dir, const char *link, char *name, pid_t *pid)
{
    char target[NA_SM_NAME_MAX];
    const char *end;
    unsigned int id;

    *pid = 0;
    ssize_t n = readlinkat(dir, link, target, sizeof(target) - 1);
    if (n <= 0)
        return false;
    target[n] = '\0';
    if (!na_sm_parse(target, &end, pid, &id) || *end != '\0') {
        *pid = 0;
        return false;
    }
    na_sm_name(name, *pid, id);
    return !na_sm_process_gone(*pid);
}

/* Link this class's name from its key; a link of that key is a dead class's
 * (the keys of live classes differ). */
static void na_sm_link_publish(na_class_t *na_class, int dir, const char *key,
                               const char *name)
{
    struct na_sm_names *names = calloc(1, sizeof(*names));
    if (!names) {
        HGX_LOG_WARNING(NA, "na+sm class %s: out of memory: addresses print in %s's form",
                        name, na_class->ops->class_name);
        return;
    }
    hgx_lock_init_as(&names->lock, HGX_LOCK_MUTEX);
    na_sm_link_name(key, names->link);
    (void)unlinkat(dir, names->link, 0);
    if (symlinkat(name, dir, names->link) != 0) {
        HGX_LOG_WARNING(
            NA, "na+sm class %s: no name link, its address prints in %s's form: %s", name,
            na_class->ops->class_name, strerror(errno));
        names->link[0] = '\0';
    }
    na_class->sm.names = names;
}

void na_sm_registry_publish(na_class_t *na_class)
{
    char addr[NA_SM_ENTRY_MAX + 1], name[NA_SM_NAME_MAX], tmp[NA_SM_NAME_MAX + 4];
    char key[NA_SM_KEY_MAX + 1] = "";
    size_t size = sizeof(addr);
    na_addr_t *self = NULL;
    pid_t pid = getpid();

    na_class->sm.id = atomic_fetch_add(&na_sm_next_id, 1);
    na_return_t ret = na_class->ops->addr_self(na_class, &self);
    if (ret == NA_SUCCESS) {
        ret = na_class->ops->addr_to_string(na_class, addr, &size, self);
        if (ret == NA_SUCCESS && !na_sm_key(na_class, self, addr, key))
            key[0] = '\0';
        NA_Addr_free(na_class, self);
    }
    if (ret != NA_SUCCESS) {
        HGX_LOG_WARNING(NA, "na+sm class %d-%u not published: no address string (%s)",
                        (int)pid, na_class->sm.id, NA_Error_to_string(ret));
        return;
    }
    na_sm_name(name, pid, na_class->sm.id);
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
        if (key[0])
            na_sm_link_publish(na_class, dir, key, name);
        else
            HGX_LOG_WARNING(NA, "na+sm class %s: no key: addresses print in %s's form",
                            name, na_class->ops->class_name);
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

    struct na_sm_names *names = na_class->sm.names;

    na_class->sm.names = NULL;
    /* A forked child's copy of the class does not own the entries. */
    if (na_class->sm.pid == getpid()) {
        na_sm_name(name, na_class->sm.pid, na_class->sm.id);
        int dir = na_sm_dir_open(false);
        if (dir >= 0) {
            char target[NA_SM_NAME_MAX];
            pid_t pid;
            /* The link is ours while it names us. */
            if (names && names->link[0] &&
                na_sm_link_target(dir, names->link, target, &pid) &&
                strcmp(target, name) == 0)
                (void)unlinkat(dir, names->link, 0);
            (void)unlinkat(dir, name, 0);
            close(dir);
        }
    }
    if (names) {
        hgx_lock_fini(&names->lock);
        free(names);
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
    na_sm_name(name, pid, id);
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

/* The live name linked from key, else "" (a stale link is removed). */
static void na_sm_link_read(const char *key, char name[NA_SM_NAME_MAX])
{
    char link[NA_SM_LINK_MAX];
    struct stat st;
    pid_t pid;

    name[0] = '\0';
    int dir = na_sm_dir_open(false);
    if (dir < 0)
        return;
    na_sm_link_name(key, link);
    if (!na_sm_link_target(dir, link, name, &pid)) {
        if (pid)
            (void)unlinkat(dir, link, 0);
        name[0] = '\0';
    } else if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
               !S_ISREG(st.st_mode) || st.st_uid != geteuid())
        name[0] = '\0'; /* a name whose class has no entry is no name */
    close(dir);
}

bool na_sm_registry_name(na_class_t *na_class, na_addr_t *addr, const char *plugin_str,
                         char *buf, size_t size)
{
    struct na_sm_names *names = na_class->sm.names;
    const struct na_alias *alias = na_class->alias;
    char key[NA_SM_KEY_MAX + 1], name[NA_SM_NAME_MAX];

    /* A class that has no name itself prints every address in the plugin's
     * form, so that each peer prints one way; one whose link its peers cannot
     * read prints itself in that form too, as they print it. */
    if (!names)
        return false;
    if (na_class->ops->addr_is_self(na_class, addr)) {
        if (!names->link[0])
            return false;
        na_sm_name(name, na_class->sm.pid, na_class->sm.id);
    } else {
        if (!na_sm_key(na_class, addr, plugin_str, key))
            return false;
        uint64_t now = hgx_clock_now_ns();
        struct na_sm_known *k = NULL;
        bool fresh = false;
        hgx_lock(&names->lock);
        for (unsigned int i = 0; i < NA_SM_KNOWN && !k; i++)
            if (names->known[i].read_ns && strcmp(names->known[i].key, key) == 0)
                k = &names->known[i];
        if (k && now - k->read_ns < NA_SM_KNOWN_NS) {
            fresh = true;
            memcpy(name, k->name, sizeof(name));
        }
        hgx_unlock(&names->lock);
        if (!fresh) {
            na_sm_link_read(key, name);
            hgx_lock(&names->lock);
            /* A slot of this key, else the next in turn (another thread may
             * have taken one meanwhile: then the names agree). */
            if (!k || strcmp(k->key, key) != 0)
                k = &names->known[names->next++ % NA_SM_KNOWN];
            memcpy(k->key, key, sizeof(k->key));
            memcpy(k->name, name, sizeof(k->name));
            k->read_ns = now ? now : 1;
            hgx_unlock(&names->lock);
        }
    }
    if (!name[0])
        return false;
    int len = snprintf(buf, size, "%s+%s://%s", alias->class_name, alias->protocol, name);
    return len > 0 && (size_t)len < size;
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
        char name[NA_SM_NAME_MAX];
        if (strncmp(e->d_name, "k-", 2) == 0) {
            if (!na_sm_link_target(dirfd(d), e->d_name, name, &pid) && pid)
                (void)unlinkat(dirfd(d), e->d_name, 0);
        } else if (na_sm_parse(e->d_name, &end, &pid, &id) &&
                   (*end == '\0' || strcmp(end, ".tmp") == 0) && na_sm_process_gone(pid))
            (void)unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}
