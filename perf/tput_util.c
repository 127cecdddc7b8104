/*
 * tput_util.c -- what hgx-tput's processes share: the coordinator's pipe
 * protocol, CPU and wall clocks, RPC registration and the pulled-data check.
 */
#include "tput.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int tput_send(const struct tput_chan *ch, char c)
{
    return write_all(ch->wfd, &c, 1);
}

int tput_recv(const struct tput_chan *ch, char *c)
{
    return read_all(ch->rfd, c, 1);
}

int tput_send_str(const struct tput_chan *ch, const char *s)
{
    uint32_t len = (uint32_t)strlen(s);
    return write_all(ch->wfd, &len, sizeof(len)) || write_all(ch->wfd, s, len) ? -1 : 0;
}

int tput_recv_str(const struct tput_chan *ch, char *buf, size_t cap)
{
    uint32_t len;
    if (read_all(ch->rfd, &len, sizeof(len)) || len >= cap || read_all(ch->rfd, buf, len))
        return -1;
    buf[len] = '\0';
    return 0;
}

double tput_cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

double tput_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void tput_register(hg_class_t *cls, struct tput_ids *ids, hg_rpc_cb_t rpc_cb,
                   hg_rpc_cb_t pull_cb)
{
    ids->rpc = MERCURY_REGISTER(cls, "tput_rpc", tput_rpc_in_t, tput_rpc_out_t, rpc_cb);
    ids->pull =
        MERCURY_REGISTER(cls, "tput_pull", tput_pull_in_t, tput_pull_out_t, pull_cb);
}

int tput_check(const uint64_t *w, size_t n, uint64_t seq, uint64_t seed, int all)
{
    if (n < 2 || w[0] != seq || w[n - 1] != seq)
        return 0;
    size_t step = all ? 1 : 512;
    for (size_t i = 1; i < n - 1; i += step)
        if (w[i] != tput_word(seed, i))
            return 0;
    return w[n - 2] == tput_word(seed, n - 2);
}
