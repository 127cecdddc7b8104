/*
 * na_params.c -- the list of every parameter the library reads: the core's,
 * then each built plugin's, in plugin-table order.
 */
#include "na_plugin.h"

const struct hgx_param *na_param_at(unsigned int index, const char **scope)
{
    unsigned int i = 0;
    for (const struct hgx_param *const *p = hgx_core_params; *p; p++, i++)
        if (i == index) {
            *scope = "core";
            return *p;
        }
    for (const struct na_ops *const *ops = na_plugin_table; *ops; ops++)
        for (const struct hgx_param *const *p = (*ops)->params; p && *p; p++, i++)
            if (i == index) {
                *scope = (*ops)->class_name;
                return *p;
            }
    return NULL;
}
