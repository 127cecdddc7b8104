/*
 * hg_proc_string.c -- proc routines for C strings (format in mercury_proc_string.h).
 */
#include "mercury_proc_string.h"

#include "hgx_log.h"

#include <stdlib.h>
#include <string.h>

static hg_return_t hg_proc_string_encode(hg_proc_t proc, char *s)
{
    uint64_t len = s ? (uint64_t)strlen(s) + 1 : 0;
    hg_return_t ret = hg_proc_uint64_t(proc, &len);

    if (ret != HG_SUCCESS || len == 0)
        return ret;
    return hg_proc_bytes(proc, s, len);
}

static hg_return_t hg_proc_string_decode(hg_proc_t proc, char **sp)
{
    uint64_t len;
    hg_return_t ret;
    char *s;

    *sp = NULL;
    ret = hg_proc_uint64_t(proc, &len);
    if (ret != HG_SUCCESS || len == 0)
        return ret;
    /* Check against what is left before allocating: the length is untrusted. */
    if (len > hg_proc_get_size_left(proc)) {
        HGX_LOG_DEBUG(PROC, "string length %llu exceeds the %llu bytes left",
                      (unsigned long long)len,
                      (unsigned long long)hg_proc_get_size_left(proc));
        return HG_OVERFLOW;
    }
    s = malloc((size_t)len);
    if (s == NULL) {
        HGX_LOG_ERROR(PROC, "could not allocate a %llu-byte string",
                      (unsigned long long)len);
        return HG_NOMEM;
    }
    ret = hg_proc_bytes(proc, s, len);
    if (ret == HG_SUCCESS && (s[len - 1] != '\0' || memchr(s, '\0', len - 1) != NULL)) {
        HGX_LOG_DEBUG(PROC, "string of length %llu is not NUL-terminated exactly once",
                      (unsigned long long)len);
        ret = HG_PROTOCOL_ERROR;
    }
    if (ret != HG_SUCCESS) {
        free(s);
        return ret;
    }
    *sp = s;
    return HG_SUCCESS;
}

/* data points to a char * (const or not: decode allocates, free releases). */
static hg_return_t hg_proc_string(hg_proc_t proc, char **sp)
{
    if (proc == HG_PROC_NULL || sp == NULL) {
        HGX_LOG_ERROR(PROC, "NULL proc or data");
        return HG_INVALID_ARG;
    }
    switch (hg_proc_get_op(proc)) {
    case HG_ENCODE:
        return hg_proc_string_encode(proc, *sp);
    case HG_DECODE:
        return hg_proc_string_decode(proc, sp);
    case HG_FREE:
        free(*sp);
        *sp = NULL;
        return HG_SUCCESS;
    }
    return HG_INVALID_ARG;
}

hg_return_t hg_proc_hg_const_string_t(hg_proc_t proc, void *data)
{
    return hg_proc_string(proc, (char **)data);
}

hg_return_t hg_proc_hg_string_t(hg_proc_t proc, void *data)
{
    return hg_proc_string(proc, (char **)data);
}
