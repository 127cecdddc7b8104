/*
 * hgx-info: what this hgx build offers and whether a server answers, in the
 * spirit of fi_info, ucx_info and Mercury's hg_info.
 *
 *   hgx-info                       protocols, interfaces, versions
 *   hgx-info --params              the environment parameters hgx reads
 *   hgx-info --listen INFO         the address a server on INFO advertises
 *   hgx-info --serve INFO          answer pings until SIGINT/SIGTERM
 *   hgx-info --ping ADDR [--count N] [--timeout MS]
 */
#include "hgx_info.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_COUNT 1u
#define DEFAULT_TIMEOUT_MS 1000u

static void usage(FILE *out)
{
    fprintf(out,
            "usage: hgx-info                 list protocols, interfaces and versions\n"
            "       hgx-info --params        list the environment parameters hgx "
            "reads\n"
            "       hgx-info --listen INFO   print the address a server on INFO "
            "advertises\n"
            "       hgx-info --serve INFO    print that address, then answer pings "
            "until killed\n"
            "       hgx-info --ping ADDR [--count N] [--timeout MS]\n"
            "                                ping a --serve server N times (default "
            "%u),\n"
            "                                each answer awaited at most MS ms "
            "(default %u)\n"
            "       hgx-info --help\n"
            "INFO is an info string such as ofi+tcp, ucx+tcp://127.0.0.1 or "
            "ofi+tcp://eth0:5000;\n"
            "ADDR is a server's address as --listen or --serve prints it.\n"
            "Exit status: 0 success, 1 failure (every ping must be answered), 2 bad "
            "usage.\n",
            DEFAULT_COUNT, DEFAULT_TIMEOUT_MS);
}

static int bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "hgx-info: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(hgx-info --help for usage)\n");
    return 2;
}

/* A positive decimal count or timeout, at most UINT_MAX. */
static int parse_positive(const char *s, unsigned int *value)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v == 0 || v > UINT_MAX)
        return -1;
    *value = (unsigned int)v;
    return 0;
}

static int run_ping(int argc, char *argv[])
{
    unsigned int count = DEFAULT_COUNT, timeout_ms = DEFAULT_TIMEOUT_MS;

    for (int i = 3; i < argc; i += 2) {
        unsigned int *value = strcmp(argv[i], "--count") == 0     ? &count
                              : strcmp(argv[i], "--timeout") == 0 ? &timeout_ms
                                                                  : NULL;
        if (!value)
            return bad_usage("unknown option \"%s\" for --ping", argv[i]);
        if (i + 1 >= argc)
            return bad_usage("%s needs a value", argv[i]);
        if (parse_positive(argv[i + 1], value) != 0)
            return bad_usage("\"%s\" is not a positive number", argv[i + 1]);
    }
    return hgx_info_ping(argv[2], count, timeout_ms);
}

int main(int argc, char *argv[])
{
    if (argc == 1) {
        int rc = hgx_info_list_protocols();
        hgx_info_list_versions();
        return rc;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--params") == 0) {
        if (argc > 2)
            return bad_usage("unexpected argument \"%s\"", argv[2]);
        return hgx_info_list_params();
    }
    bool takes_arg = strcmp(cmd, "--listen") == 0 || strcmp(cmd, "--serve") == 0 ||
                     strcmp(cmd, "--ping") == 0;
    if (!takes_arg)
        return bad_usage("unknown option \"%s\"", cmd);
    if (argc < 3)
        return bad_usage("%s needs an argument", cmd);
    if (strcmp(cmd, "--ping") == 0)
        return run_ping(argc, argv);
    if (argc > 3)
        return bad_usage("unexpected argument \"%s\"", argv[3]);
    return hgx_info_listen(argv[2], strcmp(cmd, "--serve") == 0);
}
