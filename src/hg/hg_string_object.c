/*
 * hg_string_object.c -- Mercury's string objects (mercury_string_object.h):
 * a string with flags saying whether it is const and whether the object owns
 * (frees) it.
 */
#include "mercury_proc_string.h"

#include <stdlib.h>
#include <string.h>

hg_return_t hg_string_object_init(hg_string_object_t *string)
{
    return hg_string_object_init_char(string, NULL, HG_FALSE);
}

hg_return_t hg_string_object_init_char(hg_string_object_t *string, char *s,
                                       hg_bool_t is_owned)
{
    if (!string)
        return HG_INVALID_ARG;
    string->data = s;
    string->is_const = HG_FALSE;
    string->is_owned = is_owned;
    return HG_SUCCESS;
}

hg_return_t hg_string_object_init_const_char(hg_string_object_t *string, const char *s,
                                             hg_bool_t is_owned)
{
    hg_return_t ret = hg_string_object_init_char(string, (char *)(uintptr_t)s, is_owned);
    if (ret == HG_SUCCESS)
        string->is_const = HG_TRUE;
    return ret;
}

hg_return_t hg_string_object_free(hg_string_object_t *string)
{
    if (!string)
        return HG_INVALID_ARG;
    if (string->is_owned)
        free(string->data);
    string->data = NULL;
    string->is_owned = HG_FALSE;
    return HG_SUCCESS;
}

hg_return_t hg_string_object_dup(hg_string_object_t string,
                                 hg_string_object_t *new_string)
{
    if (!new_string)
        return HG_INVALID_ARG;
    char *copy = string.data ? strdup(string.data) : NULL;
    if (string.data && !copy)
        return HG_NOMEM;
    new_string->data = copy;
    new_string->is_const = string.is_const;
    new_string->is_owned = HG_TRUE;
    return HG_SUCCESS;
}

char *hg_string_object_swap(hg_string_object_t *string, char *s)
{
    if (!string)
        return NULL;
    char *old = string->data;
    string->data = s;
    return old;
}
