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
#include "mercury_string_object.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef const char *hg_const_string_t; /**< string a proc encodes but the caller keeps */
typedef char *hg_string_t;             /**< string a proc encodes or decodes */

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

#ifdef __cplusplus
}
#endif

#endif /* MERCURY_PROC_STRING_H */
