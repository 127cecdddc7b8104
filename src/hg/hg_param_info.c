/*
 * hg_param_info.c -- hgx_param_get_info(): the library's environment
 * parameters as the public struct, for hgx-info and for programs that want
 * to show their settings.
 */
#include "hg_internal.h"
#include "hgx.h"
#include "na_plugin.h"

#include <stdlib.h>

static const char *const hg_param_type_names[] = {
    [HGX_PARAM_INT] = "int",
    [HGX_PARAM_BOOL] = "bool",
    [HGX_PARAM_SIZE] = "size",
    [HGX_PARAM_STRING] = "string",
};

hg_return_t hgx_param_get_info(unsigned int index, struct hgx_param_info *info)
{
    if (!info) {
        HGX_LOG_ERROR(HG, "NULL info");
        return HG_INVALID_ARG;
    }
    const char *scope = NULL;
    const struct hgx_param *param = na_param_at(index, &scope);
    if (!param)
        return HG_NOENTRY;
    const char *value = getenv(param->name);
    *info = (struct hgx_param_info){
        .name = param->name,
        .scope = scope,
        .type = hg_param_type_names[param->type],
        .help = param->help,
        .value = value && *value ? value : NULL,
        .def = param->def,
        .min = param->min,
        .max = param->max,
        .def_string = param->def_string,
    };
    return HG_SUCCESS;
}
