/**
 * \file mercury_proc_string.h
 * Proc routines for C strings.
 *
 * Wire format, as Mercury's: a uint64 length counting the terminating NUL
 * (0 for a NULL pointer), then the characters and the NUL, then the is_const
 * and is_owned flags of the string object (one byte each; none for NULL), so
 * payload sizes (HG_Get_input_payload_size()) are Mercury's. The receiver
 * ignores the flags: its decoded copy is always its own. Decoding allocates the
 * string with malloc(); the HG_FREE pass frees it and sets the pointer to NULL.
 * A decoded length that does not fit in the rest of the buffer fails with
 * HG_OVERFLOW, a string that is not exactly NUL-terminated with
 * HG_PROTOCOL_ERROR; in both cases the pointer is left NULL.
 *
 * Names and signatures follow Mercury 2.4.
 */
#ifndef MERCURY_PROC_STRING_H
#define MERCURY_PROC_STRING_H

#include "mercury_proc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef const char *hg_const_string_t; /**< string a proc encodes but the caller keeps */
typedef char *hg_string_t;             /**< string a proc encodes or decodes */

/** A string and who frees it (Mercury's mercury_string_object.h). */
typedef struct hg_string_object {
    char *data;         /**< the string, or NULL */
    hg_bool_t is_const; /**< it came from a const char * */
    hg_bool_t is_owned; /**< hg_string_object_free() frees it */
} hg_string_object_t;

/**
 * Proc routine for an hg_const_string_t (data points to the pointer). The
 * decoded string is allocated even though the type is const; HG_FREE frees it.
 *
 * \param[in,out] proc processor
 * \param[in,out] data pointer to the string pointer
 *
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_OVERFLOW, HG_PROTOCOL_ERROR or HG_NOMEM
 */
HG_PUBLIC hg_return_t hg_proc_hg_const_string_t(hg_proc_t proc, void *data);

/**
 * Proc routine for an hg_string_t (data points to the pointer).
 *
 * \param[in,out] proc processor
 * \param[in,out] data pointer to the string pointer
 *
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_OVERFLOW, HG_PROTOCOL_ERROR or HG_NOMEM
 */
HG_PUBLIC hg_return_t hg_proc_hg_string_t(hg_proc_t proc, void *data);

/**
 * Proc routine for an hg_string_object_t: its string, in the format above
 * (the flags do not travel). A decoded object owns its string and is not
 * const; HG_FREE releases it with hg_string_object_free().
 *
 * \param[in,out] proc processor
 * \param[in,out] string pointer to the object
 *
 * \return HG_SUCCESS, HG_INVALID_ARG, HG_OVERFLOW, HG_PROTOCOL_ERROR or HG_NOMEM
 */
HG_PUBLIC hg_return_t hg_proc_hg_string_object_t(hg_proc_t proc, void *string);

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

#endif /* MERCURY_PROC_STRING_H */
