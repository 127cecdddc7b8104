/*
 * na_conformance_addr.c -- conformance cases of the address calls: lookup of
 * malformed strings, printing into small buffers, descriptors truncated,
 * with trailing bytes and garbage, foreign addresses.
 */
#include "na_conformance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Look name up; NA_SUCCESS only if it names this class's own address. */
static na_return_t lookup_self(const struct conf *c, const char *name)
{
    na_addr_t *addr = NULL;
    na_return_t ret = NA_Addr_lookup(c->cls, name, &addr);
    if (ret == NA_SUCCESS && !NA_Addr_cmp(c->cls, addr, c->self))
        ret = NA_NOENTRY;
    NA_Addr_free(c->cls, addr);
    return ret;
}

/* Lookups, given the class's own address string self ("plugin+proto://rest"). */
static void cases_lookup(const struct conf *c, const char *self)
{
    const char *plugin = NA_Get_class_name(c->cls);
    const char *proto = NA_Get_class_protocol(c->cls);
    const char *rest = strstr(self, "://");
    size_t long_len = 2048;
    char name[512], *longer = malloc(long_len + 1);
    na_addr_t *addr = NULL;

    rest = rest ? rest + 3 : "";
    conf_code(c, "lookup.self_string", lookup_self(c, self), NA_SUCCESS);
    conf_code(c, "lookup.bare_self_string", lookup_self(c, strchr(self, '+') + 1),
              NA_SUCCESS);
    conf_code(c, "lookup.null_name", NA_Addr_lookup(c->cls, NULL, &addr), NA_INVALID_ARG);
    conf_code(c, "lookup.null_output", NA_Addr_lookup(c->cls, self, NULL),
              NA_INVALID_ARG);
    conf_code(c, "lookup.empty", lookup_self(c, ""), NA_INVALID_ARG);
    snprintf(name, sizeof(name), "%s+", plugin);
    conf_code(c, "lookup.plugin_only", lookup_self(c, name), NA_INVALID_ARG);
    snprintf(name, sizeof(name), "%s+%s://", plugin, proto);
    conf_code(c, "lookup.no_address", lookup_self(c, name), NA_INVALID_ARG);
    snprintf(name, sizeof(name), "%s+%s://%s#x", plugin, proto, rest);
    conf_code(c, "lookup.trailing_garbage", lookup_self(c, name), NA_INVALID_ARG);
    snprintf(name, sizeof(name), "%s+%s://\x01\xff%%:%%", plugin, proto);
    conf_code(c, "lookup.garbage", lookup_self(c, name), NA_INVALID_ARG);
    snprintf(name, sizeof(name), "%s+nope://%s", plugin, rest);
    conf_code(c, "lookup.other_protocol", lookup_self(c, name), NA_PROTONOSUPPORT);
    snprintf(name, sizeof(name), "%s+%s://%s", strcmp(plugin, "ofi") ? "ofi" : "ucx",
             proto, rest);
    conf_code(c, "lookup.other_plugin", lookup_self(c, name), NA_PROTONOSUPPORT);
    memset(longer, 'a', long_len);
    memcpy(longer, self, strlen(self));
    longer[long_len] = '\0';
    conf_code(c, "lookup.oversized", lookup_self(c, longer), NA_INVALID_ARG);
    free(longer);
}

/* Printing: exact size, too small, size probe, bad arguments. */
static void cases_to_string(const struct conf *c, const char *self)
{
    size_t need = strlen(self) + 1, size = 0;
    char *buf = malloc(need);

    conf_code(c, "to_string.probe", NA_Addr_to_string(c->cls, NULL, &size, c->self),
              NA_SUCCESS);
    conf_true(c, "to_string.probe_size", size == need, "strlen + 1");
    size = need;
    conf_code(c, "to_string.exact", NA_Addr_to_string(c->cls, buf, &size, c->self),
              NA_SUCCESS);
    size = need - 1;
    conf_code(c, "to_string.one_short", NA_Addr_to_string(c->cls, buf, &size, c->self),
              NA_OVERFLOW);
    conf_true(c, "to_string.one_short_size", size == need, "size needed returned");
    size = 0;
    conf_code(c, "to_string.size_0", NA_Addr_to_string(c->cls, buf, &size, c->self),
              NA_OVERFLOW);
    conf_code(c, "to_string.null_size", NA_Addr_to_string(c->cls, buf, NULL, c->self),
              NA_INVALID_ARG);
    size = need;
    conf_code(c, "to_string.null_addr", NA_Addr_to_string(c->cls, buf, &size, NULL),
              NA_INVALID_ARG);
    conf_code(c, "to_string.foreign_addr",
              NA_Addr_to_string(c->cls, buf, &size, c->oself), NA_INVALID_ARG);
    free(buf);
}

