/*
 * na_info.c -- parse "[plugin+]protocol[://host[:port]]" info strings
 * (untrusted) and find the plugin that serves one.
 */
#include "na_info.h"

#include <stdlib.h>
#include <string.h>

void na_info_free(struct na_info *info)
{
    if (!info)
        return;
    free(info->plugin_name);
    free(info->protocol_name);
    free(info->host);
    memset(info, 0, sizeof(*info));
}

/* Host part: "host", "host:port", "[v6]:port" or ":port". */
static na_return_t na_info_parse_host(struct na_info *info, const char *hp)
{
    const char *colon = NULL;
    const char *host = hp;
    size_t host_len;

    if (hp[0] == '[') {
        const char *end = strchr(hp, ']');
        if (!end)
            return NA_INVALID_ARG;
        host = hp + 1;
        host_len = (size_t)(end - host);
        if (end[1] == ':')
            colon = end + 1;
        else if (end[1] != '\0')
            return NA_INVALID_ARG;
    } else {
        colon = strrchr(hp, ':');
        host_len = colon ? (size_t)(colon - hp) : strlen(hp);
    }
    if (colon) {
        char *end;
        long port = strtol(colon + 1, &end, 10);
        if (colon[1] == '\0' || *end != '\0' || port < 0 || port > 65535)
            return NA_INVALID_ARG;
        info->port = (int)port;
    }
    if (host_len > 0) {
        info->host = strndup(host, host_len);
        if (!info->host)
            return NA_NOMEM;
    }
    return NA_SUCCESS;
}

na_return_t na_info_parse(const char *info_string, struct na_info *info)
{
    memset(info, 0, sizeof(*info));
    if (!info_string || !*info_string || strlen(info_string) > NA_INFO_STRING_MAX)
        return NA_INVALID_ARG;

    const char *plus = strchr(info_string, '+');
    const char *sep = strstr(info_string, "://");
    if (plus && sep && plus > sep)
        plus = NULL; /* a '+' in the host part */
    if (plus == info_string)
        return NA_INVALID_ARG;
    const char *proto = plus ? plus + 1 : info_string;
    size_t proto_len = sep ? (size_t)(sep - proto) : strlen(proto);
    if (proto_len == 0)
        return NA_INVALID_ARG;

    if (plus)
        info->plugin_name = strndup(info_string, (size_t)(plus - info_string));
    info->protocol_name = strndup(proto, proto_len);
    if ((plus && !info->plugin_name) || !info->protocol_name) {
        na_info_free(info);
        return NA_NOMEM;
    }
    for (const char *p = info->protocol_name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
              *p == ';')) { /* ';' as in Mercury's "tcp;ofi_rxm" */
            na_info_free(info);
            return NA_INVALID_ARG;
        }
    if (sep && sep[3] != '\0') {
        na_return_t ret = na_info_parse_host(info, sep + 3);
        if (ret != NA_SUCCESS) {
            na_info_free(info);
            return ret;
        }
    }
    return NA_SUCCESS;
}

/* The plugin table's entry named plugin (NULL: none). */
static const struct na_ops *na_info_plugin_named(const char *plugin)
{
    for (const struct na_ops *const *p = na_plugin_table; *p; p++)
        if (strcmp((*p)->class_name, plugin) == 0)
            return *p;
    return NULL;
}

/* The first plugin of the table that has protocol. */
static const struct na_ops *na_info_plugin_serving(const char *protocol)
{
    for (const struct na_ops *const *p = na_plugin_table; *p; p++)
        if (na_plugin_has_protocol(*p, protocol))
            return *p;
    return NULL;
}

/* Make info name the plugin's own protocol: the core and the plugin then
 * speak of the plugin's protocol and never of the alias. */
static na_return_t na_info_unalias(struct na_info *info, const struct na_ops *ops,
                                   const struct na_alias *alias)
{
    char *plugin = strdup(ops->class_name), *protocol = strdup(alias->serves);
    if (!plugin || !protocol) {
        free(plugin);
        free(protocol);
        return NA_NOMEM;
    }
    free(info->plugin_name);
    free(info->protocol_name);
    info->plugin_name = plugin;
    info->protocol_name = protocol;
    return NA_SUCCESS;
}

const struct na_ops *na_info_resolve(struct na_info *info, const char *info_string,
                                     const struct na_alias **alias_p)
{
    const struct na_ops *ops = NULL;
    const struct na_alias *alias =
        na_alias_find(info->plugin_name, info->protocol_name, &ops);

    *alias_p = alias;
    if (alias) {
        if (na_info_unalias(info, ops, alias) == NA_SUCCESS)
            return ops;
        HGX_LOG_ERROR(NA, "out of memory");
        return NULL;
    }
    if (!info->plugin_name) {
        ops = na_info_plugin_serving(info->protocol_name);
        if (!ops)
            HGX_LOG_ERROR(
                NA, "no plugin in this build serves protocol \"%s\" (info string \"%s\")",
                info->protocol_name, info_string);
        return ops;
    }
    ops = na_info_plugin_named(info->plugin_name);
    if (!ops) {
        HGX_LOG_ERROR(NA, "no plugin \"%s\" in this build (info string \"%s\")",
                      info->plugin_name, info_string);
        return NULL;
    }
    if (!na_plugin_has_protocol(ops, info->protocol_name)) {
        HGX_LOG_ERROR(NA, "plugin \"%s\" does not support protocol \"%s\"",
                      info->plugin_name, info->protocol_name);
        return NULL;
    }
    return ops;
}
