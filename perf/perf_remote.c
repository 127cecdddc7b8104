/*
 * perf_remote.c -- hgx-perf between two hosts: the client starts its server
 * through a command prefix (--server-cmd "ssh node1", or the multi-host
 * harness's netns agent) and the two talk bootstrap data over that command's
 * stdin and stdout, as they do over pipes on one host. Both sides then use
 * the host's routable interface: plain info strings for hgx, the same
 * interface for the raw loops.
 */
#include "perf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int perf_routable_if(char *name, size_t cap, struct in_addr *ip)
{
    struct ifaddrs *ifs, *i;
    int found = 0;
    if (getifaddrs(&ifs) != 0)
        return -1;
    for (i = ifs; i && !found; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
            !(i->ifa_flags & IFF_LOOPBACK)) {
            snprintf(name, cap, "%s", i->ifa_name);
            *ip = ((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr;
            found = 1;
        }
    freeifaddrs(ifs);
    if (!found)
        fprintf(stderr, "hgx-perf: no IPv4 interface other than loopback is up here\n");
    return found ? 0 : -1;
}

/* The command line that starts the server: PREFIX, this program by its full
 * path (the hosts share the file system), --serve-stdio and the client's own
 * options but --server-cmd. LD_LIBRARY_PATH goes along (ssh drops the
 * environment; in a build tree libtool's wrapper set it for the library). */
static int server_command(char *cmd, size_t cap, const char *prefix, int argc,
                          char **argv)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    const char *ld = getenv("LD_LIBRARY_PATH");
    size_t len =
        ld && *ld
            ? (size_t)snprintf(cmd, cap, "%s env LD_LIBRARY_PATH=%s %s --serve-stdio",
                               prefix, ld, exe)
            : (size_t)snprintf(cmd, cap, "%s %s --serve-stdio", prefix, exe);
    for (int i = 1; i < argc && len < cap; i++) {
        if (!strcmp(argv[i], "--server-cmd")) {
            i++;
            continue;
        }
        len += (size_t)snprintf(cmd + len, cap - len, " %s", argv[i]);
    }
    return len < cap ? 0 : -1;
}

pid_t perf_remote_start(const char *prefix, int argc, char **argv, struct perf_oob *oob)
{
    static char cmd[8192];
    int to[2], from[2];
    if (server_command(cmd, sizeof(cmd), prefix, argc, argv)) {
        fprintf(stderr, "hgx-perf: --server-cmd: command line too long\n");
        return -1;
    }
    if (pipe(to) || pipe(from)) {
        perror("hgx-perf: pipe");
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("hgx-perf: fork");
        return -1;
    }
    if (pid == 0) {
        dup2(to[0], STDIN_FILENO);
        dup2(from[1], STDOUT_FILENO);
        close(to[0]), close(to[1]), close(from[0]), close(from[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        perror("hgx-perf: /bin/sh");
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    oob->wfd = to[1];
    oob->rfd = from[0];
    return pid;
}

int perf_remote_serve_oob(struct perf_oob *oob)
{
    /* The channel keeps the original stdout; stdout itself goes to stderr so
     * that nothing the libraries print lands in the channel. */
    oob->rfd = STDIN_FILENO;
    oob->wfd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (oob->wfd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        perror("hgx-perf: --serve-stdio");
        return -1;
    }
    return 0;
}
