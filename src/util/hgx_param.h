/*
 * hgx_param.h -- typed, checked parameters from the environment (private).
 *
 * Every tunable of the library is a struct hgx_param: its environment
 * variable, type, default, accepted range and a line of help. Reading one
 * parses the variable, checks it against the range and, when it does not
 * fit, logs one error line naming the variable, the value, what is accepted
 * and the default used instead; a bad value never stops the library.
 * The core's parameters are listed in hgx_param.c (hgx_core_params) and each
 * plugin lists its own in its ops table (na_ops.params), so one walk over
 * both prints every parameter (hgx-info).
 */
#ifndef HGX_PARAM_H
#define HGX_PARAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum hgx_param_type {
    HGX_PARAM_INT,    /* decimal integer in [min, max] */
    HGX_PARAM_BOOL,   /* 1/0, yes/no, true/false, on/off */
    HGX_PARAM_SIZE,   /* byte count in [min, max], with an optional k, m or g suffix */
    HGX_PARAM_STRING, /* any text; unset gives def_string (may be NULL) */
};

struct hgx_param {
    const char *name; /* environment variable */
    enum hgx_param_type type;
    int64_t def, min, max;  /* INT and SIZE; BOOL uses def (0 or 1) */
    const char *def_string; /* STRING */
    const char *help;       /* one line: what it changes */
};

/* Value of an HGX_PARAM_INT parameter. */
int64_t hgx_param_get_int(const struct hgx_param *param);
/* Value of an HGX_PARAM_BOOL parameter. */
bool hgx_param_get_bool(const struct hgx_param *param);
/* Value of an HGX_PARAM_SIZE parameter. */
size_t hgx_param_get_size(const struct hgx_param *param);
/* Value of an HGX_PARAM_STRING parameter (the environment's string or def_string). */
const char *hgx_param_get_string(const struct hgx_param *param);

/* Parameters of the core (NULL-terminated). */
extern const struct hgx_param *const hgx_core_params[];

extern const struct hgx_param hgx_param_log_level;
extern const struct hgx_param hgx_param_log_subsys;
extern const struct hgx_param hgx_param_na_spin_us;
extern const struct hgx_param hgx_param_na_cancel_timeout_ms;
extern const struct hgx_param hgx_param_na_unexpected_max;

#endif /* HGX_PARAM_H */