/* Deserialize n bytes; NA_SUCCESS only if they give this class's own address. */
static na_return_t deserialize_self(const struct conf *c, const void *buf, size_t n)
{
    na_addr_t *addr = NULL;
    na_return_t ret = NA_Addr_deserialize(c->cls, &addr, buf, n);
    if (ret == NA_SUCCESS && !NA_Addr_cmp(c->cls, addr, c->self))
        ret = NA_NOENTRY;
    NA_Addr_free(c->cls, addr);
    return ret;
}

/* Address descriptors: round trip, short buffers, malformed bytes. */
static void cases_serialize(const struct conf *c)
{
    size_t n = NA_Addr_get_serialize_size(c->cls, c->self);
    unsigned char *buf = calloc(1, n + 16);
    na_addr_t *addr = NULL;

    conf_true(c, "addr_serialize.size", n > 0, "above 0");
    conf_code(c, "addr_serialize.short_buffer",
              NA_Addr_serialize(c->cls, buf, n - 1, c->self), NA_OVERFLOW);
    conf_code(c, "addr_serialize.foreign_addr",
              NA_Addr_serialize(c->cls, buf, n, c->oself), NA_INVALID_ARG);
    conf_code(c, "addr_serialize.exact", NA_Addr_serialize(c->cls, buf, n, c->self),
              NA_SUCCESS);
    conf_code(c, "addr_deserialize.round_trip", deserialize_self(c, buf, n), NA_SUCCESS);
    conf_code(c, "addr_deserialize.null_buffer",
              NA_Addr_deserialize(c->cls, &addr, NULL, n), NA_INVALID_ARG);
    conf_code(c, "addr_deserialize.size_0", NA_Addr_deserialize(c->cls, &addr, buf, 0),
              NA_INVALID_ARG);
    conf_code(c, "addr_deserialize.truncated", deserialize_self(c, buf, n - 1),
              NA_PROTOCOL_ERROR);
    conf_code(c, "addr_deserialize.one_byte", deserialize_self(c, buf, 1),
              NA_PROTOCOL_ERROR);
    /* Bytes after a whole descriptor are the caller's, not part of it: Mercury's
     * callers may pass the size of the buffer the descriptor sits in. */
    conf_code(c, "addr_deserialize.trailing_bytes", deserialize_self(c, buf, n + 16),
              NA_SUCCESS);
    memset(buf, 0xff, n);
    conf_code(c, "addr_deserialize.garbage_ff", deserialize_self(c, buf, n),
              NA_PROTOCOL_ERROR);
    free(buf);
}

/* Addresses of another class, and the NULL ones. */
static void cases_foreign(const struct conf *c)
{
    na_addr_t *addr = NULL;

    conf_code(c, "addr_self.null_output", NA_Addr_self(c->cls, NULL), NA_INVALID_ARG);
    conf_code(c, "addr_dup.foreign", NA_Addr_dup(c->cls, c->oself, &addr),
              NA_INVALID_ARG);
    conf_code(c, "addr_dup.null", NA_Addr_dup(c->cls, NULL, &addr), NA_INVALID_ARG);
    conf_code(c, "addr_set_remove.foreign", NA_Addr_set_remove(c->cls, c->oself),
              NA_INVALID_ARG);
    conf_code(c, "addr_set_remove.null", NA_Addr_set_remove(c->cls, NULL),
              NA_INVALID_ARG);
    conf_true(c, "addr_is_self.self", NA_Addr_is_self(c->cls, c->self), "true");
    conf_true(c, "addr_is_self.null", !NA_Addr_is_self(c->cls, NULL), "false");
    /* Two classes in one process are two peers, on every transport; and an
     * address of another class is not this class's to compare. */
    conf_true(c, "addr_cmp.foreign_addr", !NA_Addr_cmp(c->cls, c->self, c->oself),
              "false");
    conf_true(c, "addr_is_self.foreign_addr", !NA_Addr_is_self(c->cls, c->oself),
              "false");
}

void conf_cases_addr(const struct conf *c)
{
    char self[1100];
    size_t size = sizeof(self);

    if (NA_Addr_to_string(c->cls, self, &size, c->self) != NA_SUCCESS ||
        !strchr(self, '+')) {
        conf_true(c, "addr.self_string", false, "own address could not be printed");
        return;
    }
    printf("# %s: own address %s\n", c->info, self);
    cases_lookup(c, self);
    cases_to_string(c, self);
    cases_serialize(c);
    cases_foreign(c);
}
