/*
 * na_alias.h -- the aliases plugins declare (struct na_alias): which plugin
 * serves one, and address names translated between an alias class's public
 * form and its plugin's (private).
 */
#ifndef NA_ALIAS_H
#define NA_ALIAS_H

#include "na_plugin.h"

/* The alias "plugin+protocol" (any class name when plugin is NULL) as the
 * highest-ranked built plugin declares it, with that plugin in *ops_p; NULL
 * when no built plugin declares it. */
const struct na_alias *na_alias_find(const char *plugin, const char *protocol,
                                     const struct na_ops **ops_p);

/* The name na_class's plugin looks up for a user's address name
 * "class+protocol://rest" or "protocol://rest", given in the class's public
 * names: *plugin_name_p is the plugin's "protocol://rest", in buf (size bytes)
 * when an alias's protocol had to be renamed. NA_PROTONOSUPPORT when the name
 * is for another class or protocol, NA_INVALID_ARG when it does not fit. */
na_return_t na_alias_lookup_name(const na_class_t *na_class, const char *name, char *buf,
                                 size_t size, const char **plugin_name_p);

/* Rewrite the plugin's address string "plugin+protocol://rest" in buf (a
 * string in size bytes) as "class+protocol://rest" in na_class's public
 * names. NA_OVERFLOW when the result does not fit. */
na_return_t na_alias_addr_string(const na_class_t *na_class, char *buf, size_t size);

#endif /* NA_ALIAS_H */
