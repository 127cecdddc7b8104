/*
 * na_alias.c -- aliases: which plugin serves one, and the translation of
 * address names between an alias class's public form ("na+sm://rest") and
 * its plugin's ("ucx+shm://rest"). Names come from users and peers: untrusted.
 */
#include "na_alias.h"

#include <stdio.h>
#include <string.h>

const struct na_alias *na_alias_find(const char *plugin, const char *protocol,
                                     const struct na_ops **ops_p)
{
    const struct na_alias *best = NULL;

    for (const struct na_ops *const *p = na_plugin_table; *p; p++)
        for (const struct na_alias *a = (*p)->aliases; a && a->class_name; a++)
            if ((!plugin || strcmp(plugin, a->class_name) == 0) &&
                strcmp(protocol, a->protocol) == 0 && (!best || a->rank > best->rank)) {
                best = a;
                *ops_p = *p;
            }
    return best;
}

/* The class name a class answers to: its alias's, else its plugin's. */
static const char *na_alias_class(const na_class_t *na_class)
{
    return na_class->alias ? na_class->alias->class_name : na_class->ops->class_name;
}

static bool na_alias_is(const char *protocol, const char *bare, size_t plen)
{
    return strlen(protocol) == plen && strncmp(bare, protocol, plen) == 0;
}

/* The plugin's protocol that the protocol of a name (bare, plen bytes) stands
 * for in na_class, or NULL when the class does not speak it. An alias class
 * ("na+sm") speaks its alias's protocol only; an alias in the plugin's own
 * class name ("ofi+tcp;ofi_rxm" for "ofi+tcp") is another spelling of the
 * plugin's protocol, so such a class and the plugin's plain classes each take
 * both spellings. */
static const char *na_alias_served(const na_class_t *na_class, const char *bare,
                                   size_t plen)
{
    const struct na_ops *ops = na_class->ops;
    const struct na_alias *alias = na_class->alias;

    if (alias && na_alias_is(alias->protocol, bare, plen))
        return alias->serves;
    if (alias && strcmp(alias->class_name, ops->class_name) != 0)
        return NULL;
    for (const struct na_alias *a = ops->aliases; a && a->class_name; a++)
        if (strcmp(a->class_name, ops->class_name) == 0 &&
            na_alias_is(a->protocol, bare, plen))
            return a->serves;
    for (const char *const *p = ops->protocols; p && *p; p++)
        if (na_alias_is(*p, bare, plen))
            return *p;
    return NULL;
}

na_return_t na_alias_lookup_name(const na_class_t *na_class, const char *name, char *buf,
                                 size_t size, const char **plugin_name_p)
{
    const char *bare = name;
    const char *plus = strchr(name, '+');
    const char *sep = strstr(name, "://");

    if (plus && (!sep || plus < sep)) {
        const char *cls = na_alias_class(na_class);
        size_t n = (size_t)(plus - name);
        if (n != strlen(cls) || strncmp(name, cls, n) != 0) {
            HGX_LOG_ERROR(NA, "address \"%s\" is not for plugin \"%s\"", name, cls);
            return NA_PROTONOSUPPORT;
        }
        bare = plus + 1;
    }
    /* The same protocol check as at initialization, so a name for a protocol
     * the class lacks gets the same code on every plugin. A name without
     * "plugin+" is the plugin's to judge, unless the class is an alias, whose
     * only protocol is its own, or it spells a protocol of the plugin in
     * another name; one without any protocol is malformed, and the plugin
     * says so. */
    *plugin_name_p = bare;
    size_t plen = sep ? (size_t)(sep - bare) : strlen(bare);
    if ((bare == name && !sep) || plen == 0)
        return NA_SUCCESS;
    const char *served = na_alias_served(na_class, bare, plen);
    if (!served && bare == name && !na_class->alias)
        return NA_SUCCESS;
    if (!served) {
        HGX_LOG_ERROR(NA, "address \"%s\": plugin \"%s\" has no protocol \"%.*s\"", name,
                      na_alias_class(na_class), (int)plen, bare);
        return NA_PROTONOSUPPORT;
    }
    if (strlen(served) == plen && strncmp(served, bare, plen) == 0)
        return NA_SUCCESS;
    int len = snprintf(buf, size, "%s%s", served, bare + plen);
    if (len < 0 || (size_t)len >= size)
        return NA_INVALID_ARG;
    *plugin_name_p = buf;
    return NA_SUCCESS;
}

na_return_t na_alias_addr_string(const na_class_t *na_class, char *buf, size_t size)
{
    const struct na_alias *alias = na_class->alias;
    if (!alias)
        return NA_SUCCESS;
    const char *sep = strstr(buf, "://");
    const char *rest = sep ? sep : "";
    size_t cls_len = strlen(alias->class_name), proto_len = strlen(alias->protocol);
    size_t head = cls_len + 1 + proto_len, rest_len = strlen(rest);
    if (head + rest_len + 1 > size)
        return NA_OVERFLOW;
    memmove(buf + head, rest, rest_len + 1);
    memcpy(buf, alias->class_name, cls_len);
    buf[cls_len] = '+';
    memcpy(buf + cls_len + 1, alias->protocol, proto_len);
    return NA_SUCCESS;
}
