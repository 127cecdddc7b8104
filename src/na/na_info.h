/*
 * na_info.h -- info strings for NA_Initialize: parsing and the plugin that
 * serves one (private).
 */
#ifndef NA_INFO_H
#define NA_INFO_H

#include "na_alias.h"

#define NA_INFO_STRING_MAX 1024

/* Split "[plugin+]protocol[://host[:port]]"; NA_INVALID_ARG when malformed. */
na_return_t na_info_parse(const char *info_string, struct na_info *info);
void na_info_free(struct na_info *info);

/* The plugin serving a parsed info: an alias's best-ranked plugin (*alias_p
 * set and info renamed to that plugin's own protocol), else the named plugin
 * if it has the protocol, else (no plugin named) the first plugin that has it.
 * NULL, logged with info_string, when none does. */
const struct na_ops *na_info_resolve(struct na_info *info, const char *info_string,
                                     const struct na_alias **alias_p);

#endif /* NA_INFO_H */
