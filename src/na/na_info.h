/*
 * na_info.h -- info string parsing for NA_Initialize (private).
 */
#ifndef NA_INFO_H
#define NA_INFO_H

#include "na_plugin.h"

#define NA_INFO_STRING_MAX 1024

/* Split "plugin+protocol[://host[:port]]"; NA_INVALID_ARG when malformed. */
na_return_t na_info_parse(const char *info_string, struct na_info *info);
void na_info_free(struct na_info *info);

#endif /* NA_INFO_H */
