/*
 * fuzz_na_addr.c -- libFuzzer target for NA address strings and bytes:
 *   mode 0: na_info_parse() (src/na/na_info.c), the NA_Initialize info string;
 *   mode 1: NA_Addr_lookup() on an ofi+tcp class;
 *   mode 2: NA_Addr_deserialize() on the same class;
 *   mode 3: NA_Get_protocol_info() filter strings.
 * Input: byte 0 = mode (mod 4), the rest is the string / serialized address.
 *
 * Lookups never connect (libfabric's rxm connects on first send) but resolve
 * host names with getaddrinfo(), which could wait on DNS: mode 1 only passes
 * strings whose host part is a numeric IPv4/IPv6 literal (or that have no
 * "://" at all, which fail before resolution), so no input can hang.
 * Every address a lookup or deserialize returns is printed, serialized,
 * deserialized again (must compare equal), removed from the address vector
 * (so the peer table does not grow across inputs) and freed.
 */
#include "na.h"
#include "na_info.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static na_class_t *fz_na;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("HG_LOG_LEVEL", "none", 0);
    fz_na = NA_Initialize("ofi+tcp://127.0.0.1", false);
    if (!fz_na) {
        fprintf(stderr, "fuzz_na_addr: NA_Initialize(ofi+tcp) failed\n");
        abort();
    }
    return 0;
}

/* True when resolving the host of this name cannot touch DNS. */
static bool lookup_is_offline(const char *name)
{
    const char *sep = strstr(name, "://");
    if (!sep)
        return true;
    const char *hp = sep + 3, *end;
    char host[256];
    size_t len;
    if (hp[0] == '[') {
        end = strchr(hp, ']');
        if (!end)
            return true;
        hp++;
    } else {
        end = strrchr(hp, ':');
        if (!end)
            return true;
    }
    len = (size_t)(end - hp);
    if (len == 0 || len >= sizeof(host))
        return true;
    memcpy(host, hp, len);
    host[len] = '\0';
    unsigned char sa[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, sa) == 1 || inet_pton(AF_INET6, host, sa) == 1;
}

static void exercise_addr(na_addr_t *addr)
{
    char str[1100];
    size_t sz = sizeof(str);
    if (NA_Addr_to_string(fz_na, str, &sz, addr) == NA_SUCCESS && strlen(str) + 1 != sz)
        abort();
    size_t need = NA_Addr_get_serialize_size(fz_na, addr);
    unsigned char *buf = malloc(need ? need : 1);
    if (!buf)
        abort();
    if (NA_Addr_serialize(fz_na, buf, need, addr) == NA_SUCCESS) {
        na_addr_t *again = NULL;
        if (NA_Addr_deserialize(fz_na, &again, buf, need) != NA_SUCCESS ||
            !NA_Addr_cmp(fz_na, addr, again))
            abort();
        NA_Addr_free(fz_na, again);
    }
    free(buf);
    NA_Addr_set_remove(fz_na, addr);
    NA_Addr_free(fz_na, addr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t n = size - 1;
    char *s = malloc(n + 1);
    if (!s)
        abort();
    memcpy(s, data + 1, n);
    s[n] = '\0';
    switch (data[0] & 3) {
    case 0: {
        struct na_info info;
        if (na_info_parse(s, &info) == NA_SUCCESS) {
            /* "protocol" alone (no plugin, as Mercury takes it) or "plugin+protocol" */
            if ((info.plugin_name &&
                 (!*info.plugin_name || strchr(info.plugin_name, '+') != NULL)) ||
                !info.protocol_name || !*info.protocol_name || info.port < 0 ||
                info.port > 65535)
                abort();
            (void)strlen(info.protocol_name);
            if (info.host)
                (void)strlen(info.host);
        }
        na_info_free(&info);
        break;
    }
    case 1: {
        if (!lookup_is_offline(s))
            break;
        na_addr_t *addr = NULL;
        if (NA_Addr_lookup(fz_na, s, &addr) == NA_SUCCESS)
            exercise_addr(addr);
        break;
    }
    case 2: {
        na_addr_t *addr = NULL;
        if (n > 0 && NA_Addr_deserialize(fz_na, &addr, data + 1, n) == NA_SUCCESS)
            exercise_addr(addr);
        break;
    }
    case 3: {
        struct na_protocol_info *pi = NULL;
        if (NA_Get_protocol_info(s, &pi) == NA_SUCCESS)
            NA_Free_protocol_info(pi);
        break;
    }
    }
    free(s);
    return 0;
}
