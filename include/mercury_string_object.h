/**
 * \file mercury_string_object.h
 * A string together with whether it is const and whether its holder frees it
 * (hg_string_object_t), as Mercury 2.4's header of that name declares it.
 * mercury_proc_string.h includes it and encodes such objects.
 */
#ifndef MERCURY_STRING_OBJECT_H
#define MERCURY_STRING_OBJECT_H

#include "mercury_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A string and who frees it. */
typedef struct hg_string_object {
    char *data;         /**< the string, or NULL */
    hg_bool_t is_const; /**< it came from a const char * */
    hg_bool_t is_owned; /**< hg_string_object_free() frees it */
} hg_string_object_t;

/**
 * Empty object (NULL string, not owned).
 * \param[in,out] string the string object
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t hg_string_object_init(hg_string_object_t *string);

/**
 * Object over s; with is_owned, hg_string_object_free() frees s.
 * \param[in,out] string the string object
 * \param[in] s the string
 * \param[in] is_owned HG_TRUE if hg_string_object_free() frees s
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t hg_string_object_init_char(hg_string_object_t *string, char *s,
                                                 hg_bool_t is_owned);

/**
 * Object over a const string (is_const set); with is_owned it is freed too.
 * \param[in,out] string the string object
 * \param[in] s the string
 * \param[in] is_owned HG_TRUE if hg_string_object_free() frees s
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t hg_string_object_init_const_char(hg_string_object_t *string,
                                                       const char *s, hg_bool_t is_owned);

/**
 * Free the string if the object owns it; the object becomes empty.
 * \param[in,out] string the string object
 * \return HG_SUCCESS, HG_INVALID_ARG
 */
HG_PUBLIC hg_return_t hg_string_object_free(hg_string_object_t *string);

/**
 * Copy of string that owns a strdup() of its string.
 * \param[in] string object to copy
 * \param[out] new_string the copy
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_NOMEM
 */
HG_PUBLIC hg_return_t hg_string_object_dup(hg_string_object_t string,
                                           hg_string_object_t *new_string);

/**
 * Put s in the object and return the string it held (flags unchanged).
 * \param[in,out] string the string object
 * \param[in] s new string
 * \return the previous string, or NULL
 */
HG_PUBLIC char *hg_string_object_swap(hg_string_object_t *string, char *s);

#ifdef __cplusplus
}
#endif

#endif /* MERCURY_STRING_OBJECT_H */
