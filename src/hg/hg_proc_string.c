/*
 * hg_proc_string.c -- proc routines for C strings and string objects (format in
 * mercury_proc_string.h).
 */
#include "mercury_proc_string.h"

#include "hgx_log.h"

#include <stdlib.h>
#include <string.h>

/* The object's is_const and is_owned flags follow a non-NULL string, one byte
 * each, as in Mercury (payload sizes match). The receiver reads and ignores
 * them: its decoded copy is always its own. */
static hg_return_t hg_proc_string_flags(hg_proc_t proc, hg_string_object_t *strobj)
{
    uint8_t flags[2] = {strobj->is_const ? 1 : 0, strobj->is_owned ? 1 : 0};
    return hg_proc_bytes(proc, flags, sizeof(flags));
}

static hg_return_t hg_proc_string_encode(hg_proc_t proc, hg_string_object_t *strobj)
{
    uint64_t len = strobj->data ? (uint64_t)strlen(strobj->data) + 1 : 0;
    hg_return_t ret = hg_proc_uint64_t(proc, &len);

    if (ret != HG_SUCCESS || len == 0)
        return ret;
    ret = hg_proc_bytes(proc, strobj->data, len);
    if (ret != HG_SUCCESS)
        return ret;
    return hg_proc_string_flags(proc, strobj);
}

static hg_return_t hg_proc_string_decode(hg_proc_t proc, hg_string_object_t *strobj)
{
    uint64_t len;
    hg_return_t ret;
    char *s;

    hg_string_object_init(strobj);
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
    if (ret == HG_SUCCESS)
        ret = hg_proc_string_flags(proc, strobj);
    if (ret != HG_SUCCESS) {
        free(s);
        return ret;
    }
    /* The decoded copy belongs to the object. */
    return hg_string_object_init_char(strobj, s, HG_TRUE);
}

hg_return_t hg_proc_hg_string_object_t(hg_proc_t proc, void *string)
{
    hg_string_object_t *strobj = string;

    if (proc == HG_PROC_NULL || strobj == NULL) {
        HGX_LOG_ERROR(PROC, "NULL proc or data");
        return HG_INVALID_ARG;
    }
    switch (hg_proc_get_op(proc)) {
    case HG_ENCODE:
        return hg_proc_string_encode(proc, strobj);
    case HG_DECODE:
        return hg_proc_string_decode(proc, strobj);
    case HG_FREE:
        return hg_string_object_free(strobj);
    }
    return HG_INVALID_ARG;
}

/* data points to a char * (const or not): decode allocates, free releases. */
static hg_return_t hg_proc_string(hg_proc_t proc, char **sp)
{
    hg_string_object_t strobj;

    if (proc == HG_PROC_NULL || sp == NULL) {
        HGX_LOG_ERROR(PROC, "NULL proc or data");
        return HG_INVALID_ARG;
    }
    hg_proc_op_t op = hg_proc_get_op(proc);
    hg_string_object_init_char(&strobj, op == HG_DECODE ? NULL : *sp, op == HG_FREE);
    hg_return_t ret = hg_proc_hg_string_object_t(proc, &strobj);
    if (op == HG_DECODE)
        *sp = ret == HG_SUCCESS ? hg_string_object_swap(&strobj, NULL) : NULL;
    else if (op == HG_FREE)
        *sp = NULL;
    return ret;
}

hg_return_t hg_proc_hg_const_string_t(hg_proc_t proc, void *data)
{
    return hg_proc_string(proc, (char **)data);
}

hg_return_t hg_proc_hg_string_t(hg_proc_t proc, void *data)
{
    return hg_proc_string(proc, (char **)data);
}
