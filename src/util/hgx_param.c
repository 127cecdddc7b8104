/*
 * hgx_param.c -- parsing and range checks of parameters, and the core's list.
 */
#include "hgx_param.h"
#include "hgx_assert.h"
#include "hgx_log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct hgx_param hgx_param_log_level = {
    .name = "HG_LOG_LEVEL",
    .type = HGX_PARAM_STRING,
    .def_string = "error",
    .help = "log level: none, error, warning, min_debug or debug",
};

const struct hgx_param hgx_param_log_subsys = {
    .name = "HG_LOG_SUBSYS",
    .type = HGX_PARAM_STRING,
    .def_string = "all",
    .help = "comma list of log subsystems, \"~name\" mutes one (e.g. \"all,~ofi\")",
};

const struct hgx_param hgx_param_na_spin_us = {
    .name = "HGX_NA_SPIN_US",
    .type = HGX_PARAM_INT,
    .def = 50,
    .min = 0,
    .max = 100000,
    .help = "microseconds a waiting process keeps polling after its last activity "
            "before it sleeps in the transport's wait object (0: sleep at once)",
};

const struct hgx_param hgx_param_na_cancel_timeout_ms = {
    .name = "HGX_NA_CANCEL_TIMEOUT_MS",
    .type = HGX_PARAM_INT,
    .def = 1000,
    .min = 0,
    .max = 3600000,
    .help = "milliseconds a plugin waits for its transport to confirm a cancel before "
            "it completes the operation as canceled on its own",
};

const struct hgx_param hgx_param_na_unexpected_max = {
    .name = "HGX_NA_UNEXPECTED_MAX",
    .type = HGX_PARAM_INT,
    .def = 4096,
    .min = 16,
    .max = 1048576,
    .help = "unexpected messages a context holds while no receive is posted; past it "
            "the plugin stops taking more from the transport until receives drain them",
};

const struct hgx_param *const hgx_core_params[] = {
    &hgx_param_log_level,         &hgx_param_log_subsys,
    &hgx_param_na_spin_us,        &hgx_param_na_cancel_timeout_ms,
    &hgx_param_na_unexpected_max, NULL,
};

/* The variable's text, or NULL when unset or empty (both mean "default"). */
static const char *hgx_param_text(const struct hgx_param *param)
{
    const char *text = getenv(param->name);
    return text && *text ? text : NULL;
}

static void hgx_param_bad(const struct hgx_param *param, const char *text,
                          const char *expected)
{
    HGX_LOG_ERROR(NA, "%s=\"%s\" is not %s: using the default %" PRId64, param->name,
                  text, expected, param->def);
}

/* Parse a decimal integer with an optional unit suffix scaled by 1024^k. */
static bool hgx_param_parse(const char *text, bool units, int64_t *value)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text)
        return false;
    int shift = 0;
    if (units && *end) {
        const char *suffix = strchr("kmg", end[0] | 0x20);
        if (!suffix || end[1] != '\0')
            return false;
        shift = 10 * (int)(suffix - "kmg" + 1);
        end++;
    }
    if (*end != '\0')
        return false;
    if (shift && (v > (INT64_MAX >> shift) || v < (INT64_MIN >> shift)))
        return false;
    *value = (int64_t)v * ((int64_t)1 << shift);
    return true;
}

static int64_t hgx_param_ranged(const struct hgx_param *param, bool units)
{
    const char *text = hgx_param_text(param);
    int64_t v;
    if (!text)
        return param->def;
    if (!hgx_param_parse(text, units, &v) || v < param->min || v > param->max) {
        char expected[96];
        snprintf(expected, sizeof(expected), "%s in [%" PRId64 ", %" PRId64 "]",
                 units ? "a size" : "an integer", param->min, param->max);
        hgx_param_bad(param, text, expected);
        return param->def;
    }
    return v;
}

int64_t hgx_param_get_int(const struct hgx_param *param)
{
    HGX_ASSERT(param->type == HGX_PARAM_INT);
    return hgx_param_ranged(param, false);
}

size_t hgx_param_get_size(const struct hgx_param *param)
{
    HGX_ASSERT(param->type == HGX_PARAM_SIZE && param->min >= 0);
    return (size_t)hgx_param_ranged(param, true);
}

bool hgx_param_get_bool(const struct hgx_param *param)
{
    static const char *const yes[] = {"1", "yes", "true", "on"};
    static const char *const no[] = {"0", "no", "false", "off"};
    HGX_ASSERT(param->type == HGX_PARAM_BOOL);
    const char *text = hgx_param_text(param);
    if (!text)
        return param->def != 0;
    for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++) {
        if (strcasecmp(text, yes[i]) == 0)
            return true;
        if (strcasecmp(text, no[i]) == 0)
            return false;
    }
    hgx_param_bad(param, text, "a boolean (1/0, yes/no, true/false, on/off)");
    return param->def != 0;
}

const char *hgx_param_get_string(const struct hgx_param *param)
{
    HGX_ASSERT(param->type == HGX_PARAM_STRING);
    const char *text = hgx_param_text(param);
    return text ? text : param->def_string;
}
